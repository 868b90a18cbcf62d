package mayfly

import (
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/wal"
)

// The third stage of a writer's Open: write what the WAL held as level-0
// tables, record in one manifest version that the replayed segments are
// obsolete, start a new WAL segment and collect what earlier writers left
// behind.

// flushReplayed writes the memtables replayWAL returned (oldest first) as
// level-0 tables and records them with a MinLogNum above every replayed
// segment, then starts the new WAL segment and publishes the first read
// state. Each memtable is released, and its entry set to nil, once
// flushed; the caller releases what is left on failure. segs are the
// replayed segments.
func (db *DB) flushReplayed(recovered []*memtable.Memtable, segs []uint64) error {
	var edit versionEdit
	for i, m := range recovered {
		t, err := db.writeL0(m, false, nil, nil, nil, nil)
		if err != nil {
			return err
		}
		m.Unref() // flushed: free its arena before replaying the next
		recovered[i] = nil
		if t != nil {
			edit.added = append(edit.added, addedTable{level: 0, table: t})
		}
	}
	// Record that the replayed segments are obsolete before creating the
	// next one: a crash in between must not leave a torn old segment
	// followed by a newer one.
	num := db.allocFileNum()
	edit.minLogNum = num
	if err := db.logAndApply(&edit); err != nil {
		db.discardTables(tablesOf(edit.added), err)
		return err
	}
	if !db.traits.LockFree {
		// On a lock-free backend the replayed segments carry the fences
		// that stop a previous writer; they stay (below MinLogNum they are
		// never replayed again).
		for _, seg := range segs {
			db.removeQuietly(logName(seg))
		}
	}
	w, err := db.createLogSegment(num)
	if err != nil {
		return err
	}
	db.logWriter, db.logNum, db.mem = w, num, db.newMemtable(num)
	db.mu.Lock()
	db.publishReadState()
	db.mu.Unlock()
	// Every segment below num is now flushed or never held an acknowledged
	// row: collect what a previous writer left behind.
	db.walGC.first = num
	db.collectWAL()
	db.prepareLogSegment()
	return nil
}

func tablesOf(added []addedTable) []*tableFile {
	out := make([]*tableFile, len(added))
	for i, a := range added {
		out[i] = a.table
	}
	return out
}

// createLogSegment creates WAL segment num. On failure it removes whatever
// it created, so that no empty segment is left between two others.
func (db *DB) createLogSegment(num uint64) (*wal.Writer, error) {
	lw, err := wal.CreateLog(db.store, logName(num))
	if err != nil {
		db.removeQuietly(logName(num))
		return nil, err
	}
	return db.startLogSegment(lw, num)
}

// removeOrphanTables deletes SSTables no version lists: leftovers of a
// flush or compaction that crashed before its manifest was written. It runs
// only after a manifest version was read (or, for a new database, after
// checkNoManifestNeeded found no table), so a table is deleted only when a
// readable manifest proves it unreferenced.
func (db *DB) removeOrphanTables() {
	names, err := db.store.List("sst")
	if err != nil {
		return
	}
	live := make(map[uint64]bool)
	for _, t := range db.current.files() {
		live[t.Meta.Num] = true
	}
	for _, name := range names {
		if n, ok := parseNum(name, "sst", ".sst"); ok && !live[n] {
			db.log.Info("mayfly: removing orphan table", "file", name)
			db.deleteObsoleteTable(n)
		}
	}
}
