package memtable

import (
	"github.com/mayflydb/mayfly/format"
)

// iterChunk is how many rows an iterator copies out of the tree per lock
// acquisition.
const iterChunk = 32

// iterator walks a memtable in chunks: each refill takes the read lock once
// and copies up to iterChunk rows (headers only; bytes live in the arena) into
// buf, and their entries into ents, so the next refill starts from a stored
// entry. forward tells the order of buf.
type iterator struct {
	m       *Memtable
	buf     []format.Row
	ents    []entry
	pos     int
	forward bool
	row     format.Row
	touch   byte // see decode
}

// fill refills the buffer walking from p (forward: ascending from p; else
// descending), skipping p itself unless inclusive.
func (it *iterator) fill(p entry, forward, inclusive bool) bool {
	it.start(forward)
	visit := func(e entry) bool {
		if !inclusive && e.loc == p.loc { // p itself (a pivot equals no row)
			return true
		}
		it.ents = append(it.ents, e)
		return len(it.ents) < iterChunk
	}
	m := it.m
	m.rlock()
	if forward {
		m.ascendFrom(p, visit)
	} else {
		m.descendFrom(p, visit)
	}
	it.decode()
	m.mu.RUnlock()
	return it.settle()
}

// fillEnd refills the buffer from the first (forward) or last row.
func (it *iterator) fillEnd(forward bool) bool {
	it.start(forward)
	visit := func(e entry) bool {
		it.ents = append(it.ents, e)
		return len(it.ents) < iterChunk
	}
	m := it.m
	m.rlock()
	if forward {
		m.ascendAll(visit)
	} else {
		m.descendAll(visit)
	}
	it.decode()
	m.mu.RUnlock()
	return it.settle()
}

// start empties the buffer for a refill in the given order.
func (it *iterator) start(forward bool) {
	it.buf, it.ents = it.buf[:0], it.ents[:0]
	it.pos = 0
	it.forward = forward
}

// decode materialises the rows of it.ents into it.buf. Caller holds m.mu.
//
// Rows inserted in random key order lie scattered over the arena, so in key
// order nearly every record is a cache miss (a 16 MiB memtable is far larger
// than the cache). Reading the first byte of every record in a tight loop
// before decoding any lets the CPU overlap those misses, since the loads do
// not depend on each other; decoding record by record would wait for them
// one after another.
func (it *iterator) decode() {
	m := it.m
	var touch byte
	for _, e := range it.ents {
		touch |= m.chunks[locChunk(e.loc)][locOff(e.loc)]
	}
	it.touch = touch // a store the compiler cannot drop, so neither the loads
	for _, e := range it.ents {
		it.buf = append(it.buf, m.row(e))
	}
}

func (it *iterator) settle() bool {
	if it.pos < len(it.buf) {
		it.row = it.buf[it.pos]
		return true
	}
	it.buf, it.ents = it.buf[:0], it.ents[:0]
	it.pos = 0
	return false
}

// seek positions from a search key.
func (it *iterator) seek(key []byte, forward, inclusive bool) bool {
	p := makePivot(key)
	ok := it.fill(p, forward, inclusive)
	dropPivot(p)
	return ok
}

// SeekGE positions at the newest version of the first user key >= key.
func (it *iterator) SeekGE(key []byte) bool { return it.seek(key, true, true) }

// SeekLT positions at the oldest version of the last user key < key.
func (it *iterator) SeekLT(key []byte) bool {
	// The pivot of key sorts before every version of key; everything
	// below it has a smaller user key.
	return it.seek(key, false, false)
}

func (it *iterator) First() bool { return it.fillEnd(true) }
func (it *iterator) Last() bool  { return it.fillEnd(false) }

func (it *iterator) Next() bool {
	if !it.Valid() {
		return false
	}
	if it.forward && it.pos+1 < len(it.buf) {
		it.pos++
		it.row = it.buf[it.pos]
		return true
	}
	return it.fill(it.ents[it.pos], true, false)
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
	return it.fill(it.ents[it.pos], false, false)
}

func (it *iterator) Valid() bool      { return it.pos < len(it.buf) }
func (it *iterator) Row() *format.Row { return &it.row }
func (it *iterator) Error() error     { return nil }
func (it *iterator) Close() error     { it.buf, it.ents = nil, nil; return nil }
