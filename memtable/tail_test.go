package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
)

// checkReference checks m against ref (its rows, any order): forward and
// backward walks, Get of every key at the newest and at a random older
// sequence, and SeekGE/SeekLT of probe keys.
func checkReference(t *testing.T, m *Memtable, ref []format.Row, rng *rand.Rand, probes [][]byte) {
	t.Helper()
	ref = slices.Clone(ref)
	cmp := func(a, b format.Row) int { return format.CompareRows(&a, &b) }
	slices.SortFunc(ref, cmp)
	it := m.NewIter()
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(ref) || !sameRow(it.Row(), &ref[i]) {
			t.Fatalf("forward row %d: %q@%d", i, it.Row().Key, it.Row().Seq)
		}
		i++
	}
	if i != len(ref) {
		t.Fatalf("forward walk saw %d rows, want %d", i, len(ref))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if i < 0 || !sameRow(it.Row(), &ref[i]) {
			t.Fatalf("backward row %d: %q@%d", i, it.Row().Key, it.Row().Seq)
		}
	}
	if i != 0 {
		t.Fatalf("backward walk stopped at %d", i)
	}
	get := func(k []byte, seq uint64) {
		t.Helper()
		j, _ := slices.BinarySearchFunc(ref, format.Row{Key: k, Seq: seq}, cmp)
		want := j < len(ref) && bytes.Equal(ref[j].Key, k)
		got, ok := m.Get(k, seq)
		if ok != want || (ok && !sameRow(&got, &ref[j])) {
			t.Fatalf("Get(%q, %d) = %q@%d,%v; want found=%v", k, seq, got.Key, got.Seq, ok, want)
		}
	}
	for _, r := range ref {
		get(r.Key, format.MaxSeq)
		get(r.Key, uint64(rng.Int63n(int64(r.Seq)+1)))
	}
	for _, k := range probes {
		get(k, format.MaxSeq)
		j, _ := slices.BinarySearchFunc(ref, k, func(r format.Row, k []byte) int { return bytes.Compare(r.Key, k) })
		if ok := it.SeekGE(k); ok != (j < len(ref)) || (ok && !sameRow(it.Row(), &ref[j])) {
			t.Fatalf("SeekGE(%q) = %v at %q, want index %d", k, ok, it.Row().Key, j)
		}
		if ok := it.SeekLT(k); ok != (j > 0) || (ok && !sameRow(it.Row(), &ref[j-1])) {
			t.Fatalf("SeekLT(%q) = %v at %q, want index %d", k, ok, it.Row().Key, j-1)
		}
	}
}

// indexShape returns how many entries m's tree and tail hold.
func indexShape(m *Memtable) (tree, tail int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.tree.Len(), m.tail.n
}

// TestTailOrders inserts rows in orders that keep, grow, spill and bypass
// the tail, checks every read against a sorted reference, before and after
// a freeze, and checks where the entries went (so the test fails if the
// tail is never used or never spilled).
func TestTailOrders(t *testing.T) {
	key := func(i int) []byte { return fmt.Appendf(nil, "k%07d", i) }
	long := func(i int) []byte { return fmt.Appendf(nil, "long-shared-prefix-%07d-suffix", i) }
	const n = chunkEntries + 500 // the tail spans two index chunks
	type order struct {
		name string
		keys func(i int) []byte // key of the i-th insert
		// want: the tree's and tail's entry counts after the inserts
		check func(tree, tail int) bool
	}
	orders := []order{
		{"ascending", key, func(tree, tail int) bool { return tree == 0 && tail == n }},
		{"ascending long keys", long, func(tree, tail int) bool { return tree == 0 && tail == n }},
		{"descending", func(i int) []byte { return key(n - i) }, func(tree, tail int) bool { return tree == n-1 && tail == 1 }},
		// Every 100th insert rewrites a recent key: a new version
		// inside the tail's range spills it into the tree.
		{"ascending with rewrites", func(i int) []byte {
			if i%100 == 99 {
				return key(i - 5)
			}
			return key(i)
		}, func(tree, tail int) bool { return tree > 0 && tail > 0 && tail < 100 }},
		// Two ascending streams, one above the other: the upper one
		// stays in the tail, the lower one goes to the tree.
		{"two streams", func(i int) []byte {
			if i%2 == 0 {
				return key(i)
			}
			return key(10*n + i)
		}, func(tree, tail int) bool { return tree == n/2+1 && tail == n/2-1 }}, // the first upper key spills with key(0)
		{"random", func(i int) []byte { return key(i * 7919 % n) }, func(tree, tail int) bool { return tree > n-100 }},
	}
	for _, o := range orders {
		t.Run(o.name, func(t *testing.T) {
			b0, c0 := manual.Allocated()
			a0 := ArenaBytes()
			rng := rand.New(rand.NewSource(1))
			pool := NewPool(8<<20, -1)
			m := NewPooled(1, pool)
			ref := make([]format.Row, 0, n)
			for i := range n {
				r := format.Row{Key: o.keys(i), Seq: uint64(i + 1), Value: fmt.Appendf(nil, "v%d", i)}
				if i%17 == 0 {
					r.Flags, r.TS, r.ExpireTS = format.FlagHasTS|format.FlagHasExpire, int64(i), int64(i+1000)
				}
				m.Add(&r)
				ref = append(ref, r)
			}
			if tree, tail := indexShape(m); !o.check(tree, tail) {
				t.Fatalf("%d entries in the tree, %d in the tail", tree, tail)
			}
			probes := [][]byte{{}, key(0), key(n / 2), key(n), key(20 * n), long(3), []byte("long-shared-prefix-"), []byte("z")}
			for range 50 {
				probes = append(probes, key(rng.Intn(2*n)))
			}
			checkReference(t, m, ref, rng, probes)
			m.Freeze()
			checkReference(t, m, ref, rng, probes)
			m.Unref()
			pool.Close()
			if b, c := manual.Allocated(); b != b0 || c != c0 || ArenaBytes() != a0 {
				t.Fatalf("after the last Unref and Close: %d bytes in %d buffers, %d arena bytes", b-b0, c-c0, ArenaBytes()-a0)
			}
		})
	}
}

// TestIteratorsAcrossSpill positions iterators inside the tail, then
// inserts a row that spills the tail into the tree: iterators created
// before the spill go on from where they were (seeing the new row when
// they reach it), and ones created after see the same rows.
func TestIteratorsAcrossSpill(t *testing.T) {
	key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
	m := New(1)
	defer m.Unref()
	for i := 0; i < 1000; i += 2 {
		m.Add(&format.Row{Key: key(i), Seq: uint64(i + 1)})
	}
	fwd, bwd := m.NewIter(), m.NewIter()
	defer fwd.Close()
	defer bwd.Close()
	if !fwd.SeekGE(key(400)) || !bwd.SeekLT(key(600)) {
		t.Fatal("seeks found nothing")
	}
	m.Add(&format.Row{Key: key(501), Seq: 5000}) // inside the tail's range
	if tree, tail := indexShape(m); tree != 501 || tail != 0 {
		t.Fatalf("after the spill: %d entries in the tree, %d in the tail", tree, tail)
	}
	m.Add(&format.Row{Key: key(2000), Seq: 5001}) // a new tail
	want := func(from, to, step int) []string {
		var out []string
		for i := from; i != to; i += step {
			if i%2 == 0 && i < 1000 || i == 501 || i == 2000 {
				out = append(out, string(key(i)))
			}
		}
		return out
	}
	walk := func(it format.Iterator, ok bool, next func() bool) []string {
		var out []string
		for ; ok; ok = next() {
			out = append(out, string(it.Row().Key))
		}
		return out
	}
	if got, w := walk(fwd, true, fwd.Next), want(400, 2001, 1); !slices.Equal(got, w) {
		t.Fatalf("forward from before the spill: %v, want %v", got, w)
	}
	if got, w := walk(bwd, true, bwd.Prev), want(598, -1, -1); !slices.Equal(got, w) {
		t.Fatalf("backward from before the spill: %v, want %v", got, w)
	}
	after := m.NewIter()
	defer after.Close()
	if got, w := walk(after, after.First(), after.Next), want(0, 2001, 1); !slices.Equal(got, w) {
		t.Fatalf("new iterator: %v, want %v", got, w)
	}
	if got, w := walk(after, after.SeekLT(key(3000)), after.Prev), want(2000, -1, -1); !slices.Equal(got, w) {
		t.Fatalf("new iterator backward: %v, want %v", got, w)
	}
	for _, i := range []int{0, 400, 501, 998, 2000} {
		if r, ok := m.Get(key(i), format.MaxSeq); !ok || !bytes.Equal(r.Key, key(i)) {
			t.Fatalf("Get(%s) = %q, %v", key(i), r.Key, ok)
		}
	}
}

// TestConcurrentReadersWithTail runs readers (walks in both directions,
// Gets of rows already written) while one writer inserts mostly ascending
// keys with rewrites of earlier ones, so the tail grows and spills under
// the readers. Run with -race.
func TestConcurrentReadersWithTail(t *testing.T) {
	key := func(i int) []byte { return fmt.Appendf(nil, "k%06d", i) }
	const n = 6000
	m := New(1)
	defer m.Unref()
	var written atomic.Int64 // rows 0..written-1 of the ascending stream are in
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			m.Add(&format.Row{Key: key(i), Seq: uint64(2*i + 1), Value: key(i)})
			if i%50 == 49 {
				m.Add(&format.Row{Key: key(i / 3), Seq: uint64(2*i + 2), Value: key(i / 3)})
			}
			written.Store(int64(i + 1))
		}
	}()
	errs := make(chan error, 4)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(r)))
			for written.Load() < n {
				it := m.NewIter()
				var prev []byte
				ok, next := it.First(), it.Next
				if r%2 == 1 {
					ok, next = it.Last(), it.Prev
				}
				for ; ok; ok = next() {
					k := it.Row().Key
					if c := bytes.Compare(prev, k); prev != nil && (r%2 == 0 && c > 0 || r%2 == 1 && c < 0) {
						errs <- fmt.Errorf("reader %d: %s after %s", r, k, prev)
						it.Close()
						return
					}
					prev = k
				}
				it.Close()
				if w := written.Load(); w > 0 {
					i := rng.Intn(int(w))
					if row, ok := m.Get(key(i), format.MaxSeq); !ok || !bytes.Equal(row.Value, key(i)) {
						errs <- fmt.Errorf("reader %d: Get(%s) = %q, %v", r, key(i), row.Value, ok)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m.Len() != n+n/50 {
		t.Fatalf("Len %d, want %d", m.Len(), n+n/50)
	}
}
