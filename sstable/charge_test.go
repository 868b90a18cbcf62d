package sstable

import (
	"os"
	"strings"
	"testing"
)

// TestReaderChargesMetadataToCache: a Reader opened on a cache charges its
// index, point index and filter to it while open, and Close gives the
// charge back; data blocks then fit in what is left of the capacity.
func TestReaderChargesMetadataToCache(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	const capacity = 256 << 10
	cache := NewCache(capacity)
	defer cache.Close()
	r := openRA(t, newCountingObject(data), 0, cache)
	meta := r.metaBytes()
	// The index has one entry per data block (>= 100) and the filter 10
	// bits per row: both are in the charge.
	if min := int64(len(rows)*10/8 + 100*8); meta < min {
		t.Fatalf("metaBytes = %d, want at least %d", meta, min)
	}
	if got := cache.Charged(); got != meta {
		t.Fatalf("cache charged %d bytes, reader holds %d", got, meta)
	}
	// A second reader of the same table adds its own charge.
	r2 := openRA(t, newCountingObject(data), 0, cache)
	if got := cache.Charged(); got != 2*meta {
		t.Fatalf("two readers: cache charged %d bytes, want %d", got, 2*meta)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	// Fill the cache: every block of the table is read once.
	scanCount(t, r, len(rows))
	if got, limit := cache.Metrics().SizeBytes, int64(capacity)-meta; got > limit || got == 0 {
		t.Fatalf("cache holds %d bytes of blocks, want (0, %d] (capacity %d less %d charged)", got, limit, capacity, meta)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := cache.Charged(); got != 0 {
		t.Fatalf("after Close the cache still has %d bytes charged", got)
	}
	if got := cache.c.maximum(); got != capacity {
		t.Fatalf("after Close the blocks' share is %d, want the capacity %d", got, capacity)
	}
}

// TestCacheChargeFloor: charges larger than the capacity leave data blocks
// a quarter of it, and giving them back restores the whole.
func TestCacheChargeFloor(t *testing.T) {
	const capacity = 1 << 20
	c := NewCache(capacity)
	defer c.Close()
	c.charge(capacity / 2)
	if got := c.c.maximum(); got != capacity/2 {
		t.Fatalf("half charged: blocks' share %d, want %d", got, capacity/2)
	}
	c.charge(capacity)
	if got := c.c.maximum(); got != capacity/minBlockShare {
		t.Fatalf("over-charged: blocks' share %d, want the floor %d", got, capacity/minBlockShare)
	}
	c.charge(-capacity - capacity/2)
	if got := c.c.maximum(); got != capacity || c.Charged() != 0 {
		t.Fatalf("all given back: blocks' share %d (want %d), charged %d", got, capacity, c.Charged())
	}
	// Any charge moves the share at once (CLOCK has no tuning to restart).
	small := int64(capacity / 256)
	c.charge(small)
	if got := c.c.maximum(); got != capacity-small {
		t.Fatalf("after a charge of %d bytes the blocks' share is %d, want %d", small, got, capacity-small)
	}
	c.charge(-small)
	if got := c.c.maximum(); got != capacity {
		t.Fatalf("all given back: blocks' share %d, want %d", got, capacity)
	}
	// Caches that hold nothing ignore charges.
	var nilCache *Cache
	nilCache.charge(1)
	zero := NewCache(0)
	zero.charge(1)
	if nilCache.Charged() != 0 || zero.Charged() != 0 {
		t.Fatal("a nil or zero-capacity cache recorded a charge")
	}
}

// TestCacheChargesEntryOverhead: each block weighs its slab class plus the
// bookkeeping it costs on the Go heap, so a cache holds fewer blocks than
// its capacity divided by the block size.
func TestCacheChargesEntryOverhead(t *testing.T) {
	const blocks = 41
	c := NewCache(blocks * 4096)
	defer c.Close()
	for i := range 2 * blocks {
		c.set(cacheKey{id: 1, off: uint64(i) * 4096}, make([]byte, 4096)).release()
	}
	// 41 blocks of 4096 bytes fill the capacity; with the overhead only
	// 39 fit.
	if n := len(c.c.keys()); n >= blocks || n == 0 {
		t.Fatalf("cache of %d bytes holds %d blocks of 4096 bytes, want fewer than %d", blocks*4096, n, blocks)
	}
}

// TestDocsChargeFloor: docs/usage.md "Sizing" states the share of the
// cache that charged metadata leaves to data blocks.
func TestDocsChargeFloor(t *testing.T) {
	data, err := os.ReadFile("../docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	share := map[int]string{2: "a half", 3: "a third", 4: "a quarter"}[minBlockShare]
	doc := strings.Join(strings.Fields(string(data)), " ")
	if want := "less than " + share + " of it"; share == "" || !strings.Contains(doc, want) {
		t.Errorf("docs/usage.md does not say %q (minBlockShare %d)", want, minBlockShare)
	}
}
