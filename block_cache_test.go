package mayfly

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/internal/manual"
)

func cacheTestValue(i, gen int) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "v%06d.%d|", i, gen), 6)
}

// fillTables writes n keys (generation gen) and flushes them to a table.
func fillTables(t *testing.T, db *DB, n, gen int) {
	t.Helper()
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "k%06d", i), cacheTestValue(i, gen)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestBlockCacheMemoryReturned reads through the block cache with Gets and
// iterators, closes the DB with one iterator still open, and checks that
// the cache's slab memory is all given back once that iterator closes.
func TestBlockCacheMemoryReturned(t *testing.T) {
	m0, n0 := manual.Allocated()
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), func(o *Options) { o.BlockCacheSize = 64 << 10 })
	fillTables(t, db, 3000, 0)
	for i := 0; i < 3000; i += 13 {
		mustGet(t, db, fmt.Sprintf("k%06d", i), string(cacheTestValue(i, 0)))
	}
	if st := db.cache.AllocStats(); st.Bufs == 0 || st.SlabBytes == 0 {
		t.Fatalf("no cached block in slab memory after reads: %+v", st)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatal("First:", it.Error())
	}
	open, err := db.NewIter(nil) // left open across Close
	if err != nil {
		t.Fatal(err)
	}
	if !open.SeekGE([]byte("k001500")) {
		t.Fatal("SeekGE:", open.Error())
	}
	n := 1
	for it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != 3000 {
		t.Fatalf("scan: %d keys, %v", n, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if st := db.cache.AllocStats(); st.Bufs == 0 {
		t.Fatalf("the open iterator's block was freed under it: %+v", st)
	}
	// The iterator reads nothing more (ErrClosed); its Close frees the
	// block it still holds.
	if open.Key() != nil || open.Value() != nil || open.Next() {
		t.Fatalf("open iterator after Close: %q = %q", open.Key(), open.Value())
	}
	if err := open.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close of the iterator left open: %v, want ErrClosed", err)
	}
	if st := db.cache.AllocStats(); !st.Empty() {
		t.Fatalf("after Close and the last iterator closed, the cache's allocator holds %+v", st)
	}
	if m, n := manual.Allocated(); m != m0 || n != n0 {
		t.Fatalf("manual.Allocated = %d bytes in %d buffers, want %d in %d", m, n, m0, n0)
	}
}

// TestBlockCacheConcurrentEviction runs Gets, forward and backward scans and
// compactions at once over a block cache of a few blocks, so blocks are
// evicted while readers hold them. Run with -race, where freed blocks are
// poisoned: a reader using a freed or reused block sees wrong values.
func TestBlockCacheConcurrentEviction(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), func(o *Options) { o.BlockCacheSize = 16 << 10 })
	const n = 2000
	fillTables(t, db, n, 0)
	fillTables(t, db, n/2, 1) // newer versions of the first half
	want := func(i int) []byte {
		if i < n/2 {
			return cacheTestValue(i, 1)
		}
		return cacheTestValue(i, 0)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 3 {
				switch (g + round) % 3 {
				case 0:
					for i := g; i < n; i += 5 {
						v, err := db.Get(fmt.Appendf(nil, "k%06d", i))
						if err != nil || !bytes.Equal(v, want(i)) {
							errc <- fmt.Errorf("Get(k%06d) = %q, %v", i, v, err)
							return
						}
					}
				case 1:
					it, err := db.NewIter(nil)
					if err != nil {
						errc <- err
						return
					}
					i := 0
					for ok := it.First(); ok; ok = it.Next() {
						if string(it.Key()) != fmt.Sprintf("k%06d", i) || !bytes.Equal(it.Value(), want(i)) {
							errc <- fmt.Errorf("scan: %q = %q at %d", it.Key(), it.Value(), i)
							break
						}
						i++
					}
					if err := it.Close(); err != nil || i != n {
						errc <- fmt.Errorf("scan: %d keys, %v", i, err)
					}
				case 2:
					it, err := db.NewIter(nil)
					if err != nil {
						errc <- err
						return
					}
					i := n - 1
					for ok := it.Last(); ok; ok = it.Prev() {
						if string(it.Key()) != fmt.Sprintf("k%06d", i) || !bytes.Equal(it.Value(), want(i)) {
							errc <- fmt.Errorf("reverse scan: %q = %q at %d", it.Key(), it.Value(), i)
							break
						}
						i--
					}
					if err := it.Close(); err != nil || i != -1 {
						errc <- fmt.Errorf("reverse scan: stopped at %d, %v", i, err)
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := db.Compact(context.Background(), nil, nil); err != nil {
			errc <- fmt.Errorf("Compact: %w", err)
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if st := db.cache.AllocStats(); !st.Empty() {
		t.Fatalf("after Close the cache's allocator holds %+v", st)
	}
}
