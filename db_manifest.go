package mayfly

import (
	"errors"
	"fmt"

	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/storage"
)

// logAndApply records the version that results from applying e to the
// current one in a new manifest version, then installs it. Tables the edit
// removes are deleted once no reader needs them. On error nothing changes
// and the tables the edit would have added are the caller's to discard.
func (db *DB) logAndApply(e *versionEdit) error {
	db.manifestMu.Lock()
	defer db.manifestMu.Unlock()

	db.mu.Lock()
	cur := db.current
	levels := e.apply(cur)
	minLog := db.minLogNum
	if e.minLogNum > minLog {
		minLog = e.minLogNum
	}
	st := &manifest.State{
		NextFileNum: db.nextFileNum,
		LastSeq:     db.visibleSeq.Load(),
		ClockHWM:    db.clock.NowMillis(),
		MinLogNum:   minLog,
		WriterEpoch: db.epoch,
	}
	db.mu.Unlock()
	for l, lvl := range levels {
		for _, t := range lvl {
			st.Levels[l] = append(st.Levels[l], t.Meta)
		}
	}
	num := db.manifestNum + 1
	if err := manifest.Write(db.store, num, st); err != nil {
		if errors.Is(err, storage.ErrExists) {
			// Another writer created this version: it has taken over.
			return fmt.Errorf("mayfly: manifest version %d exists: %w", num, ErrFenced)
		}
		return fmt.Errorf("mayfly: write manifest version %d: %w", num, err)
	}
	db.metrics.manifestWrites.Add(1)
	db.manifestNum = num

	next := newVersion(levels)
	moved := make(map[uint64]bool, len(e.added))
	for _, a := range e.added {
		moved[a.table.Meta.Num] = true
	}
	for num := range e.deleted {
		if moved[num] {
			continue // a trivial move keeps the file
		}
		for _, lvl := range cur.levels {
			for _, t := range lvl {
				if t.Meta.Num == num {
					t.obsolete.Store(true)
				}
			}
		}
	}
	db.mu.Lock()
	db.current = next
	db.minLogNum = minLog
	if db.mem != nil {
		db.publishReadState()
	}
	db.cond.Broadcast()
	db.mu.Unlock()
	cur.unref()

	if num > 2 {
		if err := manifest.RemoveOlder(db.store, num-1); err != nil {
			db.log.Warn("mayfly: removing old manifest versions", "err", err)
		}
	}
	return nil
}

// discardTables closes and deletes tables written for an edit that failed.
func (db *DB) discardTables(tables []*tableFile) {
	for _, t := range tables {
		t.reader.Close()
		db.removeQuietly(tableName(t.Meta.Num))
	}
}
