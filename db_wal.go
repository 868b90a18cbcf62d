package mayfly

import "fmt"

// FlushWAL makes every write acknowledged so far survive a crash of the
// process on a local disk: it returns once the WAL bytes of those writes
// have been handed to the operating system (on an object store, to the
// storage backend, which uploads them within its flush interval). With sync
// it also makes them durable, as a later write with WriteOptions.Sync
// would: they then survive a crash of the machine, and on an object store
// they are uploaded.
//
// Unsynced writes normally reach the operating system on their own within
// Options.WALMinWriteInterval (100 µs by default); FlushWAL is for callers
// that need to know they did, for example before handing a copy of the
// directory to another process.
func (db *DB) FlushWAL(sync bool) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	db.mu.Lock()
	closed, bgErr := db.closed, db.bgErr
	db.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if bgErr != nil {
		return bgErr
	}
	if sync {
		if err := db.logWriter.Sync(); err != nil {
			return db.setBackgroundError(fmt.Errorf("WAL sync: %w", err))
		}
		db.metrics.walSyncs.Add(1)
		return nil
	}
	if err := db.logWriter.Flush(); err != nil {
		return db.setBackgroundError(fmt.Errorf("WAL write: %w", err))
	}
	return nil
}
