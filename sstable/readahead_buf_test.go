package sstable

import (
	"runtime"
	"testing"

	"github.com/mayflydb/mayfly/internal/manual"
)

func TestWindowClass(t *testing.T) {
	for _, tc := range []struct{ n, class int }{
		{1, 0}, {initialReadAhead, 0}, {initialReadAhead + 1, 1}, {2 * initialReadAhead, 1},
		{2*initialReadAhead + 1, 2}, {256 << 10, 2}, {512 << 10, 3}, {maxPooledWindow, windowClasses - 1},
		{maxPooledWindow + 1, -1},
	} {
		if got := windowClass(tc.n); got != tc.class {
			t.Errorf("windowClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
		if tc.class >= 0 && initialReadAhead<<tc.class < tc.n {
			t.Errorf("class %d (%d bytes) does not hold %d bytes", tc.class, initialReadAhead<<tc.class, tc.n)
		}
	}
}

// TestWindowBufsOffHeap checks that window read buffers come from outside
// the Go heap, that a buffer given back is handed out again instead of a
// new mapping, that the free list keeps at most maxIdleWindowBytes, that
// every buffer is unmapped once the pool is closed (also one given back
// after), and that a nil pool unmaps every buffer given back.
func TestWindowBufsOffHeap(t *testing.T) {
	startBytes, startBufs := manual.Allocated()
	var none *windowPool
	none.put(none.get(initialReadAhead))
	if bytes, bufs := manual.Allocated(); bytes != startBytes || bufs != startBufs {
		t.Fatalf("nil pool: manual.Allocated %d bytes in %d buffers, want %d in %d", bytes, bufs, startBytes, startBufs)
	}
	p := new(windowPool)
	for _, n := range []int{1, initialReadAhead + 1, maxPooledWindow, maxPooledWindow + 1} {
		b := p.get(n)
		if len(b) != n {
			t.Fatalf("get(%d) has length %d", n, len(b))
		}
		if bytes, _ := manual.Allocated(); bytes < startBytes+int64(n) {
			t.Fatalf("get(%d): manual.Allocated %d bytes, want at least %d more than %d", n, bytes, n, startBytes)
		}
		b[0], b[n-1] = 1, 2 // writable throughout
		p.put(b)
	}
	// One buffer of each size in use at a time: after the first round,
	// every one is recycled.
	var maps int64
	for round := range 100 {
		if round == 1 {
			maps = windowMaps.Load()
		}
		for _, n := range []int{initialReadAhead, 3 * initialReadAhead, 200 << 10} {
			p.put(p.get(n))
		}
	}
	if got := windowMaps.Load() - maps; got != 0 {
		t.Fatalf("%d new mappings for buffers that were given back", got)
	}
	// More buffers in use at once than the free list keeps.
	var held [][]byte
	for range 2 * maxIdleWindowBytes / maxPooledWindow {
		held = append(held, p.get(maxPooledWindow))
	}
	for _, b := range held[1:] {
		p.put(b)
	}
	if bytes, _ := manual.Allocated(); bytes-startBytes-int64(cap(held[0])) > maxIdleWindowBytes {
		t.Fatalf("%d bytes kept besides the one buffer in use, more than the %d bound", bytes-startBytes-int64(cap(held[0])), maxIdleWindowBytes)
	}
	p.close()
	p.put(held[0]) // a fetch that finished after the cache closed
	if bytes, bufs := manual.Allocated(); bytes != startBytes || bufs != startBufs {
		t.Fatalf("after close: manual.Allocated %d bytes in %d buffers, want %d in %d", bytes, bufs, startBytes, startBufs)
	}
}

// TestReadAheadRecyclesWindowBuffers: once the pools are warm, a scan that
// reads ahead into a block cache allocates on the Go heap a small fraction
// of the bytes it reads, not a fresh read buffer per window (which made a
// full scan allocate about as much garbage as the table's size, doubling
// the heap through GC headroom).
func TestReadAheadRecyclesWindowBuffers(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	data, rows := raTable(t, NoCompression)
	// A cache far smaller than the table: every block is read from the
	// file (through windows) and decoded into slab memory, off the heap.
	cache := NewCache(256 << 10)
	defer cache.Close()
	r := openRA(t, newCountingObject(data), 256<<10, cache)
	defer r.Close()
	scan := func() { scanCount(t, r, len(rows)) }
	scan() // warms the pools
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const scans = 3
	for range scans {
		scan()
	}
	runtime.ReadMemStats(&after)
	perScan := (after.TotalAlloc - before.TotalAlloc) / scans
	t.Logf("table %d bytes, %d allocated per scan", len(data), perScan)
	if perScan > uint64(len(data))/2 { // about len(data) without the pools
		t.Fatalf("a scan of a %d-byte table allocated %d bytes on the Go heap", len(data), perScan)
	}
}

// scanCount walks r from first to last row, keeping nothing, and fails t
// unless it finds want rows without an error.
func scanCount(t *testing.T, r *Reader, want int) {
	t.Helper()
	it := r.NewIter()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != want {
		t.Fatalf("scan: %d rows of %d, %v", n, want, err)
	}
}

// TestCompactionIterBlocksOffHeap checks that a compaction iterator, with
// and without read-ahead, decodes the blocks it misses into the cache's
// slab memory without caching them, holds at most a few at a time, frees
// every one by its Close, and allocates on the Go heap a small fraction of
// the bytes it reads; and that every manual buffer behind the cache and the
// read-ahead windows is given back once the cache is closed.
func TestCompactionIterBlocksOffHeap(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	startBytes, startBufs := manual.Allocated()
	for _, comp := range []int{-1, 64 << 10} {
		cache := NewCache(64 << 20)
		r, err := Open(newMemObject(data), ReaderOptions{Name: testName, Cache: cache, ReadAhead: 256 << 10, CompactionReadAhead: comp})
		if err != nil {
			t.Fatal(err)
		}
		scan := func() {
			it := r.NewCompactionIter()
			n, maxBufs := 0, int64(0)
			for ok := it.First(); ok; ok = it.Next() {
				if !rowsEqual(it.Row(), &rows[n]) {
					t.Fatalf("comp %d: row %d is %s, want %s", comp, n, fmtRow(it.Row()), fmtRow(&rows[n]))
				}
				n++
				maxBufs = max(maxBufs, cache.AllocStats().Bufs)
			}
			if err := it.Close(); err != nil || n != len(rows) {
				t.Fatalf("comp %d: %d rows of %d, %v", comp, n, len(rows), err)
			}
			// Block by block: the current block only. Reading ahead: the
			// current block and at most two windows of comp bytes.
			bound := int64(1)
			if comp > 0 {
				minLen := uint64(comp)
				for _, h := range dataHandles(t, r) {
					minLen = min(minLen, h.length+trailerLen)
				}
				bound += 2 * int64(uint64(comp)/minLen)
			}
			if maxBufs == 0 || maxBufs > bound {
				t.Fatalf("comp %d: at most %d slab blocks in use during the scan, want 1..%d", comp, maxBufs, bound)
			}
			if st := cache.AllocStats(); st.Bufs != 0 {
				t.Fatalf("comp %d: %d slab blocks left after Close", comp, st.Bufs)
			}
			if size := cache.Metrics().SizeBytes; size != 0 {
				t.Fatalf("comp %d: the compaction scan left %d bytes in the cache", comp, size)
			}
		}
		scan() // warms the read buffer pools
		if !raceEnabled {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			scan()
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(data))/4 {
				t.Fatalf("comp %d: a compaction scan of a %d-byte table allocated %d bytes on the Go heap", comp, len(data), got)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		cache.Close()
		if st := cache.AllocStats(); !st.Empty() {
			t.Fatalf("comp %d: cache allocator after Close: %+v", comp, st)
		}
	}
	if bytes, bufs := manual.Allocated(); bytes != startBytes || bufs != startBufs {
		t.Fatalf("manual.Allocated %d bytes in %d buffers, want %d in %d", bytes, bufs, startBytes, startBufs)
	}
}
