package memtable

import (
	"unsafe"

	"github.com/mayflydb/mayfly/internal/manual"
)

// Freezing. A memtable that will take no more writes (the engine rotated
// it, and it waits for or undergoes its flush) no longer needs a B-tree:
// Freeze copies its entries, in internal-key order, into one sorted array
// outside the Go heap and hands the tree's nodes to the Pool's free list at
// once, so the next memtable's tree grows into them while this one is being
// flushed. Without it, while a flush runs the Go heap holds two memtables'
// trees (the flushing one and the growing one) plus what the free list
// keeps; with it, one tree plus 24 bytes per frozen row outside the heap,
// which costs its size in resident memory once rather than up to twice (a
// tree row is about 36 heap bytes, see indexOverhead).
//
// The array is read exactly as the tree was: Get and iterators reach it
// through ascendFrom and its siblings (entry.go), which binary-search it
// with the same comparison, under the same read lock. An iterator opened
// before the freeze keeps working: it restarts every refill from a stored
// entry, and every stored entry is in the array. The array lives in arena
// chunks (see chunkEntries) and is freed with the arena, at the last Unref.

// entrySize is the bytes of one entry in a frozen array.
const entrySize = int(unsafe.Sizeof(entry{}))

// chunkEntries is how many entries one arena chunk holds. The frozen array
// is carved from whole arena chunks taken from the memtable's Pool (or
// mapped fresh when it has none), chunkEntries to a chunk, and the last
// Unref hands them back with the arena's: a freeze maps nothing while the
// pool holds chunks, and the pool's chunks serve as index and arena alike.
const chunkEntries = arenaChunk / entrySize

// Freeze makes the memtable read-only and replaces its B-tree with a
// sorted array outside the Go heap; the tree's nodes go back to the pool
// (see above). Reads return the same rows before, during and after the
// switch, and readers and iterators may run concurrently with it. A write
// after Freeze panics, and so does Freeze after the last Unref; Freeze of a
// frozen memtable does nothing (a concurrent second call may return before
// the first one has switched). The caller holds a reference.
func (m *Memtable) Freeze() {
	m.lock()
	if m.sealed { // frozen, or being frozen by another call
		m.mu.Unlock()
		return
	}
	m.sealed = true // no write from here on: the tree is stable
	n := m.tree.Len()
	m.mu.Unlock()

	// Copy under the read lock: readers go on meanwhile.
	chunks := make([][]entry, (n+chunkEntries-1)/chunkEntries)
	bufs := make([][]byte, len(chunks))
	for i := range chunks {
		bufs[i] = m.pool.get(manual.PurposeMemtableFrozen)
		chunks[i] = unsafe.Slice((*entry)(unsafe.Pointer(unsafe.SliceData(bufs[i]))), chunkEntries)
	}
	m.rlock()
	i := 0
	m.tree.Descend(func(e entry) bool { // the tree is reversed: see treeLess
		chunks[i/chunkEntries][i%chunkEntries] = e
		i++
		return true
	})
	m.mu.RUnlock()
	if i != n {
		panic("memtable: tree changed while freezing")
	}

	fences := buildFences(chunks, n)
	m.mu.Lock()
	tree := m.tree
	m.tree, m.frozen, m.frozenLen, m.frozenBufs, m.fences = nil, chunks, n, bufs, fences
	m.mu.Unlock()
	// No reader can reach tree any more; an open pool takes its nodes.
	if m.pool.open() {
		tree.Clear(true)
	}
}

// Frozen reports whether Freeze has been called.
func (m *Memtable) Frozen() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.sealed
}

// MemoryBytes returns the approximate memory the memtable holds for its
// rows: Size while its B-tree indexes them; once frozen, its records plus
// entrySize (24) bytes per row of the sorted array that replaced the tree,
// rather than Size's indexOverhead (72) per row of tree.
func (m *Memtable) MemoryBytes() int64 {
	m.mu.RLock()
	frozen := m.tree == nil && m.frozen != nil
	m.mu.RUnlock()
	n := m.Size()
	if frozen {
		n -= m.rows.Load() * int64(indexOverhead-entrySize)
	}
	return n
}

// freeIndex hands the frozen array's chunks to the pool, which keeps or
// frees them. Caller holds mu for writing and the last reference.
func (m *Memtable) freeIndex() {
	m.pool.release(manual.PurposeMemtableFrozen, m.frozenBufs)
	m.frozen, m.frozenLen, m.frozenBufs, m.fences = nil, 0, nil, nil
}

// at returns frozen entry i. Caller holds mu.
func (m *Memtable) at(i int) entry { return m.frozen[i/chunkEntries][i%chunkEntries] }

// fenceShift sets the spacing of a frozen array's fences: fences[j] is the
// k0 of entry j<<fenceShift. A search first narrows the array to the run
// of 32-entry blocks whose first 8 key bytes can match, with integer
// compares over a small dense slice that stays in cache, and only then
// compares entries (which may touch the arena) within that run. Entries
// are in internal-key order, so their k0 never decreases: every entry
// with k0 below the search key's sorts before it, every one above after.
const fenceShift = 5

// buildFences returns the fences of the n entries in chunks, which no
// reader can reach yet.
//
// The fences cost 8 heap bytes per 32 rows (10 KiB for an 8 MiB memtable
// of 100-byte values).
func buildFences(chunks [][]entry, n int) []uint64 {
	fences := make([]uint64, (n+1<<fenceShift-1)>>fenceShift)
	for j := range fences {
		i := j << fenceShift
		fences[j] = chunks[i/chunkEntries][i%chunkEntries].k0
	}
	return fences
}

// fenceRange returns [lo, hi), the part of the frozen array that holds
// every entry whose k0 equals k0, and the position where such entries
// would be. Caller holds mu.
func (m *Memtable) fenceRange(k0 uint64) (lo, hi int) {
	f := m.fences
	// a: the first fence >= k0; entries before block a-1 have k0 < k0.
	a, b := 0, len(f)
	for a < b {
		mid := int(uint(a+b) >> 1)
		if f[mid] < k0 {
			a = mid + 1
		} else {
			b = mid
		}
	}
	// c: the first fence > k0; entries from block c on have k0 > k0.
	c, d := a, len(f)
	for c < d {
		mid := int(uint(c+d) >> 1)
		if f[mid] <= k0 {
			c = mid + 1
		} else {
			d = mid
		}
	}
	lo = max(a-1, 0) << fenceShift
	hi = min(c<<fenceShift, m.frozenLen)
	return lo, hi
}

// lowerBound returns the index of the first frozen entry >= p. Caller
// holds mu.
func (m *Memtable) lowerBound(p entry) int {
	lo, hi := m.fenceRange(p.k0)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m.less(m.at(mid), p) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// upperBound returns the index of the first frozen entry > p. Caller holds
// mu.
func (m *Memtable) upperBound(p entry) int {
	lo, hi := m.fenceRange(p.k0)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if !m.less(p, m.at(mid)) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// walkUp calls fn on the frozen entries from index i up until fn returns
// false. Caller holds mu.
func (m *Memtable) walkUp(i int, fn func(entry) bool) {
	for ; i < m.frozenLen; i++ {
		if !fn(m.at(i)) {
			return
		}
	}
}

// walkDown calls fn on the frozen entries from index i down until fn
// returns false. Caller holds mu.
func (m *Memtable) walkDown(i int, fn func(entry) bool) {
	for ; i >= 0; i-- {
		if !fn(m.at(i)) {
			return
		}
	}
}
