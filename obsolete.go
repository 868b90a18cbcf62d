package mayfly

import (
	"errors"
	"sync"
	"time"

	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/storage"
)

// Obsolete files — tables no version needs and manifest versions older
// than the one before the newest — are removed on a goroutine of their own
// (DB.obsoleteLoop). Whoever drops a table's last reference (a read
// releasing its read state, a flush or a compaction installing a version)
// and the manifest writer retiring older versions only queue the names, so
// that an unlink (on ext4 it frees the file's blocks and cached pages) or a
// DELETE request on an object store never sits on a read's, a flush's or a
// commit's path. Only files no version needs are queued: a crash leaves at
// worst such a file behind, which the next Open removes as an orphan.
//
// Before the loop starts (during Open) and after it stops (Close, once the
// last version is released), removals run on the caller's goroutine.
type obsoleteFiles struct {
	mu            sync.Mutex
	idle          sync.Cond // broadcast when a batch is done
	tables        []uint64  // tables to remove
	manifestBelow uint64    // remove manifest versions below this (0: none)
	manifestDone  uint64    // versions below this were removed
	queued        uint64    // queueObsolete calls so far
	handled       uint64    // of those, the ones whose removal has run
	installing    int       // logAndApply calls between installing a version and queuing what the old one held
	running       bool      // loop runs: queue, do not remove inline
	kick          chan struct{}
	done          chan struct{}
}

// startObsoleteLoop starts the goroutine that removes obsolete files.
func (db *DB) startObsoleteLoop() {
	o := &db.obsolete
	o.idle.L = &o.mu
	o.kick = make(chan struct{}, 1)
	o.done = make(chan struct{})
	o.mu.Lock()
	o.running = true
	o.mu.Unlock()
	go db.obsoleteLoop()
}

// stopObsoleteLoop removes what is queued and stops the loop; removals
// after it run inline. Close calls it once the last version is released.
func (db *DB) stopObsoleteLoop() {
	o := &db.obsolete
	o.mu.Lock()
	if !o.running {
		o.mu.Unlock()
		return
	}
	o.running = false
	close(o.kick) // under mu: a queuer that saw running has sent already
	o.mu.Unlock()
	<-o.done
}

func (db *DB) obsoleteLoop() {
	o := &db.obsolete
	defer close(o.done)
	for range o.kick {
		db.removeObsoleteBatch()
	}
	db.removeObsoleteBatch()
}

// removeObsoleteBatch removes everything queued so far.
func (db *DB) removeObsoleteBatch() {
	o := &db.obsolete
	o.mu.Lock()
	tables, below, upTo := o.tables, o.manifestBelow, o.queued
	o.tables = nil
	if below <= o.manifestDone {
		below = 0
	}
	o.mu.Unlock()
	db.removeObsoleteNow(tables, below)
	o.mu.Lock()
	if below > o.manifestDone {
		o.manifestDone = below
	}
	o.handled = upTo
	o.idle.Broadcast()
	o.mu.Unlock()
}

// waitObsoleteRemoved returns once every file queued before the call is
// removed (or its removal failed and was logged), and first, if a version
// is being installed, once that install has queued what the version it
// replaced held: a caller that no longer finds a table in the current
// version then never returns before the table's removal is queued.
func (db *DB) waitObsoleteRemoved() {
	o := &db.obsolete
	o.mu.Lock()
	for o.running && o.installing > 0 {
		o.idle.Wait()
	}
	for target := o.queued; o.running && o.handled < target; {
		o.idle.Wait()
	}
	o.mu.Unlock()
}

// beginInstall and endInstall bracket logAndApply's install of a version
// and its release of the version before it (which queues the tables only
// that one held): begin before the new version is visible, end once the
// old one is released. waitObsoleteRemoved waits for the end.
func (db *DB) beginInstall() {
	o := &db.obsolete
	o.mu.Lock()
	o.installing++
	o.mu.Unlock()
}

func (db *DB) endInstall() {
	o := &db.obsolete
	o.mu.Lock()
	o.installing--
	o.idle.Broadcast()
	o.mu.Unlock()
}

// queueObsolete hands table num (if nonzero) and the manifest versions
// below manifestBelow (if nonzero) to the loop, or removes them inline
// when it does not run.
func (db *DB) queueObsolete(num, manifestBelow uint64) {
	o := &db.obsolete
	o.mu.Lock()
	if !o.running {
		o.mu.Unlock()
		var tables []uint64
		if num != 0 {
			tables = []uint64{num}
		}
		db.removeObsoleteNow(tables, manifestBelow)
		return
	}
	if num != 0 {
		o.tables = append(o.tables, num)
	}
	o.queued++
	o.manifestBelow = max(o.manifestBelow, manifestBelow)
	select { // under mu, so that stopObsoleteLoop cannot close kick meanwhile
	case o.kick <- struct{}{}:
	default:
	}
	o.mu.Unlock()
}

// removeObsoleteNow removes tables and, if manifestBelow is nonzero, the
// manifest versions below it, on the caller's goroutine.
func (db *DB) removeObsoleteNow(tables []uint64, manifestBelow uint64) {
	for _, n := range tables {
		db.removeQuietly(tableName(n))
		db.metrics.tablesDeleted.Add(1)
	}
	if manifestBelow == 0 {
		return
	}
	if err := manifest.RemoveOlder(db.store, manifestBelow); err != nil {
		db.log.Warn("mayfly: removing old manifest versions", "err", err)
	}
}

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
		db.graceDeletes = append(db.graceDeletes, graceDelete{num: num, after: time.Now().Add(g)})
		db.graceMu.Unlock()
		return
	}
	db.queueObsolete(num, 0)
}

// graceDelete is a table to delete once its grace period has passed. The
// list lives in memory: what a crash forgets, the next Open removes as an
// orphan.
type graceDelete struct {
	num   uint64
	after time.Time
}

// sweepGraceDeletes queues the tables whose grace period has passed. What
// is still pending at Close is left for the next writer's Open, which
// removes such files as orphans (again after the grace period).
func (db *DB) sweepGraceDeletes() {
	now := time.Now()
	db.graceMu.Lock()
	var due []uint64
	keep := db.graceDeletes[:0]
	for _, g := range db.graceDeletes {
		if now.After(g.after) {
			due = append(due, g.num)
		} else {
			keep = append(keep, g)
		}
	}
	db.graceDeletes = keep
	db.graceMu.Unlock()
	for _, num := range due {
		db.queueObsolete(num, 0)
	}
	if db.walGC.due(db.clock.NowMillis()) {
		db.collectWAL()
	}
}
