package mayfly

import (
	"fmt"
	"math"
	"time"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/sstable"
)

// Get returns the value of key, or ErrNotFound if the key has no live value
// (never written, deleted or expired). The returned slice is the caller's.
func (db *DB) Get(key []byte) ([]byte, error) {
	r, err := db.lookup(key, latestSeq, nowUnread, nil, true)
	if err != nil {
		return nil, err
	}
	return r.Value, nil
}

// GetAppend appends the value of key to dst and returns the extended
// slice, or dst itself and ErrNotFound if the key has no live value; it is
// Get for a caller that reuses a buffer, and allocates nothing when dst
// has room for the value. The result aliases dst's array, never the
// database's memory.
func (db *DB) GetAppend(dst, key []byte) ([]byte, error) {
	return db.getAt(dst, key, latestSeq, nowUnread)
}

// TTL reports how long key has left to live. For a live key with a deadline
// it returns the time remaining (zero at the deadline's own millisecond;
// saturated at the largest Duration, about 292 years) and expires == true; for a live key without one, expires == false. A missing,
// deleted or expired key returns ErrNotFound.
func (db *DB) TTL(key []byte) (remaining time.Duration, expires bool, err error) {
	return db.ttlAt(key, latestSeq, db.clock.NowMillis())
}

// ExpireTime returns when key expires: the last instant (millisecond) at
// which it is still visible, and expires == true; a live key without a
// deadline returns expires == false. A missing, deleted or expired key
// returns ErrNotFound. It is Redis's EXPIRETIME, where TTL is its PTTL.
func (db *DB) ExpireTime(key []byte) (deadline time.Time, expires bool, err error) {
	return db.expireTimeAt(key, latestSeq, nowUnread)
}

func (db *DB) expireTimeAt(key []byte, seq uint64, now int64) (time.Time, bool, error) {
	r, err := db.lookup(key, seq, now, nil, false)
	if err != nil || !r.HasExpiry() {
		return time.Time{}, false, err
	}
	return time.UnixMilli(r.ExpireTS), true, nil
}

// getAt appends the value of key at snapshot sequence seq and time now to
// dst (nil: a new slice of its own); on error it returns dst.
func (db *DB) getAt(dst, key []byte, seq uint64, now int64) ([]byte, error) {
	r, err := db.lookup(key, seq, now, dst, true)
	if err != nil {
		return dst, err
	}
	return r.Value, nil
}

func (db *DB) ttlAt(key []byte, seq uint64, now int64) (time.Duration, bool, error) {
	r, err := db.lookup(key, seq, now, nil, false)
	if err != nil {
		return 0, false, err
	}
	if !r.HasExpiry() {
		return 0, false, nil
	}
	left := r.ExpireTS - now
	if left > int64(math.MaxInt64/time.Millisecond) {
		return time.Duration(math.MaxInt64), true, nil // saturate: ~292 years
	}
	return time.Duration(left) * time.Millisecond, true, nil
}

// latestSeq asks a read for the latest committed state rather than a
// snapshot's sequence number (which may be 0 in an empty database).
const latestSeq = ^uint64(0)

// nowUnread asks lookup to read the clock itself, and only if the row it
// found has an expiry: most rows have none, and a clock read is a system
// call's worth of work (vDSO) on every Get. The time a Get is judged at is
// then an instant during the call, after the lookup, rather than before
// it; either is a time the Get was in progress.
const nowUnread = math.MinInt64

// lookup finds the newest version of key visible at seq (latestSeq: the
// latest committed state) and returns it if it is live at now (nowUnread:
// the clock's time once the row is found). The row's
// bytes may alias a memtable arena, which only the read state keeps alive,
// or a cached block, which only its block reference does, so none leave:
// the returned row has no Key, and its Value is, when withValue is set, a
// copy the caller owns appended to dst (a new slice if dst is nil), else
// nil.
func (db *DB) lookup(key []byte, seq uint64, now int64, dst []byte, withValue bool) (format.Row, error) {
	if err := checkReadKey(key); err != nil {
		return format.Row{}, err
	}
	var rs *readState
	var err error
	if seq == latestSeq {
		rs, seq, err = db.loadReadStateSeq()
	} else {
		rs, err = db.loadReadState()
	}
	if err != nil {
		return format.Row{}, err
	}
	defer rs.release()
	r, ref, found, err := db.findResolved(rs, key, seq)
	defer ref.Release()
	if err != nil {
		return format.Row{}, err
	}
	db.metrics.gets.Add(1)
	if !found || r.IsTombstone() {
		return format.Row{}, ErrNotFound
	}
	if r.HasExpiry() && now == nowUnread {
		now = db.clock.NowMillis()
	}
	if r.ExpiredAt(now) {
		db.metrics.expiredOnRead.Add(1)
		return format.Row{}, ErrNotFound
	}
	db.metrics.rowsRead.Add(1)
	r.Key = nil
	switch {
	case withValue && dst == nil:
		r.Value = append(make([]byte, 0, len(r.Value)), r.Value...)
	case withValue:
		r.Value = append(dst, r.Value...)
	default:
		r.Value = nil
	}
	return r, nil
}

// findResolved is find with a deadline row resolved (format.Resolve): when
// the newest version is a deadline row, the versions below it are looked
// up, down to the value row it applies to, and the row returned is that
// value under the deadline row's deadline. found is false when the key has
// no such value (never written, or a tombstone beneath the deadline rows);
// a tombstone found first is returned as it is. Merge operands among them
// are folded by findMerged (merge_read.go).
func (db *DB) findResolved(rs *readState, key []byte, seq uint64) (format.Row, sstable.BlockRef, bool, error) {
	if s := db.mergeCache.answer(rs.mem, key, seq); s != nil {
		db.metrics.mergeReads.Add(1)
		db.metrics.mergeCacheHits.Add(1)
		return s.row(), sstable.BlockRef{}, s.live, nil
	}
	r, ref, found, err := db.find(rs, key, seq)
	if err != nil || !found || r.Flags&(format.FlagDeadline|format.FlagMerge) == 0 {
		return r, ref, found, err
	}
	if r.IsMerge() {
		ref.Release()
		return db.findMerged(rs, key, seq, r.Seq)
	}
	d := r
	d.Key = nil
	for {
		// Versions beneath a deadline row are read at its sequence number
		// less one: the newest older version, wherever it lives.
		ref.Release()
		if r.Seq == 0 {
			return format.Row{}, sstable.BlockRef{}, false, nil
		}
		if r, ref, found, err = db.find(rs, key, r.Seq-1); err != nil || !found {
			return format.Row{}, ref, false, err
		}
		if r.IsMerge() {
			ref.Release()
			return db.findMerged(rs, key, seq, d.Seq)
		}
		if !r.IsDeadline() {
			v, ok := format.Resolve(&d, &r)
			return v, ref, ok, nil
		}
	}
}

// find returns the newest version of key with Seq <= seq, searching from
// newest to oldest data: memtables, level 0 (newest table first), then each
// sorted level.
// A row found in a table comes with the reference that keeps its block.
func (db *DB) find(rs *readState, key []byte, seq uint64) (format.Row, sstable.BlockRef, bool, error) {
	if r, ok := rs.mem.Get(key, seq); ok {
		return r, sstable.BlockRef{}, true, nil
	}
	for _, m := range rs.imm {
		if r, ok := m.Get(key, seq); ok {
			return r, sstable.BlockRef{}, true, nil
		}
	}
	return db.findInTables(rs, key, seq, 0)
}

// findInTables is find in the tables of levels from and below only.
func (db *DB) findInTables(rs *readState, key []byte, seq uint64, from int) (format.Row, sstable.BlockRef, bool, error) {
	// The tables the lookup may pass, in order; their loaded filters are
	// probed together first (sstable/keyhash.go).
	var buf [maxProbedTables]*tableFile
	cands := buf[:0]
	for _, t := range rs.v.levels[0] {
		if from > 0 || t.Meta.SmallestSeq > seq || !t.Meta.Overlaps(key, key) {
			continue
		}
		cands = append(cands, t)
	}
	for l := max(from, 1); l < len(rs.v.levels); l++ {
		if t := rs.v.findInLevel(l, key); t != nil {
			cands = append(cands, t)
		}
	}
	h := sstable.HashKey(key)
	// probed has bit i set when table i's filter is loaded, maybe bit i
	// when it also may hold key; tables past the first 64 are probed as
	// the lookup reaches them.
	var probed, maybe uint64
	for i, t := range cands[:min(len(cands), 64)] {
		if may, loaded := t.reader.ProbeLoadedFilter(key, h); loaded {
			probed |= 1 << i
			if may {
				maybe |= 1 << i
			}
		}
	}
	for i, t := range cands {
		if i >= 64 || probed&(1<<i) == 0 {
			if r, ref, ok, err := db.tableGet(t, key, seq); ok || err != nil {
				return r, ref, ok, err
			}
			continue
		}
		if maybe&(1<<i) == 0 {
			db.metrics.bloomNegatives.Add(1)
			continue
		}
		if r, ref, ok, err := db.tableGetAfterFilter(t, key, seq); ok || err != nil {
			return r, ref, ok, err
		}
	}
	return format.Row{}, sstable.BlockRef{}, false, nil
}

// maxProbedTables is how many tables find lists without allocating.
const maxProbedTables = 16

func (db *DB) tableGet(t *tableFile, key []byte, seq uint64) (format.Row, sstable.BlockRef, bool, error) {
	if ok, err := t.reader.MayContain(key); !ok {
		if err != nil {
			return format.Row{}, sstable.BlockRef{}, false, err
		}
		db.metrics.bloomNegatives.Add(1)
		return format.Row{}, sstable.BlockRef{}, false, nil
	}
	return db.tableGetAfterFilter(t, key, seq)
}

// tableGetAfterFilter is tableGet once t's filter said it may hold key.
func (db *DB) tableGetAfterFilter(t *tableFile, key []byte, seq uint64) (format.Row, sstable.BlockRef, bool, error) {
	r, ref, ok, err := t.reader.GetAfterFilter(key, seq)
	if err != nil {
		return format.Row{}, ref, false, err
	}
	if !ok {
		db.metrics.bloomFalsePositives.Add(1)
	}
	return r, ref, ok, nil
}

func checkReadKey(key []byte) error {
	if len(key) == 0 {
		return ErrEmptyKey
	}
	if len(key) > MaxKeySize {
		return fmt.Errorf("%w: %d bytes (limit %d)", ErrKeyTooLarge, len(key), MaxKeySize)
	}
	return nil
}
