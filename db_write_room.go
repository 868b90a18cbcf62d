package mayfly

import (
	"fmt"
	"time"
)

// Room for writes: rotation of a full memtable, and the stalls and
// slowdowns that hold writes while flushes and level 0 catch up (RFC 0003,
// "Rotation, slowdowns and stalls").

// lastMemtableDiv bounds the active memtable while MaxImmutableMemtables
// frozen memtables wait for their flush: it takes writes up to
// MemtableSize/lastMemtableDiv, then writes stall until a flush ends
// (rather than at MemtableSize, as when fewer wait).
//
// Why: a flush that falls behind a bulk load otherwise lets three full
// memtables live at once (the flushing one, one waiting and the active
// one), and that third arena sets the fill's peak resident memory. With a
// quarter at most 2.25 memtables are live, and writes still run on while
// the second frozen memtable waits instead of stalling on every flush
// (RFC 0003, "Memtables alive at the fill peak").
const lastMemtableDiv = 4

// roomGrant is makeRoomForWrite's last finding that a commit group may go
// ahead at once: no rotation due, no stall, level 0 below the slowdown
// threshold and nothing owed. Until what it rests on changes, a later group
// needs only the checks that can turn without it (roomAtOnce), not
// makeRoomForWrite's db.mu and its walk of level 0. It rests on:
//
//   - rs, the read state it was made under: a flush, a compaction, a
//     rotation or Close publishes another (the version, the frozen
//     memtables);
//   - epoch, db.roomEpoch then: a background error or Close raises it;
//   - when level 0 holds short-lived tables (clockBound), the clock's
//     millisecond now: their count grows as their drops come due.
//
// It is guarded by commitMu; rotateMemtable clears it (a seal whose
// successor segment failed leaves the read state as it was).
type roomGrant struct {
	rs         *readState
	epoch      uint64
	immFull    bool // MaxImmutableMemtables frozen memtables were waiting
	clockBound bool
	now        int64
}

// roomAtOnce reports whether db.room still lets a commit group go ahead
// without makeRoomForWrite: the grant's state is current, and the active
// memtable is neither full (a quarter of MemtableSize while the frozen ones
// are at their limit: the stall) nor due for age rotation, at the clock
// reading now. Caller holds commitMu.
func (db *DB) roomAtOnce(now int64) bool {
	g := &db.room
	if g.rs == nil || g.rs != db.readState.Load() || g.epoch != db.roomEpoch.Load() {
		return false
	}
	limit := db.opts.MemtableSize
	if g.immFull {
		limit /= lastMemtableDiv
	}
	if db.mem.Size() >= limit {
		return false
	}
	if g.clockBound && now > g.now {
		return false
	}
	return g.immFull || !db.dueForAgeRotation(now)
}

// makeRoomForWrite rotates a full memtable, or one due for rotation by the
// age of its rows with an expiry (dueForAgeRotation), stalls while flushes or
// level-0 compactions are too far behind, and delays a commit group of bytes
// while level 0 is between the slowdown and stop thresholds
// (db_write_slowdown.go). The caller holds commitMu.
func (db *DB) makeRoomForWrite(bytes int) error {
	var stallStart, slowStart time.Time
	var reason string
	defer func() {
		if !stallStart.IsZero() {
			d := time.Since(stallStart)
			db.metrics.stallNanos.Add(uint64(d))
			db.opts.EventListener.stallEnd(StallInfo{Reason: reason, Duration: d})
		}
		if !slowStart.IsZero() {
			db.metrics.slowdowns.Add(1)
			db.metrics.slowdownNanos.Add(uint64(time.Since(slowStart)))
		}
	}()
	charged := false
	db.mu.Lock()
	for {
		if db.closed {
			db.mu.Unlock()
			return ErrClosed
		}
		if db.bgErr != nil {
			err := db.bgErr
			db.mu.Unlock()
			return err
		}
		// Level 0 as the thresholds see it, counted once per pass (it walks
		// level 0's tables); 0 when nothing would compact it.
		l0, clockBound, censusNow := 0, false, int64(0)
		if !db.opts.DisableAutoCompaction {
			l0, clockBound, censusNow = db.l0StallFiles()
		}
		switch {
		case l0 >= db.opts.L0StopWritesThreshold,
			len(db.imm) >= db.opts.MaxImmutableMemtables && db.mem.Size() >= db.opts.MemtableSize/lastMemtableDiv:
			if stallStart.IsZero() {
				stallStart = time.Now()
				reason = "memtables"
				if l0 >= db.opts.L0StopWritesThreshold {
					reason = "l0"
				}
				db.opts.EventListener.stallBegin(StallInfo{Reason: reason})
				db.metrics.stalls.Add(1)
				db.log.Info("mayfly: write stall", "l0Files", len(db.current.levels[0]), "immutableMemtables", len(db.imm))
			}
			db.kickFlush()
			db.kickCompaction()
			db.cond.Wait()
		case db.mem.Size() >= db.opts.MemtableSize, db.logWriter.Sealed(),
			len(db.imm) < db.opts.MaxImmutableMemtables && db.dueForAgeRotation(db.clock.NowMillis()):
			db.mu.Unlock()
			if err := db.rotateMemtable(); err != nil {
				return err
			}
			db.mu.Lock()
		default:
			grant := roomGrant{rs: db.readState.Load(), epoch: db.roomEpoch.Load(),
				immFull: len(db.imm) >= db.opts.MaxImmutableMemtables, clockBound: clockBound, now: censusNow}
			db.mu.Unlock()
			if l0 < db.opts.L0SlowdownWritesThreshold {
				db.slowdown.debt = 0 // level 0 caught up: nothing more is owed
				db.room = grant
				return nil
			}
			if !charged {
				charged = true
				db.slowdown.debt += slowdownDelay(l0, db.opts.L0SlowdownWritesThreshold, db.opts.L0StopWritesThreshold, bytes)
			}
			d := db.slowdown.next()
			if d == 0 {
				return nil
			}
			if slowStart.IsZero() {
				slowStart = time.Now()
				db.kickCompaction()
			}
			db.slowdown.sleep(d)
			// Level 0 is looked at again before sleeping on: a compaction
			// that finished meanwhile forgives the rest of the debt.
			db.mu.Lock()
		}
	}
}

// rotateMemtable freezes the active memtable and starts a new WAL segment
// for its successor. The old segment is sealed first (sealActiveLog): the
// seal reaches the operating system before any record of the new segment
// does, and its sync runs in the background, which every sync of the new
// segment waits for (wal package, "Seals"). It first waits
// until every logged batch is applied and published, so that no writer is
// still inserting into the memtable it freezes and the flush of that
// memtable covers every sequence number logged to its segment. Caller holds
// commitMu.
func (db *DB) rotateMemtable() error {
	db.room = roomGrant{}
	if err := db.pub.wait(); err != nil {
		return err
	}
	seal, err := db.sealActiveLog()
	if err != nil {
		return db.setBackgroundError(fmt.Errorf("WAL seal at rotation: %w", err))
	}
	w, num, err := db.nextLogSegment()
	if err != nil {
		// Nothing else changed: the sealed segment takes no more records,
		// so the next write rotates again (makeRoomForWrite).
		db.watchSeal(seal, nil)
		return err
	}
	w.After(seal)
	// On a lock-free backend a writer that took over after our last
	// manifest write would not know this segment: refuse to use it.
	if err := db.checkFenced(); err != nil {
		w.Close()
		db.watchSeal(seal, nil)
		return db.setBackgroundError(err)
	}
	old := db.logWriter
	db.mu.Lock()
	db.imm = append(db.imm, db.mem)
	db.mem = db.newMemtable(num)
	db.logWriter, db.logNum = w, num
	db.publishReadState()
	db.mu.Unlock()
	db.watchSeal(seal, old) // closes old once its seal is durable
	db.kickFlush()
	return nil
}

func (db *DB) kickFlush() {
	select {
	case db.flushKick <- struct{}{}:
	default:
	}
}

func (db *DB) kickCompaction() {
	select {
	case db.compKick <- struct{}{}:
	default:
	}
}
