package memtable

import (
	"errors"
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

// TestPositionConcurrent: a position found current after a row was
// published is at least as new as that row, while a writer links newer
// rows of the key and of its neighbours (run with -race).
func TestPositionConcurrent(t *testing.T) {
	m := NewFiltered(1, nil, 8<<20)
	defer m.Unref()
	const rows = 20000
	var published, reads atomic.Uint64
	var stop atomic.Bool
	addRow(m, "k", 1)
	published.Store(1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for seq := uint64(2); seq <= rows && !stop.Load(); seq++ {
			switch seq % 3 {
			case 0:
				addRow(m, "j", seq) // the key's predecessor changes
			default:
				addRow(m, "k", seq)
			}
			published.Store(seq)
			// Keep pace with the reader, so that its checks fall
			// between the inserts however the two are scheduled.
			for reads.Load() < seq/4 && !stop.Load() {
				runtime.Gosched()
			}
		}
	}()
	var stale, current int
	var bad error
	for bad == nil && published.Load() < rows {
		reads.Add(1)
		p, seq, ok := m.Newest([]byte("k"))
		if !ok {
			bad = errors.New("Newest found no row of k")
		}
		for range 8 {
			pub := published.Load()
			if bad != nil || !m.StillNewest(p) {
				stale++
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
	if bad != nil {
		t.Fatal(bad)
	}
	if stale == 0 {
		t.Fatal("no position went stale: the check cannot fail here")
	}
	t.Logf("%d checks current, %d stale", current, stale)
}
