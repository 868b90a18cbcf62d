package mayfly

// recover is Open for a writer (a read-only handle opens through
// openReadOnly). It runs the stages in order: load the newest manifest
// version and its tables (open_version.go), claim the database (fence.go),
// replay the WAL segments the version does not cover (open_replay.go), and
// flush what they held and start a fresh WAL segment (open_flush.go).
//
// The claim (takeOver writes a manifest version) comes only once the WAL
// has replayed without an error, so that an Open refused for damage
// changes nothing. On a lock-free backend the claim must come first: it
// stops a previous writer, whose segments are complete only after it.
func (db *DB) recover() error {
	st, num, err := db.loadVersion()
	if err != nil {
		return err
	}
	if err := db.scanFileNumbers(); err != nil {
		return err
	}
	segs, err := db.unflushedSegments(st, num)
	if err != nil {
		return err
	}
	claimFirst := db.traits.LockFree
	if claimFirst {
		if segs, err = db.takeOver(st.MinLogNum); err != nil {
			return err
		}
	}
	recovered, err := db.replayWAL(segs)
	if err != nil {
		return err
	}
	// The replayed memtables are never published: on success their rows
	// are in tables (flushReplayed releases each after its flush), on
	// failure they are dropped.
	defer unrefAll(recovered)
	if !claimFirst {
		// The directory is locked: no other writer can add a segment, so
		// the claim finds the segments replayed above.
		if _, err := db.takeOver(st.MinLogNum); err != nil {
			return err
		}
	}
	db.removeOrphanTables()
	db.visibleSeq.Store(db.lastSeq)
	return db.flushReplayed(recovered, segs)
}
