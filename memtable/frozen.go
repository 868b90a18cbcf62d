package memtable

// Freezing. A memtable that will take no more writes (the engine rotated
// it, and it waits for or undergoes its flush) is frozen: writes to it
// panic from then on. Its skiplist stays as it is: nodes live in the arena
// beside their records, so there is no separate index to give back, and a
// copy into a sorted array would add memory (8 bytes or more per row) and
// a walk of the list at every rotation for reads that the list already
// serves without a lock.

// Freeze makes the memtable read-only: a write after Freeze panics, and so
// does Freeze after the last Unref; Freeze of a frozen memtable does
// nothing. Reads are unaffected. The caller holds a reference, and no
// write may be running (the engine freezes only memtables whose writers
// are done); a write that races with Freeze either panics or goes in.
func (m *Memtable) Freeze() {
	if m.refs.Load() <= 0 {
		panic("memtable: Freeze after the last Unref")
	}
	m.sealed.Store(true)
}

// Frozen reports whether Freeze has been called.
func (m *Memtable) Frozen() bool { return m.sealed.Load() }

// MemoryBytes returns the memory the memtable holds for its rows: Size,
// frozen or not (the index lives in the arena with the records), its
// whole-key filter and its newest-version hint.
func (m *Memtable) MemoryBytes() int64 { return m.Size() + m.filter.bytes() + m.hint.bytes() }
