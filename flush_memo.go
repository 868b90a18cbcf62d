package mayfly

import (
	"bytes"
	"slices"

	"github.com/mayflydb/mayfly/format"
)

// The flush memo: a flush of a memtable holding merge operands reads, for
// each key it folds, the key's state in the tables beneath (RFC 0010, rule
// 8: stateBeneath), a point lookup per key. For a counter written in every
// memtable, that state is the row the previous flush wrote for it. So each
// flush remembers, for the keys it looked up, the first row it wrote for
// the key when that row is a base (a value row or a tombstone: neither an
// operand nor a deadline row), and the next flush takes the state from
// there instead of the tables.
//
// Why it is exact: the tables beneath the next flush's memtable are those
// beneath this one plus this flush's table; that table is the newest of
// them, and the first row written for a key is its newest version there,
// so it is the newest version of the key in every table beneath, and a
// base: the lookup would have stopped at it and resolved it alone.
// Compactions in between keep the state of every version they keep (RFC
// 0010, "A state met twice"; expired values protected by DeadlineAbove),
// except compaction filters, which may rewrite a row: a database with
// filters keeps no memo. The memo passes from one flush to the next only
// when the first one's table was recorded; flushes run one at a time, in
// memtable order, on the flush goroutine (flushLoop), which alone touches
// db.flushMemo. A key the memo does not hold is looked up as before.
// RFC 0010, "The flush memo", has the measurements.

// flushMemoMaxKeys and flushMemoMaxBytes bound a memo (its keys, and the
// bytes of their keys and values): a flush stops recording once either is
// reached (its heap at the bounds: RFC 0010, "The flush memo").
const (
	flushMemoMaxKeys  = 1 << 14
	flushMemoMaxBytes = 2 << 20
)

// flushMemo is the states one flush left the keys it looked up in. A flush
// writes its keys in ascending order, so rows is sorted by key, and the
// next flush looks its keys up in ascending order too: get walks a cursor
// forward (a merge of the two sorted sequences, no hashing), and searches
// only if asked for a key before the cursor's.
type flushMemo struct {
	rows  []memoRow // by ascending key
	keys  []byte    // the rows' keys
	arena []byte    // the rows' values
	pos   int       // get's cursor: rows before it sort at or before the last key asked for
	// want is the key whose state this flush looked up last: its first
	// row written is recorded. last is the key of the last row written.
	want, last []byte
	full       bool // a bound was reached: nothing more is recorded
}

// memoRow is a remembered row: its key is keys[koff:koff+kn], its value
// arena[off:off+n].
type memoRow struct {
	seq, ts, expireTS uint64
	flags             uint8
	koff, kn, off, n  uint32
}

// key returns row i's key.
func (f *flushMemo) key(i int) []byte {
	m := &f.rows[i]
	return f.keys[m.koff : m.koff+m.kn : m.koff+m.kn]
}

// get returns the row remembered for key, if any.
func (f *flushMemo) get(key []byte) (memoRow, bool) {
	if f.pos > 0 && bytes.Compare(key, f.key(f.pos-1)) <= 0 {
		f.pos, _ = slices.BinarySearchFunc(f.rows, key, func(m memoRow, k []byte) int {
			return bytes.Compare(f.keys[m.koff:m.koff+m.kn], k)
		})
	}
	for f.pos < len(f.rows) {
		switch c := bytes.Compare(f.key(f.pos), key); {
		case c == 0:
			f.pos++
			return f.rows[f.pos-1], true
		case c > 0:
			return memoRow{}, false
		}
		f.pos++
	}
	return memoRow{}, false
}

// newFlushMemo returns a memo for a flush to record, sized like prev (the
// previous flush's, or nil), or nil when the database keeps none (no merge
// operator, or compaction filters).
func (db *DB) newFlushMemo(prev *flushMemo) *flushMemo {
	if db.opts.MergeOperator == nil || len(db.opts.CompactionFilters) > 0 {
		return nil
	}
	if prev == nil {
		return &flushMemo{}
	}
	return &flushMemo{rows: make([]memoRow, 0, len(prev.rows)), keys: make([]byte, 0, len(prev.keys)),
		arena: make([]byte, 0, len(prev.arena))}
}

// memoBeneath wraps below so that a key the memo prev holds is answered from
// it (nil prev: below alone), and so that the keys looked up are recorded
// in next (nil: nothing recorded).
func (db *DB) memoBeneath(below beneathFunc, prev, next *flushMemo) beneathFunc {
	if below == nil || prev == nil && next == nil {
		return below
	}
	return func(key []byte) (format.Row, bool, error) {
		if next != nil {
			next.want = append(next.want[:0], key...)
		}
		if prev != nil {
			if m, ok := prev.get(key); ok {
				db.metrics.flushMemoHits.Add(1)
				return prev.resolve(key, m, db.merger())
			}
		}
		return below(key)
	}
}

// resolve returns the state remembered row m of key resolves to, as
// stateBeneath would from the table holding it.
func (f *flushMemo) resolve(key []byte, m memoRow, merger format.Merger) (format.Row, bool, error) {
	c := chainPool.Get().(*mergeChain)
	defer c.release()
	r := format.Row{Seq: m.seq, TS: int64(m.ts), ExpireTS: int64(m.expireTS), Flags: m.flags,
		Value: f.arena[m.off : m.off+m.n : m.off+m.n]}
	c.add(&r)
	return c.resolveOwned(key, merger)
}

// written records r, a row the flush wrote, if it is the first row of its
// key, that key was the one looked up last, and r is a base.
func (f *flushMemo) written(r *format.Row) {
	first := f.last == nil || !bytes.Equal(r.Key, f.last)
	f.last = append(f.last[:0], r.Key...)
	if !first || !bytes.Equal(r.Key, f.want) || f.full || r.Flags&(format.FlagMerge|format.FlagDeadline) != 0 {
		return
	}
	if len(f.rows) >= flushMemoMaxKeys || len(f.keys)+len(r.Key)+len(f.arena)+len(r.Value) > flushMemoMaxBytes ||
		len(f.rows) > 0 && bytes.Compare(r.Key, f.key(len(f.rows)-1)) <= 0 {
		// Full, or (never from a flush, which writes keys in order) a key
		// out of order: the memo would not be sorted.
		f.full = true
		return
	}
	f.rows = append(f.rows, memoRow{seq: r.Seq, ts: uint64(r.TS), expireTS: uint64(r.ExpireTS), flags: r.Flags,
		koff: uint32(len(f.keys)), kn: uint32(len(r.Key)), off: uint32(len(f.arena)), n: uint32(len(r.Value))})
	f.keys = append(f.keys, r.Key...)
	f.arena = append(f.arena, r.Value...)
}
