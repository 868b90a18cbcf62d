package mayfly

import (
	"sync"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

// walGCRescanInterval is how often, by the DB's clock, a writer that keeps
// writing manifest versions lists the WAL again for segments left below its
// first one (a fenced writer may create one after the takeover's scan). An
// idle writer never rescans.
const walGCRescanInterval = 10 * time.Minute

// walGC deletes the WAL segments a writer finds below its own first
// segment. At Open the writer has flushed every segment it replayed and
// recorded, in the manifest, a MinLogNum equal to its first segment, so a
// segment below it is either flushed (its rows are in tables the manifest
// lists) or was created by a fenced writer after the takeover listed the
// WAL, which that writer then abandoned without acknowledging a row in it
// (rotateMemtable checks for a newer manifest version before using a new
// segment, and the takeover wrote its version before listing).
//
// A segment goes once Options.ObsoleteFileGracePeriod has passed (by the
// DB's clock) since the writer first saw it, so a follower replaying it
// keeps working; followers keep the rows they replayed until they load the
// manifest that covers them anyway. On a backend without locks a fenced
// segment is released rather than removed: its empty fence marker stays,
// so a fenced writer that has not noticed yet still fails instead of
// acknowledging writes into a log nobody will read (see
// storage.LogReleaser).
type walGC struct {
	run sync.Mutex // one collection at a time

	mu       sync.Mutex
	first    uint64           // the writer's first segment; 0 until Open set it
	deadline map[uint64]int64 // segment → clock millis from which it may go
	rescan   bool
	lastScan int64

	// Flushed segments waiting for deleteFlushedLoop; both guarded by the
	// DB's mu. Flush waits until pending is 0.
	flushed []uint64
	pending int
	kick    chan struct{} // wakes deleteFlushedLoop; made and closed by flushLoop
}

// due reports whether a collection has work: a segment whose grace period
// has passed, or a rescan.
func (g *walGC) due(now int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.first == 0 {
		return false
	}
	if g.rescan {
		return true
	}
	for _, dl := range g.deadline {
		if now >= dl {
			return true
		}
	}
	return false
}

// noteManifestWrite asks for a rescan if the last one is old.
func (g *walGC) noteManifestWrite(now int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.first != 0 && now-g.lastScan >= walGCRescanInterval.Milliseconds() {
		g.rescan = true
	}
}

// collectWAL lists the WAL (one LIST on an object store) and deletes the
// segments below the writer's first one whose grace period has passed.
// Failures are logged; the segment is tried again at the next collection.
func (db *DB) collectWAL() {
	g := &db.walGC
	g.run.Lock()
	defer g.run.Unlock()
	now := db.clock.NowMillis()
	g.mu.Lock()
	first := g.first
	g.rescan = false
	g.lastScan = now
	g.mu.Unlock()
	if first == 0 {
		return
	}
	logs, err := storage.ListLogs(db.store, "wal")
	if err != nil {
		db.log.Warn("mayfly: listing the WAL for old segments", "err", err)
		return
	}
	var doomed []uint64
	g.mu.Lock()
	old := g.deadline
	g.deadline = make(map[uint64]int64)
	for _, l := range logs {
		if l.Reader != nil {
			l.Reader.Close()
		}
		n, ok := parseNum(l.Name, "wal", ".wal")
		if !ok || n >= first || l.FenceOnly {
			continue
		}
		dl, seen := old[n]
		if !seen {
			dl = now + max(db.opts.ObsoleteFileGracePeriod.Milliseconds(), 0)
		}
		if now >= dl {
			doomed = append(doomed, n)
		} else {
			g.deadline[n] = dl
		}
	}
	g.mu.Unlock()

	releaser, releases := storage.As[storage.LogReleaser](db.store)
	if db.traits.LockFree && !releases {
		// Removing a fenced segment whole would remove its fence too.
		return
	}
	for _, n := range doomed {
		name := logName(n)
		var err error
		if releases {
			_, err = releaser.ReleaseLog(name)
		} else {
			err = db.store.Remove(name)
		}
		if err != nil {
			db.log.Warn("mayfly: deleting an old WAL segment; will retry", "file", name, "err", err)
			g.mu.Lock()
			g.deadline[n] = now
			g.mu.Unlock()
			continue
		}
		db.log.Info("mayfly: deleted an old WAL segment", "file", name)
		db.opts.EventListener.walDeleted(name)
	}
}

// Flushed segments. Once a flush has recorded its table in the manifest,
// the memtable's WAL segment holds nothing the database needs. Deleting it
// (an unlink that frees the file's blocks, or a DELETE request on an object
// store) is left to a goroutine of its own, deleteFlushedLoop, so that the
// flush goroutine starts on the next frozen memtable at once: with small
// memtables the flush is what the writer waits for. Only segments that a
// manifest version already covers (below its MinLogNum) are queued, so a
// crash at any point leaves at worst such a segment behind, which the next
// Open skips and walGC collects.

// queueFlushedSegment hands segment n, which the manifest no longer needs,
// to deleteFlushedLoop. The caller counted it in walGC.pending, under db.mu,
// when it removed the segment's memtable from db.imm, so that Flush never
// sees neither.
func (db *DB) queueFlushedSegment(n uint64) {
	g := &db.walGC
	db.mu.Lock()
	g.flushed = append(g.flushed, n)
	db.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// deleteFlushedLoop deletes the segments queueFlushedSegment hands it, in
// order, reporting each with the WALDeleted event, until flushLoop closes
// walGC.kick as it stops; then it deletes those still queued and returns.
func (db *DB) deleteFlushedLoop() {
	defer db.bgDone.Done()
	for range db.walGC.kick {
		db.deleteFlushedSegments()
	}
	db.deleteFlushedSegments()
}

func (db *DB) deleteFlushedSegments() {
	g := &db.walGC
	db.mu.Lock()
	batch := g.flushed
	g.flushed = nil
	db.mu.Unlock()
	for _, n := range batch {
		db.removeQuietly(logName(n))
		db.opts.EventListener.walDeleted(logName(n))
	}
	db.mu.Lock()
	g.pending -= len(batch)
	db.cond.Broadcast()
	db.mu.Unlock()
}
