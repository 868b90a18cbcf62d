package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// memObject is an in-memory storage.ObjectReader.
type memObject struct {
	*bytes.Reader
	closed bool
}

func newMemObject(b []byte) *memObject { return &memObject{Reader: bytes.NewReader(b)} }

func (m *memObject) Close() error { m.closed = true; return nil }

// ukeyFor returns the user key of key number i; keys are spaced so that
// odd numbers fall between table keys.
func ukeyFor(i int) []byte { return fmt.Appendf(nil, "key%08d", 2*i) }

// genRows returns n distinct user keys with 1-3 versions each, sorted in
// internal-key order: a mix of plain rows, tombstones and TTL rows.
func genRows(n int, seed uint64) []format.Row {
	rng := rand.New(rand.NewPCG(seed, 1))
	var rows []format.Row
	for i := range n {
		key := ukeyFor(i)
		versions := 1 + rng.IntN(3)
		seq := uint64(1000 + rng.IntN(1000))
		for range versions {
			r := format.Row{Key: key, Seq: seq}
			seq -= uint64(1 + rng.IntN(300))
			switch rng.IntN(10) {
			case 0, 1:
				r.Flags = format.FlagTombstone
			case 2, 3, 4:
				r.Flags = format.FlagHasTS | format.FlagHasExpire
				r.TS = 1_700_000_000_000 + int64(rng.IntN(1_000_000))
				r.ExpireTS = r.TS + int64(rng.IntN(10_000_000))
			}
			if !r.IsTombstone() {
				// Compressible values of varied length.
				v := make([]byte, rng.IntN(120))
				for j := range v {
					v[j] = "abcdefgh"[(j/7+i)%8]
				}
				if len(v) > 4 {
					v[0] = byte(rng.IntN(256))
				}
				r.Value = v
			}
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(a, b int) bool { return format.CompareRows(&rows[a], &rows[b]) < 0 })
	return rows
}

func buildTable(t testing.TB, rows []format.Row, opts WriterOptions) ([]byte, *Properties) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, opts)
	for i := range rows {
		if err := w.Add(&rows[i]); err != nil {
			t.Fatalf("Add(%d): %v", i, err)
		}
	}
	props, err := w.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if props.Size != uint64(buf.Len()) {
		t.Fatalf("props.Size = %d, file is %d bytes", props.Size, buf.Len())
	}
	return buf.Bytes(), props
}

func openTable(t testing.TB, data []byte, cache *Cache) *Reader {
	t.Helper()
	r, err := Open(newMemObject(data), ReaderOptions{Cache: cache, Name: "sst/000001.sst", FileNum: 1})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

// rowsEqual compares a row read back (got) with the row written (want).
func rowsEqual(got, want *format.Row) bool {
	return bytes.Equal(got.Key, want.Key) && got.Seq == want.Seq && got.Flags == want.Flags &&
		got.TS == want.TS && got.ExpireTS == want.ExpireTS && bytes.Equal(got.Value, want.Value) &&
		(got.Flags&format.FlagTombstone == 0 || got.Value == nil)
}

func fmtRow(r *format.Row) string {
	return fmt.Sprintf("{%q seq=%d flags=%d ts=%d exp=%d v=%q}", r.Key, r.Seq, r.Flags, r.TS, r.ExpireTS, r.Value)
}

// checkForward walks it from First to the end and fails t unless it yields
// exactly want (compared with rowsEqual) without an error. It does not
// close it.
func checkForward(t *testing.T, it format.Iterator, want []format.Row, what string) {
	t.Helper()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n >= len(want) {
			t.Fatalf("%s: more than the %d rows wanted", what, len(want))
		}
		if !rowsEqual(it.Row(), &want[n]) {
			t.Fatalf("%s: row %d = %s, want %s", what, n, fmtRow(it.Row()), fmtRow(&want[n]))
		}
		n++
	}
	if n != len(want) || it.Error() != nil {
		t.Fatalf("%s: %d rows (err %v), want %d", what, n, it.Error(), len(want))
	}
}

// rawIndexIter returns an iterator over r's index block as stored, read
// from the file.
func rawIndexIter(t testing.TB, r *Reader) *blockIter {
	t.Helper()
	b, err := r.readIndex()
	if err != nil {
		t.Fatal(err)
	}
	var it blockIter
	if err := it.init(b, r.name, int64(r.footer.index.offset), true); err != nil {
		t.Fatal(err)
	}
	return &it
}

// mustIndex returns r's point index, loading it if need be. It holds no
// reference: the index is valid until r closes.
func mustIndex(t testing.TB, r *Reader) *pointIndex {
	t.Helper()
	px, err := r.loadedIndex()
	if err != nil {
		t.Fatal(err)
	}
	px.unref()
	return px
}

// mustFilter returns r's filter, loading it if need be; nil if it has none.
func mustFilter(t testing.TB, r *Reader) *tableFilter {
	t.Helper()
	if r.footer.filter == (blockHandle{}) {
		return nil
	}
	f, err := r.loadedFilter()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// mayContain is r.MayContain failing t on error.
func mayContain(t testing.TB, r *Reader, ukey []byte) bool {
	t.Helper()
	ok, err := r.MayContain(ukey)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
