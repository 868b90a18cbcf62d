package mayfly

import "time"

// minAgeRotation is the youngest a memtable may be when it is rotated for
// the age of its rows (Options.MemtableExpiryFraction): it caps age
// rotations at one per second, however short the TTLs.
const minAgeRotation = time.Second

// dueForAgeRotation reports whether the active memtable should be rotated
// because of the age of its rows with an expiry: the time since the first of them was written has reached
// MemtableExpiryFraction of the time from that write to the earliest
// deadline among them, and at least minAgeRotation. Rotating then lets the
// rows reach a level-0 table before most of them expire, where a whole-file
// drop removes them, instead of lingering in the WAL until the memtable
// fills. now is a reading of the clock. Caller holds commitMu.
func (db *DB) dueForAgeRotation(now int64) bool {
	f := db.opts.MemtableExpiryFraction
	if f <= 0 {
		return false
	}
	first, minExpire, ok := db.mem.ExpirySummary()
	if !ok {
		return false
	}
	age := now - first
	if age < minAgeRotation.Milliseconds() {
		return false
	}
	return float64(age) >= f*float64(minExpire-first)
}

// maybeRotateByAge rotates an idle database's active memtable when it is
// due for age rotation, so that expired rows leave the WAL without further
// writes. It is called by the compaction scheduler on every wake-up (timer
// tick, clock advance, flush); a busy writer makes the same check in
// makeRoomForWrite, so the commit lock is only tried, never waited for.
func (db *DB) maybeRotateByAge() {
	if db.opts.ReadOnly || db.opts.MemtableExpiryFraction <= 0 || !db.commitMu.TryLock() {
		return
	}
	defer db.commitMu.Unlock()
	db.mu.Lock()
	ok := !db.closed && db.bgErr == nil && len(db.imm) < db.opts.MaxImmutableMemtables
	db.mu.Unlock()
	if ok && db.dueForAgeRotation(db.clock.NowMillis()) {
		if err := db.rotateMemtable(); err != nil {
			db.log.Warn("mayfly: rotating memtable by age", "err", err)
		}
	}
}
