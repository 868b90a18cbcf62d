package mayfly

import (
	"bytes"
	"iter"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/merge"
)

// IterOptions bound an iterator. Nil bounds are open.
type IterOptions struct {
	// LowerBound is the smallest key the iterator returns (inclusive).
	LowerBound []byte
	// UpperBound is the key the iterator stops before (exclusive).
	UpperBound []byte
}

// Iterator walks the live keys of a database or snapshot in key order, in
// either direction. It reads a consistent view fixed when it was created
// (sequence number and clock time): later writes and later expiries do not
// change what it returns. An Iterator is not safe for concurrent use. Close
// it when done: it pins the files it reads.
type Iterator struct {
	db    *DB
	rs    *readState
	m     *merge.Iterator
	seq   uint64
	now   int64
	lower []byte
	upper []byte

	valid    bool
	forward  bool
	key      []byte
	value    []byte // aliases iterator memory when moving forward
	valueBuf []byte
	err      error
	closed   bool
	// rowsRead counts rows returned but not yet added to the database's
	// RowsRead metric: adding them in batches keeps a shared atomic
	// counter out of the per-row path (see flushRowsRead).
	rowsRead uint64
}

// rowsReadBatch is how many returned rows an iterator counts locally
// before adding them to the RowsRead metric.
const rowsReadBatch = 256

// countRow counts one returned row.
func (it *Iterator) countRow() {
	it.rowsRead++
	if it.rowsRead >= rowsReadBatch {
		it.flushRowsRead()
	}
}

// flushRowsRead adds the locally counted rows to the RowsRead metric.
func (it *Iterator) flushRowsRead() {
	if it.rowsRead > 0 {
		it.db.metrics.rowsRead.Add(it.rowsRead)
		it.rowsRead = 0
	}
}

// NewIter returns an iterator over the database as of now. opts may be nil.
// The iterator is unpositioned: call First, Last, SeekGE or SeekLT.
func (db *DB) NewIter(opts *IterOptions) (*Iterator, error) {
	return db.newIter(opts, latestSeq, db.clock.NowMillis())
}

// newIter returns an iterator at snapshot sequence seq, or at the latest
// committed state when seq is latestSeq.
func (db *DB) newIter(opts *IterOptions, seq uint64, now int64) (*Iterator, error) {
	var rs *readState
	var err error
	if seq == latestSeq {
		rs, seq, err = db.loadReadStateSeq()
	} else {
		rs, err = db.loadReadState()
	}
	if err != nil {
		return nil, err
	}
	it := &Iterator{db: db, rs: rs, seq: seq, now: now}
	if opts != nil {
		it.lower = cloneBytes(opts.LowerBound)
		it.upper = cloneBytes(opts.UpperBound)
	}
	// Memtables and level-0 tables overlap, so each is its own child of the
	// merge; each sorted level is one child that opens a table at a time.
	// Tables wholly outside the bounds are left out.
	children := make([]format.Iterator, 0, 1+len(rs.imm)+len(rs.v.levels[0])+len(rs.v.levels)-1)
	children = append(children, rs.mem.NewIter())
	for _, m := range rs.imm {
		children = append(children, m.NewIter())
	}
	for _, t := range rs.v.levels[0] {
		if inBounds(t, it.lower, it.upper) {
			children = append(children, t.reader.NewIter())
		}
	}
	for _, lvl := range rs.v.levels[1:] {
		if tables := tablesInBounds(lvl, it.lower, it.upper); len(tables) > 0 {
			children = append(children, newLevelIter(tables, it.lower, it.upper))
		}
	}
	it.m = merge.New(children...)
	return it, nil
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// First moves to the first key >= LowerBound.
func (it *Iterator) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	if it.closed {
		return false
	}
	it.m.First()
	return it.findNext(false)
}

// Last moves to the last key < UpperBound.
func (it *Iterator) Last() bool {
	if it.upper != nil {
		return it.SeekLT(it.upper)
	}
	if it.closed {
		return false
	}
	it.m.Last()
	return it.findPrev()
}

// SeekGE moves to the first key >= key (and >= LowerBound).
func (it *Iterator) SeekGE(key []byte) bool {
	if it.closed {
		return false
	}
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.m.SeekGE(key)
	return it.findNext(false)
}

// SeekLT moves to the last key < key (and < UpperBound).
func (it *Iterator) SeekLT(key []byte) bool {
	if it.closed {
		return false
	}
	if it.upper != nil && bytes.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	it.m.SeekLT(key)
	return it.findPrev()
}

// Next moves to the following key.
func (it *Iterator) Next() bool {
	if !it.valid {
		return false
	}
	if it.forward {
		it.m.Next()
	} else {
		// The merge sits before the current key; step back onto it.
		it.m.SeekGE(it.key)
	}
	return it.findNext(true)
}

// Prev moves to the preceding key.
func (it *Iterator) Prev() bool {
	if !it.valid {
		return false
	}
	if it.forward {
		it.m.SeekLT(it.key)
	}
	return it.findPrev()
}

// findNext moves forward from the merge's position to the newest visible
// version of the next live key. With skipCurrent, versions of it.key are
// passed over first.
func (it *Iterator) findNext(skipCurrent bool) bool {
	it.forward = true
	it.valid = false
	skipping := skipCurrent
	for ok := it.m.Valid(); ok; ok = it.m.Next() {
		r := it.m.Row()
		if r.Seq > it.seq {
			continue
		}
		if skipping && bytes.Equal(r.Key, it.key) {
			continue
		}
		if it.upper != nil && bytes.Compare(r.Key, it.upper) >= 0 {
			break
		}
		// r is the newest visible version of r.Key.
		it.key = append(it.key[:0], r.Key...)
		skipping = true
		if r.IsTombstone() {
			continue
		}
		if r.ExpiredAt(it.now) {
			it.db.metrics.expiredOnRead.Add(1)
			continue
		}
		it.value = r.Value
		it.valid = true
		it.countRow()
		return true
	}
	it.err = it.m.Error()
	return false
}

// findPrev moves backward from the merge's position to the previous live
// key. Versions arrive oldest first, so the last visible version seen
// before the key changes is the newest.
func (it *Iterator) findPrev() bool {
	it.forward = false
	it.valid = false
	have := false // it.key/valueBuf hold a live candidate
	for ok := it.m.Valid(); ok; ok = it.m.Prev() {
		r := it.m.Row()
		if r.Seq > it.seq {
			continue
		}
		if it.lower != nil && bytes.Compare(r.Key, it.lower) < 0 {
			break
		}
		if have && bytes.Compare(r.Key, it.key) < 0 {
			break
		}
		if r.IsTombstone() || r.ExpiredAt(it.now) {
			have = false
			continue
		}
		it.key = append(it.key[:0], r.Key...)
		it.valueBuf = append(it.valueBuf[:0], r.Value...)
		have = true
	}
	if err := it.m.Error(); err != nil {
		it.err = err
		return false
	}
	if have {
		it.value = it.valueBuf
		it.valid = true
		it.countRow()
	}
	return have
}

// Valid reports whether the iterator is at a key.
func (it *Iterator) Valid() bool { return it.valid }

// Key returns the current key. It is valid until the next move.
func (it *Iterator) Key() []byte { return it.key }

// Value returns the current value. It is valid until the next move.
func (it *Iterator) Value() []byte { return it.value }

// Error returns the first error the iterator met.
func (it *Iterator) Error() error { return it.err }

// Close releases the iterator. It returns the iterator's error, if any.
func (it *Iterator) Close() error {
	if it.closed {
		return ErrClosed
	}
	it.closed = true
	it.valid = false
	it.key, it.value = nil, nil // may alias memtable arenas freed by the release below
	it.flushRowsRead()
	err := it.m.Close()
	it.rs.release()
	if it.err != nil {
		return it.err
	}
	return err
}

// All returns a range-over-func sequence of every key and value from First
// on. Keys and values are valid only during the loop body; copy to keep
// them. Check Error after the loop.
func (it *Iterator) All() iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		for ok := it.First(); ok; ok = it.Next() {
			if !yield(it.Key(), it.Value()) {
				return
			}
		}
	}
}

// Scan returns a sequence over the live keys in [lower, upper) (nil bounds
// are open) as of now. The iterator behind it is closed when the loop ends;
// an error ends the sequence early and is reported through errp if errp is
// not nil.
func (db *DB) Scan(lower, upper []byte, errp *error) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		it, err := db.NewIter(&IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			if errp != nil {
				*errp = err
			}
			return
		}
		for k, v := range it.All() {
			if !yield(k, v) {
				break
			}
		}
		if err := it.Close(); err != nil && errp != nil {
			*errp = err
		}
	}
}
