package mayfly

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/sstable"
)

// countingObject is an in-memory table file that counts its reads.
type countingObject struct {
	*bytes.Reader
	reads atomic.Int64
}

func (o *countingObject) ReadAt(p []byte, off int64) (int, error) {
	o.reads.Add(1)
	return o.Reader.ReadAt(p, off)
}

func (o *countingObject) Close() error { return nil }

// testLevel is a sorted level built in memory: its tables and their files.
type testLevel struct {
	tables []*tableFile
	files  []*countingObject
}

// resetReads zeroes the read counters (Open reads the index and filter).
func (l *testLevel) resetReads() {
	for _, f := range l.files {
		f.reads.Store(0)
	}
}

// reads returns the number of reads of each table since resetReads.
func (l *testLevel) reads() []int64 {
	out := make([]int64, len(l.files))
	for i, f := range l.files {
		out[i] = f.reads.Load()
	}
	return out
}

// spec describes one table: its rows (sorted) and, for a table with no
// rows, the user key its metadata claims as both bounds.
type spec struct {
	rows  []format.Row
	empty string
}

// buildLevel writes each spec as a table with tiny blocks (so tables have
// several) and opens it uncached, so every data block read is a file read.
func buildLevel(t testing.TB, specs []spec) *testLevel {
	t.Helper()
	l := &testLevel{}
	for i, s := range specs {
		var buf bytes.Buffer
		w := sstable.NewWriter(&buf, sstable.WriterOptions{BlockSize: 64})
		for j := range s.rows {
			if err := w.Add(&s.rows[j]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		f := &countingObject{Reader: bytes.NewReader(buf.Bytes())}
		r, err := sstable.Open(f, sstable.ReaderOptions{Name: fmt.Sprintf("t%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		m := &manifest.FileMeta{}
		if len(s.rows) == 0 {
			k := format.AppendInternalKey(nil, &format.Row{Key: []byte(s.empty)})
			m.Smallest, m.Largest = k, k
		} else {
			m.Smallest = format.AppendInternalKey(nil, &s.rows[0])
			m.Largest = format.AppendInternalKey(nil, &s.rows[len(s.rows)-1])
		}
		tf := &tableFile{Meta: m, reader: r}
		l.tables = append(l.tables, tf)
		l.files = append(l.files, f)
	}
	l.resetReads()
	return l
}

func row(k string, seq uint64) format.Row {
	return format.Row{Key: []byte(k), Seq: seq, Value: []byte(fmt.Sprintf("%s@%d", k, seq))}
}

func rowsOf(keys ...string) []format.Row {
	var out []format.Row
	for i, k := range keys {
		out = append(out, row(k, uint64(100+i)))
	}
	return out
}

func wantAt(t *testing.T, it format.Iterator, ok bool, op, want string) {
	t.Helper()
	got := "<none>"
	if ok {
		got = string(it.Row().Key)
	}
	if ok != it.Valid() {
		t.Fatalf("%s returned %v but Valid() = %v", op, ok, it.Valid())
	}
	if got != want {
		t.Fatalf("%s: at %s, want %s (err %v)", op, got, want, it.Error())
	}
}

// TestLevelIterTableBoundaries walks across table boundaries (including an
// empty table) in both directions and switches direction at the
// boundaries.
func TestLevelIterTableBoundaries(t *testing.T) {
	lvl := buildLevel(t, []spec{
		{rows: rowsOf("a", "b", "c")},
		{empty: "d"},
		{rows: rowsOf("e", "f")},
		{rows: rowsOf("g")},
		{rows: rowsOf("i", "j", "k")},
	})
	it := newLevelIter(lvl.tables, nil, nil)
	defer it.Close()

	var fwd []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Row().Key))
	}
	if want := []string{"a", "b", "c", "e", "f", "g", "i", "j", "k"}; !slices.Equal(fwd, want) {
		t.Fatalf("forward walk %v, want %v", fwd, want)
	}
	wantAt(t, it, it.Prev(), "Prev after running off the back", "k")
	var back []string
	for ok := it.Last(); ok; ok = it.Prev() {
		back = append(back, string(it.Row().Key))
	}
	if want := []string{"k", "j", "i", "g", "f", "e", "c", "b", "a"}; !slices.Equal(back, want) {
		t.Fatalf("backward walk %v, want %v", back, want)
	}
	wantAt(t, it, it.Next(), "Next after running off the front", "a")

	wantAt(t, it, it.SeekGE([]byte("c")), "SeekGE(c)", "c")
	wantAt(t, it, it.Next(), "Next across the empty table", "e")
	wantAt(t, it, it.Prev(), "Prev back across it", "c")
	wantAt(t, it, it.Next(), "Next again", "e")
	wantAt(t, it, it.SeekGE([]byte("d")), "SeekGE(d), the empty table's key", "e")
	wantAt(t, it, it.SeekGE([]byte("h")), "SeekGE(h), between tables", "i")
	wantAt(t, it, it.Prev(), "Prev from a table's first row", "g")
	wantAt(t, it, it.Next(), "Next back", "i")
	wantAt(t, it, it.SeekLT([]byte("h")), "SeekLT(h), between tables", "g")
	wantAt(t, it, it.SeekLT([]byte("e")), "SeekLT(e), a table's smallest", "c")
	wantAt(t, it, it.SeekLT([]byte("a")), "SeekLT(a)", "<none>")
	wantAt(t, it, it.SeekGE([]byte("l")), "SeekGE(l)", "<none>")
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLevelIterKeySpanningTables: the compactor never splits the versions
// of a user key between two tables (writeTables), but the level iterator
// must not depend on it: versions of "c" in two tables come out newest
// first forwards and oldest first backwards, and seeks find all of them.
func TestLevelIterKeySpanningTables(t *testing.T) {
	lvl := buildLevel(t, []spec{
		{rows: []format.Row{row("a", 1), row("c", 9), row("c", 8)}},
		{rows: []format.Row{row("c", 7), row("c", 3), row("d", 2)}},
	})
	it := newLevelIter(lvl.tables, nil, nil)
	defer it.Close()
	var got []string
	for ok := it.SeekGE([]byte("c")); ok; ok = it.Next() {
		got = append(got, string(it.Row().Value))
	}
	if want := []string{"c@9", "c@8", "c@7", "c@3", "d@2"}; !slices.Equal(got, want) {
		t.Fatalf("SeekGE(c) walk %v, want %v", got, want)
	}
	got = got[:0]
	for ok := it.SeekLT([]byte("d")); ok; ok = it.Prev() {
		got = append(got, string(it.Row().Value))
	}
	if want := []string{"c@3", "c@7", "c@8", "c@9", "a@1"}; !slices.Equal(got, want) {
		t.Fatalf("SeekLT(d) walk %v, want %v", got, want)
	}
}

// TestLevelIterBoundsSkipTables checks which tables bounds leave in, and
// that a bounded walk reads no block of a table outside the bounds.
func TestLevelIterBoundsSkipTables(t *testing.T) {
	var specs []spec
	for _, r := range []string{"a", "e", "i", "m"} {
		// Table n holds r+"0" .. r+"3"; enough rows for several blocks.
		var keys []string
		for j := range 4 {
			for k := range 8 {
				keys = append(keys, fmt.Sprintf("%s%d%d", r, j, k))
			}
		}
		specs = append(specs, spec{rows: rowsOf(keys...)})
	}
	lvl := buildLevel(t, specs)
	b := func(s string) []byte {
		if s == "" {
			return nil
		}
		return []byte(s)
	}
	for _, tc := range []struct {
		lower, upper string
		tables       []int // indexes of the tables kept
	}{
		{"", "", []int{0, 1, 2, 3}},
		{"a20", "e20", []int{0, 1}}, // inside tables
		{"c", "g", []int{1}},
		{"b", "d", nil},            // between tables
		{"a37", "e00", []int{0}},   // at a table's largest / the next one's smallest
		{"a38", "e01", []int{1}},   // just past / just inside
		{"e0", "", []int{1, 2, 3}}, // open above
		{"", "i00", []int{0, 1}},   // open below, at a smallest
		{"z", "", nil},             // past everything
		{"e10", "e20", []int{1}},   // inside one table
		{"", "a00", nil},           // upper at the very first key
		{"m37", "", []int{3}},      // lower at the very last key
		{"a00", "m38", []int{0, 1, 2, 3}},
	} {
		kept := tablesInBounds(lvl.tables, b(tc.lower), b(tc.upper))
		var idx []int
		for _, k := range kept {
			idx = append(idx, slices.Index(lvl.tables, k))
		}
		if !slices.Equal(idx, tc.tables) {
			t.Errorf("bounds [%q, %q): kept tables %v, want %v", tc.lower, tc.upper, idx, tc.tables)
		}
		for i, tf := range lvl.tables {
			if in := inBounds(tf, b(tc.lower), b(tc.upper)); in != slices.Contains(tc.tables, i) {
				t.Errorf("bounds [%q, %q): inBounds(table %d) = %v", tc.lower, tc.upper, i, in)
			}
		}
	}

	// A forward walk bounded inside table 1 stops at the first row past the
	// bound and never reads table 2; a backward one never reads table 0.
	lower, upper := []byte("e10"), []byte("e37")
	it := newLevelIter(tablesInBounds(lvl.tables, lower, upper), lower, upper)
	lvl.resetReads()
	n := 0
	for ok := it.First(); ok && bytes.Compare(it.Row().Key, upper) < 0; ok = it.Next() {
		n++
	}
	for ok := it.Last(); ok && bytes.Compare(it.Row().Key, lower) >= 0; ok = it.Prev() {
		n++
	}
	if n != 2*(8*2+7) {
		t.Fatalf("bounded walks saw %d rows, want %d", n, 2*(8*2+7))
	}
	if r := lvl.reads(); r[0] != 0 || r[2] != 0 || r[3] != 0 || r[1] == 0 {
		t.Fatalf("reads per table %v: want reads of table 1 only", r)
	}
	// Seeks past a bound return without reading anything.
	lvl.resetReads()
	wantAt(t, it, it.SeekGE([]byte("e37")), "SeekGE(upper)", "<none>")
	wantAt(t, it, it.SeekLT([]byte("e10")), "SeekLT(lower)", "<none>")
	if r := lvl.reads(); slices.Max(r) != 0 {
		t.Fatalf("seeks outside the bounds read tables: %v", r)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLevelIterMatchesConcatenation compares random moves of a level
// iterator, with random bounds, against the sorted slice of all rows of a
// random level. Tables are cut at random, sometimes between two versions of
// one key, and empty tables are slipped in between. Seeks are clamped to
// the bounds as Iterator does; rows inside the bounds must match exactly,
// and past a bound the level iterator may show a row beyond it or nothing.
func TestLevelIterMatchesConcatenation(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		key := func(i int) string { return fmt.Sprintf("k%03d", i) }
		var ref []format.Row
		seq := uint64(1)
		for i := 0; i < 120; i += 1 + rng.IntN(3) {
			for range 1 + rng.IntN(3) {
				seq++
				ref = append(ref, row(key(i), seq))
			}
		}
		slices.SortFunc(ref, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
		var specs []spec
		for start := 0; start < len(ref); {
			if rng.IntN(6) == 0 {
				// An empty table claiming the key of the next row (a valid
				// bound: it sorts between its neighbours).
				specs = append(specs, spec{empty: string(ref[start].Key)})
			}
			end := min(len(ref), start+1+rng.IntN(12))
			specs = append(specs, spec{rows: ref[start:end]})
			start = end
		}
		lvl := buildLevel(t, specs)

		for round := range 10 {
			var lower, upper []byte
			if rng.IntN(3) > 0 {
				lower = []byte(key(rng.IntN(130)))
			}
			if rng.IntN(3) > 0 {
				upper = []byte(key(rng.IntN(130)))
			}
			inB := func(pos int) bool {
				return pos >= 0 && pos < len(ref) &&
					(lower == nil || bytes.Compare(ref[pos].Key, lower) >= 0) &&
					(upper == nil || bytes.Compare(ref[pos].Key, upper) < 0)
			}
			seekPos := func(k []byte) int {
				i, _ := slices.BinarySearchFunc(ref, k, func(r format.Row, k []byte) int { return bytes.Compare(r.Key, k) })
				return i
			}
			it := newLevelIter(tablesInBounds(lvl.tables, lower, upper), lower, upper)
			pos := -1
			var trace []string
			for step := range 200 {
				var ok bool
				var op string
				switch rng.IntN(6) {
				case 0:
					k := []byte(key(rng.IntN(130)))
					if lower != nil && bytes.Compare(k, lower) < 0 {
						k = lower
					}
					op, ok, pos = "SeekGE "+string(k), it.SeekGE(k), seekPos(k)
				case 1:
					k := []byte(key(rng.IntN(130)))
					if upper != nil && bytes.Compare(k, upper) > 0 {
						k = upper
					}
					op, ok, pos = "SeekLT "+string(k), it.SeekLT(k), seekPos(k)-1
				case 2:
					pos = 0
					if lower != nil {
						pos = seekPos(lower)
					}
					op, ok = "First", it.First()
				case 3:
					pos = len(ref) - 1
					if upper != nil {
						pos = seekPos(upper) - 1
					}
					op, ok = "Last", it.Last()
				case 4:
					if !inB(pos) {
						continue
					}
					pos++
					op, ok = "Next", it.Next()
				case 5:
					if !inB(pos) {
						continue
					}
					pos--
					op, ok = "Prev", it.Prev()
				}
				trace = append(trace, op)
				fail := func(msg string) {
					t.Fatalf("seed %d round %d step %d %s, bounds [%q, %q): %s\ntrace %v", seed, round, step, op, lower, upper, msg, trace)
				}
				if ok != it.Valid() {
					fail(fmt.Sprintf("returned %v, Valid %v", ok, it.Valid()))
				}
				if err := it.Error(); err != nil {
					fail(err.Error())
				}
				switch {
				case inB(pos) && !ok:
					fail(fmt.Sprintf("nothing; want %s@%d", ref[pos].Key, ref[pos].Seq))
				case inB(pos) && format.CompareRows(it.Row(), &ref[pos]) != 0:
					fail(fmt.Sprintf("at %s@%d; want %s@%d", it.Row().Key, it.Row().Seq, ref[pos].Key, ref[pos].Seq))
				case !inB(pos) && ok:
					// Allowed only beyond the bound in the direction of travel.
					k := it.Row().Key
					beyond := (upper != nil && bytes.Compare(k, upper) >= 0 && pos >= 0) ||
						(lower != nil && bytes.Compare(k, lower) < 0 && pos < len(ref))
					if !beyond || (pos >= 0 && pos < len(ref) && format.CompareRows(it.Row(), &ref[pos]) != 0) {
						fail(fmt.Sprintf("at %s@%d; want nothing or the row beyond the bound", k, it.Row().Seq))
					}
				}
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
