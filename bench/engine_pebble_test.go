package bench

import (
	"context"
	"testing"
)

// pebble-bloom reads a 10-bit filter on every level whatever bits Open is
// given: its missing-key reads of a settled database skip tables by
// filter, where plain Pebble opened without filters has none to consult.
func TestPebbleBloomFilters(t *testing.T) {
	for _, c := range []struct {
		engine string
		hits   bool
	}{{"pebble", false}, {"pebble-bloom", true}} {
		t.Run(c.engine, func(t *testing.T) {
			e, err := NewEngine(c.engine)
			if err != nil {
				t.Fatal(err)
			}
			if e.Name() != c.engine {
				t.Fatalf("Name() = %q", e.Name())
			}
			if err := e.Open(t.TempDir(), 1<<20, 0); err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			kb := make([]byte, KeySize)
			for i := range uint64(2000) {
				if err := e.Put(PutKey(kb, i), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Settle(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i := range uint64(2000) {
				if _, found, err := e.Get(PutMissingKey(kb, i), nil); err != nil || found {
					t.Fatalf("missing key %d: found %v, %v", i, found, err)
				}
			}
			hits := e.(*pebbleEngine).db.Metrics().Filter.Hits
			if (hits > 0) != c.hits {
				t.Fatalf("filter hits %d after 2000 missing-key reads; want some: %v", hits, c.hits)
			}
		})
	}
}
