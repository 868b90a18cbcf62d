package mayfly

import (
	"errors"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

// removeQuietly removes name, logging (not returning) a failure: the
// callers remove files no version needs, which the next Open finds again
// if they stay.
func (db *DB) removeQuietly(name string) {
	if err := db.store.Remove(name); err != nil && !errors.Is(err, storage.ErrNotExist) {
		db.log.Warn("mayfly: remove failed", "file", name, "err", err)
	}
}

// deleteObsoleteTable deletes a table no version needs, at once or, with
// Options.ObsoleteFileGracePeriod, once the grace period has passed (so
// followers reading an older version keep working).
func (db *DB) deleteObsoleteTable(num uint64) {
	if g := db.opts.ObsoleteFileGracePeriod; g > 0 {
		db.graceMu.Lock()
		db.graceDeletes = append(db.graceDeletes, graceDelete{name: tableName(num), after: time.Now().Add(g)})
		db.graceMu.Unlock()
		return
	}
	db.removeQuietly(tableName(num))
	db.metrics.tablesDeleted.Add(1)
}

// graceDelete is a file to delete once its grace period has passed. The
// list lives in memory: what a crash forgets, the next Open removes as an
// orphan.
type graceDelete struct {
	name  string
	after time.Time
}

// sweepGraceDeletes deletes the files whose grace period has passed. What
// is still pending at Close is left for the next writer's Open, which
// removes such files as orphans (again after the grace period).
func (db *DB) sweepGraceDeletes() {
	now := time.Now()
	db.graceMu.Lock()
	var due []string
	keep := db.graceDeletes[:0]
	for _, g := range db.graceDeletes {
		if now.After(g.after) {
			due = append(due, g.name)
		} else {
			keep = append(keep, g)
		}
	}
	db.graceDeletes = keep
	db.graceMu.Unlock()
	for _, name := range due {
		db.removeQuietly(name)
		db.metrics.tablesDeleted.Add(1)
	}
	if db.walGC.due(db.clock.NowMillis()) {
		db.collectWAL()
	}
}
