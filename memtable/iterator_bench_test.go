package memtable

import (
	"math/rand"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// BenchmarkFullScan walks a whole memtable with First and Next, as a flush
// does: 70k rows (about a 16 MiB memtable) with 16-byte bench keys and
// 100-byte values, inserted in ascending or random key order. In random
// order consecutive rows sit far apart in the arena, so the walk is
// dominated by cache misses on the records. cpu-ns/row is the figure to
// compare.
func BenchmarkFullScan(b *testing.B) {
	const n = 70_000
	for _, order := range []string{"ascending", "random"} {
		b.Run(order, func(b *testing.B) {
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
			b.ReportAllocs()
			var sum int
			rows := 0
			cpu0 := processCPU()
			for b.Loop() {
				it := m.NewIter()
				for ok := it.First(); ok; ok = it.Next() {
					sum += len(it.Row().Value)
					rows++
				}
				it.Close()
			}
			if rows != b.N*n || sum != rows*len(val) {
				b.Fatalf("walked %d rows (%d value bytes), want %d", rows, sum, b.N*n)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(rows), "cpu-ns/row")
		})
	}
}
