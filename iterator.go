package mayfly

import (
	"bytes"
	"fmt"
	"iter"
	"time"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/merge"
)

// IterOptions bound an iterator to the keys in [LowerBound, UpperBound).
//
// A bound of length zero, nil or not, is no bound: Mayfly stores no empty
// key (ErrEmptyKey), so an empty slice names no key to stop at, and a
// []byte("") built from an empty string reads as open rather than as an
// empty range. Bounds with LowerBound above UpperBound are refused: NewIter
// returns an error wrapping ErrInvalidOptions. Equal bounds are an empty
// range. NewIter copies both bounds; the caller may reuse them.
type IterOptions struct {
	// LowerBound is the smallest key the iterator returns (inclusive);
	// empty or nil: no lower bound.
	LowerBound []byte
	// UpperBound is the key the iterator stops before (exclusive); empty
	// or nil: no upper bound.
	UpperBound []byte
}

// Iterator walks the live keys of a database or snapshot in key order, in
// either direction. It reads a consistent view fixed when it was created
// (sequence number and clock time): later writes and later expiries do not
// change what it returns. An Iterator is not safe for concurrent use. Close
// it when done: it pins the files, memtables and cached blocks it reads.
//
// Lifetime of keys and values: the slices Key and Value return are valid
// until the next positioning call (First, Last, SeekGE, SeekLT, Next, Prev)
// or Close of the iterator, and never after DB.Close; copy what you keep.
// They may alias memory that Mayfly manages by hand (memtable arenas,
// cached blocks, outside the Go heap) and reuses or unmaps once released.
// Key and Value return nil whenever the iterator is not at a key: before
// the first positioning, after a move that returned false, after an error,
// after Close and after DB.Close.
//
// After DB.Close every positioning call returns false and Error returns an
// error wrapping ErrClosed; the iterator touches none of its memory any
// more. What it pinned stays allocated until its Close, which releases it
// as usual (and returns that error).
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
	key      []byte // a copy; kept while not valid, as Next and Prev resume from it
	value    []byte // aliases iterator memory when moving forward; nil unless valid
	valueBuf []byte
	expires  bool   // the current key has a deadline ...
	deadline int64  // ... at this Unix ms
	seekBuf  []byte // the key of the running seek (see seekKey)
	err      error
	closed   bool
	// rowsRead counts rows returned but not yet added to the database's
	// RowsRead metric: adding them in batches keeps a shared atomic
	// counter out of the per-row path (see flushRowsRead).
	rowsRead uint64
	// chain collects the versions of a key holding merge operands
	// (merge_read.go); hasMerge: findPrev's chain holds one.
	chain    mergeChain
	hasMerge bool
	// ahead: moving forward, the merge is already past the current key
	// (mergeForward read to its last version), so Next must not advance.
	ahead bool
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
// The iterator is unpositioned: call First, Last, SeekGE or SeekLT. Inverted
// bounds return an error wrapping ErrInvalidOptions (see IterOptions).
func (db *DB) NewIter(opts *IterOptions) (*Iterator, error) {
	return db.newIter(opts, latestSeq, db.clock.NowMillis())
}

// iterBounds returns copies of the bounds of opts, nil for an absent or
// empty bound, or an error if the lower bound is above the upper one.
func iterBounds(opts *IterOptions) (lower, upper []byte, err error) {
	if opts == nil {
		return nil, nil, nil
	}
	lower, upper = boundOf(opts.LowerBound), boundOf(opts.UpperBound)
	if lower != nil && upper != nil && bytes.Compare(lower, upper) > 0 {
		return nil, nil, fmt.Errorf("%w: iterator LowerBound %q is above UpperBound %q", ErrInvalidOptions, lower, upper)
	}
	return lower, upper, nil
}

// boundOf returns a copy of bound b, or nil if b is empty (no bound).
func boundOf(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte{}, b...)
}

// newIter returns an iterator at snapshot sequence seq, or at the latest
// committed state when seq is latestSeq.
func (db *DB) newIter(opts *IterOptions, seq uint64, now int64) (*Iterator, error) {
	lower, upper, err := iterBounds(opts)
	if err != nil {
		return nil, err
	}
	var rs *readState
	if seq == latestSeq {
		rs, seq, err = db.loadReadStateSeq()
	} else {
		rs, err = db.loadReadState()
	}
	if err != nil {
		return nil, err
	}
	it := &Iterator{db: db, rs: rs, seq: seq, now: now, lower: lower, upper: upper}
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

// errDBClosed is the error of an iterator used after DB.Close.
var errDBClosed = fmt.Errorf("mayfly: iterator used after DB.Close: %w", ErrClosed)

// dbClosed reports whether the iterator's DB was closed: Close retires the
// published read state (publishReadState stores nil), so this is one
// atomic load. The iterator's own read state stays referenced until Close.
func (it *Iterator) dbClosed() bool { return it.db.readState.Load() == nil }

// begin starts a positioning call: it leaves the iterator at no key and
// reports whether it may move, recording ErrClosed if the DB was closed.
func (it *Iterator) begin() bool {
	it.valid, it.value = false, nil
	if it.closed {
		return false
	}
	if it.dbClosed() {
		if it.err == nil {
			it.err = errDBClosed
		}
		return false
	}
	return true
}

// seekKey returns key in a buffer of the iterator's own: key may be a slice
// Key or Value returned, aliasing a block that the seek itself releases
// (the children of the merge seek one after another with the same key).
func (it *Iterator) seekKey(key []byte) []byte {
	it.seekBuf = append(it.seekBuf[:0], key...)
	return it.seekBuf
}

// First moves to the first key >= LowerBound.
func (it *Iterator) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	if !it.begin() {
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
	if !it.begin() {
		return false
	}
	it.m.Last()
	return it.findPrev()
}

// SeekGE moves to the first key >= key (and >= LowerBound). key may be a
// slice the iterator returned.
func (it *Iterator) SeekGE(key []byte) bool {
	if !it.begin() {
		return false
	}
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.m.SeekGE(it.seekKey(key))
	return it.findNext(false)
}

// SeekLT moves to the last key < key (and < UpperBound). key may be a
// slice the iterator returned.
func (it *Iterator) SeekLT(key []byte) bool {
	if !it.begin() {
		return false
	}
	if it.upper != nil && bytes.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	it.m.SeekLT(it.seekKey(key))
	return it.findPrev()
}

// Next moves to the following key.
func (it *Iterator) Next() bool {
	if !it.valid || !it.begin() {
		return false
	}
	if it.forward && it.ahead {
		it.ahead = false // the merge already left the current key
	} else if it.forward {
		it.m.Next()
	} else {
		// The merge sits before the current key; step back onto it.
		it.m.SeekGE(it.key)
	}
	return it.findNext(true)
}

// Prev moves to the preceding key.
func (it *Iterator) Prev() bool {
	if !it.valid || !it.begin() {
		return false
	}
	if it.forward {
		it.m.SeekLT(it.key)
	}
	return it.findPrev()
}

// findNext moves forward from the merge's position to the newest visible
// version of the next live key. With skipCurrent, versions of it.key are
// passed over first. A deadline row is resolved against the versions below
// it (format.Resolve): the merge is left at the value row it applies to.
func (it *Iterator) findNext(skipCurrent bool) bool {
	it.forward = true
	it.valid = false
	it.ahead = false
	skipping := skipCurrent
	ok := it.m.Valid()
	for ok {
		r := it.m.Row()
		if r.Seq > it.seq || skipping && bytes.Equal(r.Key, it.key) {
			ok = it.m.Next()
			continue
		}
		if it.upper != nil && bytes.Compare(r.Key, it.upper) >= 0 {
			break
		}
		// r is the newest visible version of r.Key.
		it.key = append(it.key[:0], r.Key...)
		skipping = true
		row := *r
		if row.Flags&(format.FlagDeadline|format.FlagMerge) != 0 {
			var found bool
			if row, found, ok = it.resolveForward(row); !found {
				if it.err != nil {
					return false
				}
				it.ahead = false
				continue // the merge is already past the key's versions
			}
		}
		if !row.HasValue() {
			ok = it.skipKey()
			continue
		}
		if row.ExpiredAt(it.now) {
			it.db.metrics.expiredOnRead.Add(1)
			ok = it.skipKey()
			continue
		}
		it.value = row.Value
		it.expires, it.deadline = row.HasExpiry(), row.ExpireTS
		it.valid = true
		it.countRow()
		return true
	}
	it.err = it.m.Error()
	return false
}

// skipKey moves the merge on from a key findNext does not return: to its
// next row, unless mergeForward already left the key (it.ahead).
func (it *Iterator) skipKey() bool {
	if it.ahead {
		it.ahead = false
		return it.m.Valid()
	}
	return it.m.Next()
}

// resolveForward reads on from deadline row d (at the merge's position) to
// the value row of the same key it applies to, skipping older deadline
// rows. found reports whether one was found (resolved is then that value
// under d's deadline); the merge stays at the row that decided, and ok is
// its validity.
func (it *Iterator) resolveForward(d format.Row) (resolved format.Row, found, ok bool) {
	if d.IsMerge() {
		return it.mergeForward(nil)
	}
	for ok = it.m.Next(); ok; ok = it.m.Next() {
		v := it.m.Row()
		if !bytes.Equal(v.Key, it.key) {
			return format.Row{}, false, true
		}
		if v.IsDeadline() {
			continue
		}
		if v.IsMerge() {
			return it.mergeForward(&d)
		}
		// A tombstone beneath: the key is absent, and the caller skips the
		// rest of its versions from here.
		resolved, found = format.Resolve(&d, v)
		return resolved, found, true
	}
	return format.Row{}, false, false
}

// findPrev moves backward from the merge's position to the previous live
// key. Versions arrive oldest first, so each version read updates the
// key's state (its value, and the deadline a newer deadline row sets), and
// the state when the key changes is what its newest version says.
func (it *Iterator) findPrev() bool {
	it.forward = false
	it.valid = false
	it.hasMerge = false
	started := false   // it.key names the key whose versions are being read
	var lastSeq uint64 // the sequence number of the last version read of it.key
	live := false      // that key has a value: valueBuf, expires, deadline
	have := func() bool { return live && !(it.expires && it.deadline < it.now) }
	for ok := it.m.Valid(); ok; ok = it.m.Prev() {
		r := it.m.Row()
		if r.Seq > it.seq {
			continue
		}
		if it.lower != nil && bytes.Compare(r.Key, it.lower) < 0 {
			break
		}
		if !started || !bytes.Equal(r.Key, it.key) {
			if started && it.hasMerge && !it.settleMerge(&live) {
				return false
			}
			if started && have() {
				break
			}
			if started && live {
				it.db.metrics.expiredOnRead.Add(1)
			}
			started, live = true, false
			it.key = append(it.key[:0], r.Key...)
			it.chain.reset()
			lastSeq = ^uint64(0)
		}
		if !it.hasMerge && r.IsMerge() {
			// The versions read so far are the chain's base and what
			// lies on it, as of the last one's sequence number (an
			// operand with that number is a twin it already holds).
			it.seedChain(live, lastSeq)
		}
		lastSeq = r.Seq
		if r.IsMerge() || it.hasMerge {
			// A chain with operands: resolved when the key ends.
			if r.Flags&(format.FlagMerge|format.FlagDeadline) == 0 {
				it.chain.reset() // a base: older versions no longer count
			}
			it.chain.add(r)
			it.hasMerge = it.hasMerge || r.IsMerge()
			continue
		}
		switch {
		case r.IsDeadline():
			if live {
				it.expires, it.deadline = r.HasExpiry(), r.ExpireTS
			}
		case r.IsTombstone():
			live = false
		default:
			live = true
			it.valueBuf = append(it.valueBuf[:0], r.Value...)
			it.expires, it.deadline = r.HasExpiry(), r.ExpireTS
		}
	}
	if err := it.m.Error(); err != nil {
		it.err = err
		return false
	}
	if started && it.hasMerge && !it.settleMerge(&live) {
		return false
	}
	if live && !have() {
		it.db.metrics.expiredOnRead.Add(1)
	}
	if !have() {
		return false
	}
	it.value = it.valueBuf
	it.valid = true
	it.countRow()
	return true
}

// Valid reports whether the iterator is at a key. It is false after
// DB.Close.
func (it *Iterator) Valid() bool { return it.valid && !it.dbClosed() }

// Key returns the current key, or nil if the iterator is not at a key (see
// Valid). It is valid until the next move or Close, and never after
// DB.Close.
func (it *Iterator) Key() []byte {
	if !it.Valid() {
		return nil
	}
	return it.key
}

// Value returns the current value, or nil if the iterator is not at a key
// (see Valid). It is valid until the next move or Close, and never after
// DB.Close.
func (it *Iterator) Value() []byte {
	if !it.Valid() {
		return nil
	}
	return it.value
}

// ExpireTime returns the deadline of the current key: the last instant
// (millisecond) it is visible, and expires == true; expires is false for a
// key without a deadline, and when the iterator is not at a key. It reads
// the deadline from the row found, so a scan that needs each key's expiry
// does not look the key up again.
func (it *Iterator) ExpireTime() (deadline time.Time, expires bool) {
	if !it.Valid() || !it.expires {
		return time.Time{}, false
	}
	return time.UnixMilli(it.deadline), true
}

// Error returns the first error the iterator met, or an error wrapping
// ErrClosed once its DB is closed.
func (it *Iterator) Error() error {
	if it.err == nil && !it.closed && it.dbClosed() {
		return errDBClosed
	}
	return it.err
}

// Close releases what the iterator pinned, also after DB.Close. It returns
// the iterator's error (Error), if any; closing twice returns ErrClosed.
func (it *Iterator) Close() error {
	if it.closed {
		return ErrClosed
	}
	ierr := it.Error()
	it.closed = true
	it.valid = false
	it.key, it.value = nil, nil // may alias memtable arenas freed by the release below
	it.flushRowsRead()
	err := it.m.Close()
	it.rs.release()
	if ierr != nil {
		return ierr
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

// Scan returns a sequence over the live keys in [lower, upper) (nil or
// empty bounds are open; inverted ones are an error, see IterOptions) as of
// now. The iterator behind it is closed when the loop ends;
// an error ends the sequence early and is reported through errp if errp is
// not nil.
func (db *DB) Scan(lower, upper []byte, errp *error) iter.Seq2[[]byte, []byte] {
	return scan(db.NewIter, lower, upper, errp)
}

// scan is Scan over the iterators newIter opens.
func scan(newIter func(*IterOptions) (*Iterator, error), lower, upper []byte, errp *error) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		it, err := newIter(&IterOptions{LowerBound: lower, UpperBound: upper})
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
