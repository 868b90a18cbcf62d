package sstable

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

// TestFilterChunkBoundaryGolden pins the bytes of filter blocks whose key
// counts straddle the builder's chunk boundaries (TestBlockedFilterGolden's
// keys fit in one chunk), with repeated keys (versions) that must count
// once. The digests were taken from the builder that kept its hashes in a
// single slice, before it kept them in chunks: the on-disk filter must not
// depend on the builder's memory layout.
func TestFilterChunkBoundaryGolden(t *testing.T) {
	if filterChunkHashes != 4096 {
		t.Fatalf("the counts below straddle chunks of 4096 hashes; filterChunkHashes is %d", filterChunkHashes)
	}
	for _, c := range []struct {
		n, bitsPerKey int
		want          string
	}{
		{0, 10, "f1b029189ce37f3931d748d10d61bd895ca8ae10236a0c614a6ad9ea9ce4509d"},
		{1, 10, "d8011dbee7ca8e517c26c4369849197604aa067f890d51241d533d09a7f2fb17"},
		{4095, 10, "5e45e4134665f7de1b52a6c1bf47ad308a9546784c5b9202529af5328328c719"},
		{4096, 10, "b4aed49636f60e0174b34ad51f4bced397dd4b827469522675e0938384475ed5"},
		{4097, 10, "bfba5cfbbb99ccb2f1132173e05d29a5535828d128f44ec8a6733bff928bfa20"},
		{3*4096 + 17, 7, "9b4df788e8e8811b3fe28e33579d4f23084928e1306cad98cd6f4372642c8ace"},
	} {
		fw := newFilterWriter(c.bitsPerKey)
		for i := range c.n {
			k := fmt.Appendf(nil, "user/%010d", i*7919)
			fw.add(k)
			if i%5 == 0 {
				fw.add(k) // another version of the same key
			}
		}
		b, err := fw.build()
		fw.release()
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != c.want {
			t.Errorf("%d keys at %d bits: filter digest %s, want %s", c.n, c.bitsPerKey, got, c.want)
		}
	}
}
