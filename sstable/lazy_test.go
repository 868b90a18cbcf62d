package sstable

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// readsAt counts the reads in rs that start at off.
func readsAt(rs []readRec, off uint64) int {
	n := 0
	for _, r := range rs {
		if r.off == int64(off) {
			n++
		}
	}
	return n
}

// openLazy opens data on a counting object with a cache of its own, both
// closed when t ends, loading nothing but what Open reads.
func openLazy(t *testing.T, data []byte) (*Reader, *countingObject, *Cache) {
	t.Helper()
	cache := NewCache(1 << 20)
	t.Cleanup(func() { cache.Close() })
	obj := newCountingObject(data)
	r, err := Open(obj, ReaderOptions{Name: testName, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, obj, cache
}

// TestOpenReadsNoIndexOrFilter: Open reads the footer and properties only
// and charges nothing; the first Get loads the index and filter.
func TestOpenReadsNoIndexOrFilter(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	r, obj, cache := openLazy(t, data)
	reads := obj.takeReads()
	if len(reads) != 2 || readsAt(reads, r.footer.props.offset) != 1 {
		t.Fatalf("Open made reads %v, want the footer and the properties", reads)
	}
	if r.meta.index.Load() != nil || r.meta.filter.Load() != nil || cache.Charged() != 0 || r.metaBytes() != 0 {
		t.Fatalf("after Open: metadata loaded or charged (%d bytes)", cache.Charged())
	}
	if _, found, err := r.Get(rows[0].Key, format.MaxSeq); err != nil || !found {
		t.Fatalf("Get: %v %v", found, err)
	}
	reads = obj.takeReads()
	if readsAt(reads, r.footer.index.offset) != 1 || readsAt(reads, r.footer.filter.offset) != 1 {
		t.Fatalf("first Get made reads %v, want the index and filter once each", reads)
	}
	if r.meta.index.Load() == nil || r.meta.filter.Load() == nil || cache.Charged() != r.metaBytes() || r.metaBytes() == 0 {
		t.Fatalf("after Get: charged %d, reader holds %d", cache.Charged(), r.metaBytes())
	}
}

// TestLazyLoadOnceUnderConcurrency: many first users at once (Gets,
// MayContain, iterators) read the index and the filter once each.
func TestLazyLoadOnceUnderConcurrency(t *testing.T) {
	data, rows := raTable(t, NoCompression)
	cache := NewCache(1 << 20)
	defer cache.Close()
	for round := range 5 {
		obj := newCountingObject(data)
		r, err := Open(obj, ReaderOptions{Name: testName, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		obj.takeReads()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for g := range 16 {
			wg.Go(func() {
				k := rows[(g*997+round)%len(rows)].Key
				switch g % 3 {
				case 0:
					if _, found, err := r.Get(k, format.MaxSeq); err != nil || !found {
						errs <- errors.Join(err, errors.New("Get: not found"))
					}
				case 1:
					if ok, err := r.MayContain(k); err != nil || !ok {
						errs <- errors.Join(err, errors.New("MayContain: false"))
					}
				case 2:
					it := r.NewIter()
					if !it.SeekGE(k) {
						errs <- errors.Join(it.Error(), errors.New("SeekGE: false"))
					}
					if err := it.Close(); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		reads := obj.takeReads()
		if ni, nf := readsAt(reads, r.footer.index.offset), readsAt(reads, r.footer.filter.offset); ni != 1 || nf != 1 {
			t.Fatalf("round %d: index read %d times, filter %d times, want once each", round, ni, nf)
		}
		want := r.metaBytes()
		if got := cache.Charged(); got != want {
			t.Fatalf("round %d: charged %d, reader holds %d", round, got, want)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if got := cache.Charged(); got != 0 {
			t.Fatalf("round %d: %d bytes still charged after Close", round, got)
		}
	}
}

// TestFailedLoadIsRetried: an I/O error loading the index or filter is
// returned (naming the file and offset), nothing is kept or charged, and the
// next caller loads it once the object reads again.
func TestFailedLoadIsRetried(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	r, obj, cache := openLazy(t, data)
	transient := errors.New("transient network error")
	for _, c := range []struct {
		name string
		h    blockHandle
		use  func() error
	}{
		{"filter", r.footer.filter, func() error { _, err := r.MayContain(rows[0].Key); return err }},
		{"index", r.footer.index, func() error { return r.NewIter().Close() }},
	} {
		before := cache.Charged()
		obj.failAt, obj.failErr = int64(c.h.offset+1), transient
		for range 2 {
			err := c.use()
			if !errors.Is(err, transient) || !strings.Contains(err.Error(), testName) ||
				!strings.Contains(err.Error(), fmt.Sprintf(" at %d", c.h.offset)) {
				t.Fatalf("%s load with a failing read: %v", c.name, err)
			}
		}
		if got := cache.Charged(); got != before || got != r.metaBytes() {
			t.Fatalf("%s: a failed load charged %d bytes", c.name, got-before)
		}
		obj.failAt = -1
		if err := c.use(); err != nil {
			t.Fatalf("%s: retry after the failure: %v", c.name, err)
		}
		charged := cache.Charged()
		if charged == before || charged != r.metaBytes() {
			t.Fatalf("%s: retried load charged %d, reader holds %d", c.name, charged-before, r.metaBytes())
		}
		// Loaded now: a failing object no longer matters to it.
		obj.failAt = int64(c.h.offset + 1)
		if err := c.use(); err != nil {
			t.Fatalf("%s: use after a successful load: %v", c.name, err)
		}
		obj.failAt = -1
	}
	if _, found, err := r.Get(rows[1].Key, format.MaxSeq); err != nil || !found {
		t.Fatalf("Get after the retries: %v %v", found, err)
	}
}

// TestCloseUnchargesOnce: Close gives back exactly what the loads charged,
// a second Close gives back nothing more, and a load after Close fails
// without charging.
func TestCloseUnchargesOnce(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	cache := NewCache(1 << 20)
	defer cache.Close()
	other := openRA(t, newCountingObject(data), 0, cache) // loads both
	defer other.Close()
	base := cache.Charged()
	if base == 0 {
		t.Fatal("a reader with loaded metadata charged nothing")
	}
	r2, err := Open(newCountingObject(data), ReaderOptions{Name: testName, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	// Only the index.
	if err := r2.NewIter().Close(); err != nil {
		t.Fatal(err)
	}
	indexOnly := cache.Charged() - base
	if px := r2.meta.index.Load(); px == nil || indexOnly != px.bytes() {
		t.Fatalf("index load charged %d", indexOnly)
	}
	if _, _, err := r2.Get(rows[3].Key, format.MaxSeq); err != nil {
		t.Fatal(err)
	}
	if got := cache.Charged() - base; got != base {
		t.Fatalf("index and filter charged %d, the same table's metadata is %d", got, base)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := cache.Charged(); got != base {
		t.Fatalf("after Close: charged %d, want %d", got, base)
	}
	r2.Close() // countingObject's Close may be called twice
	if got := cache.Charged(); got != base {
		t.Fatalf("after a second Close: charged %d, want %d", got, base)
	}
	r3, err := Open(newCountingObject(data), ReaderOptions{Name: testName, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	r3.Close()
	if _, err := r3.MayContain(rows[0].Key); !errors.Is(err, errReaderClosed) {
		t.Fatalf("MayContain after Close: %v", err)
	}
	if err := r3.NewIter().Error(); !errors.Is(err, errReaderClosed) {
		t.Fatalf("NewIter after Close: %v", err)
	}
	if got := cache.Charged(); got != base {
		t.Fatalf("loads after Close charged: %d, want %d", got, base)
	}
}

// TestCompactionIterPinsNoMetadata: a compaction iterator over a table
// whose index is not loaded reads it for itself, never reads the filter,
// and leaves the Reader holding and charging nothing; one over a table
// whose index is loaded uses it without reading it again.
func TestCompactionIterPinsNoMetadata(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	r, obj, cache := openLazy(t, data)
	obj.takeReads()
	scan := func() {
		it := r.NewCompactionIter()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if !rowsEqual(it.Row(), &rows[n]) {
				t.Fatalf("row %d: %s", n, fmtRow(it.Row()))
			}
			n++
		}
		if err := it.Close(); err != nil || n != len(rows) {
			t.Fatalf("compaction scan: %d of %d rows, %v", n, len(rows), err)
		}
	}
	scan()
	reads := obj.takeReads()
	if readsAt(reads, r.footer.index.offset) != 1 || readsAt(reads, r.footer.filter.offset) != 0 {
		t.Fatalf("compaction scan reads %v: want the index once, the filter never", reads)
	}
	if r.meta.index.Load() != nil || r.meta.filter.Load() != nil || r.metaBytes() != 0 || cache.Charged() != 0 {
		t.Fatalf("after a compaction scan the reader holds %d bytes (charged %d)", r.metaBytes(), cache.Charged())
	}
	mustIndex(t, r)
	obj.takeReads()
	scan()
	if n := readsAt(obj.takeReads(), r.footer.index.offset); n != 0 {
		t.Fatalf("compaction scan with the index loaded read it %d times", n)
	}
}
