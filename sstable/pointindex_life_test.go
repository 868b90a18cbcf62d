package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
	"unsafe"
)

// TestPointIndexOffHeapLifetime: a loaded point index is one buffer outside
// the Go heap, charged to the cache at its size; Close frees it unless an
// iterator still holds it, in which case that iterator's Close does; after
// Close no Get or iterator can reach it.
func TestPointIndexOffHeapLifetime(t *testing.T) {
	data, rows := bigIndexTable(t, SnappyCompression)
	cache := NewCache(8 << 20)
	defer cache.Close()
	for _, iterOutlives := range []bool{false, true} {
		r, err := Open(newMemObject(data), ReaderOptions{Name: testName, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		b0, n0 := manual.Allocated()
		it := r.NewIter()
		px := it.(*Iterator).index.px
		if px == nil || !px.mem.offHeap || px.refs.Load() != 2 {
			t.Fatalf("loaded point index: %+v", px)
		}
		// The block cache takes slab memory too: count only the index.
		if b, n := manualDelta(b0, n0); n < 1 || b < px.bytes() {
			t.Fatalf("after the load: %d manual buffers of %d bytes, index of %d", n, b, px.bytes())
		}
		size := px.bytes()
		if r.metaBytes() != size {
			t.Fatalf("charged %d for an index of %d bytes", r.metaBytes(), px.bytes())
		}
		if _, found, err := r.Get(rows[10].Key, format.MaxSeq); err != nil || !found {
			t.Fatalf("Get: %v %v", found, err)
		}
		if px.refs.Load() != 2 {
			t.Fatalf("a finished Get left %d references", px.refs.Load())
		}
		if !iterOutlives {
			it.Close()
		}
		ib, in := manual.Allocated()
		r.Close()
		if _, _, _, err := r.GetAfterFilter(rows[10].Key, format.MaxSeq); !errors.Is(err, errReaderClosed) {
			t.Fatalf("Get after Close: %v", err)
		}
		if err := r.NewIter().Error(); !errors.Is(err, errReaderClosed) {
			t.Fatalf("NewIter after Close: %v", err)
		}
		if err := r.NewCompactionIter().Error(); err == nil {
			t.Fatal("NewCompactionIter after Close reached the index")
		}
		b, n := manual.Allocated()
		if iterOutlives {
			// The iterator keeps the index until it closes, and can
			// still walk it.
			if b != ib || n != in || px.refs.Load() != 1 {
				t.Fatalf("Close freed an index an iterator holds (%d refs)", px.refs.Load())
			}
			checkForward(t, it, rows, "iterator outliving its Reader")
			ib, in = manual.Allocated() // the scan cached blocks in slab memory
			it.Close()
			b, n = manual.Allocated()
		}
		if ib-b != size || in-n != 1 || px.refs.Load() != 0 || px.heads != nil {
			t.Fatalf("last reference gone: freed %d bytes in %d buffers, refs %d", ib-b, in-n, px.refs.Load())
		}
		if px.tryRef() {
			t.Fatal("tryRef succeeded on a freed index")
		}
	}
}

// TestPointIndexCloseRace: Gets and iterators racing with Close either work
// or fail with errReaderClosed; the index is freed exactly once, after the
// last of them (run with -race; a read of freed manual memory faults).
func TestPointIndexCloseRace(t *testing.T) {
	data, rows := bigIndexTable(t, NoCompression)
	for range 20 {
		r := openTable(t, data, nil)
		b0, n0 := manual.Allocated()
		mustIndex(t, r)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 4 {
			wg.Go(func() {
				<-start
				for i := g; i < 200; i += 4 {
					k := rows[(i*37)%len(rows)].Key
					if _, _, err := r.Get(k, format.MaxSeq); err != nil && !errors.Is(err, errReaderClosed) {
						t.Errorf("Get: %v", err)
					}
					it := r.NewIter()
					if it.SeekGE(k) && !bytes.Equal(it.Row().Key, k) {
						t.Errorf("SeekGE(%q) at %q", k, it.Row().Key)
					}
					if err := it.Close(); err != nil && !errors.Is(err, errReaderClosed) {
						t.Errorf("iterator: %v", err)
					}
				}
			})
		}
		close(start)
		r.Close()
		wg.Wait()
		if b, n := manualDelta(b0, n0); b != 0 || n != 0 {
			t.Fatalf("after Close and the last user: %d manual buffers of %d bytes held", n, b)
		}
	}
}

// TestPointIndexBuildFrees: Check's and a failed load's point index leave no
// manual memory behind.
func TestPointIndexBuildFrees(t *testing.T) {
	data, _ := bigIndexTable(t, ZstdCompression)
	r := openTable(t, data, nil)
	defer r.Close()
	b0, n0 := manual.Allocated()
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	if b, n := manualDelta(b0, n0); b != 0 || n != 0 {
		t.Fatalf("after Check: %d manual buffers of %d bytes", n, b)
	}
	// The last handle's offset made past the data blocks (same varint
	// length), behind a valid CRC: the index block is read off the heap,
	// decoded, rejected and freed.
	plain, _ := bigIndexTable(t, NoCompression)
	ft := tableFooter(t, plain)
	ix := rawIndexIter(t, openTable(t, plain, nil))
	if !ix.last() {
		t.Fatal(ix.err)
	}
	at := ft.index.offset + uint64(uintptr(unsafe.Pointer(&ix.row.Value[0]))-uintptr(unsafe.Pointer(&ix.data[0])))
	_, k := binary.Uvarint(ix.row.Value)
	d := bytes.Clone(plain)
	for i := range k {
		d[at+uint64(i)] = 0xff
	}
	d[at+uint64(k)-1] = 0x7f
	d = reseal(d)
	bad := openTable(t, d, nil)
	defer bad.Close()
	b0, n0 = manual.Allocated()
	for range 2 {
		if err := bad.NewIter().Error(); !errors.Is(err, format.ErrCorruption) {
			t.Fatalf("corrupt index: %v", err)
		}
		if err := bad.NewCompactionIter().Error(); !errors.Is(err, format.ErrCorruption) {
			t.Fatalf("corrupt index, compaction iterator: %v", err)
		}
	}
	if b, n := manualDelta(b0, n0); b != 0 || n != 0 {
		t.Fatalf("after failed loads: %d manual buffers of %d bytes", n, b)
	}
}
