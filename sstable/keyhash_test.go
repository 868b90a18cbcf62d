package sstable

import (
	"fmt"
	"testing"
)

// TestProbeLoadedFilter checks that ProbeLoadedFilter never loads a filter,
// agrees with MayContain once it is loaded (present keys always maybe,
// most absent ones not), and treats a table without a filter as maybe.
func TestProbeLoadedFilter(t *testing.T) {
	rows := genRows(2000, 3)
	data, _ := buildTable(t, rows, WriterOptions{BloomBitsPerKey: 10})
	r := openTable(t, data, nil)
	k := rows[0].Key
	if _, loaded := r.ProbeLoadedFilter(k, HashKey(k)); loaded {
		t.Fatal("ProbeLoadedFilter reports a filter loaded before any MayContain")
	}
	if r.meta.filter.Load() != nil {
		t.Fatal("ProbeLoadedFilter loaded the filter")
	}
	mayContain(t, r, k) // loads it
	for i := range rows {
		k := rows[i].Key
		may, loaded := r.ProbeLoadedFilter(k, HashKey(k))
		if !loaded || !may {
			t.Fatalf("present key %q: may %v, loaded %v", k, may, loaded)
		}
	}
	negatives := 0
	for i := range 2000 {
		k := fmt.Appendf(nil, "absent%06d", i)
		may, _ := r.ProbeLoadedFilter(k, HashKey(k))
		if may != mayContain(t, r, k) {
			t.Fatalf("absent key %q: ProbeLoadedFilter says %v, MayContain the opposite", k, may)
		}
		if !may {
			negatives++
		}
	}
	if negatives < 1900 {
		t.Fatalf("filter ruled out %d of 2000 absent keys, want about 99%%", negatives)
	}

	data, _ = buildTable(t, rows, WriterOptions{})
	r = openTable(t, data, nil)
	if may, loaded := r.ProbeLoadedFilter(k, HashKey(k)); !may || !loaded {
		t.Fatalf("table without a filter: may %v, loaded %v; want true, true", may, loaded)
	}
}
