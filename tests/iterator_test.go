package tests

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// modelRow is what the model knows of a key.
type modelRow struct {
	v        string
	deadline int64 // Unix ms; 0 = never
}

type model map[string]modelRow

// live returns the live pairs of m at now within [lower, upper), sorted.
func (m model) live(now int64, lower, upper []byte) []kv {
	var out []kv
	for k, r := range m {
		if r.deadline != 0 && r.deadline < now {
			continue
		}
		if lower != nil && k < string(lower) || upper != nil && k >= string(upper) {
			continue
		}
		out = append(out, kv{k, r.v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].k < out[j].k })
	return out
}

// modelIter mirrors an Iterator over a fixed sorted slice.
type modelIter struct {
	rows         []kv
	pos          int // -1: invalid
	lower, upper []byte
}

func (m *modelIter) at(i int) bool {
	if i < 0 || i >= len(m.rows) {
		m.pos = -1
		return false
	}
	m.pos = i
	return true
}

func (m *modelIter) First() bool { return m.at(0) }
func (m *modelIter) Last() bool  { return m.at(len(m.rows) - 1) }
func (m *modelIter) SeekGE(k []byte) bool {
	return m.at(sort.Search(len(m.rows), func(i int) bool { return m.rows[i].k >= string(k) }))
}
func (m *modelIter) SeekLT(k []byte) bool {
	return m.at(sort.Search(len(m.rows), func(i int) bool { return m.rows[i].k >= string(k) }) - 1)
}
func (m *modelIter) Next() bool {
	if m.pos < 0 {
		return false
	}
	return m.at(m.pos + 1)
}
func (m *modelIter) Prev() bool {
	if m.pos < 0 {
		return false
	}
	return m.at(m.pos - 1)
}

// TestIteratorRandomAgainstModel runs random writes, deletes, TTLs, clock
// advances, flushes, compactions and reopens, and compares random iterator
// moves (with random bounds) against a sorted model. Each iterator is
// created, then more writes happen, then it is walked: it must show the
// view as of its creation.
//
// The "manytables" shape splits compaction output into 512-byte tables and
// keeps level targets tiny, so sorted levels hold many tables and reads
// cross table boundaries inside a level.
func TestIteratorRandomAgainstModel(t *testing.T) {
	shapes := []struct {
		name      string
		mutate    func(*mayfly.Options)
		minTables int // fewest tables the fullest sorted level must reach
	}{
		{"default", func(*mayfly.Options) {}, 0},
		{"manytables", func(o *mayfly.Options) {
			o.TargetFileSize = 512
			o.LBaseMaxBytes = 4 << 10
			o.LevelSizeRatio = 3
		}, 6},
	}
	for _, shape := range shapes {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed%d", shape.name, seed), func(t *testing.T) {
				t.Parallel()
				if most := testIteratorAgainstModel(t, seed, shape.mutate); most < shape.minTables {
					t.Fatalf("the fullest sorted level had %d tables; the shape wants at least %d", most, shape.minTables)
				}
			})
		}
	}
}

// testIteratorAgainstModel runs one seed and returns the most tables any
// level >= 1 held when an iterator was created.
func testIteratorAgainstModel(t *testing.T, seed uint64, mutateOpts func(*mayfly.Options)) int {
	rng := rand.New(rand.NewPCG(seed, seed*31))
	e := newEnv(t, func(o *mayfly.Options) {
		o.MemtableSize = 8 << 10
		o.L0CompactionThreshold = 3
		o.BlockSize = 256
		mutateOpts(o)
	})
	m := model{}
	randKey := func() []byte { return []byte(fmt.Sprintf("k%03d", rng.IntN(300))) }
	mutate := func() {
		k := string(randKey())
		switch rng.IntN(10) {
		case 0, 1:
			del(t, e.db, k)
			delete(m, k)
		case 2, 3, 4:
			ttl := time.Duration(1+rng.IntN(2000)) * time.Millisecond
			v := fmt.Sprintf("t%d", rng.Uint32())
			putTTL(t, e.db, k, v, mayfly.ExpireAfter(ttl))
			m[k] = modelRow{v, e.clk.NowMillis() + ttl.Milliseconds()}
		default:
			v := fmt.Sprintf("p%d", rng.Uint32())
			put(t, e.db, k, v)
			m[k] = modelRow{v, 0}
		}
	}
	mostTables := 0
	for round := range 60 {
		for range rng.IntN(60) {
			mutate()
		}
		switch rng.IntN(12) {
		case 0, 1:
			e.flush()
		case 2:
			e.compact()
		case 3:
			lo, hi := randKey(), randKey()
			if bytes.Compare(lo, hi) > 0 {
				lo, hi = hi, lo
			}
			must(t, e.db.Compact(t.Context(), lo, hi))
		case 4:
			e.reopen()
		}
		if rng.IntN(3) == 0 {
			e.clk.Advance(time.Duration(rng.IntN(700)) * time.Millisecond)
		}

		var opts *mayfly.IterOptions
		var lower, upper []byte
		if rng.IntN(2) == 0 {
			lower, upper = randKey(), randKey()
			if rng.IntN(4) == 0 {
				lower = nil
			} else if rng.IntN(4) == 0 {
				upper = nil
			}
			opts = &mayfly.IterOptions{LowerBound: lower, UpperBound: upper}
		}
		levels := e.db.Metrics().Levels
		for _, l := range levels[1:] {
			mostTables = max(mostTables, l.Files)
		}
		now := e.clk.NowMillis()
		mi := &modelIter{rows: m.live(now, lower, upper), pos: -1, lower: lower, upper: upper}
		it, err := e.db.NewIter(opts)
		if lower != nil && upper != nil && bytes.Compare(lower, upper) > 0 {
			if !errors.Is(err, mayfly.ErrInvalidOptions) {
				t.Fatalf("NewIter with inverted bounds [%q, %q): %v, want ErrInvalidOptions", lower, upper, err)
			}
			continue
		}
		must(t, err)
		// Writes and time after creation must not show through.
		for range rng.IntN(20) {
			mutate()
		}
		e.clk.Advance(time.Duration(rng.IntN(1000)) * time.Millisecond)
		if rng.IntN(4) == 0 {
			e.flush()
		}

		var trace []string
		for step := range 80 {
			var op string
			var got, want bool
			switch rng.IntN(6) {
			case 0:
				op, got, want = "First", it.First(), mi.First()
			case 1:
				op, got, want = "Last", it.Last(), mi.Last()
			case 2:
				k := randKey()
				op, got, want = "SeekGE "+string(k), it.SeekGE(k), mi.SeekGE(clampLow(k, lower))
			case 3:
				k := randKey()
				op, got, want = "SeekLT "+string(k), it.SeekLT(k), mi.SeekLT(clampHigh(k, upper))
			case 4:
				op, got, want = "Next", it.Next(), mi.Next()
			case 5:
				op, got, want = "Prev", it.Prev(), mi.Prev()
			}
			trace = append(trace, op)
			if got != want || got != it.Valid() {
				t.Fatalf("round %d step %d: %s = %v (Valid %v); model says %v\nbounds [%q, %q)\ntrace %v",
					round, step, op, got, it.Valid(), want, lower, upper, trace)
			}
			if got {
				w := mi.rows[mi.pos]
				if string(it.Key()) != w.k || string(it.Value()) != w.v {
					t.Fatalf("round %d step %d: %s at %q=%q; model at %q=%q\nbounds [%q, %q)\ntrace %v",
						round, step, op, it.Key(), it.Value(), w.k, w.v, lower, upper, trace)
				}
			}
		}
		must(t, it.Close())

		// A full forward and backward walk of the current state.
		cur := m.live(e.clk.NowMillis(), nil, nil)
		if got := scanAll(t, e.db.NewIter); !slices.Equal(got, cur) {
			t.Fatalf("round %d: forward scan has %d rows, model %d\n got %v\nwant %v", round, len(got), len(cur), got, cur)
		}
		rev := reverseKeys(t, e.db)
		if len(rev) != len(cur) {
			t.Fatalf("round %d: reverse scan has %d rows, model %d", round, len(rev), len(cur))
		}
		for i := range rev {
			if rev[i] != cur[len(cur)-1-i].k {
				t.Fatalf("round %d: reverse scan[%d] = %q; want %q", round, i, rev[i], cur[len(cur)-1-i].k)
			}
		}
	}
	return mostTables
}

func clampLow(k, lower []byte) []byte {
	if lower != nil && bytes.Compare(k, lower) < 0 {
		return lower
	}
	return k
}

func clampHigh(k, upper []byte) []byte {
	if upper != nil && bytes.Compare(k, upper) > 0 {
		return upper
	}
	return k
}

func reverseKeys(t testing.TB, db *mayfly.DB) []string {
	t.Helper()
	it, err := db.NewIter(nil)
	must(t, err)
	defer it.Close()
	var out []string
	for ok := it.Last(); ok; ok = it.Prev() {
		out = append(out, string(it.Key()))
	}
	must(t, it.Error())
	return out
}

func TestIteratorSkipsExpiredBothWays(t *testing.T) {
	e := newEnv(t, nil)
	put(t, e.db, "a", "1")
	putTTL(t, e.db, "b", "2", mayfly.ExpireAfter(time.Second))
	put(t, e.db, "c", "3")
	e.flush()
	putTTL(t, e.db, "d", "4", mayfly.ExpireAfter(time.Second))
	put(t, e.db, "b0", "x")
	putTTL(t, e.db, "b0", "x", mayfly.ExpireAt(epoch)) // newest version expires
	put(t, e.db, "e", "5")
	e.clk.Advance(time.Second + time.Millisecond)

	it, err := e.db.NewIter(nil)
	must(t, err)
	defer it.Close()
	var fwd, bwd []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Key()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		bwd = append(bwd, string(it.Key()))
	}
	if !slices.Equal(fwd, []string{"a", "c", "e"}) || !slices.Equal(bwd, []string{"e", "c", "a"}) {
		t.Fatalf("forward %q, backward %q; want a c e both ways", fwd, bwd)
	}
	if !it.SeekGE([]byte("b")) || string(it.Key()) != "c" {
		t.Fatalf("SeekGE(b) at %q; want c", it.Key())
	}
	if !it.SeekLT([]byte("e")) || string(it.Key()) != "c" {
		t.Fatalf("SeekLT(e) at %q; want c", it.Key())
	}
	if !it.Prev() || string(it.Key()) != "a" || !it.Next() || string(it.Key()) != "c" || !it.Next() || string(it.Key()) != "e" {
		t.Fatalf("direction changes across expired keys went wrong (at %q)", it.Key())
	}
}

func TestIteratorFixedView(t *testing.T) {
	e := newEnv(t, nil)
	put(t, e.db, "a", "1")
	putTTL(t, e.db, "b", "2", mayfly.ExpireAfter(time.Second))
	put(t, e.db, "c", "3")
	it, err := e.db.NewIter(nil)
	must(t, err)
	defer it.Close()

	del(t, e.db, "a")
	put(t, e.db, "c", "changed")
	put(t, e.db, "d", "new")
	e.clk.Advance(time.Hour) // b expires for the DB, not for the iterator
	e.compact()
	wantAbsent(t, e.db, "b")

	var got []kv
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, kv{string(it.Key()), string(it.Value())})
	}
	want := []kv{{"a", "1"}, {"b", "2"}, {"c", "3"}}
	if !slices.Equal(got, want) {
		t.Fatalf("iterator view %v; want %v", got, want)
	}
}

func TestIteratorBounds(t *testing.T) {
	e := newEnv(t, nil)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		put(t, e.db, k, k)
	}
	e.flush()
	it, err := e.db.NewIter(&mayfly.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("d")})
	must(t, err)
	defer it.Close()
	check := func(op string, ok bool, want string) {
		t.Helper()
		if want == "" {
			if ok || it.Valid() {
				t.Fatalf("%s: at %q; want invalid", op, it.Key())
			}
			return
		}
		if !ok || string(it.Key()) != want {
			t.Fatalf("%s: ok=%v at %q; want %q", op, ok, it.Key(), want)
		}
	}
	check("First", it.First(), "b")
	check("Next", it.Next(), "c")
	check("Next", it.Next(), "")
	check("Last", it.Last(), "c")
	check("Prev", it.Prev(), "b")
	check("Prev", it.Prev(), "")
	check("SeekGE(a)", it.SeekGE([]byte("a")), "b")
	check("SeekGE(d)", it.SeekGE([]byte("d")), "")
	check("SeekLT(z)", it.SeekLT([]byte("z")), "c")
	check("SeekLT(b)", it.SeekLT([]byte("b")), "")
	check("SeekGE(c)", it.SeekGE([]byte("c")), "c")
	check("SeekLT(c)", it.SeekLT([]byte("c")), "b")
}

func TestScanRangeOverFunc(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 100 {
		put(t, e.db, key(i), fmt.Sprint(i))
	}
	putTTL(t, e.db, key(5), "gone", mayfly.ExpireAfter(time.Millisecond))
	e.flush()
	e.clk.Advance(time.Second)

	var err error
	var keys []string
	for k, v := range e.db.Scan([]byte(key(3)), []byte(key(50)), &err) {
		if string(v) == "gone" {
			t.Fatalf("Scan yielded expired %s", k)
		}
		keys = append(keys, string(k))
		if len(keys) == 4 {
			break
		}
	}
	must(t, err)
	if want := []string{key(3), key(4), key(6), key(7)}; !slices.Equal(keys, want) {
		t.Fatalf("Scan with break = %q; want %q", keys, want)
	}

	n := 0
	for range e.db.Scan(nil, nil, &err) {
		n++
	}
	must(t, err)
	if n != 99 {
		t.Fatalf("full Scan = %d rows; want 99", n)
	}
	// The iterators behind the scans were closed: a full compaction can
	// replace every table and the database closes cleanly.
	e.compact()
	if m := e.db.Metrics(); m.Levels[0].Files != 0 {
		t.Fatalf("L0 files after Compact = %d", m.Levels[0].Files)
	}
	must(t, e.db.Close())
}
