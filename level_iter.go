package mayfly

// Level iterator: one child of the read merge per sorted level.
//
// The tables of a level >= 1 are sorted by key and do not overlap (the
// compactor also never splits the versions of one user key between two
// tables, though levelIter does not rely on that), so the level reads as the
// concatenation of its tables:
//
//	level:  [a .. f] [g .. m] [p .. z]      (table smallest .. largest)
//	               ^ SeekGE("h") binary-searches the table metadata and
//	                 opens only [g .. m]; Next past "m" opens [p .. z].
//
// A seek therefore touches one table per level instead of every table, and
// the merge heap holds one entry per level. Tables wholly outside the
// iterator's bounds are dropped before the level iterator is built, so it
// never opens a table past the upper (or before the lower) bound.

import (
	"bytes"
	"sort"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/sstable"
)

// levelIter walks the rows of sorted, non-overlapping tables in
// internal-key order, opening one table at a time. It implements
// format.Iterator with the same exhaustion rules as an SSTable iterator:
// Next after running off the front moves to the first row, Prev after
// running off the back to the last; errors are sticky.
type levelIter struct {
	tables []*tableFile // sorted by key; all overlap [lower, upper)
	lower  []byte       // nil: open
	upper  []byte       // nil: open
	idx    int          // index of the table iter reads; -1 if none
	iter   *sstable.Iterator
	// spare is a closed table iterator kept for reuse, so moving between
	// tables does not allocate.
	spare *sstable.Iterator
	pos   levelPos
	err   error
	// compaction makes the table iterators compaction iterators
	// (sstable.Reader.NewCompactionIter; Reset keeps them so).
	compaction bool
}

type levelPos uint8

const (
	levelNone   levelPos = iota // unpositioned
	levelValid                  // at a row
	levelBefore                 // exhausted backwards
	levelAfter                  // exhausted forwards
)

var _ format.Iterator = (*levelIter)(nil)

// tablesInBounds returns the sub-slice of the key-sorted tables that may
// hold a user key in [lower, upper) (nil bounds are open).
func tablesInBounds(tables []*tableFile, lower, upper []byte) []*tableFile {
	lo, hi := 0, len(tables)
	if lower != nil {
		lo = sort.Search(len(tables), func(i int) bool { return bytes.Compare(tables[i].Meta.LargestUserKey(), lower) >= 0 })
	}
	if upper != nil {
		hi = sort.Search(len(tables), func(i int) bool { return bytes.Compare(tables[i].Meta.SmallestUserKey(), upper) >= 0 })
	}
	if lo >= hi {
		return nil
	}
	return tables[lo:hi]
}

// inBounds reports whether table t may hold a user key in [lower, upper).
func inBounds(t *tableFile, lower, upper []byte) bool {
	return (lower == nil || bytes.Compare(t.Meta.LargestUserKey(), lower) >= 0) &&
		(upper == nil || bytes.Compare(t.Meta.SmallestUserKey(), upper) < 0)
}

// newLevelIter returns an unpositioned iterator over tables, which must be
// sorted by key, non-overlapping and already restricted to the bounds (see
// tablesInBounds). Seeks beyond a bound return at once, and First and Last
// start at the bounds, but Next and Prev may still return rows of the open
// table outside them: the caller filters by bound.
func newLevelIter(tables []*tableFile, lower, upper []byte) *levelIter {
	return &levelIter{tables: tables, lower: lower, upper: upper, idx: -1}
}

// open makes iter read table i, keeping it if it already does.
func (l *levelIter) open(i int) {
	if l.idx == i && l.iter != nil {
		return
	}
	l.closeTable()
	if l.spare != nil {
		l.iter, l.spare = l.spare, nil
		l.iter.Reset(l.tables[i].reader)
	} else if l.compaction {
		l.iter = l.tables[i].reader.NewCompactionIter().(*sstable.Iterator)
	} else {
		l.iter = l.tables[i].reader.NewIter().(*sstable.Iterator)
	}
	l.idx = i
}

// closeTable closes the open table iterator, keeping its error.
func (l *levelIter) closeTable() {
	if l.iter == nil {
		return
	}
	// The iterator's error is only read here: Reset would clear it.
	if err := l.iter.Error(); err != nil && l.err == nil {
		l.err = err
	}
	l.spare, l.iter, l.idx = l.iter, nil, -1
}

// settle records the outcome of a move of the open table iterator, moving
// on to the neighbouring tables (in the direction of travel) while it is
// exhausted.
func (l *levelIter) settle(forward bool) bool {
	for l.err == nil {
		if l.iter.Valid() {
			l.pos = levelValid
			return true
		}
		if err := l.iter.Error(); err != nil {
			l.err = err
			break
		}
		if forward {
			if l.idx+1 >= len(l.tables) {
				return l.exhausted(levelAfter)
			}
			l.open(l.idx + 1)
			l.iter.First()
		} else {
			if l.idx == 0 {
				return l.exhausted(levelBefore)
			}
			l.open(l.idx - 1)
			l.iter.Last()
		}
	}
	l.pos = levelNone
	return false
}

func (l *levelIter) exhausted(p levelPos) bool {
	l.pos = p
	return false
}

// SeekGE moves to the first row whose user key is >= key.
func (l *levelIter) SeekGE(key []byte) bool {
	if l.err != nil {
		return false
	}
	if l.upper != nil && bytes.Compare(key, l.upper) >= 0 {
		return l.exhausted(levelAfter)
	}
	// The first table whose largest key is >= key holds the answer (or,
	// if it has no such row, a following table does).
	i := sort.Search(len(l.tables), func(i int) bool { return bytes.Compare(l.tables[i].Meta.LargestUserKey(), key) >= 0 })
	if i == len(l.tables) {
		return l.exhausted(levelAfter)
	}
	l.open(i)
	l.iter.SeekGE(key)
	return l.settle(true)
}

// SeekLT moves to the last row whose user key is < key.
func (l *levelIter) SeekLT(key []byte) bool {
	if l.err != nil {
		return false
	}
	if l.lower != nil && bytes.Compare(key, l.lower) <= 0 {
		return l.exhausted(levelBefore)
	}
	// The last table whose smallest key is < key holds the answer.
	i := sort.Search(len(l.tables), func(i int) bool { return bytes.Compare(l.tables[i].Meta.SmallestUserKey(), key) >= 0 }) - 1
	if i < 0 {
		return l.exhausted(levelBefore)
	}
	l.open(i)
	l.iter.SeekLT(key)
	return l.settle(false)
}

// First moves to the first row (the first row >= the lower bound, if any).
func (l *levelIter) First() bool {
	if l.err != nil {
		return false
	}
	if l.lower != nil {
		return l.SeekGE(l.lower)
	}
	if len(l.tables) == 0 {
		return l.exhausted(levelAfter)
	}
	l.open(0)
	l.iter.First()
	return l.settle(true)
}

// Last moves to the last row (the last row < the upper bound, if any).
func (l *levelIter) Last() bool {
	if l.err != nil {
		return false
	}
	if l.upper != nil {
		return l.SeekLT(l.upper)
	}
	if len(l.tables) == 0 {
		return l.exhausted(levelBefore)
	}
	l.open(len(l.tables) - 1)
	l.iter.Last()
	return l.settle(false)
}

// Next moves to the following row.
func (l *levelIter) Next() bool {
	switch {
	case l.err != nil:
		return false
	case l.pos == levelBefore:
		return l.First()
	case l.pos != levelValid:
		return false
	}
	l.iter.Next()
	return l.settle(true)
}

// Prev moves to the preceding row.
func (l *levelIter) Prev() bool {
	switch {
	case l.err != nil:
		return false
	case l.pos == levelAfter:
		return l.Last()
	case l.pos != levelValid:
		return false
	}
	l.iter.Prev()
	return l.settle(false)
}

// Valid reports whether the iterator is at a row.
func (l *levelIter) Valid() bool { return l.err == nil && l.pos == levelValid }

// Row returns the current row.
func (l *levelIter) Row() *format.Row { return l.iter.Row() }

// Error returns the first error the iterator met.
func (l *levelIter) Error() error { return l.err }

// Close closes the open table iterator and returns Error.
func (l *levelIter) Close() error {
	l.closeTable()
	if l.spare != nil {
		if err := l.spare.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.spare = nil
	}
	l.pos = levelNone
	l.tables = nil
	return l.err
}
