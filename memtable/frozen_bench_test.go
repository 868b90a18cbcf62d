package memtable

import (
	"math/rand"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// randomMemtable returns a memtable of pool holding n rows with 16-byte
// bench keys in random order and 100-byte values, frozen if frozen.
func randomMemtable(n int, pool *Pool, frozen bool) *Memtable {
	m := NewPooled(1, pool)
	rng := rand.New(rand.NewSource(1))
	val := make([]byte, 100)
	var key [16]byte
	for i := range n {
		m.Add(&format.Row{Key: benchKey(key[:], uint64(rng.Intn(n))), Seq: uint64(i + 1), Value: val})
	}
	if frozen {
		m.Freeze()
	}
	return m
}

// BenchmarkFreeze freezes a memtable of 40k rows in random key order,
// about an 8 MiB memtable of 16-byte keys and 100-byte values: what a
// rotation adds to the flush goroutine. The memtable is rebuilt outside
// the timer.
func BenchmarkFreeze(b *testing.B) {
	pool := NewPool(8<<20, -1)
	defer pool.Close()
	var cpu int64
	for b.Loop() {
		b.StopTimer()
		m := randomMemtable(40_000, pool, false)
		b.StartTimer()
		cpu0 := processCPU()
		m.Freeze()
		cpu += processCPU() - cpu0
		b.StopTimer()
		m.Unref()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkFrozenReads compares Get, a seek plus 16 Nexts, and a full
// scan on a memtable of 40k rows in random key order, taking writes
// ("tree", the name kept for comparisons with the B-tree index this
// package had) and frozen. cpu-ns/op is the process's CPU time per op (see
// processCPU).
func BenchmarkFrozenReads(b *testing.B) {
	const n = 40_000
	for _, frozen := range []bool{false, true} {
		name := "tree"
		if frozen {
			name = "frozen"
		}
		m := randomMemtable(n, nil, frozen)
		rng := rand.New(rand.NewSource(2))
		keys := make([][]byte, 4096)
		for i := range keys {
			keys[i] = benchKey(make([]byte, 16), uint64(rng.Intn(n)))
		}
		b.Run("get/"+name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			cpu0 := processCPU()
			for b.Loop() {
				m.Get(keys[i%len(keys)], format.MaxSeq)
				i++
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
		b.Run("seek16/"+name, func(b *testing.B) {
			b.ReportAllocs()
			it := m.NewIter()
			i := 0
			cpu0 := processCPU()
			for b.Loop() {
				ok := it.SeekGE(keys[i%len(keys)])
				for j := 0; j < 16 && ok; j++ {
					ok = it.Next()
				}
				i++
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			it.Close()
		})
		b.Run("scan/"+name, func(b *testing.B) {
			b.ReportAllocs()
			rows := 0
			cpu0 := processCPU()
			for b.Loop() {
				it := m.NewIter()
				for ok := it.First(); ok; ok = it.Next() {
					rows++
				}
				it.Close()
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(rows), "cpu-ns/row")
		})
		m.Unref()
	}
}
