package memtable

import (
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
)

// TestChunkPurposes: arena chunks are counted under the memtable purposes
// of internal/manual as they move between a memtable's arena, its index
// arrays (the tail of ascending keys, which becomes the frozen array) and
// the pool, and all are back at their start after the last Unref and the
// pool's Close. It also
// checks MemoryBytes: Size before the freeze, 48 bytes less per row after
// (24-byte array entries instead of 72 of tree).
func TestChunkPurposes(t *testing.T) {
	p0 := manual.PurposeBytes()
	delta := func(p manual.Purpose) int64 { return manual.PurposeBytes()[p] - p0[p] }
	check := func(when string, arena, frozen, pooled int64) {
		t.Helper()
		got := [3]int64{delta(manual.PurposeMemtableArena), delta(manual.PurposeMemtableFrozen), delta(manual.PurposeMemtablePooled)}
		if got != [3]int64{arena, frozen, pooled} {
			t.Fatalf("%s: arena, frozen, pooled = %v, want %v", when, got, [3]int64{arena, frozen, pooled})
		}
	}
	pool := NewPool(4<<20, -1)
	m := NewPooled(1, pool)
	const rows = 20000
	// Records of 16+9+50 bytes, whole ones to a chunk; 24-byte entries.
	arena := int64((rows+arenaChunk/75-1)/(arenaChunk/75)) * arenaChunk
	frozen := int64((rows+chunkEntries-1)/chunkEntries) * arenaChunk
	for i := range rows {
		m.Add(&format.Row{Key: fmt.Appendf(nil, "k%08d", i), Seq: uint64(i + 1), Value: make([]byte, 50)})
	}
	// Ascending keys: every entry is in the tail, which the freeze keeps
	// as the frozen array; its lazily mapped chunks are unmapped, not
	// pooled, at the last Unref.
	check("after the writes", arena, frozen, 0)
	if m.MemoryBytes() != m.Size() {
		t.Fatalf("unfrozen MemoryBytes %d, Size %d", m.MemoryBytes(), m.Size())
	}
	m.Freeze()
	check("after the freeze", arena, frozen, 0)
	if want := m.Size() - rows*int64(indexOverhead-entrySize); m.MemoryBytes() != want {
		t.Fatalf("frozen MemoryBytes %d, want %d", m.MemoryBytes(), want)
	}
	m.Unref()
	check("after the last Unref", 0, 0, arena)
	next := NewPooled(2, pool)
	next.Add(&format.Row{Key: []byte("a"), Seq: 1})
	check("a new memtable's first write", arenaChunk, arenaChunk, arena-arenaChunk)
	next.Unref()
	pool.Close()
	check("after Close", 0, 0, 0)
}
