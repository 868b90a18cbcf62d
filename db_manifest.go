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
		NextFileNum:   db.nextFileNum,
		LastSeq:       db.visibleSeq.Load(),
		ClockHWM:      db.clock.NowMillis(),
		MinLogNum:     minLog,
		WriterEpoch:   db.epoch,
		MergeOperator: db.mergeName,
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
		// The version may or may not have been stored (the error can come
		// after the object landed). Never reuse its number, and keep the
		// tables it lists: if it did land they are live, and if not the
		// next Open removes them as orphans.
		db.manifestNum = num
		return fmt.Errorf("mayfly: write manifest version %d: %w: %w", num, errManifestUncertain, err)
	}
	// On a backend without locks a writer that took over may already have
	// moved past this number (and deleted the version we just re-created):
	// make sure nothing newer exists before acting on our version.
	if err := db.checkFencedAbove(num); err != nil {
		db.manifestNum = num
		return err
	}
	db.metrics.manifestWrites.Add(1)
	db.manifestNum = num
	db.walGC.noteManifestWrite(st.ClockHWM)

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
	db.beginInstall()
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
		db.queueObsolete(0, num-1)
	}
	db.endInstall()
	return nil
}

// errManifestUncertain marks a manifest write whose outcome is unknown.
var errManifestUncertain = errors.New("outcome unknown")

// discardTables closes the tables written for an edit that failed and,
// unless the manifest may list them (err is uncertain or a takeover), deletes
// them.
func (db *DB) discardTables(tables []*tableFile, err error) {
	keep := errors.Is(err, errManifestUncertain) || errors.Is(err, ErrFenced)
	for _, t := range tables {
		t.reader.Close()
		if !keep {
			db.removeQuietly(tableName(t.Meta.Num))
		}
	}
}
