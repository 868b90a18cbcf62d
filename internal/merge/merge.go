// Package merge combines several sorted row iterators into one.
package merge

import (
	"github.com/mayflydb/mayfly/format"
)

// Iterator yields the union of its children's rows in internal-key order
// (user key ascending, sequence number descending). It moves in either
// direction; switching direction re-positions the other children around the
// current row, so Next after Prev (and the reverse) is exact.
//
// Children must not yield two rows with the same user key and sequence number.
type Iterator struct {
	children []format.Iterator
	heap     []int // indices of valid children; heap[0] is the current one
	forward  bool
	err      error
	curKey   []byte
}

// New returns a merging iterator over children. Closing it closes them.
func New(children ...format.Iterator) *Iterator {
	return &Iterator{children: children, heap: make([]int, 0, len(children))}
}

func (m *Iterator) less(i, j int) bool {
	c := format.CompareRows(m.children[m.heap[i]].Row(), m.children[m.heap[j]].Row())
	if m.forward {
		return c < 0
	}
	return c > 0
}

func (m *Iterator) down(i int) {
	n := len(m.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(r, l) {
			j = r
		}
		if !m.less(j, i) {
			return
		}
		m.heap[i], m.heap[j] = m.heap[j], m.heap[i]
		i = j
	}
}

func (m *Iterator) init(forward bool) bool {
	m.forward = forward
	m.heap = m.heap[:0]
	for i, c := range m.children {
		if c.Valid() {
			m.heap = append(m.heap, i)
		} else if err := c.Error(); err != nil {
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
		c.SeekGE(key)
	}
	return m.init(true)
}

// SeekLT positions at the last row whose user key is < key.
func (m *Iterator) SeekLT(key []byte) bool {
	m.err = nil
	for _, c := range m.children {
		c.SeekLT(key)
	}
	return m.init(false)
}

// First positions at the first row.
func (m *Iterator) First() bool {
	m.err = nil
	for _, c := range m.children {
		c.First()
	}
	return m.init(true)
}

// Last positions at the last row.
func (m *Iterator) Last() bool {
	m.err = nil
	for _, c := range m.children {
		c.Last()
	}
	return m.init(false)
}

// step advances the current child (Next or Prev) and restores the heap.
func (m *Iterator) step(next bool) bool {
	top := m.children[m.heap[0]]
	var ok bool
	if next {
		ok = top.Next()
	} else {
		ok = top.Prev()
	}
	if !ok {
		if err := top.Error(); err != nil {
			m.err = err
			m.heap = m.heap[:0]
			return false
		}
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap = m.heap[:last]
	}
	if len(m.heap) > 0 {
		m.down(0)
	}
	return len(m.heap) > 0
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
	curIdx := m.heap[0]
	cur := m.children[curIdx].Row()
	m.curKey = append(m.curKey[:0], cur.Key...)
	curRow := format.Row{Key: m.curKey, Seq: cur.Seq}
	m.heap = m.heap[:0]
	m.heap = append(m.heap, curIdx)
	for i, c := range m.children {
		if i == curIdx {
			continue
		}
		ok := c.SeekGE(curRow.Key)
		if forward {
			for ok && format.CompareRows(c.Row(), &curRow) <= 0 {
				ok = c.Next()
			}
		} else {
			for ok && format.CompareRows(c.Row(), &curRow) < 0 {
				ok = c.Next()
			}
			if ok {
				ok = c.Prev()
			} else if c.Error() == nil {
				ok = c.Last()
			}
		}
		if ok {
			m.heap = append(m.heap, i)
		} else if err := c.Error(); err != nil {
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
func (m *Iterator) Row() *format.Row { return m.children[m.heap[0]].Row() }

// Error returns the first error met by any child.
func (m *Iterator) Error() error { return m.err }

// Close closes every child and returns the first error.
func (m *Iterator) Close() error {
	err := m.err
	for _, c := range m.children {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	m.children = nil
	m.heap = nil
	return err
}
