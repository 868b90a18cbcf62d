package memtable

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
)

// readAll records everything a reader can observe of m for a fixed stream
// of queries (seeded by seed): a forward and a backward walk, and Get,
// SeekGE and SeekLT of random keys followed by a few steps, as one string
// per observation.
func readAll(m *Memtable, seed int64, queries int) []string {
	var out []string
	show := func(what string, ok bool, r *format.Row) {
		if !ok {
			out = append(out, what+": none")
			return
		}
		out = append(out, fmt.Sprintf("%s: %q@%d f%d ts%d ex%d v%d:%08x nil=%v", what, r.Key, r.Seq, r.Flags, r.TS, r.ExpireTS,
			len(r.Value), crc32.ChecksumIEEE(r.Value), r.Value == nil))
	}
	it := m.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		show("fwd", true, it.Row())
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		show("bwd", true, it.Row())
	}
	rng := rand.New(rand.NewSource(seed))
	for range queries {
		k := trickyKey(rng)
		r, ok := m.Get(k, uint64(rng.Intn(3200)))
		show("get", ok, &r)
		ok = it.SeekGE(k)
		for i := 0; i < 3 && ok; i++ {
			show("ge", ok, it.Row())
			ok = it.Next()
		}
		ok = it.SeekLT(k)
		for i := 0; i < 3 && ok; i++ {
			show("lt", ok, it.Row())
			ok = it.Prev()
		}
	}
	return out
}

// fillRandom adds rows random rows (randomRow: tricky keys, several
// versions, tombstones, TTLs, oversized values) to m and returns them.
func fillRandom(m *Memtable, rng *rand.Rand, rows int) []format.Row {
	ref := make([]format.Row, 0, rows)
	for seq := uint64(1); seq <= uint64(rows); seq++ {
		r := randomRow(rng, seq)
		m.Add(&r)
		ref = append(ref, r)
	}
	return ref
}

// TestFrozenReadsMatchTree fills two memtables with the same random rows,
// freezes one, and checks that every walk, Get and seek returns exactly
// what the other (not frozen) returns, and what it returned itself before the
// freeze; the frozen walk is also checked against a sorted reference.
func TestFrozenReadsMatchTree(t *testing.T) {
	for _, seed := range []int64{1, 2} {
		pool := NewPool(8<<20, -1)
		frozen, tree := NewPooled(1, pool), New(2)
		ref := fillRandom(frozen, rand.New(rand.NewSource(seed)), 3000)
		fillRandom(tree, rand.New(rand.NewSource(seed)), 3000)
		before := readAll(frozen, seed, 800)
		frozen.Freeze()
		if !frozen.Frozen() || tree.Frozen() {
			t.Fatalf("seed %d: after Freeze Frozen() = %v, the other's %v", seed, frozen.Frozen(), tree.Frozen())
		}
		after, want := readAll(frozen, seed, 800), readAll(tree, seed, 800)
		if len(after) < 2*len(ref) {
			t.Fatalf("seed %d: only %d observations", seed, len(after))
		}
		for i := range want {
			if before[i] != want[i] || after[i] != want[i] {
				t.Fatalf("seed %d, observation %d:\n tree   %s\n before %s\n frozen %s", seed, i, want[i], before[i], after[i])
			}
		}
		slices.SortFunc(ref, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
		it := frozen.NewIter()
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			if !bytes.Equal(it.Row().Key, ref[i].Key) || it.Row().Seq != ref[i].Seq {
				t.Fatalf("seed %d: frozen row %d is %q@%d, want %q@%d", seed, i, it.Row().Key, it.Row().Seq, ref[i].Key, ref[i].Seq)
			}
			i++
		}
		it.Close()
		if i != len(ref) {
			t.Fatalf("seed %d: frozen walk saw %d rows, want %d", seed, i, len(ref))
		}
		frozen.Unref()
		tree.Unref()
		pool.Close()
	}
}

// TestIteratorsAcrossFreeze: iterators positioned before the freeze, in
// both directions, continue after it with the rows that follow.
func TestIteratorsAcrossFreeze(t *testing.T) {
	m := New(1)
	defer m.Unref()
	ref := fillRandom(m, rand.New(rand.NewSource(9)), 2000)
	slices.SortFunc(ref, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
	fwd, bwd := m.NewIter(), m.NewIter()
	defer fwd.Close()
	defer bwd.Close()
	ok1, ok2 := fwd.First(), bwd.Last()
	const half = 1000 + iterChunk/2 // mid-buffer
	for range half {
		ok1, ok2 = fwd.Next(), bwd.Prev()
	}
	if !ok1 || !ok2 {
		t.Fatal("iterators ended early")
	}
	m.Freeze()
	for i := half + 1; i < len(ref); i++ {
		if !fwd.Next() || !sameRow(fwd.Row(), &ref[i]) {
			t.Fatalf("forward row %d after the freeze: %q@%d, want %q@%d", i, fwd.Row().Key, fwd.Row().Seq, ref[i].Key, ref[i].Seq)
		}
		j := len(ref) - 1 - i
		if !bwd.Prev() || !sameRow(bwd.Row(), &ref[j]) {
			t.Fatalf("backward row %d after the freeze: %q@%d, want %q@%d", j, bwd.Row().Key, bwd.Row().Seq, ref[j].Key, ref[j].Seq)
		}
	}
	if fwd.Next() || bwd.Prev() {
		t.Fatal("iterators went past the ends")
	}
}

// TestConcurrentReadersDuringFreeze runs Gets and full iterations from
// several goroutines while memtables are frozen under them (run with
// -race): every read sees every row, in order, with its value.
func TestConcurrentReadersDuringFreeze(t *testing.T) {
	const n = 4000
	key := func(i int) []byte { return fmt.Appendf(nil, "a-long-shared-prefix-%06d", i) }
	pool := NewPool(1<<20, -1)
	defer pool.Close()
	for round := range 4 {
		m := NewPooled(1, pool)
		for i := range n {
			m.Add(&format.Row{Key: key(i), Seq: uint64(i + 1), Value: key(i)})
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				rng := rand.New(rand.NewSource(int64(g)))
				for range 3 {
					if g%2 == 0 {
						it := m.NewIter()
						i := 0
						for ok := it.First(); ok; ok = it.Next() {
							if !bytes.Equal(it.Row().Key, key(i)) || !bytes.Equal(it.Row().Value, key(i)) {
								t.Errorf("round %d: row %d is %q", round, i, it.Row().Key)
								return
							}
							i++
						}
						it.Close()
						if i != n {
							t.Errorf("round %d: iteration saw %d rows, want %d", round, i, n)
							return
						}
						continue
					}
					for range 500 {
						i := rng.Intn(n)
						if r, ok := m.Get(key(i), format.MaxSeq); !ok || !bytes.Equal(r.Value, key(i)) {
							t.Errorf("round %d: Get(%s) = %q, %v", round, key(i), r.Value, ok)
							return
						}
					}
				}
			}()
		}
		close(start)
		runtime.Gosched()
		m.Freeze()
		m.Freeze() // a second call does nothing
		wg.Wait()
		if !m.Frozen() {
			t.Fatal("not frozen")
		}
		m.Unref()
	}
}

// TestFreezeMemoryAndWrites: a freeze maps nothing and keeps the rows
// where they are; writes to a frozen memtable panic and change nothing;
// the arena stays readable while a reader holds a reference and is freed
// at the last Unref, after which Get and Freeze panic.
func TestFreezeMemoryAndWrites(t *testing.T) {
	b0, n0 := manual.Allocated()
	a0 := ArenaBytes()
	pool := NewPool(8<<20, -1)
	m := NewPooled(1, pool)
	for i := range 5000 {
		m.Add(&format.Row{Key: fmt.Appendf(nil, "k%08d", i*7919%100000), Seq: uint64(i + 1), Value: []byte("v")})
	}
	arena, size := ArenaBytes(), m.Size()
	m.Freeze()
	if ArenaBytes() != arena || m.Size() != size || m.MemoryBytes() != size || !m.Frozen() {
		t.Fatalf("the freeze changed memory: arena %d -> %d, Size %d -> %d, MemoryBytes %d", arena, ArenaBytes(), size, m.Size(), m.MemoryBytes())
	}
	mustPanic(t, "Add to a frozen memtable", func() { m.Add(&format.Row{Key: []byte("x"), Seq: 9999}) })
	mustPanic(t, "ApplyBatch to a frozen memtable", func() { _ = m.ApplyBatch(batchOf(9999, "x", "y")) })
	mustPanic(t, "ApplyBatches to a frozen memtable", func() { _, _ = m.ApplyBatches([][]byte{batchOf(9999, "x", "y")}) })
	if _, ok := m.Get([]byte("x"), format.MaxSeq); ok || m.Len() != 5000 || m.Size() != size {
		t.Fatalf("a refused write changed the memtable: Len %d", m.Len())
	}
	m.Ref() // a reader's reference
	m.Unref()
	if r, ok := m.Get(fmt.Appendf(nil, "k%08d", 7919), format.MaxSeq); !ok || r.Seq != 2 {
		t.Fatalf("frozen Get while a reader holds a reference = %v, %v", r.Seq, ok)
	}
	m.Unref() // the last reference: its chunks go to the pool
	if st := pool.Stats(); uint64(st.Pooled) != st.Fresh || st.Pooled == 0 {
		t.Fatalf("pool after the frozen memtable's release: %+v, want every chunk pooled", st)
	}
	mustPanic(t, "Get after release", func() { m.Get([]byte("k"), format.MaxSeq) })
	mustPanic(t, "Freeze after release", m.Freeze)

	empty := NewPooled(3, pool)
	empty.Freeze()
	if it := empty.NewIter(); it.First() || it.Last() || it.SeekGE([]byte("a")) || it.SeekLT([]byte("z")) {
		t.Fatal("an empty frozen memtable has rows")
	}
	empty.Unref()
	pool.Close()
	if b, n := manual.Allocated(); b != b0 || n != n0 || ArenaBytes() != a0 {
		t.Fatalf("after the last Unref and Close: %d bytes in %d buffers allocated, %d arena bytes", b-b0, n-n0, ArenaBytes()-a0)
	}
}
