// Package merge combines several sorted row iterators into one.
package merge

import (
	"bytes"

	"github.com/mayflydb/mayfly/format"
)

// Iterator yields the union of its children's rows in internal-key order
// (user key ascending, sequence number descending). It moves in either
// direction; switching direction re-positions the other children around the
// current row, so Next after Prev (and the reverse) is exact.
//
// Children must not yield two rows with the same user key and sequence number.
//
// The heap keeps each valid child's current row beside it, fetched once
// after every move of that child, so that a comparison reads two rows
// without calling into the children.
type Iterator struct {
	children []child
	heap     []*child // the valid children; heap[0] is the current one
	forward  bool
	err      error
	curKey   []byte
}

// child is one input of the merge and its current row (valid while the
// child is in the heap).
type child struct {
	it  format.Iterator
	row *format.Row
}

// New returns a merging iterator over children. Closing it closes them.
func New(children ...format.Iterator) *Iterator {
	m := &Iterator{children: make([]child, len(children)), heap: make([]*child, 0, len(children))}
	for i, c := range children {
		m.children[i].it = c
	}
	return m
}

// less reports whether a's row comes before b's in the direction of travel.
func (m *Iterator) less(a, b *child) bool {
	ra, rb := a.row, b.row
	if c := bytes.Compare(ra.Key, rb.Key); c != 0 {
		return (c < 0) == m.forward
	}
	// Newer versions (higher sequence numbers) come first going forward.
	return (ra.Seq > rb.Seq) == m.forward
}

func (m *Iterator) down(i int) {
	h := m.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(h[r], h[l]) {
			j = r
		}
		if !m.less(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

func (m *Iterator) init(forward bool) bool {
	m.forward = forward
	m.heap = m.heap[:0]
	for i := range m.children {
		c := &m.children[i]
		if c.it.Valid() {
			c.row = c.it.Row()
			m.heap = append(m.heap, c)
		} else if err := c.it.Error(); err != nil {
			m.err = err
		}
	}
	if m.err != nil {
		m.heap = m.heap[:0]
		return false
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return len(m.heap) > 0
}

// SeekGE positions at the first row whose user key is >= key.
func (m *Iterator) SeekGE(key []byte) bool {
	m.err = nil
	for _, c := range m.children {
		c.it.SeekGE(key)
	}
	return m.init(true)
}

// SeekLT positions at the last row whose user key is < key.
func (m *Iterator) SeekLT(key []byte) bool {
	m.err = nil
	for _, c := range m.children {
		c.it.SeekLT(key)
	}
	return m.init(false)
}

// First positions at the first row.
func (m *Iterator) First() bool {
	m.err = nil
	for _, c := range m.children {
		c.it.First()
	}
	return m.init(true)
}

// Last positions at the last row.
func (m *Iterator) Last() bool {
	m.err = nil
	for _, c := range m.children {
		c.it.Last()
	}
	return m.init(false)
}

// step advances the current child (Next or Prev) and restores the heap.
func (m *Iterator) step(next bool) bool {
	top := m.heap[0]
	var ok bool
	if next {
		ok = top.it.Next()
	} else {
		ok = top.it.Prev()
	}
	if ok {
		top.row = top.it.Row()
		if len(m.heap) > 1 {
			m.down(0)
		}
		return true
	}
	if err := top.it.Error(); err != nil {
		m.err = err
		m.heap = m.heap[:0]
		return false
	}
	last := len(m.heap) - 1
	m.heap[0] = m.heap[last]
	m.heap = m.heap[:last]
	if last > 1 {
		m.down(0)
	}
	return last > 0
}

// Next moves to the following row.
func (m *Iterator) Next() bool {
	if !m.Valid() {
		return false
	}
	if !m.forward {
		if !m.switchDirection(true) {
			return false
		}
	}
	return m.step(true)
}

// Prev moves to the preceding row.
func (m *Iterator) Prev() bool {
	if !m.Valid() {
		return false
	}
	if m.forward {
		if !m.switchDirection(false) {
			return false
		}
	}
	return m.step(false)
}

// switchDirection re-positions every child but the current one: for forward
// travel each lands on its first row after the current row, for backward
// travel on its last row before it. The current child stays where it is, so
// the following step moves it.
func (m *Iterator) switchDirection(forward bool) bool {
	top := m.heap[0]
	m.curKey = append(m.curKey[:0], top.row.Key...)
	curRow := format.Row{Key: m.curKey, Seq: top.row.Seq}
	m.heap = m.heap[:0]
	m.heap = append(m.heap, top)
	for i := range m.children {
		c := &m.children[i]
		if c == top {
			continue
		}
		ok := c.it.SeekGE(curRow.Key)
		if forward {
			for ok && format.CompareRows(c.it.Row(), &curRow) <= 0 {
				ok = c.it.Next()
			}
		} else {
			for ok && format.CompareRows(c.it.Row(), &curRow) < 0 {
				ok = c.it.Next()
			}
			if ok {
				ok = c.it.Prev()
			} else if c.it.Error() == nil {
				ok = c.it.Last()
			}
		}
		if ok {
			c.row = c.it.Row()
			m.heap = append(m.heap, c)
		} else if err := c.it.Error(); err != nil {
			m.err = err
			m.heap = m.heap[:0]
			return false
		}
	}
	m.forward = forward
	// Every other child now lies strictly beyond the current row in the new
	// direction, so heapifying leaves the current child on top and the
	// following step moves it.
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return true
}

// Valid reports whether the iterator is at a row.
func (m *Iterator) Valid() bool { return m.err == nil && len(m.heap) > 0 }

// Row returns the current row.
func (m *Iterator) Row() *format.Row { return m.heap[0].row }

// Error returns the first error met by any child.
func (m *Iterator) Error() error { return m.err }

// Close closes every child and returns the first error.
func (m *Iterator) Close() error {
	err := m.err
	for _, c := range m.children {
		if cerr := c.it.Close(); err == nil {
			err = cerr
		}
	}
	m.children = nil
	m.heap = nil
	return err
}
