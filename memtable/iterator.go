package memtable

import (
	"bytes"

	"github.com/mayflydb/mayfly/format"
)

// iterChunk is how many rows an iterator copies out of the tree per lock
// acquisition.
const iterChunk = 32

// iterator walks a memtable in chunks: each refill takes the read lock once
// and copies up to iterChunk rows (headers only; bytes live in the arena) into
// buf. forward tells the order of buf.
type iterator struct {
	m       *Memtable
	buf     []format.Row
	pos     int
	forward bool
	row     format.Row
}

func (it *iterator) fillForward(p format.Row, inclusive bool) bool {
	it.buf = it.buf[:0]
	it.pos = 0
	it.forward = true
	it.m.mu.RLock()
	it.m.tree.AscendGreaterOrEqual(pivot(p.Key, p.Seq), func(e entry) bool {
		if !inclusive && e.seq == p.Seq && bytes.Equal(e.key, p.Key) {
			return true
		}
		it.buf = append(it.buf, *e.row)
		return len(it.buf) < iterChunk
	})
	it.m.mu.RUnlock()
	return it.settle()
}

func (it *iterator) fillBackward(p format.Row, inclusive bool) bool {
	it.buf = it.buf[:0]
	it.pos = 0
	it.forward = false
	it.m.mu.RLock()
	it.m.tree.DescendLessOrEqual(pivot(p.Key, p.Seq), func(e entry) bool {
		if !inclusive && e.seq == p.Seq && bytes.Equal(e.key, p.Key) {
			return true
		}
		it.buf = append(it.buf, *e.row)
		return len(it.buf) < iterChunk
	})
	it.m.mu.RUnlock()
	return it.settle()
}

func (it *iterator) settle() bool {
	if it.pos < len(it.buf) {
		it.row = it.buf[it.pos]
		return true
	}
	it.buf = it.buf[:0]
	it.pos = 0
	return false
}

// SeekGE positions at the newest version of the first user key >= key.
func (it *iterator) SeekGE(key []byte) bool {
	return it.fillForward(format.Row{Key: key, Seq: format.MaxSeq}, true)
}

// SeekLT positions at the oldest version of the last user key < key.
func (it *iterator) SeekLT(key []byte) bool {
	// (key, MaxSeq) sorts before every version of key; everything strictly
	// below it has a smaller user key.
	return it.fillBackward(format.Row{Key: key, Seq: format.MaxSeq}, false)
}

func (it *iterator) First() bool {
	it.buf = it.buf[:0]
	it.pos = 0
	it.forward = true
	it.m.mu.RLock()
	it.m.tree.Ascend(func(e entry) bool {
		it.buf = append(it.buf, *e.row)
		return len(it.buf) < iterChunk
	})
	it.m.mu.RUnlock()
	return it.settle()
}

func (it *iterator) Last() bool {
	it.buf = it.buf[:0]
	it.pos = 0
	it.forward = false
	it.m.mu.RLock()
	it.m.tree.Descend(func(e entry) bool {
		it.buf = append(it.buf, *e.row)
		return len(it.buf) < iterChunk
	})
	it.m.mu.RUnlock()
	return it.settle()
}

func (it *iterator) Next() bool {
	if !it.Valid() {
		return false
	}
	if it.forward && it.pos+1 < len(it.buf) {
		it.pos++
		it.row = it.buf[it.pos]
		return true
	}
	cur := it.row
	return it.fillForward(cur, false)
}

func (it *iterator) Prev() bool {
	if !it.Valid() {
		return false
	}
	if !it.forward && it.pos+1 < len(it.buf) {
		it.pos++
		it.row = it.buf[it.pos]
		return true
	}
	cur := it.row
	return it.fillBackward(cur, false)
}

func (it *iterator) Valid() bool      { return it.pos < len(it.buf) }
func (it *iterator) Row() *format.Row { return &it.row }
func (it *iterator) Error() error     { return nil }
func (it *iterator) Close() error     { it.buf = nil; return nil }
