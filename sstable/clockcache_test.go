package sstable

import (
	"sync"
	"testing"
)

// testClock is a clockIndex whose evictions are recorded.
type testClock struct {
	*clockIndex
	mu      sync.Mutex
	evicted map[*cachedBlock]int64
}

func newTestClock(capacity int64) *testClock {
	tc := &testClock{evicted: map[*cachedBlock]int64{}}
	tc.clockIndex = newClockIndex(capacity, func(cb *cachedBlock, w int64) {
		tc.mu.Lock()
		tc.evicted[cb] += w
		tc.mu.Unlock()
	})
	return tc
}

func testBlock() *cachedBlock {
	cb := &cachedBlock{}
	cb.refs.Store(1)
	return cb
}

func (tc *testClock) weight() int64 {
	var w int64
	for i := range tc.shards {
		w += tc.shards[i].weight
	}
	return w
}

func TestClockIndexBudgetAndSecondChance(t *testing.T) {
	x := newTestClock(4 * 100) // one shard, four entries of 100
	if len(x.shards) != 1 {
		t.Fatalf("%d shards for a 400-byte budget", len(x.shards))
	}
	blocks := make([]*cachedBlock, 6)
	for i := range blocks {
		blocks[i] = testBlock()
	}
	for i := range 4 {
		if !x.add(cacheKey{id: 1, off: uint64(i)}, blocks[i], 100) {
			t.Fatalf("add %d refused", i)
		}
	}
	if len(x.evicted) != 0 || x.weight() != 400 {
		t.Fatalf("evicted %d, weight %d before the budget was exceeded", len(x.evicted), x.weight())
	}
	// Hit key 0: the next insert must evict key 1, the first unreferenced.
	if cb, ok := x.get(cacheKey{id: 1, off: 0}); !ok || cb != blocks[0] {
		t.Fatal("miss on key 0")
	}
	blocks[0].unref()
	if !x.add(cacheKey{id: 1, off: 4}, blocks[4], 100) {
		t.Fatal("add 4 refused")
	}
	if _, ok := x.evicted[blocks[1]]; !ok || len(x.evicted) != 1 {
		t.Fatalf("evicted %v, want only key 1's block", x.evicted)
	}
	if _, ok := x.get(cacheKey{id: 1, off: 1}); ok {
		t.Fatal("key 1 still cached after its eviction")
	}
	// The newest entry (key 4, in key 1's slot) is not the next victim:
	// the hand moved past it, so key 2 goes next.
	if !x.add(cacheKey{id: 1, off: 5}, blocks[5], 100) {
		t.Fatal("add 5 refused")
	}
	if _, ok := x.evicted[blocks[2]]; !ok || len(x.evicted) != 2 {
		t.Fatalf("evicted %v, want key 1's and key 2's blocks", x.evicted)
	}
	if x.weight() != 400 {
		t.Fatalf("weight %d, want 400", x.weight())
	}
	// Present key: refused, nothing changes.
	if x.add(cacheKey{id: 1, off: 5}, testBlock(), 100) {
		t.Fatal("add of a present key accepted")
	}
	// Larger than the budget: refused without evicting anything.
	n := len(x.evicted)
	if x.add(cacheKey{id: 2}, testBlock(), 401) {
		t.Fatal("add of an entry above the budget accepted")
	}
	if len(x.evicted) != n {
		t.Fatal("a refused add evicted entries")
	}
	// One entry worth three: evicts until it fits.
	if !x.add(cacheKey{id: 3}, testBlock(), 300) || x.weight() > 400 {
		t.Fatalf("weight %d after a 300-byte add", x.weight())
	}
}

func TestClockIndexRemoveAndClear(t *testing.T) {
	x := newTestClock(64 << 20)
	if len(x.shards) != maxClockShards {
		t.Fatalf("%d shards for 64 MiB", len(x.shards))
	}
	const n = 1000
	for i := range n {
		if !x.add(cacheKey{id: uint64(i % 7), off: uint64(i) * 4096}, testBlock(), 4096) {
			t.Fatalf("add %d refused", i)
		}
	}
	if got := len(x.keys()); got != n || x.weight() != n*4096 {
		t.Fatalf("%d keys, weight %d", got, x.weight())
	}
	k := cacheKey{id: 3, off: 3 * 4096}
	x.remove(k)
	x.remove(k) // absent: no-op
	if _, ok := x.get(k); ok || len(x.evicted) != 1 {
		t.Fatalf("after remove: found %v, %d evicted", ok, len(x.evicted))
	}
	x.clear()
	if len(x.keys()) != 0 || x.weight() != 0 || len(x.evicted) != n {
		t.Fatalf("after clear: %d keys, weight %d, %d evicted", len(x.keys()), x.weight(), len(x.evicted))
	}
	for _, w := range x.evicted {
		if w != 4096 {
			t.Fatalf("block evicted with total weight %d", w)
		}
	}
}

// TestClockIndexConcurrent adds, gets and removes from several goroutines
// (run with -race): every block leaves the index exactly once, and the
// budget holds at the end.
func TestClockIndexConcurrent(t *testing.T) {
	const capacity = 2 << 20
	x := newTestClock(capacity)
	var wg sync.WaitGroup
	var mu sync.Mutex
	added := map[*cachedBlock]bool{}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				k := cacheKey{id: uint64(g), off: uint64(i%900) * 4096}
				if cb, ok := x.get(k); ok {
					cb.unref()
					continue
				}
				cb := testBlock()
				if x.add(k, cb, 4096) {
					mu.Lock()
					added[cb] = true
					mu.Unlock()
				}
				if i%97 == 0 {
					x.remove(k)
				}
			}
		}()
	}
	wg.Wait()
	if w := x.weight(); w > capacity {
		t.Fatalf("weight %d above the budget %d", w, capacity)
	}
	x.clear()
	if len(x.evicted) != len(added) {
		t.Fatalf("%d blocks left the index, %d were added", len(x.evicted), len(added))
	}
	for cb, w := range x.evicted {
		if !added[cb] || w != 4096 {
			t.Fatalf("block left with weight %d (added %v)", w, added[cb])
		}
	}
}

// TestClockIndexTableModel drives one shard's open-addressed table through
// random adds and removes of keys drawn from a small range (so runs of
// probes form and are cut by deletions), checking after every step that
// each key is found exactly when a map model holds it, and that the table
// never fills beyond half.
func TestClockIndexTableModel(t *testing.T) {
	x := newTestClock(1 << 40)
	if len(x.shards) != maxClockShards {
		t.Fatalf("%d shards", len(x.shards))
	}
	model := map[cacheKey]*cachedBlock{}
	rng := uint64(7)
	next := func(n uint64) uint64 {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return rng % n
	}
	const keys = 600
	for step := range 20000 {
		k := cacheKey{id: next(3), off: next(keys/3) * 4096}
		if _, ok := model[k]; ok && next(2) == 0 {
			x.remove(k)
			delete(model, k)
		} else {
			cb := testBlock()
			added := x.add(k, cb, 1)
			if added == ok {
				t.Fatalf("step %d: add of %v returned %v with the key present %v", step, k, added, ok)
			}
			if added {
				model[k] = cb
			}
		}
		if step%97 == 0 || step > 19900 {
			for off := uint64(0); off < keys/3; off++ {
				for id := range uint64(3) {
					q := cacheKey{id: id, off: off * 4096}
					cb, ok := x.get(q)
					if want, in := model[q]; ok != in || ok && cb != want {
						t.Fatalf("step %d: get %v = %p %v, model %p %v", step, q, cb, ok, want, in)
					}
					if ok {
						cb.unref()
					}
				}
			}
		}
	}
	if got := len(x.keys()); got != len(model) {
		t.Fatalf("%d keys in the index, %d in the model", got, len(model))
	}
	for i := range x.shards {
		s := &x.shards[i]
		if 2*s.live > len(s.table) {
			t.Fatalf("shard %d: %d entries in a table of %d", i, s.live, len(s.table))
		}
	}
	x.clear()
	if len(x.keys()) != 0 || x.weight() != 0 {
		t.Fatal("entries left after clear")
	}
}
