package memtable

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
	m.sealed = true // no write from here on: tree and tail are stable
	n, total := m.tree.Len(), m.tree.Len()+m.tail.n
	m.mu.Unlock()

	var fr run
	if n == 0 {
		// Every row is in the tail (keys came in ascending order): it is
		// the frozen array already.
		m.mu.Lock()
		fr = m.tail
	} else {
		// Copy under the read lock: readers go on meanwhile.
		fr.reserve(m.pool, total)
		chunks, i := fr.chunks, 0
		put := func(e entry) bool {
			chunks[i/chunkEntries][i%chunkEntries] = e
			i++
			return true
		}
		m.rlock()
		m.tree.Descend(put)   // the tree is reversed: see treeLess
		m.tail.walkUp(0, put) // the tail sorts after the tree
		m.mu.RUnlock()
		fr.n = i
		fr.buildFences()
		if fr.n != total {
			panic("memtable: index changed while freezing")
		}
		m.mu.Lock()
	}
	tree, tail := m.tree, m.tail
	m.tree, m.frozen, m.tail = nil, fr, run{lazy: true}
	m.mu.Unlock()
	// No reader can reach tree or the old tail any more; an open pool
	// takes the tree's nodes, and the tail's chunks unless they became the
	// frozen array.
	if n > 0 {
		tail.free(m.pool)
	}
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
	frozen := m.tree == nil && m.frozen.n > 0
	m.mu.RUnlock()
	n := m.Size()
	if frozen {
		n -= m.rows.Load() * int64(indexOverhead-entrySize)
	}
	return n
}

// freeIndex hands the chunks of the frozen array and of the tail to the
// pool, which keeps or frees them. Caller holds mu for writing and the last
// reference.
func (m *Memtable) freeIndex() {
	m.frozen.free(m.pool)
	m.tail.free(m.pool)
}
