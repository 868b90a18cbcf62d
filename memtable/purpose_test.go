package memtable

import (
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
)

// TestChunkPurposes: arena chunks are counted under the memtable purposes
// of internal/manual as they move between a memtable's arena and the pool
// (nothing is counted as frozen: a freeze copies nothing), and all are back
// at their start after the last Unref and the pool's Close. It also checks
// Size and MemoryBytes: the bytes the rows take in the chunks, the same
// before and after the freeze.
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
	for i := range rows {
		m.Add(&format.Row{Key: fmt.Appendf(nil, "k%08d", i), Seq: uint64(i + 1), Value: make([]byte, 50)})
	}
	chunks := int64(len(m.chunks()))
	arena := chunks * arenaChunk
	check("after the writes", arena, 0, 0)
	// Every row takes its node (32 bytes and 8 a level) and record
	// (16+9+50 bytes) padded to 8; only the end of each full chunk is
	// unused, less than a node's or a record's worth, and the two chunks
	// being filled (one of nodes, one of records) are partly used.
	lo := int64(rows * (recordHeader + 9 + 50 + nodeSize(1)))
	if full := arena - 2*arenaChunk; m.Size() < lo || m.Size() > arena || m.Size() < full-(chunks-2)*256 {
		t.Fatalf("Size %d of %d rows in %d chunks, want at least %d, at most the chunks and near their fill", m.Size(), rows, chunks, lo)
	}
	if m.MemoryBytes() != m.Size() {
		t.Fatalf("unfrozen MemoryBytes %d, Size %d", m.MemoryBytes(), m.Size())
	}
	size := m.Size()
	m.Freeze()
	check("after the freeze", arena, 0, 0)
	if m.MemoryBytes() != size || m.Size() != size {
		t.Fatalf("frozen MemoryBytes %d, Size %d, want %d", m.MemoryBytes(), m.Size(), size)
	}
	m.Unref()
	check("after the last Unref", 0, 0, arena)
	next := NewPooled(2, pool)
	next.Add(&format.Row{Key: []byte("a"), Seq: 1})
	check("a new memtable's first write", 2*arenaChunk, 0, arena-2*arenaChunk) // a node and a record chunk
	next.Unref()
	pool.Close()
	check("after Close", 0, 0, 0)
}
