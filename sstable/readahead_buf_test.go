package sstable

import (
	"runtime"
	"testing"
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
	for _, n := range []int{1, initialReadAhead + 1, maxPooledWindow, maxPooledWindow + 1} {
		bp := getWindowBuf(n)
		if len(*bp) != n {
			t.Fatalf("getWindowBuf(%d) has length %d", n, len(*bp))
		}
		putWindowBuf(bp)
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
