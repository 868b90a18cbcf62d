// Package memtable holds the newest rows of a database in memory, ordered by
// internal key, until they are flushed to an SSTable.
//
// A Memtable is a B-tree (github.com/google/btree) of small pointer-free
// entries, each locating one row's record (key, sequence, times, value) in an
// append-only arena of byte chunks (arena.go). An entry carries the key's
// first 16 bytes as two integers and its length, so most comparisons never
// touch the arena, and the garbage collector never scans the tree's nodes or
// the arena. Entries above every indexed one (keys arriving in ascending
// order) are appended to a sorted tail outside the Go heap instead of going
// through the tree (see index, and run.go). Once the memtable takes no more
// writes, Freeze swaps tree and tail for one sorted array of the same
// entries outside the Go heap (frozen.go).
// It accepts writes from one goroutine at a time (the engine's commit
// leader) while any number of readers and iterators run concurrently. Rows
// are never removed, so a reader that filters by sequence number sees a
// consistent view.
//
// Lifetime: the arena lives outside the Go heap and is freed by hand. New
// returns a memtable holding one reference; each holder that may still read
// it (the engine's list of memtables, a published read state, a flush) takes
// its own with Ref and drops it with Unref, and the last Unref frees the
// arena (or hands it to the memtable's Pool). Rows returned by Get and by
// iterators alias the arena, so they are valid only while the reader holds
// a reference; a read after the last Unref panics, and so may touching a
// row obtained before it.
//
// This package is engine-internal: it is importable (tools and tests read
// its types), but it has no compatibility promise; the stable API is
// package mayfly, storage and its drivers, and clock.
package memtable

import (
	"sync"
	"sync/atomic"

	"github.com/google/btree"
	"github.com/mayflydb/mayfly/format"
)

// indexOverhead approximates the memory a row costs beyond its arena
// record: its 24-byte entry in a B-tree node plus node slack (nodes run
// half to fully occupied, and their item slices grow by doubling). Measured
// live heap (BenchmarkHeapPerRow: 16-byte keys, 100-byte values): 36 bytes
// per row in random order, 27 ascending and 52 descending (see treeLess).
// The index is Go heap, which GOGC=100 lets grow to twice its live size
// before a collection, while the arena costs its size once; so a row is
// counted at twice the random-order figure, and Size tracks resident memory.
const indexOverhead = 2 * 36

// btreeDegree is the B-tree's degree: nodes hold up to 2*degree-1 entries.
// Degrees 16 to 128 hold the same heap per row within 3%
// (BenchmarkHeapPerRow); 32 keeps a node's items within 2 KiB.
const btreeDegree = 32

// Memtable is an ordered in-memory set of rows. It is safe for concurrent use
// by one writer and many readers.
type Memtable struct {
	mu sync.RWMutex
	// The index of a live memtable is tree and tail: tail holds the
	// entries above every entry of tree, in ascending order (see insert).
	// Freeze replaces both with frozen (frozen.go). Guarded by mu.
	tree   *btree.BTreeG[entry] // nil once frozen
	tail   run
	frozen run
	// hi is the greatest entry of tree and tail, valid once rows > 0.
	hi     entry
	sealed bool     // Freeze was called: writes panic; guarded by mu
	chunks [][]byte // the arena; see arena.go
	cur    int      // index of the chunk being filled, -1 before the first
	curLen int      // bytes used in chunks[cur]
	// pool is where arena chunks and tree nodes come from and go back
	// to; nil: none.
	pool *Pool

	size atomic.Int64 // approximate bytes used
	rows atomic.Int64
	// deadlineRows counts the deadline rows and merge operands added;
	// deadlineMinTS, guarded by mu, is the earliest commit time among them.
	deadlineRows  atomic.Int64
	deadlineMinTS int64
	logNum        uint64 // WAL segment holding this memtable's rows

	refs     atomic.Int32 // references; the arena is freed when they reach 0
	released bool         // the arena is freed; guarded by mu

	// Expiry summary, guarded by mu: whether a row with an expiry was
	// added, the earliest commit time among such rows and their earliest
	// deadline.
	hasTTL        bool
	firstTTLWrite int64
	minExpire     int64
}

// New returns an empty memtable whose rows are logged in WAL segment logNum,
// holding one reference that the caller drops with Unref.
func New(logNum uint64) *Memtable { return NewPooled(logNum, nil) }

// NewPooled is New for a memtable whose arena chunks and B-tree nodes come
// from pool when it has any and go back to it at the last Unref (see Pool).
// A nil pool is New.
func NewPooled(logNum uint64, pool *Pool) *Memtable {
	m := &Memtable{cur: -1, logNum: logNum, pool: pool, tail: run{lazy: true}}
	if nodes := pool.nodeList(); nodes != nil {
		m.tree = btree.NewWithFreeListG(btreeDegree, m.treeLess, nodes)
	} else {
		m.tree = btree.NewG(btreeDegree, m.treeLess)
	}
	m.refs.Store(1)
	return m
}

// Ref takes another reference: the arena stays readable until it is
// dropped. The caller must already hold a reference (a memtable whose last
// reference is gone cannot be revived: Ref panics).
func (m *Memtable) Ref() {
	if m.refs.Add(1) <= 1 {
		m.refs.Add(-1)
		panic("memtable: Ref of a released memtable")
	}
}

// Unref drops a reference. The last one frees the arena, after which no
// method but LogNum, Size, Len, Empty and ExpirySummary may be called, and
// rows obtained from the memtable must no longer be touched. Unref panics if
// the memtable has no reference left.
func (m *Memtable) Unref() {
	switch n := m.refs.Add(-1); {
	case n < 0:
		panic("memtable: Unref of a released memtable")
	case n == 0:
		m.mu.Lock()
		m.released = true
		m.pool.memtableReleased(m.fullChunks())
		m.freeArena()
		m.freeIndex()
		// Drop the index too: a holder of a stale pointer to m (a closed
		// iterator the caller keeps) must not pin tens of MB of tree nodes.
		// An open pool takes the nodes back for the next memtable's tree.
		if m.tree != nil && m.pool.open() {
			m.tree.Clear(true)
		}
		m.tree = nil
		m.mu.Unlock()
	}
}

// rlock takes mu for reading; if the arena was freed it lets go and panics,
// so a recovered panic leaves the memtable usable for the checks that follow.
func (m *Memtable) rlock() {
	m.mu.RLock()
	if m.released {
		m.mu.RUnlock()
		panic("memtable: read after the last Unref")
	}
}

// lock takes mu for writing, or panics (unlocked) if the arena was freed.
func (m *Memtable) lock() {
	m.mu.Lock()
	if m.released {
		m.mu.Unlock()
		panic("memtable: write after the last Unref")
	}
}

// wlock is lock for an insert: it also panics if the memtable is frozen.
func (m *Memtable) wlock() {
	m.lock()
	if m.sealed {
		m.mu.Unlock()
		panic("memtable: write to a frozen memtable")
	}
}

// insert copies r into the arena and indexes it, returning the bytes it
// accounts for. Caller holds mu for writing.
func (m *Memtable) insert(r *format.Row) int64 {
	n := recordLen(r)
	k0, k1 := inline(r.Key)
	m.index(entry{k0: k0, k1: k1, loc: m.writeRecord(r, n)})
	return int64(n) + indexOverhead
}

// index adds e to the index. An entry above every indexed one (ascending
// keys: sequential keys, time-ordered IDs, the sorted batches of a bulk
// load) is appended to the tail, at the cost of one comparison: no descent
// of the tree, no shifting of a leaf's entries. Any other entry goes into
// the tree; one that would land inside the tail's range first moves the
// tail into the tree, so that the tail stays above the whole tree. Each
// entry moves at most once, so an insert costs at most one tree insert
// plus a comparison or two, whatever the order of the keys. Caller holds mu
// for writing.
func (m *Memtable) index(e entry) {
	if m.tail.n+m.tree.Len() == 0 || m.less(m.hi, e) {
		m.tail.push(m.pool, e)
		m.hi = e
		return
	}
	if m.tail.n > 0 && !m.less(e, m.tail.at(0)) {
		m.spill()
	}
	m.tree.ReplaceOrInsert(e)
}

// spill moves the tail into the tree and empties it, keeping its first
// chunk for the entries appended next. Caller holds mu for writing.
func (m *Memtable) spill() {
	for i := range m.tail.n {
		m.tree.ReplaceOrInsert(m.tail.at(i))
	}
	m.tail.reset(m.pool, false)
}

// noteExpiry folds r into the expiry summary, and counts it if it is a
// deadline row or a merge operand (both apply to the value beneath them,
// so both reach older rows alike). Caller holds mu.
func (m *Memtable) noteExpiry(r *format.Row) {
	if r.Flags&(format.FlagDeadline|format.FlagMerge) != 0 {
		if m.deadlineRows.Add(1) == 1 || r.TS < m.deadlineMinTS {
			m.deadlineMinTS = r.TS
		}
	}
	if !r.HasExpiry() || r.IsTombstone() || r.IsMerge() {
		return // an operand's expire_ts is a window's deadline, not its expiry
	}
	ts := r.ExpireTS // a row without a commit time counts as written at its deadline
	if r.Flags&format.FlagHasTS != 0 {
		ts = min(r.TS, r.ExpireTS)
	}
	if !m.hasTTL {
		m.hasTTL, m.firstTTLWrite, m.minExpire = true, ts, r.ExpireTS
		return
	}
	m.firstTTLWrite = min(m.firstTTLWrite, ts)
	m.minExpire = min(m.minExpire, r.ExpireTS)
}

// HasDeadlineRows reports whether a deadline row (format.FlagDeadline) or a
// merge operand (format.FlagMerge) was added to the memtable.
func (m *Memtable) HasDeadlineRows() bool { return m.deadlineRows.Load() > 0 }

// DeadlineMinTS returns the earliest commit time (Unix ms) among the
// memtable's deadline rows and merge operands; ok is false when it holds
// none. A deadline row (or an operand)
// applies only to a value live when it committed, so a row whose deadline
// passed before this time is beyond the reach of every deadline row here.
func (m *Memtable) DeadlineMinTS() (ts int64, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.deadlineMinTS, m.deadlineRows.Load() > 0
}

// ExpirySummary returns the earliest commit time of the memtable's rows
// with an expiry and the earliest expiry deadline among them, in Unix
// milliseconds; ok is false when the memtable holds no row with an expiry.
func (m *Memtable) ExpirySummary() (firstWrite, minExpire int64, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.firstTTLWrite, m.minExpire, m.hasTTL
}

// LogNum returns the WAL segment number this memtable's rows were logged in.
func (m *Memtable) LogNum() uint64 { return m.logNum }

// Size returns the approximate memory the memtable uses, in bytes.
func (m *Memtable) Size() int64 { return m.size.Load() }

// Len returns the number of rows.
func (m *Memtable) Len() int { return int(m.rows.Load()) }

// Empty reports whether the memtable holds no rows.
func (m *Memtable) Empty() bool { return m.rows.Load() == 0 }

// ApplyBatch inserts every row of an encoded batch (format batch encoding).
// The batch must already have been validated (it was built by the engine or
// decoded from a checksummed WAL record); a malformed batch returns an error
// and may leave a prefix of its rows inserted, so callers validate first.
func (m *Memtable) ApplyBatch(data []byte) error {
	m.wlock()
	defer m.mu.Unlock()
	return m.applyLocked(data)
}

// ApplyBatches inserts the rows of each encoded batch, in order, under one
// acquisition of the write lock (readers see none of them until all are
// in). It returns how many batches were inserted whole; on a malformed
// batch (see ApplyBatch) it stops there with an error, that batch possibly
// inserted in part.
func (m *Memtable) ApplyBatches(batches [][]byte) (int, error) {
	m.wlock()
	defer m.mu.Unlock()
	for i, data := range batches {
		if err := m.applyLocked(data); err != nil {
			return i, err
		}
	}
	return len(batches), nil
}

// applyLocked inserts the rows of one batch. Caller holds mu for writing.
func (m *Memtable) applyLocked(data []byte) error {
	br, err := format.NewBatchReader(data)
	if err != nil {
		return err
	}
	var r format.Row
	var added, n int64
	for {
		ok, err := br.Next(&r)
		if !ok || err != nil {
			m.size.Add(added)
			m.rows.Add(n)
			return err
		}
		m.noteExpiry(&r)
		added += m.insert(&r)
		n++
	}
}

// Add inserts one row, copying its key and value.
func (m *Memtable) Add(r *format.Row) {
	m.wlock()
	defer m.mu.Unlock()
	m.noteExpiry(r)
	m.size.Add(m.insert(r))
	m.rows.Add(1)
}

// Get returns the newest row of ukey with Seq <= seq, tombstones included.
// The returned row's bytes are immutable and alias the arena: they may be
// retained only while the caller holds a reference.
func (m *Memtable) Get(ukey []byte, seq uint64) (format.Row, bool) {
	var out format.Row
	found := false
	m.Versions(ukey, seq, func(r format.Row) bool {
		out, found = r, true
		return false
	})
	return out, found
}

// NewIter returns an iterator over the memtable. It sees rows added after it
// was created; callers filter by sequence number for a stable view. The
// iterator and its rows are valid while the caller holds a reference.
func (m *Memtable) NewIter() format.Iterator {
	return &iterator{m: m, buf: make([]format.Row, 0, iterChunk), ents: make([]entry, 0, iterChunk)}
}
