package memtable

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPositionNewest: Newest names the newest row of a key at any sequence
// number; its position stays current until a newer row of the key, or a row
// of a key between it and its predecessor, is linked; the zero Position and
// an absent key name nothing.
func TestPositionNewest(t *testing.T) {
	m := NewFiltered(1, nil, 1<<20)
	defer m.Unref()
	if _, _, ok := m.Newest([]byte("k")); ok {
		t.Fatal("Newest of a key never added")
	}
	if m.StillNewest(Position{}) {
		t.Fatal("the zero Position is current")
	}
	addRow(m, "a", 1)
	addRow(m, "k", 2)
	addRow(m, "k", 3)
	addRow(m, "z", 4)
	p, seq, ok := m.Newest([]byte("k"))
	if !ok || seq != 3 || !m.StillNewest(p) {
		t.Fatalf("Newest(k) = %v, %d, %v; current %v", p, seq, ok, m.StillNewest(p))
	}
	addRow(m, "z", 5) // after k: k's place is unchanged
	if !m.StillNewest(p) {
		t.Fatal("a row after the key made the position stale")
	}
	addRow(m, "k", 6)
	if m.StillNewest(p) {
		t.Fatal("position current after a newer row of its key")
	}
	if p, seq, ok = m.Newest([]byte("k")); !ok || seq != 6 || !m.StillNewest(p) {
		t.Fatalf("Newest(k) = %d, %v after the newer row", seq, ok)
	}
	addRow(m, "b", 7) // between a and k: k's predecessor changes
	if m.StillNewest(p) {
		t.Fatal("position current after a row linked before it")
	}
	if _, _, ok := m.Newest([]byte("j")); ok {
		t.Fatal("Newest of a key between others")
	}
}

// TestPositionConcurrent: while a writer links newer rows of a key and of
// the key before it, a position found current after a row of the key was
// published is at least as new as that row, and a position taken before a
// newer row of its key was published is stale once it is (run with -race).
func TestPositionConcurrent(t *testing.T) {
	m := NewFiltered(1, nil, 8<<20)
	defer m.Unref()
	const rows = 20000
	var published atomic.Uint64
	var stop atomic.Bool
	addRow(m, "k", 1)
	published.Store(1)
	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for seq := uint64(2); seq <= rows && !stop.Load(); seq++ {
			switch seq % 3 {
			case 0:
				addRow(m, "j", seq) // the key's predecessor changes
			default:
				addRow(m, "k", seq)
			}
			published.Store(seq)
		}
	}()
	var stale, current int
	var bad error
	p, seq, ok := m.Newest([]byte("k")) // k@1, before any other row
	close(start)
	for bad == nil && ok {
		// Of any three rows after seq, two are k's: once they are
		// published, p must be stale.
		for published.Load() < min(seq+3, rows) {
			runtime.Gosched()
		}
		if seq+3 <= rows {
			if m.StillNewest(p) {
				bad = fmt.Errorf("position of k@%d current after k@%d was published", seq, seq+2)
				break
			}
			stale++
		}
		if published.Load() >= rows {
			break
		}
		p, seq, ok = m.Newest([]byte("k"))
		for range 4 {
			pub := published.Load()
			if !m.StillNewest(p) {
				break
			}
			current++
			lastK := pub // the newest row of k published
			if pub%3 == 0 {
				lastK--
			}
			if seq < lastK {
				bad = fmt.Errorf("position of k@%d current after k@%d was published", seq, lastK)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if !ok {
		t.Fatal("Newest found no row of k")
	}
	if bad != nil {
		t.Fatal(bad)
	}
	t.Logf("%d checks current, %d positions stale after a newer row", current, stale)
}
