package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// readRec is one ReadAt call.
type readRec struct{ off, n int64 }

// countingObject is an in-memory object that records its reads. A read
// touching failAt or beyond (if failAt >= 0) comes back short, cut at
// failAt, with failErr. The gateRead-th read (1-based, if set) blocks until
// gate is closed.
type countingObject struct {
	data     []byte
	failAt   int64
	failErr  error
	gateRead int64
	gate     chan struct{}

	mu       sync.Mutex
	reads    []readRec
	inFlight atomic.Int64
}

func newCountingObject(data []byte) *countingObject {
	return &countingObject{data: data, failAt: -1}
}

func (o *countingObject) ReadAt(p []byte, off int64) (int, error) {
	o.inFlight.Add(1)
	defer o.inFlight.Add(-1)
	o.mu.Lock()
	o.reads = append(o.reads, readRec{off, int64(len(p))})
	nth := int64(len(o.reads))
	o.mu.Unlock()
	if o.gate != nil && nth == o.gateRead {
		<-o.gate
	}
	if off < 0 || off > int64(len(o.data)) {
		return 0, fmt.Errorf("read at %d outside the object", off)
	}
	end := min(off+int64(len(p)), int64(len(o.data)))
	if o.failAt >= 0 && end > o.failAt {
		n := copy(p, o.data[off:max(off, o.failAt)])
		return n, o.failErr
	}
	n := copy(p, o.data[off:end])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (o *countingObject) Size() int64  { return int64(len(o.data)) }
func (o *countingObject) Close() error { return nil }

// takeReads returns the reads since the last call.
func (o *countingObject) takeReads() []readRec {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.reads
	o.reads = nil
	return r
}

// raTable is a table of a few hundred 4 KiB data blocks.
func raTable(t testing.TB, c Compression) ([]byte, []format.Row) {
	rows := genRows(6000, 3)
	data, props := buildTable(t, rows, WriterOptions{Compression: c, BloomBitsPerKey: 10})
	if props.NumDataBlocks < 100 {
		t.Fatalf("only %d data blocks", props.NumDataBlocks)
	}
	return data, rows
}

func openRA(t testing.TB, obj *countingObject, readAhead int, cache *Cache) *Reader {
	t.Helper()
	r, err := Open(obj, ReaderOptions{Name: testName, ReadAhead: readAhead, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, r)
	mustFilter(t, r)
	obj.takeReads() // Open's own reads and the metadata loads
	return r
}

// dataHandles returns the handles of r's data blocks.
func dataHandles(t testing.TB, r *Reader) []blockHandle {
	return mustIndex(t, r).handles
}

// scanAll reads every row forwards and closes the iterator, checking that
// no background fetch outlives it.
func scanAll(t *testing.T, r *Reader) (rows []format.Row, err error) {
	t.Helper()
	it := r.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		row := *it.Row()
		row.Key = bytes.Clone(row.Key)
		rows = append(rows, row)
	}
	err = it.Close()
	if n := raFetches.Load(); n != 0 {
		t.Fatalf("%d read-ahead fetches still running after Close", n)
	}
	return rows, err
}

func TestReadAheadFewerReads(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		data, want := raTable(t, c)
		for _, capBytes := range []int{0, 4 << 10, 256 << 10, 1 << 20} {
			obj := newCountingObject(data)
			r := openRA(t, obj, capBytes, nil)
			got, err := scanAll(t, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%v cap %d: %d rows, want %d", c, capBytes, len(got), len(want))
			}
			reads := obj.takeReads()
			hs := dataHandles(t, r)
			var maxBlock int64
			for _, h := range hs {
				maxBlock = max(maxBlock, int64(h.length+trailerLen))
			}
			for _, rd := range reads {
				if rd.off+rd.n > int64(r.dataEnd) {
					t.Fatalf("read %d+%d past the data blocks' end %d", rd.off, rd.n, r.dataEnd)
				}
				if capBytes > 0 && rd.n > max(int64(capBytes), maxBlock) {
					t.Fatalf("read of %d bytes above the %d cap", rd.n, capBytes)
				}
			}
			if capBytes == 0 {
				if len(reads) != len(hs) {
					t.Fatalf("%v without read-ahead: %d reads for %d blocks", c, len(reads), len(hs))
				}
				continue
			}
			// Upper bound: the first block alone, then windows of 64 KiB
			// doubling to the cap, each holding at least its size less
			// one block.
			windows, covered, size := 0, int64(0), int64(min(initialReadAhead, capBytes))
			for covered < int64(r.dataEnd) {
				covered += max(size-maxBlock, 1)
				windows++
				size = min(2*size, int64(capBytes))
			}
			if capBytes <= int(maxBlock) {
				windows = len(hs) // a cap below one block reads block by block
			}
			t.Logf("%v cap %d: %d reads for %d blocks (bound %d)", c, capBytes, len(reads), len(hs), 1+windows)
			if len(reads) > 1+windows {
				t.Fatalf("%v cap %d: %d reads for %d blocks, bound %d", c, capBytes, len(reads), len(hs), 1+windows)
			}
			r.Close()
		}
	}
}

// Random positioning steps applied to iterators with and without
// read-ahead give the same rows.
func TestReadAheadSameResults(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	type variant struct {
		name      string
		readAhead int
		cache     *Cache
	}
	variants := []variant{
		{"plain", 0, nil},
		{"ra8k", 8 << 10, nil},
		{"ra64k", 64 << 10, nil},
		{"ra256k+cache", 256 << 10, NewCache(1 << 20)},
	}
	rng := rand.New(rand.NewPCG(7, 7))
	its := make([]format.Iterator, len(variants))
	for i, v := range variants {
		r := openRA(t, newCountingObject(data), v.readAhead, v.cache)
		defer r.Close()
		its[i] = r.NewIter()
	}
	check := func(step string, oks []bool) {
		for i := 1; i < len(its); i++ {
			if oks[i] != oks[0] || its[i].Valid() != its[0].Valid() {
				t.Fatalf("%s: %s ok=%v, %s ok=%v", step, variants[i].name, oks[i], variants[0].name, oks[0])
			}
			if !oks[0] {
				continue
			}
			a, b := its[0].Row(), its[i].Row()
			if !bytes.Equal(a.Key, b.Key) || a.Seq != b.Seq || a.Flags != b.Flags || a.TS != b.TS ||
				a.ExpireTS != b.ExpireTS || !bytes.Equal(a.Value, b.Value) {
				t.Fatalf("%s: %s at %s, %s at %s", step, variants[i].name, fmtRow(b), variants[0].name, fmtRow(a))
			}
		}
	}
	all := func(step string, f func(it format.Iterator) bool) {
		oks := make([]bool, len(its))
		for i, it := range its {
			oks[i] = f(it)
		}
		check(step, oks)
	}
	for op := range 300 {
		key := ukeyFor(rng.IntN(len(rows)/2 + 100)) // also past the last key
		if rng.IntN(2) == 0 {
			key = append(key, 0) // between table keys
		}
		switch rng.IntN(6) {
		case 0:
			all("First", format.Iterator.First)
		case 1:
			all("Last", format.Iterator.Last)
		case 2:
			all(fmt.Sprintf("SeekGE(%q)", key), func(it format.Iterator) bool { return it.SeekGE(key) })
		case 3:
			all(fmt.Sprintf("SeekLT(%q)", key), func(it format.Iterator) bool { return it.SeekLT(key) })
		case 4:
			for n := rng.IntN(2000); n > 0; n-- {
				all(fmt.Sprintf("op %d Next", op), format.Iterator.Next)
			}
		case 5:
			for n := rng.IntN(500); n > 0; n-- {
				all(fmt.Sprintf("op %d Prev", op), format.Iterator.Prev)
			}
		}
	}
	// A full forward and backward pass at the end.
	all("First", format.Iterator.First)
	for its[0].Valid() {
		all("final Next", format.Iterator.Next)
	}
	all("Last", format.Iterator.Last)
	for its[0].Valid() {
		all("final Prev", format.Iterator.Prev)
	}
	for i, it := range its {
		if err := it.Close(); err != nil {
			t.Fatalf("%s: %v", variants[i].name, err)
		}
	}
	if n := raFetches.Load(); n != 0 {
		t.Fatalf("%d read-ahead fetches still running after Close", n)
	}
}

func TestReadAheadCorruptBlock(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		data, _ := raTable(t, c)
		hs := dataHandles(t, openRA(t, newCountingObject(data), 0, nil))
		// The first block, one in the first window, ones reached through
		// background fetches, the last.
		for _, k := range []int{0, 3, len(hs) / 3, len(hs) / 2, len(hs) - 1} {
			h := hs[k]
			d := bytes.Clone(data)
			d[h.offset+h.length/2] ^= 0x10
			plain, wantErr := scanAll(t, openRA(t, newCountingObject(d), 0, nil))
			wantCorruption(t, "scan without read-ahead", wantErr, int64(h.offset))
			for _, capBytes := range []int{8 << 10, 256 << 10} {
				got, err := scanAll(t, openRA(t, newCountingObject(d), capBytes, nil))
				wantCorruption(t, fmt.Sprintf("%v block %d cap %d", c, k, capBytes), err, int64(h.offset))
				if err.Error() != wantErr.Error() || len(got) != len(plain) {
					t.Fatalf("%v block %d cap %d: %d rows then %v; without read-ahead %d rows then %v",
						c, k, capBytes, len(got), err, len(plain), wantErr)
				}
			}
		}
	}
}

func TestReadAheadShortOrFailedRead(t *testing.T) {
	data, _ := raTable(t, SnappyCompression)
	hs := dataHandles(t, openRA(t, newCountingObject(data), 0, nil))
	injected := errors.New("injected network failure")
	for _, k := range []int{1, len(hs) / 2, len(hs) - 1} {
		h := hs[k]
		for _, failErr := range []error{io.EOF, injected} {
			scan := func(capBytes int) ([]format.Row, error) {
				obj := newCountingObject(data)
				r := openRA(t, obj, capBytes, nil)
				obj.failAt, obj.failErr = int64(h.offset+h.length/2), failErr
				return scanAll(t, r)
			}
			plain, wantErr := scan(0)
			if wantErr == nil || !strings.Contains(wantErr.Error(), fmt.Sprintf("%s at %d", testName, h.offset)) {
				t.Fatalf("without read-ahead: %v", wantErr)
			}
			for _, capBytes := range []int{8 << 10, 1 << 20} {
				got, err := scan(capBytes)
				if err == nil || err.Error() != wantErr.Error() || len(got) != len(plain) {
					t.Fatalf("block %d cap %d: %d rows then %v; without read-ahead %d rows then %v",
						k, capBytes, len(got), err, len(plain), wantErr)
				}
				if failErr == injected && !errors.Is(err, injected) {
					t.Fatalf("error does not wrap the read's: %v", err)
				}
			}
		}
	}
}

func TestReadAheadCloseWaitsForFetch(t *testing.T) {
	data, _ := raTable(t, SnappyCompression)
	obj := newCountingObject(data)
	r := openRA(t, obj, 16<<10, nil)
	defer r.Close()
	// Read 1 is First's block, read 2 the first window, read 3 the
	// background fetch of the second: hold it until Close waits.
	obj.gateRead, obj.gate = 3, make(chan struct{})
	released := false
	testHookCloseWait = func() {
		if !released {
			released = true
			close(obj.gate)
		}
	}
	defer func() { testHookCloseWait = nil }()
	it := r.NewIter()
	ok := it.First()
	for ok && raFetches.Load() == 0 {
		ok = it.Next()
	}
	if !ok {
		t.Fatalf("no background fetch started during the scan (err %v)", it.Error())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !released {
		t.Fatal("Close did not wait for the fetch")
	}
	if n, f := raFetches.Load(), obj.inFlight.Load(); n != 0 || f != 0 {
		t.Fatalf("after Close: %d fetches, %d reads still running", n, f)
	}
	if reads := obj.takeReads(); len(reads) != 3 {
		t.Fatalf("%d reads, want 3", len(reads))
	}
}

func TestReadAheadNotForGet(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	obj := newCountingObject(data)
	r := openRA(t, obj, 1<<20, nil)
	defer r.Close()
	sizes := map[int64]bool{}
	for _, h := range dataHandles(t, r) {
		sizes[int64(h.length+trailerLen)] = true
	}
	for i := 0; i < len(rows); i += 7 {
		if _, found, err := r.Get(rows[i].Key, format.MaxSeq); err != nil || !found {
			t.Fatalf("Get(%q): found=%v err=%v", rows[i].Key, found, err)
		}
	}
	for _, rd := range obj.takeReads() {
		if !sizes[rd.n] {
			t.Fatalf("Get made a read of %d bytes at %d, not one block", rd.n, rd.off)
		}
	}
}

// Blocks fetched ahead but never reached stay out of the block cache.
// scanPart reads n rows forwards from key and closes the iterator.
func scanPart(t *testing.T, r *Reader, key []byte, n int) {
	t.Helper()
	it := r.NewIter()
	for ok := it.SeekGE(key); ok && n > 0; ok = it.Next() {
		n--
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadAheadCachesOnlyReachedBlocks(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	cached := func(capBytes int) CacheMetrics {
		cache := NewCache(64 << 20)
		r := openRA(t, newCountingObject(data), capBytes, cache)
		defer r.Close()
		scanPart(t, r, rows[len(rows)/4].Key, len(rows)/3)
		return cache.Metrics()
	}
	plain, ra := cached(0), cached(1<<20)
	if plain.SizeBytes == 0 || ra.SizeBytes != plain.SizeBytes {
		t.Fatalf("cache holds %d bytes after a partial scan with read-ahead, %d without", ra.SizeBytes, plain.SizeBytes)
	}
}

// TestReadAheadDecodesOnlyReachedBlocks: a scan that stops a few blocks
// into its read-ahead windows decodes only the blocks it reached, not the
// rest of the windows fetched (one read each) ahead of it.
func TestReadAheadDecodesOnlyReachedBlocks(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	scan := func(readAhead int) (CacheMetrics, int64, int) {
		cache := NewCache(64 << 20)
		obj := newCountingObject(data)
		r := openRA(t, obj, readAhead, cache)
		defer r.Close()
		before := raDecoded.Load()
		scanPart(t, r, rows[len(rows)/4].Key, len(rows)/10)
		return cache.Metrics(), raDecoded.Load() - before, len(obj.takeReads())
	}
	plain, _, plainReads := scan(0)
	_, decoded, reads := scan(1 << 20)
	reached := int64(plain.Misses) // each block the scan reached, read alone
	if reads >= plainReads || decoded == 0 {
		t.Fatalf("read-ahead made %d reads (without: %d) and decoded %d blocks from windows: no windows used", reads, plainReads, decoded)
	}
	if decoded > reached {
		t.Fatalf("a scan reaching %d blocks decoded %d blocks from its read-ahead windows", reached, decoded)
	}
}

// TestReadAheadTakesCachedBlocks: a scan that misses the cache, and so
// reads ahead, and then reaches blocks the cache holds (a range an earlier
// scan read) takes those from the cache and decodes none of them from its
// windows; it returns the rows a scan without a cache returns.
func TestReadAheadTakesCachedBlocks(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	probe := openRA(t, newCountingObject(data), 0, nil)
	perBlock := len(rows) / len(dataHandles(t, probe))
	probe.Close()
	scan := func(r *Reader, from, n int) (keys []string, decoded int64) {
		before := raDecoded.Load()
		it := r.NewIter()
		for ok := it.SeekGE(rows[from].Key); ok && n > 0; ok = it.Next() {
			keys = append(keys, string(it.Row().Key))
			n--
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return keys, raDecoded.Load() - before
	}
	// The cached range: 40 blocks from a quarter in. The second scan starts
	// two blocks before it, so that its first window, of 16 blocks, covers
	// 14 cached ones.
	from, n := len(rows)/4, 40*perBlock
	cache := NewCache(64 << 20)
	r := openRA(t, newCountingObject(data), 1<<20, cache)
	defer r.Close()
	scan(r, from, n)
	got, decoded := scan(r, from-2*perBlock, n+2*perBlock)
	uncached := openRA(t, newCountingObject(data), 1<<20, nil)
	defer uncached.Close()
	want, _ := scan(uncached, from-2*perBlock, n+2*perBlock)
	// It reaches 42 or 43 blocks, at most 3 of them outside the cached range.
	if decoded == 0 || decoded > 3 {
		t.Fatalf("the second scan decoded %d blocks from its windows: it decoded cached blocks again, or used no window", decoded)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the second scan returned %d keys, a scan without a cache %d, or other keys", len(got), len(want))
	}
}

// TestReadAheadCompactionIterDoesNotFillCache: a compaction's iterator reads
// ahead like any forward scan, and still adds none of the blocks it reads
// (from windows or alone) to the cache.
func TestReadAheadCompactionIterDoesNotFillCache(t *testing.T) {
	data, rows := raTable(t, SnappyCompression)
	obj := newCountingObject(data)
	cache := NewCache(64 << 20)
	r := openRA(t, obj, 64<<10, cache)
	defer r.Close()
	it := r.NewCompactionIter()
	checkForward(t, it, rows, "compaction read")
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if size := cache.Metrics().SizeBytes; size != 0 {
		t.Fatalf("a compaction read left %d bytes in the cache, want 0", size)
	}
	if reads, blocks := len(obj.takeReads()), len(dataHandles(t, r)); reads >= blocks/4 {
		t.Fatalf("%d reads for %d blocks: the compaction iterator did not read ahead", reads, blocks)
	}
}

// TestCompactionReadAheadCap checks that CompactionReadAhead applies to
// compaction iterators only: negative makes them read block by block while
// NewIter still reads ahead, zero gives them ReadAhead, and Reset keeps
// the cap of the iterator's kind.
func TestCompactionReadAheadCap(t *testing.T) {
	data, want := raTable(t, SnappyCompression)
	scan := func(it format.Iterator) {
		t.Helper()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Error(); err != nil || n != len(want) {
			t.Fatalf("%d rows, err %v; want %d rows", n, err, len(want))
		}
	}
	for _, c := range []struct {
		comp          int
		compReadsEach bool // compaction iterators read every block alone
	}{{-1, true}, {0, false}} {
		obj := newCountingObject(data)
		r, err := Open(obj, ReaderOptions{Name: testName, ReadAhead: 256 << 10, CompactionReadAhead: c.comp})
		if err != nil {
			t.Fatal(err)
		}
		mustIndex(t, r)
		obj.takeReads()
		blocks := len(dataHandles(t, r))
		it := r.NewIter()
		scan(it)
		it.Close()
		if n := len(obj.takeReads()); n >= blocks/4 {
			t.Fatalf("comp %d: NewIter made %d reads for %d blocks", c.comp, n, blocks)
		}
		ci := r.NewCompactionIter()
		scan(ci)
		reused := ci.(*Iterator)
		reused.Reset(r) // still a compaction iterator
		scan(reused)
		reused.Close()
		n := len(obj.takeReads())
		if c.compReadsEach && n != 2*blocks || !c.compReadsEach && n >= blocks/2 {
			t.Fatalf("comp %d: two compaction scans made %d reads for %d blocks", c.comp, n, blocks)
		}
	}
}

// TestReadAheadAfter checks that with ReadAheadAfter n a short range scan
// (a seek and a few block steps) reads its blocks one by one, and a full
// scan starts reading ahead after n single-block reads.
func TestReadAheadAfter(t *testing.T) {
	data, want := raTable(t, SnappyCompression)
	const after = 4
	obj := newCountingObject(data)
	r, err := Open(obj, ReaderOptions{Name: testName, ReadAhead: 256 << 10, ReadAheadAfter: after})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, r)
	obj.takeReads()
	hs := dataHandles(t, r)
	it := r.NewIter().(*Iterator)
	// Seek into block 10, then step forward across `after` block boundaries.
	if !it.SeekGE(mustIndex(t, r).userKey(10)) {
		t.Fatal(it.Error())
	}
	start := it.dataOff
	for blocks := 0; blocks <= after; {
		prev := it.dataOff
		if !it.Next() {
			t.Fatal(it.Error())
		}
		if it.dataOff != prev {
			blocks++
			if blocks == after {
				break
			}
		}
	}
	reads := obj.takeReads()
	for _, rd := range reads {
		if rd.n > int64(hs[0].length+trailerLen)*2 {
			t.Fatalf("short scan from block at %d made a read of %d bytes (reads %v)", start, rd.n, reads)
		}
	}
	if len(reads) != 1+after {
		t.Fatalf("short scan: %d reads, want %d", len(reads), 1+after)
	}
	it.Close()
	// A full scan: after single-block reads, windows.
	got, err := scanAll(t, r)
	if err != nil || len(got) != len(want) {
		t.Fatalf("full scan: %d rows, err %v", len(got), err)
	}
	if n := len(obj.takeReads()); n > len(hs)/4 {
		t.Fatalf("full scan: %d reads for %d blocks", n, len(hs))
	}
}

// TestReadAheadNextWindowFromMiddle: the background fetch of the next
// window starts when the iterator reaches the middle block of the window it
// is in, not before, so a scan that ends in the first half of a window
// never reads the next one.
func TestReadAheadNextWindowFromMiddle(t *testing.T) {
	data, _ := raTable(t, NoCompression)
	obj := newCountingObject(data)
	r := openRA(t, obj, 1<<20, nil)
	defer r.Close()
	it := r.NewIter().(*Iterator)
	windows := 0
	var last *raWindow
	for ok := it.First(); ok && windows < 3; ok = it.Next() {
		cur := it.ra.cur
		if cur == nil {
			continue
		}
		if cur != last {
			windows++
			last = cur
		}
		i := cur.find(it.dataOff)
		if i < 0 {
			t.Fatalf("the iterator's block at %d is not in its window", it.dataOff)
		}
		if mid := max(1, len(cur.handles)/2); (it.ra.next != nil) != (i >= mid) {
			t.Fatalf("window %d of %d blocks, at its block %d: next window fetching = %v, want it from block %d on",
				windows, len(cur.handles), i, it.ra.next != nil, mid)
		}
	}
	if windows < 3 {
		t.Fatalf("the scan went through %d windows, want 3", windows)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}
