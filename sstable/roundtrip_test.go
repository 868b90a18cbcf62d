package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

func TestRoundTrip(t *testing.T) {
	const nkeys = 600
	rows := genRows(nkeys, 42)
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		for _, bs := range []int{64, 4096} {
			for _, ri := range []int{1, 16} {
				for _, bloomBits := range []int{0, 10} {
					name := fmt.Sprintf("%v/block=%d/restart=%d/bloom=%d", c, bs, ri, bloomBits)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						opts := WriterOptions{BlockSize: bs, RestartInterval: ri, Compression: c, BloomBitsPerKey: bloomBits, CreationTime: 123}
						data, props := buildTable(t, rows, opts)
						cache := NewCache(1 << 20)
						r := openTable(t, data, cache)
						defer r.Close()
						if err := r.Check(); err != nil {
							t.Fatalf("Check: %v", err)
						}
						if got := r.Properties(); got.NumRows != uint64(len(rows)) || got.NumDataBlocks != props.NumDataBlocks || got.Size != uint64(len(data)) {
							t.Fatalf("properties: %+v", got)
						}
						if bs == 64 && props.NumDataBlocks < 50 {
							t.Fatalf("only %d data blocks with 64-byte blocks", props.NumDataBlocks)
						}
						checkIteration(t, r, rows)
						checkSeeks(t, r, rows, nkeys)
						checkRandomWalk(t, r, rows)
						checkGets(t, r, rows, nkeys)
					})
				}
			}
		}
	}
}

func checkIteration(t *testing.T, r *Reader, rows []format.Row) {
	it := r.NewIter()
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(rows) || !rowsEqual(it.Row(), &rows[i]) {
			t.Fatalf("forward row %d: got %s", i, fmtRow(it.Row()))
		}
		i++
	}
	if it.Error() != nil || i != len(rows) {
		t.Fatalf("forward: %d rows, err %v", i, it.Error())
	}
	// Exhausted forwards: Prev goes to the last row.
	if !it.Prev() || !rowsEqual(it.Row(), &rows[len(rows)-1]) {
		t.Fatalf("Prev after end")
	}
	i = len(rows) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		if i < 0 || !rowsEqual(it.Row(), &rows[i]) {
			t.Fatalf("backward row %d: got %s", i, fmtRow(it.Row()))
		}
		i--
	}
	if it.Error() != nil || i != -1 {
		t.Fatalf("backward: stopped at %d, err %v", i, it.Error())
	}
	if !it.Next() || !rowsEqual(it.Row(), &rows[0]) {
		t.Fatalf("Next after start")
	}
}

// firstGE returns the index of the first row with user key >= k.
func firstGE(rows []format.Row, k []byte) int {
	return sort.Search(len(rows), func(i int) bool { return bytes.Compare(rows[i].Key, k) >= 0 })
}

func checkSeeks(t *testing.T, r *Reader, rows []format.Row, nkeys int) {
	it := r.NewIter()
	defer it.Close()
	probes := [][]byte{nil, []byte(""), []byte("a"), []byte("key"), []byte("zzz")}
	for i := 0; i < 2*nkeys+2; i++ {
		probes = append(probes, fmt.Appendf(nil, "key%08d", i))
		probes = append(probes, fmt.Appendf(nil, "key%08d\x00", i))
	}
	for _, k := range probes {
		j := firstGE(rows, k)
		ok := it.SeekGE(k)
		if ok != (j < len(rows)) || ok && !rowsEqual(it.Row(), &rows[j]) {
			t.Fatalf("SeekGE(%q) = %v, want index %d", k, ok, j)
		}
		// Walk a little in both directions.
		if ok {
			if it.Next() != (j+1 < len(rows)) || j+1 < len(rows) && !rowsEqual(it.Row(), &rows[j+1]) {
				t.Fatalf("SeekGE(%q).Next", k)
			}
			it.SeekGE(k)
			if it.Prev() != (j > 0) || j > 0 && !rowsEqual(it.Row(), &rows[j-1]) {
				t.Fatalf("SeekGE(%q).Prev", k)
			}
		}
		ok = it.SeekLT(k)
		if ok != (j > 0) || ok && !rowsEqual(it.Row(), &rows[j-1]) {
			t.Fatalf("SeekLT(%q) = %v, want index %d", k, ok, j-1)
		}
		if ok {
			if it.Next() != (j < len(rows)) || j < len(rows) && !rowsEqual(it.Row(), &rows[j]) {
				t.Fatalf("SeekLT(%q).Next", k)
			}
		}
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

func checkRandomWalk(t *testing.T, r *Reader, rows []format.Row) {
	it := r.NewIter()
	defer it.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	pos := -1 // model position; -1 before start, len(rows) after end
	it.First()
	pos = 0
	for step := range 3000 {
		var ok bool
		switch rng.IntN(10) {
		case 0:
			ok, pos = it.First(), 0
		case 1:
			ok, pos = it.Last(), len(rows)-1
		case 2, 3, 4, 5:
			ok = it.Next()
			if pos < len(rows) {
				pos++
			}
		default:
			ok = it.Prev()
			if pos >= 0 {
				pos--
			}
		}
		want := pos >= 0 && pos < len(rows)
		if ok != want || ok && !rowsEqual(it.Row(), &rows[pos]) {
			t.Fatalf("step %d: ok=%v pos=%d", step, ok, pos)
		}
		if !ok {
			// Exhausted: the iterator turns around on the opposite move.
			if pos < 0 {
				pos = -1
			} else {
				pos = len(rows)
			}
		}
	}
}

func checkGets(t *testing.T, r *Reader, rows []format.Row, nkeys int) {
	for i := -1; i <= 2*nkeys; i++ {
		k := fmt.Appendf(nil, "key%08d", i)
		if i < 0 {
			k = []byte("a")
		}
		for _, seq := range []uint64{0, 1, 500, 900, 1000, 1200, 1500, 1999, 3000, format.MaxSeq} {
			want := -1
			for j := firstGE(rows, k); j < len(rows) && bytes.Equal(rows[j].Key, k); j++ {
				if rows[j].Seq <= seq {
					want = j
					break
				}
			}
			got, found, err := r.Get(k, seq)
			if err != nil {
				t.Fatalf("Get(%q, %d): %v", k, seq, err)
			}
			if found != (want >= 0) || found && !rowsEqual(&got, &rows[want]) {
				t.Fatalf("Get(%q, %d) = %v %s, want %d", k, seq, found, fmtRow(&got), want)
			}
		}
		if i >= 0 && i%2 == 0 && i < 2*nkeys && !mayContain(t, r, k) {
			t.Fatalf("MayContain(%q) = false for a present key", k)
		}
	}
}

func TestEmptyTable(t *testing.T) {
	for _, bloomBits := range []int{0, 10} {
		data, props := buildTable(t, nil, WriterOptions{BloomBitsPerKey: bloomBits})
		if props.NumRows != 0 || props.Smallest != nil || props.NumDataBlocks != 0 {
			t.Fatalf("props %+v", props)
		}
		r := openTable(t, data, nil)
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
		it := r.NewIter()
		if it.First() || it.Last() || it.SeekGE([]byte("a")) || it.SeekLT([]byte("a")) || it.Next() || it.Prev() {
			t.Fatal("empty table iterator found a row")
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if _, found, err := r.Get([]byte("a"), format.MaxSeq); found || err != nil {
			t.Fatalf("Get on empty table: %v %v", found, err)
		}
	}
}

func TestWriterRejects(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	if err := w.Add(&format.Row{Key: []byte("b"), Seq: 5}); err != nil {
		t.Fatal(err)
	}
	bad := []format.Row{
		{Key: []byte("a"), Seq: 9},                 // user key goes backwards
		{Key: []byte("b"), Seq: 5},                 // duplicate
		{Key: []byte("b"), Seq: 6},                 // seq goes up within a key
		{Key: []byte("c"), Seq: 1, Flags: 0x80},    // unknown flag
		{Key: []byte("c"), Seq: format.MaxSeq + 1}, // seq out of range
		{Key: []byte("c"), Seq: 1, Flags: format.FlagTombstone, Value: []byte("x")},
		{Key: []byte("c"), Seq: 1, Flags: format.FlagHasExpire, ExpireTS: -1},
	}
	for i := range bad {
		if err := w.Add(&bad[i]); err == nil {
			t.Errorf("Add(%s) succeeded", fmtRow(&bad[i]))
		}
	}
	if err := w.Add(&format.Row{Key: []byte("b"), Seq: 4}); err != nil {
		t.Fatalf("valid Add after rejected ones: %v", err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err == nil {
		t.Fatal("second Finish succeeded")
	}
	if err := w.Add(&format.Row{Key: []byte("z"), Seq: 1}); err == nil {
		t.Fatal("Add after Finish succeeded")
	}
}

func TestAddCopies(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{BlockSize: 32, Compression: SnappyCompression})
	key, val := []byte("k0"), []byte("YYYYYY")
	for i := range 100 {
		val[5] = byte('a' + i%26)
		key = fmt.Appendf(key[:0], "k%03d", i)
		if err := w.Add(&format.Row{Key: key, Seq: 1, Value: val}); err != nil {
			t.Fatal(err)
		}
		copy(key, "XXXX")
		copy(val, "YYYYYY")
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	r := openTable(t, buf.Bytes(), nil)
	it := r.NewIter()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := fmt.Sprintf("k%03d", i); string(it.Row().Key) != want || string(it.Row().Value) != "YYYYY"+string(rune('a'+i%26)) {
			t.Fatalf("row %d: %s", i, fmtRow(it.Row()))
		}
		i++
	}
	if i != 100 {
		t.Fatalf("%d rows", i)
	}
}

func TestCompressionString(t *testing.T) {
	for c, want := range map[Compression]string{NoCompression: "none", SnappyCompression: "snappy", ZstdCompression: "zstd", 9: "compression(9)"} {
		if c.String() != want {
			t.Errorf("%d.String() = %q", c, c.String())
		}
	}
	if _, err := NewWriter(&bytes.Buffer{}, WriterOptions{Compression: 9}).Finish(); err == nil {
		t.Error("unknown compression accepted")
	}
}

// TestLongRestartSpans covers blocks whose restart spans exceed what Prev
// remembers, in entries and in key bytes.
func TestLongRestartSpans(t *testing.T) {
	long := genRows(1500, 8)
	big := genRows(300, 9)
	for i := range big {
		big[i].Key = append(bytes.Repeat([]byte{'p'}, 1000), big[i].Key...)
	}
	for name, rows := range map[string][]format.Row{"many": long, "bigkeys": big} {
		t.Run(name, func(t *testing.T) {
			data, props := buildTable(t, rows, WriterOptions{BlockSize: 1 << 20, RestartInterval: 1 << 20, Compression: SnappyCompression})
			if props.NumDataBlocks != 1 {
				t.Fatalf("%d blocks", props.NumDataBlocks)
			}
			r := openTable(t, data, nil)
			if err := r.Check(); err != nil {
				t.Fatal(err)
			}
			checkIteration(t, r, rows)
			checkRandomWalk(t, r, rows)
		})
	}
}
