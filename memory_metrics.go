package mayfly

import (
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/internal/slab"
)

// MemoryMetrics breaks down the memory the engine holds outside the Go heap
// (internal/manual: anonymous mappings), which runtime.MemStats does not
// see. Every figure is in bytes and covers the whole process, not one
// database: the counters are process-wide atomics, one add per mapping or
// unmapping and no lock, so reading them is cheap and the hot paths pay
// nothing for them. With a single database open they are that database's.
// Each field is read on its own, so under concurrent activity they may be
// off from each other by what changed while reading.
type MemoryMetrics struct {
	// MemtableArena is the arena chunks (memtable.ChunkSize each, resident
	// in full) holding the records and skiplist nodes of memtables, active
	// and immutable.
	MemtableArena int64
	// MemtableFrozen is always 0: frozen memtables keep their skiplist
	// (RFC 0011) instead of a sorted copy of their entries.
	//
	// Deprecated: kept so that the metric's name stays; it reads 0.
	MemtableFrozen int64
	// MemtablePooled is the chunks idle in memtable pools, kept for the
	// next memtables (RFC 0003, "Chunk recycling").
	MemtablePooled int64
	// BlockCacheMapped is the slabs and large buffers block cache
	// allocators have mapped (cached blocks and blocks read through the
	// cache); BlockCacheInUse the part handed out to blocks, by size class.
	// The difference is free blocks in mapped slabs; a class's one empty
	// slab stays mapped, but only its start stays resident (slab package
	// documentation).
	BlockCacheMapped, BlockCacheInUse int64
	// TableIndexes is the point indexes of open SSTable readers; indexes
	// of small tables (under 4 KiB) stay on the Go heap and are not counted.
	TableIndexes int64
	// IndexBlocks is the whole index blocks held by compaction iterators
	// and while point indexes are built.
	IndexBlocks int64
	// WAL is the WAL writers' pending-append chunks: two per open WAL, and
	// spill chunks while a write to the log is slow.
	WAL int64
	// ObjectWriters is the write buffers of SSTable files being written,
	// and those idle in the storage's free list.
	ObjectWriters int64
	// FilterBuilders is the key hashes collected for the bloom filters of
	// tables being written.
	FilterBuilders int64
	// ReadAhead is the read-ahead windows of iterators, in use or idle.
	ReadAhead int64
	// Other is manual memory counted under no component above.
	Other int64
	// Total is all the memory outside the Go heap: the sum of the fields
	// above except BlockCacheInUse (part of BlockCacheMapped).
	Total int64
}

// Memtables returns the memory of memtables: MemtableArena plus
// MemtableFrozen plus MemtablePooled (memtable.ArenaBytes).
func (m *MemoryMetrics) Memtables() int64 {
	return m.MemtableArena + m.MemtableFrozen + m.MemtablePooled
}

// MemoryComponent is one component of MemoryMetrics: its snake_case name
// ("memtable_arena") and bytes.
type MemoryComponent struct {
	Name  string
	Bytes int64
}

// Components returns the components whose bytes sum to Total, in the order
// of the fields (BlockCacheInUse, part of block_cache_mapped, is not one).
func (m *MemoryMetrics) Components() []MemoryComponent {
	return []MemoryComponent{
		{"memtable_arena", m.MemtableArena}, {"memtable_frozen", m.MemtableFrozen},
		{"memtable_pooled", m.MemtablePooled}, {"block_cache_mapped", m.BlockCacheMapped},
		{"table_indexes", m.TableIndexes}, {"index_blocks", m.IndexBlocks}, {"wal", m.WAL},
		{"object_writers", m.ObjectWriters}, {"filter_builders", m.FilterBuilders},
		{"read_ahead", m.ReadAhead}, {"other", m.Other},
	}
}

// MemoryUsage returns the process's memory outside the Go heap by
// component: what Metrics().Memory holds, without the rest of Metrics. It
// takes no lock (a few atomic loads), so it may be sampled often.
func MemoryUsage() MemoryMetrics {
	b := manual.PurposeBytes()
	m := MemoryMetrics{
		MemtableArena:    b[manual.PurposeMemtableArena],
		MemtableFrozen:   b[manual.PurposeMemtableFrozen],
		MemtablePooled:   b[manual.PurposeMemtablePooled],
		BlockCacheMapped: b[manual.PurposeBlockCache],
		BlockCacheInUse:  slab.InUse(),
		TableIndexes:     b[manual.PurposeTableIndex],
		IndexBlocks:      b[manual.PurposeIndexBlock],
		WAL:              b[manual.PurposeWAL],
		ObjectWriters:    b[manual.PurposeObjectWriter],
		FilterBuilders:   b[manual.PurposeFilterBuilder],
		ReadAhead:        b[manual.PurposeReadAhead],
		Other:            b[manual.PurposeOther],
	}
	for _, n := range b {
		m.Total += n
	}
	return m
}
