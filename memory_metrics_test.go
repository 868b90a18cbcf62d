package mayfly

import (
	"context"
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/storage"
)

// checkMemoryTotals checks a Metrics.Memory breakdown against the counters
// it is built from a different way: its Total is manual.Allocated's bytes,
// and the block cache's in-use bytes lie within what its slabs map. The test does nothing
// concurrently, so the figures must match exactly.
func checkMemoryTotals(t *testing.T, when string, m MemoryMetrics) {
	t.Helper()
	// Total against every manual allocation, read at a moment no buffer was
	// mapped or unmapped (a background flush may do either between reads).
	for i := 0; ; i++ {
		before, _ := manual.Allocated()
		u := MemoryUsage()
		if after, _ := manual.Allocated(); after == before {
			if u.Total != after {
				t.Fatalf("%s: Memory.Total = %d, manual.Allocated = %d (%+v)", when, u.Total, after, u)
			}
			break
		}
		if i == 1000 {
			t.Fatalf("%s: manual allocations changed during each of 1000 reads", when)
		}
	}
	if m.BlockCacheInUse < 0 || m.BlockCacheInUse > m.BlockCacheMapped {
		t.Fatalf("%s: block cache in use %d, mapped %d", when, m.BlockCacheInUse, m.BlockCacheMapped)
	}
	sum := m.Memtables() + m.BlockCacheMapped + m.TableIndexes + m.IndexBlocks + m.WAL +
		m.ObjectWriters + m.FilterBuilders + m.ReadAhead + m.Other
	if sum != m.Total {
		t.Fatalf("%s: fields sum to %d, Total %d", when, sum, m.Total)
	}
}

// TestMetricsMemory opens a database, writes, flushes, compacts, reads and
// closes it, checking at each step that Metrics().Memory accounts for all
// the manual memory and that each component shows up where it must, and
// that after Close every figure is back at its start.
func TestMetricsMemory(t *testing.T) {
	start := MemoryUsage()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = local
		o.MemtableSize = 256 << 10
		o.BloomBitsPerKey = 10
		o.BlockCacheSize = 1 << 20
	})
	closed := false
	defer func() {
		if !closed {
			db.Close()
			local.Close()
		}
	}()
	const n = 20000
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "k%07d", i), fmt.Appendf(nil, "v%0100d", i)); err != nil {
			t.Fatal(err)
		}
	}
	m := db.Metrics().Memory
	checkMemoryTotals(t, "after writes", m)
	if m.MemtableArena-start.MemtableArena < memtable.ChunkSize {
		t.Fatalf("after writes: memtable arena %d bytes, want at least the active memtable's chunk", m.MemtableArena)
	}
	if m.WAL-start.WAL <= 0 {
		t.Fatalf("after writes: WAL buffers %d bytes", m.WAL)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	m = db.Metrics().Memory
	checkMemoryTotals(t, "after flush", m)
	if m.MemtablePooled-start.MemtablePooled <= 0 {
		t.Fatalf("after flush: no pooled arena chunk (%+v)", m)
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 7 {
		mustGet(t, db, fmt.Sprintf("k%07d", i), fmt.Sprintf("v%0100d", i))
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for ok := it.First(); ok; ok = it.Next() {
		rows++
	}
	m = db.Metrics().Memory
	checkMemoryTotals(t, "with an open iterator", m)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if rows != n {
		t.Fatalf("iterator saw %d rows, want %d", rows, n)
	}
	if m.BlockCacheMapped-start.BlockCacheMapped <= 0 || m.BlockCacheInUse-start.BlockCacheInUse <= 0 {
		t.Fatalf("after reads: block cache mapped %d, in use %d", m.BlockCacheMapped, m.BlockCacheInUse)
	}
	if m.TableIndexes-start.TableIndexes <= 0 {
		t.Fatalf("after reads: no point index counted (%+v)", m)
	}
	m = db.Metrics().Memory
	checkMemoryTotals(t, "after reads", m)
	t.Logf("after reads: %+v", m)

	closed = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := local.Close(); err != nil {
		t.Fatal(err)
	}
	if end := MemoryUsage(); end != start {
		t.Fatalf("after Close:\n got %+v\nwant %+v", end, start)
	}
}
