package sstable

import (
	"errors"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

func TestCacheMetrics(t *testing.T) {
	rows := genRows(500, 5)
	data, props := buildTable(t, rows, WriterOptions{BlockSize: 512})
	if props.NumDataBlocks < 10 {
		t.Fatalf("%d blocks", props.NumDataBlocks)
	}
	cache := NewCache(1 << 20)
	r := openTable(t, data, cache)
	if m := cache.Metrics(); m != (CacheMetrics{}) {
		t.Fatalf("Open touched the cache: %+v", m)
	}
	first, last := rows[0].Key, rows[len(rows)-1].Key
	get := func(r *Reader, k []byte) {
		t.Helper()
		if _, found, err := r.Get(k, format.MaxSeq); !found || err != nil {
			t.Fatalf("Get(%q): %v %v", k, found, err)
		}
	}
	get(r, first)
	m := cache.Metrics()
	if m.Hits != 0 || m.Misses != 1 || m.SizeBytes <= 0 {
		t.Fatalf("after one Get: %+v", m)
	}
	blockSize := m.SizeBytes
	get(r, first)
	if m = cache.Metrics(); m.Hits != 1 || m.Misses != 1 || m.SizeBytes != blockSize {
		t.Fatalf("after a repeated Get: %+v", m)
	}
	get(r, last)
	if m = cache.Metrics(); m.Hits != 1 || m.Misses != 2 || m.SizeBytes <= blockSize {
		t.Fatalf("after a Get in another block: %+v", m)
	}
	// A second Reader of the same file number shares the cached blocks.
	r2 := openTable(t, data, cache)
	get(r2, first)
	if m = cache.Metrics(); m.Hits != 2 || m.Misses != 2 {
		t.Fatalf("second reader: %+v", m)
	}
	// A full scan misses once per block not yet cached.
	it := r.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
	}
	if m = cache.Metrics(); m.Misses != props.NumDataBlocks {
		t.Fatalf("after a scan: %+v, %d blocks", m, props.NumDataBlocks)
	}
	// A reader without a file number gets its own id: no sharing.
	r3, err := Open(newMemObject(data), ReaderOptions{Cache: cache, Name: testName})
	if err != nil {
		t.Fatal(err)
	}
	get(r3, first)
	if m = cache.Metrics(); m.Misses != props.NumDataBlocks+1 {
		t.Fatalf("reader without file number: %+v", m)
	}
}

func TestCacheDisabled(t *testing.T) {
	data, _ := buildTable(t, genRows(50, 1), WriterOptions{})
	for _, c := range []*Cache{nil, NewCache(0)} {
		r := openTable(t, data, c)
		for range 3 {
			if _, found, err := r.Get(ukeyFor(3), format.MaxSeq); !found || err != nil {
				t.Fatalf("Get: %v %v", found, err)
			}
		}
		m := c.Metrics()
		if m.Hits != 0 || m.SizeBytes != 0 {
			t.Fatalf("disabled cache: %+v", m)
		}
		if c != nil && m.Misses != 3 {
			t.Fatalf("disabled cache misses: %+v", m)
		}
	}
}

func TestCacheEvicts(t *testing.T) {
	data, props := buildTable(t, genRows(2000, 2), WriterOptions{BlockSize: 1024})
	const capacity = 16 << 10
	cache := NewCache(capacity)
	r := openTable(t, data, cache)
	it := r.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
	}
	if props.NumDataBlocks*1024 < 4*capacity {
		t.Fatalf("table too small: %d blocks", props.NumDataBlocks)
	}
	// Eviction is synchronous: the budget holds as soon as the scan ends.
	if got := cache.Metrics().SizeBytes; got > capacity || got == 0 {
		t.Fatalf("cache holds %d bytes, capacity %d", got, capacity)
	}
}

// TestConcurrentReaders runs iterators and Gets on one Reader at once (run
// with -race).
func TestConcurrentReaders(t *testing.T) {
	rows := genRows(1000, 11)
	data, _ := buildTable(t, rows, WriterOptions{BlockSize: 512, Compression: ZstdCompression, BloomBitsPerKey: 10})
	r := openTable(t, data, NewCache(64<<10))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			if g%2 == 0 {
				it := r.NewIter()
				defer it.Close()
				i := 0
				for ok := it.First(); ok; ok = it.Next() {
					if !rowsEqual(it.Row(), &rows[i]) {
						t.Errorf("goroutine %d row %d: %s", g, i, fmtRow(it.Row()))
						return
					}
					i++
				}
				if i != len(rows) || it.Error() != nil {
					t.Errorf("goroutine %d: %d rows, %v", g, i, it.Error())
				}
				return
			}
			for i := g; i < len(rows); i += 3 {
				got, found, err := r.Get(rows[i].Key, rows[i].Seq)
				if err != nil || !found || !rowsEqual(&got, &rows[i]) {
					t.Errorf("Get(%q, %d) = %v %v %s", rows[i].Key, rows[i].Seq, found, err, fmtRow(&got))
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestCompactionIterDoesNotFillCache: a compaction's full read uses cached
// blocks but adds none, and yields the same rows as a plain iterator.
func TestCompactionIterDoesNotFillCache(t *testing.T) {
	rows := genRows(500, 5)
	data, props := buildTable(t, rows, WriterOptions{BlockSize: 512})
	cache := NewCache(1 << 20)
	r := openTable(t, data, cache)
	if _, found, err := r.Get(rows[0].Key, format.MaxSeq); !found || err != nil {
		t.Fatalf("Get: %v %v", found, err)
	}
	cached := cache.Metrics().SizeBytes
	it := r.NewCompactionIter()
	checkForward(t, it, rows, "compaction read")
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	m := cache.Metrics()
	if m.SizeBytes != cached || m.Hits != 1 || m.Misses != props.NumDataBlocks {
		t.Fatalf("after a compaction read: %+v, want size %d, 1 hit, %d misses", m, cached, props.NumDataBlocks)
	}
}

// TestCacheLoadShared checks that a load of a block another load is
// reading waits for it and gets its block (or, arriving after it finished,
// the cached copy) without reading again, and that a failed load caches
// nothing.
func TestCacheLoadShared(t *testing.T) {
	c := NewCache(1 << 20)
	k := cacheKey{id: c.newID(), off: 4096}
	block := []byte("block bytes")
	started, release := make(chan struct{}), make(chan struct{})
	type result struct {
		b   blockRef
		err error
	}
	first := make(chan result)
	go func() {
		b, err := c.load(k, func(blockAlloc) ([]byte, error) {
			close(started)
			<-release
			return block, nil
		})
		first <- result{b, err}
	}()
	<-started
	second := make(chan result)
	go func() {
		b, err := c.load(k, func(blockAlloc) ([]byte, error) {
			return nil, errors.New("second read of a block being loaded")
		})
		second <- result{b, err}
	}()
	close(release)
	r1, r2 := <-first, <-second
	if r1.err != nil || r2.err != nil || string(r1.b.b) != string(block) || r1.b.c == nil || r2.b.c != r1.b.c {
		t.Fatalf("loads = %q (%p), %v and %q (%p), %v; want the first load's cached block twice",
			r1.b.b, r1.b.c, r1.err, r2.b.b, r2.b.c, r2.err)
	}
	if n := r1.b.c.refs.Load(); n != 3 {
		t.Fatalf("cached block has %d references, want 3 (the cache's and each load's)", n)
	}
	r1.b.release()
	r2.b.release()

	k2 := cacheKey{id: k.id, off: 8192}
	boom := errors.New("read failed")
	if _, err := c.load(k2, func(blockAlloc) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("failed load: err = %v, want %v", err, boom)
	}
	if _, ok := c.get(k2); ok {
		t.Fatal("a failed load left a cached block")
	}
	b, err := c.load(k2, func(blockAlloc) ([]byte, error) { return []byte("retry"), nil })
	if err != nil || string(b.b) != "retry" {
		t.Fatalf("load after a failure = %q, %v", b.b, err)
	}
	b.release()
	c.Close()
	if st := c.AllocStats(); !st.Empty() {
		t.Fatalf("after Close: allocator holds %+v", st)
	}
}
