package memtable

import (
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// TestVersionsMatchesGet: Versions yields, newest first, exactly the rows
// repeated Get calls find below each other, for short keys and keys
// longer than the inline part, stops when fn says so, and yields nothing
// for a key with no visible row; in a memtable taking writes and in a
// frozen one.
func TestVersionsMatchesGet(t *testing.T) {
	m := New(1)
	defer m.Unref()
	keys := []string{"a", "ab", "b", "k-longer-than-sixteen-bytes-1", "k-longer-than-sixteen-bytes-2"}
	seq := uint64(1)
	for round := range 5 {
		for _, k := range keys {
			if err := m.ApplyBatch(batchOf(seq, k, fmt.Sprintf("%s@%d", k, round))); err != nil {
				t.Fatal(err)
			}
			seq++
		}
	}
	check := func(state string) {
		for _, k := range keys {
			for _, at := range []uint64{0, 3, 12, 17, seq} {
				var want []string
				for s := at; ; {
					r, ok := m.Get([]byte(k), s)
					if !ok {
						break
					}
					want = append(want, fmt.Sprintf("%d:%s", r.Seq, r.Value))
					if r.Seq == 0 {
						break
					}
					s = r.Seq - 1
				}
				var got []string
				m.Versions([]byte(k), at, func(r format.Row) bool {
					if string(r.Key) != k {
						t.Fatalf("Versions(%s) yields key %q", k, r.Key)
					}
					got = append(got, fmt.Sprintf("%d:%s", r.Seq, r.Value))
					return true
				})
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: Versions(%s, %d) = %v, want %v", state, k, at, got, want)
				}
			}
		}
	}
	check("active")
	m.Freeze()
	check("frozen")
	n := 0
	m.Versions([]byte("a"), seq, func(format.Row) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatalf("Versions went on after fn returned false: %d calls", n)
	}
}
