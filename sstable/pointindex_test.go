package sstable

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// TestPointIndexSeek checks the point index against a linear search of the
// stored index block, for keys below, inside and above the table, keys that
// are prefixes or extensions of stored keys, and every sequence number
// boundary, on tables whose keys share long prefixes (heads tie) or none.
func TestPointIndexSeek(t *testing.T) {
	// "split" gives the first half of the keys one long prefix and the
	// second half another: the common prefix is empty and hundreds of
	// separators in a row tie on their heads, across many top samples.
	for _, prefix := range []string{"", "tenant/0042/session/", "\xff\xff\xff\xff\xff\xff\xff\xff\xff", "split"} {
		t.Run(fmt.Sprintf("prefix%d", len(prefix)), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(prefix)), 9))
			var rows []format.Row
			for i := range 3000 {
				p := prefix
				if prefix == "split" {
					p = "a-shared-long-prefix/"
					if i >= 1500 {
						p = "b-shared-long-prefix/"
					}
				}
				key := fmt.Appendf(nil, "%s%06d", p, 3*i)
				if i%7 == 0 {
					key = append(key, "\x00tail"...) // a key whose head ties its neighbour's
				}
				for v := range 1 + rng.IntN(3) {
					rows = append(rows, format.Row{Key: key, Seq: uint64(100 - v), Value: []byte("v")})
				}
			}
			data, _ := buildTable(t, rows, WriterOptions{BlockSize: 256})
			r := openTable(t, data, nil)
			var seps [][]byte
			it := rawIndexIter(t, r)
			px := mustIndex(t, r)
			for ok := it.first(); ok; ok = it.next() {
				seps = append(seps, append([]byte(nil), it.key...))
			}
			if len(seps) < 50 || px.len() != len(seps) {
				t.Fatalf("%d separators, point index has %d", len(seps), px.len())
			}
			probe := func(ukey []byte, seq uint64) {
				ikey := format.SeekKey(nil, ukey, seq)
				want := len(seps)
				for i, s := range seps {
					if format.CompareInternal(s, ikey) >= 0 {
						want = i
						break
					}
				}
				if got := px.seek(ikey); got != want {
					t.Fatalf("seek(%q, %d) = %d, want %d", ukey, seq, got, want)
				}
			}
			for _, s := range seps {
				uk, seq, _, _ := format.SplitInternalKey(s)
				for _, q := range []uint64{0, seq - 1, seq, seq + 1, format.MaxSeq} {
					probe(uk, q)
				}
				probe(uk[:len(uk)-1], format.MaxSeq)
				probe(append(append([]byte(nil), uk...), 0), format.MaxSeq)
			}
			for range 2000 {
				probe(fmt.Appendf(nil, "%s%06d", prefix, rng.IntN(9100)), uint64(rng.IntN(120)))
			}
			for _, k := range []string{"", "\x00", prefix[:len(prefix)/2], prefix + "~", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"} {
				probe([]byte(k), format.MaxSeq)
			}
		})
	}
}

// TestPointIndexSeekSmall checks the two-level search on indexes of 1 to
// 3*topStride+1 blocks (a partial last group, a single group, none
// complete) against a linear search, for every stored key, the keys
// between them and keys outside the table.
func TestPointIndexSeekSmall(t *testing.T) {
	for nblocks := 1; nblocks <= 3*topStride+1; nblocks++ {
		var rows []format.Row
		for i := range nblocks {
			rows = append(rows, format.Row{Key: fmt.Appendf(nil, "k%03d", 2*i+1), Seq: 5, Value: []byte("v")})
		}
		data, _ := buildTable(t, rows, WriterOptions{BlockSize: 1}) // one row per block
		r := openTable(t, data, nil)
		px := mustIndex(t, r)
		if px.len() != nblocks || len(px.tops) != (nblocks+topStride-1)/topStride {
			t.Fatalf("%d rows: %d blocks, %d tops", nblocks, px.len(), len(px.tops))
		}
		for k := 0; k <= 2*nblocks+1; k++ {
			for _, seq := range []uint64{4, 5, 6} {
				ikey := format.SeekKey(nil, fmt.Appendf(nil, "k%03d", k), seq)
				want := px.len()
				for i := range px.len() {
					if format.CompareInternal(px.key(i), ikey) >= 0 {
						want = i
						break
					}
				}
				if got := px.seek(ikey); got != want {
					t.Fatalf("%d blocks: seek(k%03d, %d) = %d, want %d", nblocks, k, seq, got, want)
				}
			}
		}
		r.Close()
	}
}
