package manual

import "sync/atomic"

// Purpose says what a buffer is for. Every buffer is counted under one
// purpose from New to Free, so the memory outside the Go heap can be broken
// down by component (PurposeBytes) at the cost of one atomic add per
// allocation: no lock, and reading the counters is cheap.
type Purpose uint8

// The purposes. A memtable arena chunk moves between the three memtable
// purposes without being mapped again (Move).
const (
	// PurposeOther is the purpose of New and Free.
	PurposeOther Purpose = iota
	// PurposeMemtableArena: arena chunks holding the records of memtables.
	PurposeMemtableArena
	// PurposeMemtableFrozen: no longer used (frozen memtables keep their
	// skiplist, RFC 0011); kept so that the purposes' numbers and names stay.
	PurposeMemtableFrozen
	// PurposeMemtablePooled: arena chunks idle in memtable pools.
	PurposeMemtablePooled
	// PurposeBlockCache: slabs and large buffers of block cache allocators
	// (cached blocks and blocks read through them).
	PurposeBlockCache
	// PurposeTableIndex: point indexes held by open SSTable readers.
	PurposeTableIndex
	// PurposeIndexBlock: whole index blocks read for compaction iterators
	// and while building point indexes.
	PurposeIndexBlock
	// PurposeWAL: WAL writers' pending-append buffers.
	PurposeWAL
	// PurposeObjectWriter: object (SSTable file) write buffers, in use or
	// idle in a free list.
	PurposeObjectWriter
	// PurposeFilterBuilder: hashes collected for the bloom filter of a
	// table being written.
	PurposeFilterBuilder
	// PurposeReadAhead: read-ahead windows of iterators, in use or idle.
	PurposeReadAhead
	// NumPurposes is the number of purposes.
	NumPurposes
)

var purposeNames = [NumPurposes]string{
	"other", "memtable_arena", "memtable_frozen", "memtable_pooled", "block_cache",
	"table_index", "index_block", "wal", "object_writer", "filter_builder", "read_ahead",
}

// String returns the purpose's name in snake case ("memtable_arena").
func (p Purpose) String() string {
	if p < NumPurposes {
		return purposeNames[p]
	}
	return "unknown"
}

// purposeBytes counts the bytes handed out and not freed, by purpose; they
// sum to Allocated's bytes.
var purposeBytes [NumPurposes]atomic.Int64

// PurposeBytes returns the bytes handed out by New and not yet freed, by
// purpose, for the whole process; the entries sum to Allocated's bytes
// (each counter is read on its own, so under concurrent allocation the sum
// may be off by what changed while reading).
func PurposeBytes() [NumPurposes]int64 {
	var out [NumPurposes]int64
	for i := range out {
		out[i] = purposeBytes[i].Load()
	}
	return out
}

// Move counts n bytes of buffers under purpose to rather than from, for a
// buffer that changes hands without being freed (an arena chunk going to a
// pool). The caller keeps it paired: the bytes must be counted under from.
func Move(from, to Purpose, n int) {
	purposeBytes[from].Add(-int64(n))
	purposeBytes[to].Add(int64(n))
}
