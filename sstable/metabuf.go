package sstable

// Metadata buffers: where a table's index lives in memory.
//
// A Reader's point index (pointindex.go) and a compaction iterator's raw
// index block (rawindex.go) live as long as the Reader or the iterator, and
// hold no pointers. On the Go heap every live byte of them costs about two
// of resident memory (the collector lets the heap grow to twice the live
// bytes); outside it (internal/manual) a byte costs one. So each is one
// buffer from manual memory, freed exactly once by its single owner: the
// last reference to the point index, the compaction iterator for the raw
// block.
//
// An mmap is a system call and rounds up to a page, so a buffer below
// minOffHeapMeta (the index of a small table) stays on the Go heap, where
// it costs less than the page it would map.

import "github.com/mayflydb/mayfly/internal/manual"

// minOffHeapMeta is the smallest metadata buffer taken outside the Go heap.
const minOffHeapMeta = 4 << 10

// metaBuf is a buffer of table metadata: manual memory if offHeap, else Go
// heap memory. Its owner calls free once, after its last reader.
type metaBuf struct {
	b       []byte
	offHeap bool
	purpose manual.Purpose
}

// newMetaBuf returns a zeroed buffer of n > 0 bytes, counted under purpose
// p when it is outside the Go heap.
func newMetaBuf(p manual.Purpose, n int) metaBuf {
	if n >= minOffHeapMeta {
		return metaBuf{b: manual.NewFor(p, n), offHeap: true, purpose: p}
	}
	return metaBuf{b: make([]byte, n)}
}

// newPointIndexBuf is newMetaBuf for a Reader's point index.
func newPointIndexBuf(n int) metaBuf { return newMetaBuf(manual.PurposeTableIndex, n) }

// newIndexBlockBuf is newMetaBuf for a whole index block read for a
// compaction iterator or while building a point index.
func newIndexBlockBuf(n int) metaBuf { return newMetaBuf(manual.PurposeIndexBlock, n) }

// free releases the buffer (a no-op for an empty one) and empties m.
func (m *metaBuf) free() {
	if m.offHeap {
		manual.FreeFor(m.purpose, m.b)
	}
	*m = metaBuf{}
}

// holds reports whether b starts at the start of m's buffer.
func (m *metaBuf) holds(b []byte) bool {
	return len(b) > 0 && len(m.b) > 0 && &b[0] == &m.b[0]
}
