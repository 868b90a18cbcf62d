package memtable

import (
	"math/rand"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// evictionBuf is written between the walks of the cold runs of
// BenchmarkFullScan, so that the memtable's lines leave the CPU caches: it
// is made larger than a last-level cache.
var evictionBuf []byte

// BenchmarkFullScan walks a whole frozen memtable with First and Next, as a
// flush does: n rows with 16-byte bench keys and 100-byte values, inserted
// in ascending or random key order. In random order consecutive rows sit
// far apart in the arena, so the walk is dominated by cache misses on nodes
// and records. The warm runs walk the same memtable again and again, so it
// stays in the last-level cache; the cold runs write evictionBuf before
// each walk, as a flush finds its memtable after the writes of the next
// one. cpu-ns/row, of the walks alone, is the figure to compare.
func BenchmarkFullScan(b *testing.B) {
	const n = 70_000
	for _, order := range []string{"ascending", "random"} {
		for _, cache := range []string{"warm", "cold"} {
			b.Run(order+"/"+cache, func(b *testing.B) {
				ids := make([]uint64, n)
				for i := range ids {
					ids[i] = uint64(i)
				}
				if order == "random" {
					rand.New(rand.NewSource(1)).Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				}
				m := New(1)
				defer m.Unref()
				val := make([]byte, 100)
				var key [16]byte
				for i, id := range ids {
					m.Add(&format.Row{Key: benchKey(key[:], id), Seq: uint64(i + 1), Value: val})
				}
				m.Freeze()
				if cache == "cold" && evictionBuf == nil {
					evictionBuf = make([]byte, 64<<20)
				}
				b.ReportAllocs()
				var sum int
				var cpu int64
				rows := 0
				for b.Loop() {
					if cache == "cold" {
						for i := 0; i < len(evictionBuf); i += 64 {
							evictionBuf[i]++
						}
					}
					cpu0 := processCPU()
					it := m.NewIter()
					for ok := it.First(); ok; ok = it.Next() {
						sum += len(it.Row().Value)
						rows++
					}
					it.Close()
					cpu += processCPU() - cpu0
				}
				if rows != b.N*n || sum != rows*len(val) {
					b.Fatalf("walked %d rows (%d value bytes), want %d", rows, sum, b.N*n)
				}
				b.ReportMetric(float64(cpu)/float64(rows), "cpu-ns/row")
			})
		}
	}
}
