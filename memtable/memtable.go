// Package memtable holds the newest rows of a database in memory, ordered by
// internal key, until they are flushed to an SSTable.
//
// A Memtable is a B-tree (github.com/google/btree) of small entries, each
// pointing at a format.Row kept in a slab, with key and value bytes copied
// into an append-only arena. An entry carries the key's first 8 bytes as an
// integer, so most comparisons never touch the key bytes. It accepts writes
// from one goroutine at a time (the engine's commit leader) while any number
// of readers and iterators run concurrently. Rows are never removed, so a
// reader that filters by sequence number sees a consistent view.
package memtable

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
	"github.com/mayflydb/mayfly/format"
)

// rowOverhead approximates the memory a row costs beyond its key and value
// bytes (the Row in its slab, the entry in a B-tree node, node slack).
const rowOverhead = 144

// slabRows is how many Rows each slab allocation holds.
const slabRows = 1024

// entry is what the B-tree orders: user key ascending (prefix first), then
// sequence number descending.
type entry struct {
	prefix uint64 // first 8 key bytes, big-endian, zero-padded
	seq    uint64
	key    []byte
	row    *format.Row
}

func keyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

func lessEntry(a, b entry) bool {
	if a.prefix != b.prefix {
		return a.prefix < b.prefix
	}
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.seq > b.seq
}

func pivot(key []byte, seq uint64) entry {
	return entry{prefix: keyPrefix(key), seq: seq, key: key}
}

// arenaChunk is the size of each arena allocation. Rows larger than a
// quarter chunk get their own allocation.
const arenaChunk = 1 << 20

// Memtable is an ordered in-memory set of rows. It is safe for concurrent use
// by one writer and many readers.
type Memtable struct {
	mu    sync.RWMutex
	tree  *btree.BTreeG[entry]
	arena []byte
	slab  []format.Row

	size   atomic.Int64 // approximate bytes used
	rows   atomic.Int64
	logNum uint64 // WAL segment holding this memtable's rows

	// Expiry summary, guarded by mu: whether a row with an expiry was
	// added, the earliest commit time among such rows and their earliest
	// deadline.
	hasTTL        bool
	firstTTLWrite int64
	minExpire     int64
}

// New returns an empty memtable whose rows are logged in WAL segment logNum.
func New(logNum uint64) *Memtable {
	return &Memtable{tree: btree.NewG(32, lessEntry), logNum: logNum}
}

// insert stores a copy of r (bytes already in the arena). Caller holds mu.
func (m *Memtable) insert(r *format.Row) {
	if len(m.slab) == cap(m.slab) {
		m.slab = make([]format.Row, 0, slabRows)
	}
	m.slab = append(m.slab, *r)
	p := &m.slab[len(m.slab)-1]
	m.tree.ReplaceOrInsert(entry{prefix: keyPrefix(p.Key), seq: p.Seq, key: p.Key, row: p})
}

// noteExpiry folds r into the expiry summary. Caller holds mu.
func (m *Memtable) noteExpiry(r *format.Row) {
	if !r.HasExpiry() || r.IsTombstone() {
		return
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

// alloc copies b into the arena and returns the copy.
func (m *Memtable) alloc(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if len(b) > arenaChunk/4 {
		c := make([]byte, len(b))
		copy(c, b)
		return c
	}
	if cap(m.arena)-len(m.arena) < len(b) {
		m.arena = make([]byte, 0, arenaChunk)
	}
	n := len(m.arena)
	m.arena = append(m.arena, b...)
	return m.arena[n : n+len(b) : n+len(b)]
}

// ApplyBatch inserts every row of an encoded batch (format batch encoding).
// The batch must already have been validated (it was built by the engine or
// decoded from a checksummed WAL record); a malformed batch returns an error
// and may leave a prefix of its rows inserted, so callers validate first.
func (m *Memtable) ApplyBatch(data []byte) error {
	br, err := format.NewBatchReader(data)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var r format.Row
	var added int64
	n := int64(0)
	for {
		ok, err := br.Next(&r)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		added += int64(len(r.Key)+len(r.Value)) + rowOverhead
		m.noteExpiry(&r)
		r.Key = m.alloc(r.Key)
		r.Value = m.alloc(r.Value)
		m.insert(&r)
		n++
	}
	m.size.Add(added)
	m.rows.Add(n)
	return nil
}

// Add inserts one row, copying its key and value.
func (m *Memtable) Add(r *format.Row) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *r
	m.noteExpiry(r)
	c.Key = m.alloc(r.Key)
	c.Value = m.alloc(r.Value)
	m.insert(&c)
	m.size.Add(int64(len(r.Key)+len(r.Value)) + rowOverhead)
	m.rows.Add(1)
}

// Get returns the newest row of ukey with Seq <= seq, tombstones included.
// The returned row's bytes are immutable and may be retained.
func (m *Memtable) Get(ukey []byte, seq uint64) (format.Row, bool) {
	var out format.Row
	found := false
	m.mu.RLock()
	m.tree.AscendGreaterOrEqual(pivot(ukey, seq), func(e entry) bool {
		if bytes.Equal(e.key, ukey) {
			out, found = *e.row, true
		}
		return false
	})
	m.mu.RUnlock()
	return out, found
}

// NewIter returns an iterator over the memtable. It sees rows added after it
// was created; callers filter by sequence number for a stable view.
func (m *Memtable) NewIter() format.Iterator {
	return &iterator{m: m, buf: make([]format.Row, 0, iterChunk)}
}
