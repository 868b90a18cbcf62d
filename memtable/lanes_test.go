package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// forwardWalk returns the rows First and Next visit, and how many of them
// lanes gathered.
func forwardWalk(m *Memtable, cap int) (rows []format.Row, laned int) {
	it := m.NewIter().(*iterator)
	defer it.Close()
	it.laneCap = cap
	for ok := it.First(); ok; ok = it.Next() {
		r := *it.Row()
		r.Key = bytes.Clone(r.Key)
		rows = append(rows, r)
	}
	return rows, it.lanedNodes
}

// TestLanesGatherWhatTheWalkGathers: a frozen memtable walked from First
// visits the rows its serial walk visits (before the freeze), in the same
// order, in random, ascending and few-keys-many-versions order, and when
// stretches are longer than a lane takes (lowered caps end gatherings in
// mid-stretch); lanes gather nearly all the rows of the random memtables
// and nearly none of the ascending one, whose nodes lie in arena order.
func TestLanesGatherWhatTheWalkGathers(t *testing.T) {
	for _, shape := range []string{"random", "ascending", "versions", "one", "empty"} {
		m := New(1)
		rng := rand.New(rand.NewSource(7))
		n := map[string]int{"random": 20000, "ascending": 20000, "versions": 20000, "one": 1, "empty": 0}[shape]
		var key [16]byte
		for i := range n {
			id := uint64(rng.Int63n(1 << 40))
			switch shape {
			case "ascending":
				id = uint64(i)
			case "versions":
				id = uint64(rng.Intn(300))
			}
			m.Add(&format.Row{Key: benchKey(key[:], id), Seq: uint64(i + 1), Value: []byte{byte(i)}})
		}
		want, laned := forwardWalk(m, laneCap)
		if len(want) != n || laned != 0 {
			t.Fatalf("%s: the serial walk saw %d rows (want %d), lanes used %v", shape, len(want), n, laned)
		}
		m.Freeze()
		for _, cap := range []int{laneCap, 3, 1} {
			got, laned := forwardWalk(m, cap)
			if random := shape == "random" || shape == "versions"; random && laned < n*9/10 || !random && laned > n/20 {
				t.Errorf("%s, cap %d: lanes gathered %d of %d rows", shape, cap, laned, n)
			}
			if len(got) != len(want) {
				t.Fatalf("%s, cap %d: %d rows, want %d", shape, cap, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i].Key, want[i].Key) || got[i].Seq != want[i].Seq || !bytes.Equal(got[i].Value, want[i].Value) {
					t.Fatalf("%s, cap %d: row %d is %q@%d, want %q@%d", shape, cap, i, got[i].Key, got[i].Seq, want[i].Key, want[i].Seq)
				}
			}
		}
		m.Unref()
	}
}

// TestLanesLeaveOtherPositionings: on a frozen memtable, a walk that
// turned back (Prev) or started from a seek continues forward with the
// rows that follow, as the serial walk does.
func TestLanesLeaveOtherPositionings(t *testing.T) {
	m := New(1)
	defer m.Unref()
	var key [16]byte
	rng := rand.New(rand.NewSource(3))
	for i := range 5000 {
		m.Add(&format.Row{Key: benchKey(key[:], uint64(rng.Intn(2000))), Seq: uint64(i + 1)})
	}
	m.Freeze()
	all, _ := forwardWalk(m, laneCap)
	it := m.NewIter()
	defer it.Close()
	pos := 0
	check := func(step string, ok bool) {
		t.Helper()
		if !ok || !bytes.Equal(it.Row().Key, all[pos].Key) || it.Row().Seq != all[pos].Seq {
			t.Fatalf("%s: at %v %q@%d, want row %d %q@%d", step, ok, it.Row().Key, it.Row().Seq, pos, all[pos].Key, all[pos].Seq)
		}
	}
	check("First", it.First())
	for i := range 3000 {
		pos++
		check(fmt.Sprint("Next ", i), it.Next())
		if i%700 == 699 {
			pos--
			check("Prev", it.Prev())
		}
	}
	pos = 2500
	for bytes.Equal(all[pos-1].Key, all[pos].Key) { // SeekGE finds the key's newest version
		pos--
	}
	check("SeekGE", it.SeekGE(all[pos].Key))
	for range 1000 {
		pos++
		check("Next after SeekGE", it.Next())
	}
}
