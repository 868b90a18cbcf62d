package merge

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/memtable"
)

// TestMergeMatchesSortedUnion splits rows among several memtables and checks
// that random moves over the merge match a sorted slice of all rows.
func TestMergeMatchesSortedUnion(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewSource(seed))
		mts := []*memtable.Memtable{memtable.New(1), memtable.New(2), memtable.New(3), memtable.New(4)}
		var ref []format.Row
		for seq := uint64(1); seq <= 400; seq++ {
			r := format.Row{Key: []byte(fmt.Sprintf("k%03d", rng.Intn(80))), Seq: seq, Value: []byte(fmt.Sprint(seq))}
			mts[rng.Intn(len(mts))].Add(&r)
			ref = append(ref, r)
		}
		slices.SortFunc(ref, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
		var its []format.Iterator
		for _, m := range mts {
			its = append(its, m.NewIter())
		}
		it := New(its...)
		pos := -1
		for step := 0; step < 4000; step++ {
			var ok bool
			var op string
			switch rng.Intn(6) {
			case 0:
				k := []byte(fmt.Sprintf("k%03d", rng.Intn(85)))
				pos, _ = slices.BinarySearchFunc(ref, k, func(r format.Row, k []byte) int { return cmp(r.Key, k) })
				op, ok = "SeekGE", it.SeekGE(k)
			case 1:
				k := []byte(fmt.Sprintf("k%03d", rng.Intn(85)))
				i, _ := slices.BinarySearchFunc(ref, k, func(r format.Row, k []byte) int { return cmp(r.Key, k) })
				pos = i - 1
				op, ok = "SeekLT", it.SeekLT(k)
			case 2:
				pos, op, ok = 0, "First", it.First()
			case 3:
				pos, op, ok = len(ref)-1, "Last", it.Last()
			case 4:
				if pos < 0 || pos >= len(ref) {
					continue
				}
				pos++
				op, ok = "Next", it.Next()
			case 5:
				if pos < 0 || pos >= len(ref) {
					continue
				}
				pos--
				op, ok = "Prev", it.Prev()
			}
			want := pos >= 0 && pos < len(ref)
			if ok != want {
				t.Fatalf("seed %d step %d %s: ok=%v want %v", seed, step, op, ok, want)
			}
			if ok && format.CompareRows(it.Row(), &ref[pos]) != 0 {
				t.Fatalf("seed %d step %d %s: at %s@%d want %s@%d", seed, step, op, it.Row().Key, it.Row().Seq, ref[pos].Key, ref[pos].Seq)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func cmp(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

func BenchmarkMergeNext(b *testing.B) {
	var its []format.Iterator
	for m := 0; m < 4; m++ {
		mt := memtable.New(uint64(m))
		for i := 0; i < 25000; i++ {
			mt.Add(&format.Row{Key: []byte(fmt.Sprintf("%016d", i*4+m)), Seq: uint64(i*4 + m + 1), Value: []byte("v")})
		}
		its = append(its, mt.NewIter())
	}
	it := New(its...)
	b.ReportAllocs()
	it.First()
	for i := 0; i < b.N; i++ {
		if !it.Next() {
			it.First()
		}
	}
}

// sliceIter is a format.Iterator over sorted rows in a slice, cheap enough
// that a benchmark over it times the merge rather than its children.
type sliceIter struct {
	rows []format.Row
	pos  int // -1 before the first row, len(rows) after the last
}

func (s *sliceIter) seek(key []byte) int {
	i, _ := slices.BinarySearchFunc(s.rows, key, func(r format.Row, k []byte) int { return cmp(r.Key, k) })
	return i
}
func (s *sliceIter) SeekGE(key []byte) bool { s.pos = s.seek(key); return s.Valid() }
func (s *sliceIter) SeekLT(key []byte) bool { s.pos = s.seek(key) - 1; return s.Valid() }
func (s *sliceIter) First() bool            { s.pos = 0; return s.Valid() }
func (s *sliceIter) Last() bool             { s.pos = len(s.rows) - 1; return s.Valid() }
func (s *sliceIter) Next() bool             { s.pos = min(s.pos+1, len(s.rows)); return s.Valid() }
func (s *sliceIter) Prev() bool             { s.pos = max(s.pos-1, -1); return s.Valid() }
func (s *sliceIter) Valid() bool            { return s.pos >= 0 && s.pos < len(s.rows) }
func (s *sliceIter) Row() *format.Row       { return &s.rows[s.pos] }
func (s *sliceIter) Error() error           { return nil }
func (s *sliceIter) Close() error           { return nil }

// BenchmarkMergeStep measures one Next of a merge over slice-backed
// children, so that it times the heap itself: "3way" deals 100k keys at
// random to three children (every step may change the current child),
// "1of3" puts 98% of the keys in one child (a full scan over one large
// level beside a small level and a small memtable).
func BenchmarkMergeStep(b *testing.B) {
	for _, shape := range []struct {
		name    string
		weights []int
	}{{"3way", []int{1, 1, 1}}, {"1of3", []int{98, 1, 1}}} {
		b.Run(shape.name, func(b *testing.B) {
			rng := rand.New(rand.NewSource(7))
			total := 0
			for _, w := range shape.weights {
				total += w
			}
			kids := make([]*sliceIter, len(shape.weights))
			for i := range kids {
				kids[i] = &sliceIter{pos: -1}
			}
			for i := 0; i < 100000; i++ {
				n := rng.Intn(total)
				c := 0
				for n >= shape.weights[c] {
					n -= shape.weights[c]
					c++
				}
				kids[c].rows = append(kids[c].rows, format.Row{Key: []byte(fmt.Sprintf("key%012d", i)), Seq: uint64(i + 1)})
			}
			its := make([]format.Iterator, len(kids))
			for i, k := range kids {
				its[i] = k
			}
			it := New(its...)
			it.First()
			b.ReportAllocs()
			for b.Loop() {
				if !it.Next() {
					it.First()
				}
			}
		})
	}
}
