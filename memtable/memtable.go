// Package memtable holds the newest rows of a database in memory, ordered by
// internal key, until they are flushed to an SSTable.
//
// A Memtable is a concurrent skiplist (skl.go) whose nodes, like the rows'
// records (key, sequence, times, value), live in an append-only arena of
// byte chunks outside the Go heap (arena.go): the garbage collector never
// scans the index or the rows, and an insert allocates nothing on the Go
// heap. A node carries the key's first 16 bytes as two integers and its
// length, so most comparisons never touch the record.
//
// Concurrency: any number of goroutines may insert (Add, ApplyBatch,
// ApplyBatches) while any number read (Get, Versions, iterators), without
// a memtable-wide lock: writers share the arena through an atomic bump
// pointer and link nodes with compare-and-swap; readers take no lock. Each
// row becomes visible on its own, once linked: a reader sees a row whole
// or not at all, and in internal-key order, but the rows of one batch do
// not appear at once. Rows are never removed, so a reader that filters by
// sequence number sees a consistent view (the engine publishes a sequence
// number only after every batch up to it is applied).
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
	"math"
	"sync/atomic"

	"github.com/mayflydb/mayfly/format"
)

// Memtable is an ordered in-memory set of rows. It is safe for concurrent use
// by any number of writers and readers.
type Memtable struct {
	arena  arena
	head   headNode
	height atomic.Int32 // levels of the list in use (at most maxHeight)
	// tail[l] is a node that was the last at level l when it was linked
	// (0: none yet), a hint that lets keys arriving in ascending order
	// skip the search (see fromTail).
	tail [maxHeight]atomic.Uint64
	// pool is where arena chunks come from and go back to; nil: none.
	pool *Pool

	size   atomic.Int64 // arena bytes taken by nodes and records
	rows   atomic.Int64
	sealed atomic.Bool // Freeze was called: writes panic
	logNum uint64      // WAL segment holding this memtable's rows

	refs atomic.Int32 // references; the arena is freed when they reach 0

	filter keyFilter  // whole-key filter (filter.go); none for New and NewPooled
	hint   newestHint // newest-version hint (hint.go); none when no filter

	// deadlineRows counts the deadline rows and merge operands added;
	// deadlineMinTS is the earliest commit time among them (MaxInt64:
	// none). Each row updates them before it is linked.
	deadlineRows  atomic.Int64
	deadlineMinTS atomic.Int64
	// Expiry summary: whether a row with an expiry was added, the
	// earliest commit time among such rows and their earliest deadline
	// (MaxInt64: none). hasTTL is set after the minimums.
	hasTTL        atomic.Bool
	firstTTLWrite atomic.Int64
	minExpire     atomic.Int64
	// newKeys counts rows the engine proved to be their key's first
	// version anywhere (NoteNewKeys).
	newKeys atomic.Int64
}

// New returns an empty memtable whose rows are logged in WAL segment logNum,
// holding one reference that the caller drops with Unref.
func New(logNum uint64) *Memtable { return NewPooled(logNum, nil) }

// NewPooled is New for a memtable whose arena chunks come from pool when it
// has any and go back to it at the last Unref (see Pool). A nil pool is
// New.
func NewPooled(logNum uint64, pool *Pool) *Memtable { return NewFiltered(logNum, pool, 0) }

// NewFiltered is NewPooled for a memtable expected to grow to about
// expectedBytes (Size), with a whole-key filter sized for that (filter.go)
// which spares most lookups of absent keys the skiplist search, and a
// newest-version hint (hint.go) which spares most lookups of keys written
// moments ago the search, and most inserts of keys written again theirs.
// The filter takes about expectedBytes/64 bytes of Go heap, the hint a
// slot of 48 bytes (hint.go) per 8 of the filter's rows, at most
// hintSlots of them; 0 means neither.
func NewFiltered(logNum uint64, pool *Pool, expectedBytes int64) *Memtable {
	m := &Memtable{logNum: logNum, pool: pool,
		filter: makeKeyFilter(expectedBytes), hint: makeNewestHint(expectedBytes)}
	// No chunk yet: the first alloc of each kind adds one.
	m.arena.cur[nodeSpace].Store(arenaChunk)
	m.arena.cur[recordSpace].Store(arenaChunk)
	m.deadlineMinTS.Store(math.MaxInt64)
	m.firstTTLWrite.Store(math.MaxInt64)
	m.minExpire.Store(math.MaxInt64)
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
		m.pool.memtableReleased(m.fullChunks())
		m.freeArena()
	}
}

// Released reports whether the last reference is gone: the arena is
// freed (or back in the pool) and the memtable may no longer be read.
func (m *Memtable) Released() bool { return m.refs.Load() <= 0 }

// live panics if the last reference is gone. A caller holds a reference,
// so a read cannot race with the release.
func (m *Memtable) live() {
	if m.refs.Load() <= 0 {
		panic("memtable: read after the last Unref")
	}
}

// writable panics if the memtable was released or frozen.
func (m *Memtable) writable() {
	if m.refs.Load() <= 0 {
		panic("memtable: write after the last Unref")
	}
	if m.sealed.Load() {
		panic("memtable: write to a frozen memtable")
	}
}

// noteExpiry folds r into the expiry summary, and counts it if it is a
// deadline row or a merge operand (both apply to the value beneath them,
// so both reach older rows alike). It runs before r is linked, so a row
// that a reader can see is in the summary.
func (m *Memtable) noteExpiry(r *format.Row) {
	if r.Flags&(format.FlagDeadline|format.FlagMerge) != 0 {
		casMin(&m.deadlineMinTS, r.TS)
		m.deadlineRows.Add(1)
	}
	if !r.HasExpiry() || r.IsTombstone() || r.IsMerge() {
		return // an operand's expire_ts is a window's deadline, not its expiry
	}
	ts := r.ExpireTS // a row without a commit time counts as written at its deadline
	if r.Flags&format.FlagHasTS != 0 {
		ts = min(r.TS, r.ExpireTS)
	}
	casMin(&m.firstTTLWrite, ts)
	casMin(&m.minExpire, r.ExpireTS)
	if !m.hasTTL.Load() {
		m.hasTTL.Store(true)
	}
}

// casMin lowers a to v if v is smaller. It writes only when it lowers, so
// concurrent writers of rows that change nothing share the cache line.
func casMin(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v >= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
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
	if m.deadlineRows.Load() == 0 {
		return 0, false
	}
	return m.deadlineMinTS.Load(), true
}

// ExpirySummary returns the earliest commit time of the memtable's rows
// with an expiry and the earliest expiry deadline among them, in Unix
// milliseconds; ok is false when the memtable holds no row with an expiry.
func (m *Memtable) ExpirySummary() (firstWrite, minExpire int64, ok bool) {
	if !m.hasTTL.Load() {
		return 0, 0, false
	}
	return m.firstTTLWrite.Load(), m.minExpire.Load(), true
}

// LogNum returns the WAL segment number this memtable's rows were logged in.
func (m *Memtable) LogNum() uint64 { return m.logNum }

// Size returns the memory the memtable's rows take in its arena, in bytes:
// each row's node and record (not the unused end of each chunk).
func (m *Memtable) Size() int64 { return m.size.Load() }

// Len returns the number of rows.
func (m *Memtable) Len() int { return int(m.rows.Load()) }

// NoteNewKeys records that n rows already added were each the first version
// of their key in the whole database when written: a conditional insert
// found no version of it, live or dead. The count is a hint for compaction
// (a flushed row that overwrites nothing beneath adds no space); the
// memtable does not check it.
func (m *Memtable) NoteNewKeys(n int) { m.newKeys.Add(int64(n)) }

// NewKeys returns the rows NoteNewKeys recorded.
func (m *Memtable) NewKeys() int64 { return m.newKeys.Load() }

// Empty reports whether the memtable holds no rows.
func (m *Memtable) Empty() bool { return m.rows.Load() == 0 }

// ApplyBatch inserts every row of an encoded batch (format batch encoding).
// The batch must already have been validated (it was built by the engine or
// decoded from a checksummed WAL record); a malformed batch returns an error
// and may leave a prefix of its rows inserted, so callers validate first.
// It is safe for concurrent use with other writers and readers; each row
// becomes visible as it is linked, so a reader may see some of the batch's
// rows before others.
func (m *Memtable) ApplyBatch(data []byte) error {
	m.writable()
	v := m.view()
	var sp splice
	return m.apply(&v, &sp, data)
}

// ApplyBatches inserts the rows of each encoded batch, in order. It returns
// how many batches were inserted whole; on a malformed batch (see
// ApplyBatch) it stops there with an error, that batch possibly inserted in
// part. Like ApplyBatch it is safe for concurrent use, and rows become
// visible one by one.
func (m *Memtable) ApplyBatches(batches [][]byte) (int, error) {
	m.writable()
	v := m.view()
	var sp splice
	for i, data := range batches {
		if err := m.apply(&v, &sp, data); err != nil {
			return i, err
		}
	}
	return len(batches), nil
}

// apply inserts the rows of one batch.
func (m *Memtable) apply(v *view, sp *splice, data []byte) error {
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
		added += m.insert(v, sp, &r)
		n++
	}
}

// Add inserts one row, copying its key and value. It is safe for concurrent
// use with other writers and readers.
func (m *Memtable) Add(r *format.Row) {
	m.writable()
	v := m.view()
	var sp splice
	m.noteExpiry(r)
	m.size.Add(m.insert(&v, &sp, r))
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
	return &iterator{m: m, fwd: make([]uint64, 0, iterChunk), back: make([]uint64, 0, iterChunk), laneCap: laneCap}
}
