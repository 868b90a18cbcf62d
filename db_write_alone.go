package mayfly

// commitAlone commits w's batch, unsynced and without conditions, from its
// own goroutine: it takes commitMu, logs the batch as a group of one
// (commitGroup: room, stamp, one WAL append for the flusher, the publish
// queue), releases commitMu, applies the batch and returns once it is
// published. Publication order is the publish queue's, as for a group's
// members; a synced or conditional batch still goes through a leader.
//
// Why not a group: a member of a group waits for its leader to log it, and
// a waiter that has yielded its processor waits, on a machine whose
// processors are busy, until the scheduler gets back to it, up to
// milliseconds. Taking commitMu directly waits only while another writer
// logs, a few microseconds, in the mutex's own spin-then-park; what groups
// save for unsynced writes (one lock and one WAL append per group instead
// of per batch) is small, as the flusher gathers the appends of many
// batches into one write anyway. A group still pays for synced writes, whose
// fsync it shares (RFC 0003, "Group commit").
func (db *DB) commitAlone(w *commitWaiter) error {
	err := db.logAlone(w)
	if !w.done && w.mem == nil {
		w.done, w.err = true, err // the group failed as a whole
	}
	if w.done {
		return w.err
	}
	return db.applyLogged(w)
}

// logAlone logs w's batch as a group of one under commitMu. w is released
// to apply its own batch, as a leader releases a member, before the batch
// can be seen in the publish queue: another writer may claim and apply it
// from there (helpEarlier), and applyLogged then tells from w's state
// whether that writer has published it yet.
func (db *DB) logAlone(w *commitWaiter) error {
	w.alone[0] = w
	w.state.Store(waiterApply)
	db.commitMu.Lock()
	err := db.commitGroup(w.alone[:])
	db.commitMu.Unlock()
	w.alone[0] = nil
	return err
}
