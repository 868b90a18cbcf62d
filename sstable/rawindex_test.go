package sstable

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
)

// bigIndexTable builds a table whose index block is at least
// minOffHeapMeta bytes decoded, so that it is read outside the Go heap.
func bigIndexTable(t testing.TB, c Compression) ([]byte, []format.Row) {
	t.Helper()
	rows := genRows(6000, 5)
	data, props := buildTable(t, rows, WriterOptions{Compression: c, BlockSize: 512})
	r := openTable(t, data, nil)
	defer r.Close()
	if b, err := r.readIndex(); err != nil || len(b) < minOffHeapMeta {
		t.Fatalf("index block of %d bytes (%d data blocks), want >= %d: %v", len(b), props.NumDataBlocks, minOffHeapMeta, err)
	}
	return data, rows
}

// manualDelta returns the manual memory handed out since (b0, n0).
func manualDelta(b0, n0 int64) (int64, int64) {
	b, n := manual.Allocated()
	return b - b0, n - n0
}

// sameMoves drives a and b through the same positioning calls and fails t
// at the first difference in position, row or error.
func sameMoves(t *testing.T, a, b format.Iterator, rows []format.Row) {
	t.Helper()
	check := func(what string, okA, okB bool) {
		t.Helper()
		if okA != okB || (okA && (!rowsEqual(a.Row(), b.Row()) || !bytes.Equal(a.Row().Key, b.Row().Key))) ||
			(a.Error() == nil) != (b.Error() == nil) {
			t.Fatalf("%s: %v %v / %v %v", what, okA, a.Error(), okB, b.Error())
		}
	}
	n := 0
	for okA, okB := a.First(), b.First(); okA || okB; okA, okB = a.Next(), b.Next() {
		check(fmt.Sprintf("forward row %d", n), okA, okB)
		n++
	}
	if n != len(rows) {
		t.Fatalf("forward: %d rows, want %d", n, len(rows))
	}
	for okA, okB := a.Last(), b.Last(); okA || okB; okA, okB = a.Prev(), b.Prev() {
		n--
		check(fmt.Sprintf("backward row %d", n), okA, okB)
	}
	if n != 0 {
		t.Fatalf("backward: %d rows short", n)
	}
	keys := [][]byte{nil, []byte("a"), []byte("zzz")}
	for i := 0; i < len(rows); i += 97 {
		k := rows[i].Key
		keys = append(keys, k, append(bytes.Clone(k), 0))
	}
	for _, k := range keys {
		check(fmt.Sprintf("SeekGE(%q)", k), a.SeekGE(k), b.SeekGE(k))
		check(fmt.Sprintf("SeekGE(%q).Next", k), a.Next(), b.Next())
		check(fmt.Sprintf("SeekLT(%q)", k), a.SeekLT(k), b.SeekLT(k))
		check(fmt.Sprintf("SeekLT(%q).Prev", k), a.Prev(), b.Prev())
	}
}

// TestCompactionIterRawIndex: a compaction iterator over a table whose
// index is not loaded walks the stored index block, held outside the Go
// heap while it is open and freed by Close and by Reset, and moves exactly
// as a user iterator over the loaded point index does.
func TestCompactionIterRawIndex(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		t.Run(c.String(), func(t *testing.T) {
			data, rows := bigIndexTable(t, c)
			user := openTable(t, data, nil)
			defer user.Close()
			r := openTable(t, data, nil)
			defer r.Close()
			ui := user.NewIter() // loads user's point index
			defer ui.Close()
			b0, n0 := manual.Allocated()
			ci := r.NewCompactionIter()
			it := ci.(*Iterator)
			if it.index.raw == nil || it.index.px != nil || !it.index.raw.mem.offHeap {
				t.Fatalf("compaction iterator index: raw %v, point index %v", it.index.raw != nil, it.index.px != nil)
			}
			if b, n := manualDelta(b0, n0); n != 1 || b < minOffHeapMeta {
				t.Fatalf("open compaction iterator holds %d manual buffers of %d bytes, want 1", n, b)
			}
			sameMoves(t, ci, ui, rows)
			if r.meta.index.Load() != nil {
				t.Fatal("the compaction iterator loaded the Reader's index")
			}
			// Reset onto another table frees the first index block and
			// reads the next.
			r2 := openTable(t, data, nil)
			defer r2.Close()
			it.Reset(r2)
			if b, n := manualDelta(b0, n0); n != 1 || b < minOffHeapMeta {
				t.Fatalf("after Reset: %d manual buffers of %d bytes, want 1", n, b)
			}
			checkForward(t, it, rows, "after Reset")
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if b, n := manualDelta(b0, n0); b != 0 || n != 0 {
				t.Fatalf("after Close: %d manual buffers of %d bytes still held", n, b)
			}
			it.Close() // a second Close frees nothing twice
			if b, n := manualDelta(b0, n0); b != 0 || n != 0 {
				t.Fatalf("after a second Close: %d buffers, %d bytes", n, b)
			}
		})
	}
}

// TestCompactionIterRawIndexCorrupt: an index block whose CRC holds but
// whose entries do not decode fails the compaction iterator from the start,
// naming the file and the block's offset, and leaves no manual memory held.
func TestCompactionIterRawIndexCorrupt(t *testing.T) {
	data, _ := bigIndexTable(t, NoCompression)
	ft := tableFooter(t, data)
	ix := rawIndexIter(t, openTable(t, data, nil))
	// The key length of the first, a middle and the last entry: it then
	// runs past the block or splits the key from its trailer.
	for _, e := range []int{0, ix.numRestarts / 2, ix.numRestarts - 1} {
		at := ft.index.offset + uint64(ix.restartOffset(e)) + 1
		d := bytes.Clone(data)
		d[at] ^= 0xff
		d = reseal(d)
		r := openTable(t, d, nil)
		b0, n0 := manual.Allocated()
		it := r.NewCompactionIter()
		wantCorruption(t, fmt.Sprintf("index byte %d", at), it.Error(), int64(ft.index.offset))
		if it.First() {
			t.Fatalf("index byte %d: a failed iterator positioned", at)
		}
		it.Close()
		if b, n := manualDelta(b0, n0); b != 0 || n != 0 {
			t.Fatalf("index byte %d: %d manual buffers of %d bytes held after Close", at, n, b)
		}
		r.Close()
	}
}

// TestCompactionIterRawIndexChanged: an entry that no longer decodes once
// the iterator reaches it (the block checked at open changed under it; no
// reader does that, so the test does) is the iterator's error, not a panic.
func TestCompactionIterRawIndexChanged(t *testing.T) {
	data, _ := bigIndexTable(t, NoCompression)
	r := openTable(t, data, nil)
	defer r.Close()
	it := r.NewCompactionIter().(*Iterator)
	x := it.index.raw
	if x == nil || !it.First() {
		t.Fatalf("compaction iterator: raw index %v, %v", x != nil, it.Error())
	}
	off := int(x.data[x.restarts+4*(x.n/2)]) | int(x.data[x.restarts+4*(x.n/2)+1])<<8
	x.data[off] = 1 // a shared prefix at a restart
	for it.Next() {
	}
	wantCorruption(t, "changed index entry", it.Error(), int64(r.footer.index.offset))
	if it.SeekGE([]byte("key")) || it.Error() == nil {
		t.Fatal("SeekGE on a failed iterator")
	}
	it.Close()
}

// TestCompactionIterNonFlatIndex: an index block with shared prefixes (no
// writer makes one; RFC 0002 says restart interval 1) is still read, into a
// private point index.
func TestCompactionIterNonFlatIndex(t *testing.T) {
	rows := genRows(3000, 6)
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{BlockSize: 256})
	w.index.restartInterval = 4
	for i := range rows {
		if err := w.Add(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	user := openTable(t, data, nil)
	defer user.Close()
	r := openTable(t, data, nil)
	defer r.Close()
	it := r.NewCompactionIter()
	if x := it.(*Iterator).index; x.raw != nil || x.px == nil {
		t.Fatalf("non-flat index: raw %v, point index %v", x.raw != nil, x.px != nil)
	}
	ui := user.NewIter()
	sameMoves(t, it, ui, rows)
	it.Close()
	ui.Close()
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}
