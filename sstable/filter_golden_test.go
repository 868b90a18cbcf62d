package sstable

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"os"
	"testing"
)

// updateFilterGolden rewrites testdata/blocked-filter-golden.bin from the
// current filter builder. The committed file was written by the builder
// that kept every key until build (commit 522c224); a blocked filter's bits
// are part of the on-disk format, so no later builder may change them.
var updateFilterGolden = flag.Bool("update-filter-golden", false, "rewrite testdata/blocked-filter-golden.bin")

const filterGoldenFile = "testdata/blocked-filter-golden.bin"

// goldenFilterKeys returns a fixed key sequence of lengths 0 to 40, with
// runs of a repeated key (versions, which count once) and a key that comes
// back after others (which counts again).
func goldenFilterKeys() [][]byte {
	rng := rand.New(rand.NewPCG(7, 11))
	var keys [][]byte
	for i := range 3000 {
		k := make([]byte, rng.IntN(41))
		for j := range k {
			k[j] = byte(rng.Uint32())
		}
		if i%3 == 0 && len(k) > 4 {
			copy(k, "key/")
		}
		keys = append(keys, k)
		for range rng.IntN(3) { // 0-2 more versions of the same key
			keys = append(keys, bytes.Clone(k))
		}
		if i%500 == 0 {
			keys = append(keys, bytes.Clone(keys[0]))
		}
	}
	return keys
}

// goldenFilters builds filters of the golden keys (all of them, none, and
// the first 7) at several bits per key, each prefixed by its u32 length.
func goldenFilters(t *testing.T) []byte {
	t.Helper()
	keys := goldenFilterKeys()
	var out []byte
	for _, c := range []struct{ n, bitsPerKey int }{
		{len(keys), 10}, {len(keys), 3}, {len(keys), 23}, {0, 10}, {7, 10},
	} {
		fw := newFilterWriter(c.bitsPerKey)
		for _, k := range keys[:c.n] {
			fw.add(k)
		}
		b, err := fw.build()
		fw.release()
		if err != nil {
			t.Fatal(err)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// TestBlockedFilterGolden checks that the builder writes, for a fixed key
// sequence, exactly the filter bytes the original builder wrote.
func TestBlockedFilterGolden(t *testing.T) {
	got := goldenFilters(t)
	if *updateFilterGolden {
		if err := os.WriteFile(filterGoldenFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filterGoldenFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("filter bytes differ from %s at offset %d (got %d bytes, want %d)", filterGoldenFile, i, len(got), len(want))
	}
	// A reused (pooled) builder must give the same bytes.
	if again := goldenFilters(t); !bytes.Equal(again, want) {
		t.Fatal("a second build from pooled builders differs")
	}
}
