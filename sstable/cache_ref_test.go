package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// evictAll empties the cache's index by removing every key, as an
// eviction would; the eviction callback runs inside remove.
func evictAll(c *Cache) {
	for _, k := range c.c.keys() {
		c.c.remove(k)
	}
}

// TestCacheEvictWhileIterating evicts the block an iterator is positioned
// in: the iterator's reference keeps its bytes (and the row it returned)
// unchanged, the memory is freed only when the iterator moves on, and
// nothing is left once everything is closed.
func TestCacheEvictWhileIterating(t *testing.T) {
	rows := genRows(400, 7)
	data, props := buildTable(t, rows, WriterOptions{BlockSize: 512})
	if props.NumDataBlocks < 10 {
		t.Fatalf("%d blocks", props.NumDataBlocks)
	}
	cache := NewCache(1 << 20)
	r := openTable(t, data, cache)
	it := r.NewIter().(*Iterator)
	if !it.First() {
		t.Fatal("First:", it.Error())
	}
	cb := it.blk.c
	if cb == nil {
		t.Fatal("the iterator's first block is not a cached block")
	}
	row := it.Row()
	wantValue := bytes.Clone(row.Value)
	value := row.Value // aliases slab memory
	evictAll(cache)
	if n := cb.refs.Load(); n != 1 {
		t.Fatalf("evicted block held by the iterator has %d references, want 1", n)
	}
	if m := cache.Metrics(); m.SizeBytes != 0 {
		t.Fatalf("cache still counts %d bytes after evicting all", m.SizeBytes)
	}
	if st := cache.AllocStats(); st.Bufs != 1 {
		t.Fatalf("allocator holds %d buffers, want the iterator's 1", st.Bufs)
	}
	// A Get of the evicted block's key reads it again into a new block.
	if _, found, err := r.Get(row.Key, format.MaxSeq); !found || err != nil {
		t.Fatalf("Get(%q): %v %v", row.Key, found, err)
	}
	if !bytes.Equal(value, wantValue) || !rowsEqual(it.Row(), &rows[0]) {
		t.Fatalf("row of an evicted block changed while held: %q, want %q", value, wantValue)
	}
	// The rest of the table reads back exactly, evicting as it goes.
	n := 1
	for ok := it.Next(); ok; ok = it.Next() {
		if !rowsEqual(it.Row(), &rows[n]) {
			t.Fatalf("row %d = %s, want %s", n, fmtRow(it.Row()), fmtRow(&rows[n]))
		}
		n++
		evictAll(cache)
	}
	if n != len(rows) || it.Error() != nil {
		t.Fatalf("%d rows, err %v; want %d", n, it.Error(), len(rows))
	}
	if cb.refs.Load() != 0 || cb.buf.B != nil {
		t.Fatal("the first block was not freed once the iterator left it")
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	evictAll(cache)
	if st := cache.AllocStats(); st.Bufs != 0 {
		t.Fatalf("allocator holds %d buffers with no reader and an empty cache", st.Bufs)
	}
	cache.Close()
	if st := cache.AllocStats(); !st.Empty() {
		t.Fatalf("after Close: %+v", st)
	}
}

// TestCacheCloseWithOpenIterator closes the cache under an open iterator:
// the iterator keeps reading (its held block, then blocks read from the
// file), and its block is freed when it closes.
func TestCacheCloseWithOpenIterator(t *testing.T) {
	rows := genRows(300, 8)
	data, _ := buildTable(t, rows, WriterOptions{BlockSize: 512})
	cache := NewCache(1 << 20)
	r := openTable(t, data, cache)
	it := r.NewIter().(*Iterator)
	if !it.First() {
		t.Fatal("First:", it.Error())
	}
	cache.Close()
	if st := cache.AllocStats(); st.Bufs != 1 || st.Slabs != 1 {
		t.Fatalf("after Close with a block held: %+v, want 1 buffer in 1 slab", st)
	}
	n := 1
	for ok := it.Next(); ok; ok = it.Next() {
		if !rowsEqual(it.Row(), &rows[n]) {
			t.Fatalf("row %d = %s, want %s", n, fmtRow(it.Row()), fmtRow(&rows[n]))
		}
		n++
	}
	if n != len(rows) {
		t.Fatalf("%d rows, want %d", n, len(rows))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if st := cache.AllocStats(); !st.Empty() {
		t.Fatalf("after the iterator closed: %+v", st)
	}
	if m := cache.Metrics(); m.SizeBytes != 0 {
		t.Fatalf("closed cache counts %d bytes", m.SizeBytes)
	}
}

// TestCacheTryRefFailsOnZero checks that a block whose count reached zero
// is not resurrected: lookup treats it as a miss.
func TestCacheTryRefFailsOnZero(t *testing.T) {
	cb := &cachedBlock{}
	if cb.tryRef() {
		t.Fatal("tryRef succeeded on a zero count")
	}
	cb.refs.Store(1)
	if !cb.tryRef() || cb.refs.Load() != 2 {
		t.Fatalf("tryRef on a live block: count %d, want 2", cb.refs.Load())
	}
}

// TestCacheConcurrentReaders runs Gets and scans of two tables on several
// goroutines against a cache that holds a few blocks, so blocks are
// evicted while others read them. Run with -race (which also poisons freed
// blocks, so a use after free reads wrong bytes and fails the checks).
func TestCacheConcurrentReaders(t *testing.T) {
	for _, alone := range []bool{false, true} {
		t.Run(fmt.Sprintf("IndependentMisses=%v", alone), func(t *testing.T) { testCacheConcurrentReaders(t, alone) })
	}
}

// testCacheConcurrentReaders runs goroutines that scan and Get through
// two Readers of one file (one file number, so they share cached blocks)
// on a cache too small for the table, then checks every buffer is given
// back once the cache is emptied.
func testCacheConcurrentReaders(t *testing.T, alone bool) {
	rows := genRows(600, 9)
	data, _ := buildTable(t, rows, WriterOptions{BlockSize: 512})
	latest := map[string]*format.Row{}
	for i := range rows {
		if _, ok := latest[string(rows[i].Key)]; !ok {
			latest[string(rows[i].Key)] = &rows[i]
		}
	}
	cache := NewCache(8 << 10)
	var readers []*Reader
	for range 2 {
		r, err := Open(newMemObject(data), ReaderOptions{Cache: cache, Name: "sst/000001.sst", FileNum: 1, IndependentMisses: alone})
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := readers[g%2]
			for round := range 6 {
				if (g+round)%2 == 0 {
					it := r.NewIter()
					n := 0
					for ok := it.First(); ok; ok = it.Next() {
						if !rowsEqual(it.Row(), &rows[n]) {
							t.Errorf("goroutine %d: row %d = %s, want %s", g, n, fmtRow(it.Row()), fmtRow(&rows[n]))
							break
						}
						n++
					}
					if err := it.Close(); err != nil || n != len(rows) {
						t.Errorf("goroutine %d: scan read %d rows, err %v", g, n, err)
					}
					continue
				}
				for i := g; i < 600; i += 7 {
					k := ukeyFor(i)
					got, ref, found, err := r.GetAfterFilter(k, format.MaxSeq)
					want := latest[string(k)]
					if err != nil || !found || !rowsEqual(&got, want) {
						t.Errorf("goroutine %d: Get(%q) = %s, %v, %v; want %s", g, k, fmtRow(&got), found, err, fmtRow(want))
					}
					ref.Release()
				}
			}
		}()
	}
	wg.Wait()
	evictAll(cache)
	if st := cache.AllocStats(); st.Bufs != 0 {
		t.Fatalf("allocator holds %d buffers after all readers finished and the cache emptied", st.Bufs)
	}
	cache.Close()
}

// TestCacheLoadIntoSlab checks the load path that decodes straight into
// slab memory: a read that fails after taking its buffer gives it back, a
// read that returns bytes of its own is copied in, and one that decodes into
// the buffer is cached without a copy.
func TestCacheLoadIntoSlab(t *testing.T) {
	c := NewCache(1 << 20)
	boom := errors.New("decode failed")
	_, err := c.load(cacheKey{id: 1, off: 0}, func(alloc blockAlloc) ([]byte, error) {
		alloc.get(4000)
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("load = %v, want %v", err, boom)
	}
	if st := c.AllocStats(); st.Bufs != 0 {
		t.Fatalf("a failed load left %d buffers", st.Bufs)
	}
	own := []byte("decoded elsewhere")
	b, err := c.load(cacheKey{id: 1, off: 1}, func(alloc blockAlloc) ([]byte, error) {
		alloc.get(4000)
		return own, nil
	})
	if err != nil || string(b.b) != string(own) || &b.b[0] == &own[0] || b.c == nil {
		t.Fatalf("load of a foreign buffer = %q (cached %v), %v; want a cached copy", b.b, b.c != nil, err)
	}
	b.release()
	var into []byte
	b, err = c.load(cacheKey{id: 1, off: 2}, func(alloc blockAlloc) ([]byte, error) {
		into = alloc.get(5)
		copy(into, "slab!")
		return into, nil
	})
	if err != nil || &b.b[0] != &into[0] || string(b.b) != "slab!" {
		t.Fatalf("load into the slab = %q, %v; want the slab buffer itself", b.b, err)
	}
	b.release()
	if st := c.AllocStats(); st.Bufs != 2 {
		t.Fatalf("allocator holds %d buffers, want the 2 cached blocks", st.Bufs)
	}
	c.Close()
	if st := c.AllocStats(); !st.Empty() {
		t.Fatalf("after Close: %+v", st)
	}
}

// TestReadAheadWindowsFreed moves an iterator that reads ahead into slab
// memory forward, back and across seeks, so windows are dropped with blocks
// not yet reached (some while their fetch runs), and checks every row read
// and that no slab block is left once the iterator is closed and the cache
// emptied.
func TestReadAheadWindowsFreed(t *testing.T) {
	rows := genRows(1500, 11)
	data, props := buildTable(t, rows, WriterOptions{BlockSize: 512})
	if props.NumDataBlocks < 50 {
		t.Fatalf("%d blocks", props.NumDataBlocks)
	}
	cache := NewCache(1 << 20)
	r, err := Open(newMemObject(data), ReaderOptions{Cache: cache, Name: testName, FileNum: 1, ReadAhead: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	it := r.NewIter().(*Iterator)
	check := func(ok bool, i int, what string) {
		t.Helper()
		if !ok || !rowsEqual(it.Row(), &rows[i]) {
			t.Fatalf("%s: at %d got %v %s (err %v), want %s", what, i, ok, fmtRow(it.Row()), it.Error(), fmtRow(&rows[i]))
		}
	}
	for round := range 4 {
		start := firstGE(rows, rows[round*300].Key)
		check(it.SeekGE(rows[start].Key), start, "SeekGE")
		i := start
		for step := 0; step < 200+round*37; step++ {
			i++
			check(it.Next(), i, "Next")
		}
		for range 30 {
			i--
			check(it.Prev(), i, "Prev")
		}
		evictAll(cache) // blocks taken from windows leave the cache at once
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	evictAll(cache)
	if st := cache.AllocStats(); st.Bufs != 0 {
		t.Fatalf("%d slab blocks left after the iterator closed and the cache emptied", st.Bufs)
	}
	cache.Close()
	if st := cache.AllocStats(); !st.Empty() {
		t.Fatalf("after Close: %+v", st)
	}
}

// TestIndependentMissAfterClose: a Reader that reads its misses alone still
// answers once its cache is closed, and the block it read into slab memory
// is freed at its release, not left in the closed cache.
func TestIndependentMissAfterClose(t *testing.T) {
	rows := genRows(200, 4)
	data, _ := buildTable(t, rows, WriterOptions{BlockSize: 512})
	cache := NewCache(1 << 20)
	r, err := Open(newMemObject(data), ReaderOptions{Cache: cache, Name: "sst/000001.sst", FileNum: 1, IndependentMisses: true})
	if err != nil {
		t.Fatal(err)
	}
	k := rows[0].Key
	got, ref, found, err := r.GetAfterFilter(k, format.MaxSeq)
	if err != nil || !found || !rowsEqual(&got, &rows[0]) {
		t.Fatalf("Get(%q) = %s, %v, %v", k, fmtRow(&got), found, err)
	}
	ref.Release()
	cache.Close()
	k = rows[len(rows)-1].Key
	got, ref, found, err = r.GetAfterFilter(k, format.MaxSeq)
	if err != nil || !found || !rowsEqual(&got, &rows[len(rows)-1]) {
		t.Fatalf("Get(%q) after Close = %s, %v, %v", k, fmtRow(&got), found, err)
	}
	ref.Release()
	if st := cache.AllocStats(); !st.Empty() {
		t.Fatalf("allocator holds %+v after the cache closed and every reference was released", st)
	}
}
