package wal

// SyncTo makes the bytes appended before offset end (a Size taken after
// the Write of the records that must be durable) durable, and returns once
// they are. Callers share syncs: it returns at once if a sync already
// covered end, and while one SyncTo is syncing the others wait for it, so
// that after a sync one of them writes and syncs, in one go, everything
// appended meanwhile. A caller that holds a lock Writes take (the DB's
// commit lock) need not hold it here: appends go on while a sync runs, and
// the next sync covers them. It works on a sealed segment and, once a sync
// covered end, on a closed one.
func (w *Writer) SyncTo(end int64) error {
	w.mu.Lock()
	for w.synced < end && w.err == nil && w.syncing {
		w.syncWait++
		w.syncEnd.Wait()
		w.syncWait--
	}
	if w.synced >= end {
		w.mu.Unlock()
		return nil
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.syncing = true
	target := w.writeLocked()
	w.mu.Unlock()
	err := w.syncThrough(target)
	w.mu.Lock()
	w.syncing = false
	w.syncEnd.Broadcast()
	w.mu.Unlock()
	return err
}
