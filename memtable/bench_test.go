package memtable

import (
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/heapmeter"
)

// benchKey writes the harness's key shape (15 digits and a suffix byte), so
// every key shares its first 8 bytes with the others.
func benchKey(dst []byte, i uint64) []byte {
	dst = dst[:16]
	for p := 14; p >= 0; p-- {
		dst[p] = byte('0' + i%10)
		i /= 10
	}
	dst[15] = 'k'
	return dst
}

// BenchmarkApplyBatch inserts 100-row batches of random keys with 100-byte
// values; each op is one row. The memtable is replaced once it holds
// applyBatchRows rows, so that the index depth is a full memtable's, not one
// growing with b.N, and it has the engine's whole-key filter and
// newest-version hint, sized for applyBatchBytes.
func BenchmarkApplyBatch(b *testing.B) {
	const perBatch = 100
	const applyBatchRows, applyBatchBytes = 256 << 10, 64 << 20
	rng := rand.New(rand.NewSource(1))
	val := make([]byte, 100)
	var key [16]byte
	data := make([]byte, 0, perBatch*140)
	m := NewFiltered(1, nil, applyBatchBytes)
	defer func() { m.Unref() }() // m is replaced as it fills
	b.ReportAllocs()
	b.SetBytes(16 + 100)
	cpu0 := processCPU()
	for i := 0; i < b.N; i += perBatch {
		if m.Len() >= applyBatchRows {
			m.Unref()
			m = NewFiltered(1, nil, applyBatchBytes)
		}
		data = data[:format.BatchHeaderLen]
		for j := 0; j < perBatch; j++ {
			data, _ = format.AppendBatchEntry(data, 0, 0, benchKey(key[:], rng.Uint64()%1000000), val)
		}
		format.PutBatchHeader(data, format.BatchHeader{Seq: uint64(i + 1), Count: perBatch})
		if err := m.ApplyBatch(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkInsertSeq inserts single-row batches with ascending keys.
func BenchmarkInsertSeq(b *testing.B) {
	val := make([]byte, 100)
	var key [16]byte
	data := make([]byte, 0, 256)
	m := New(1)
	defer func() { m.Unref() }() // m is replaced as it fills
	b.ReportAllocs()
	b.SetBytes(16 + 100)
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		if m.Len() >= 256<<10 {
			m.Unref()
			m = New(1)
		}
		data = data[:format.BatchHeaderLen]
		data, _ = format.AppendBatchEntry(data, 0, 0, benchKey(key[:], uint64(i)), val)
		format.PutBatchHeader(data, format.BatchHeader{Seq: uint64(i + 1), Count: 1})
		if err := m.ApplyBatch(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkGet looks up random present keys in a memtable of 200k rows.
func BenchmarkGet(b *testing.B) {
	const n = 200000
	m := seqMemtable(n)
	defer m.Unref()
	rng := rand.New(rand.NewSource(1))
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = benchKey(make([]byte, 16), uint64(rng.Intn(n)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		if _, ok := m.Get(keys[i%len(keys)], format.MaxSeq); !ok {
			b.Fatal("missing key")
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkScan walks a 100k-row memtable with an iterator; each op is a row.
func BenchmarkScan(b *testing.B) {
	m := seqMemtable(100000)
	defer m.Unref()
	it := m.NewIter()
	defer it.Close()
	b.ReportAllocs()
	b.ResetTimer()
	ok := false
	for i := 0; i < b.N; i++ {
		if !ok {
			ok = it.First()
		}
		ok = it.Next()
	}
}

// seqMemtable returns a memtable of n rows with ascending bench keys and
// 100-byte values.
func seqMemtable(n int) *Memtable {
	m := New(1)
	val := make([]byte, 100)
	for i := 0; i < n; i++ {
		var key [16]byte
		m.Add(&format.Row{Key: benchKey(key[:], uint64(i)), Seq: uint64(i + 1), Value: val})
	}
	return m
}

// BenchmarkGetLongKey looks up random present 28-byte keys that share their
// first 16 bytes, so every comparison reads key bytes past the inline ones.
func BenchmarkGetLongKey(b *testing.B) {
	const n = 200000
	long := func(i uint64) []byte {
		var d [16]byte
		return append([]byte("tenant/0001/user/"), benchKey(d[:], i)[5:]...) // 28 bytes
	}
	m := New(1)
	defer m.Unref()
	val := make([]byte, 100)
	for i := 0; i < n; i++ {
		m.Add(&format.Row{Key: long(uint64(i)), Seq: uint64(i + 1), Value: val})
	}
	rng := rand.New(rand.NewSource(1))
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = long(uint64(rng.Intn(n)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		if _, ok := m.Get(keys[i%len(keys)], format.MaxSeq); !ok {
			b.Fatal("missing key")
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkHeapPerRow fills a memtable with 256k rows (16-byte bench keys,
// 100-byte values) in random, ascending or descending key order and reports the Go heap
// it holds per row (heap-B/row: nodes and records live in the arena, outside
// the heap) and what Size accounts per row (size-B/row, node and record).
// sec/op is the time to fill it (per memtable, GCs excluded).
func BenchmarkHeapPerRow(b *testing.B) {
	const n = 256 << 10
	for _, order := range []string{"random", "ascending", "descending"} {
		b.Run(order, func(b *testing.B) {
			ids := make([]uint64, n)
			for i := range ids {
				ids[i] = uint64(i)
			}
			switch order {
			case "random":
				rand.New(rand.NewSource(1)).Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			case "descending":
				slices.Reverse(ids)
			}
			val := make([]byte, 100)
			var key [16]byte
			var heap, size float64
			for b.Loop() {
				before := heapmeter.Live(b)
				m := New(1)
				for i, id := range ids {
					m.Add(&format.Row{Key: benchKey(key[:], id), Seq: uint64(i + 1), Value: val})
				}
				heap = float64(heapmeter.Live(b)-before) / n
				size = float64(m.Size()) / n
				m.Unref()
			}
			b.ReportMetric(heap, "heap-B/row")
			b.ReportMetric(size, "size-B/row")
		})
	}
}

// BenchmarkRotatingMemtables inserts 100-row batches (16-byte keys, 100-byte
// values; one op is one row) into 8 MiB memtables, replacing each as it
// fills and releasing the old one at once, as a flush would: it measures
// what a memtable's creation and release add to the commit path, without
// a Pool (every chunk mapped and unmapped) and with one. cpu-ns/op is
// the process's CPU time, garbage collection and system calls included.
func BenchmarkRotatingMemtables(b *testing.B) {
	const perBatch, memSize = 100, 8 << 20
	for _, pooled := range []bool{false, true} {
		for _, order := range []string{"seq", "random"} {
			name := "nopool/" + order
			if pooled {
				name = "pool/" + order
			}
			b.Run(name, func(b *testing.B) {
				var pool *Pool
				if pooled {
					pool = NewPool(memSize, -1)
					defer pool.Close()
				}
				rng := rand.New(rand.NewSource(1))
				val := make([]byte, 100)
				var key [16]byte
				data := make([]byte, 0, perBatch*140)
				m := NewPooled(1, pool)
				defer func() { m.Unref() }() // m is replaced as it fills
				b.ReportAllocs()
				b.SetBytes(16 + 100)
				cpu0 := processCPU()
				for i := 0; i < b.N; i += perBatch {
					if m.Size() >= memSize {
						m.Unref()
						m = NewPooled(1, pool)
					}
					data = data[:format.BatchHeaderLen]
					for j := range perBatch {
						k := uint64(i + j)
						if order == "random" {
							k = rng.Uint64() % 10000000
						}
						data, _ = format.AppendBatchEntry(data, 0, 0, benchKey(key[:], k), val)
					}
					format.PutBatchHeader(data, format.BatchHeader{Seq: uint64(i + 1), Count: perBatch})
					if err := m.ApplyBatch(data); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkParallelInsert inserts single-row batches (16-byte random bench
// keys, 100-byte values, each with its own sequence number) from
// GOMAXPROCS goroutines into one memtable at once, as writers that apply
// their own batches after the WAL write do. One op is one row; the
// memtable is replaced every 256k rows (the full ones are released at the
// end, as nothing may release a memtable others still write to).
// cpu-ns/op is the process's CPU time per row.
func BenchmarkParallelInsert(b *testing.B) {
	var seq atomic.Uint64
	var cur atomic.Pointer[Memtable]
	cur.Store(New(1))
	var retired []*Memtable
	var mu sync.Mutex
	defer func() {
		cur.Load().Unref()
		for _, m := range retired {
			m.Unref()
		}
	}()
	b.ReportAllocs()
	b.SetBytes(16 + 100)
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewSource(int64(seq.Add(1) << 32)))
		val := make([]byte, 100)
		var key [16]byte
		data := make([]byte, 0, 256)
		for pb.Next() {
			s := seq.Add(1)
			if s%(256<<10) == 0 {
				mu.Lock()
				retired = append(retired, cur.Swap(New(1)))
				mu.Unlock()
			}
			data = data[:format.BatchHeaderLen]
			data, _ = format.AppendBatchEntry(data, 0, 0, benchKey(key[:], rng.Uint64()%10000000), val)
			format.PutBatchHeader(data, format.BatchHeader{Seq: s, Count: 1})
			if err := cur.Load().ApplyBatch(data); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkParallelGetWhileInserting runs, from GOMAXPROCS goroutines at
// once, three Gets of random present keys (a memtable of 200k ascending
// bench keys) for each insert of a single-row batch (a random key, a new
// sequence number): readers and writers on one memtable at once. One op is
// a Get or an insert; cpu-ns/op is the process's CPU time per op.
func BenchmarkParallelGetWhileInserting(b *testing.B) {
	const n = 200000
	m := seqMemtable(n)
	defer m.Unref()
	var seq atomic.Uint64
	seq.Store(n + 1)
	b.ReportAllocs()
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewSource(int64(seq.Add(1))))
		val := make([]byte, 100)
		var key [16]byte
		data := make([]byte, 0, 256)
		for i := 0; pb.Next(); i++ {
			if i%4 == 3 {
				data = data[:format.BatchHeaderLen]
				data, _ = format.AppendBatchEntry(data, 0, 0, benchKey(key[:], rng.Uint64()%(2*n)), val)
				format.PutBatchHeader(data, format.BatchHeader{Seq: seq.Add(1), Count: 1})
				if err := m.ApplyBatch(data); err != nil {
					b.Error(err)
					return
				}
				continue
			}
			if _, ok := m.Get(benchKey(key[:], uint64(rng.Intn(n))), format.MaxSeq); !ok {
				b.Error("missing key")
				return
			}
		}
	})
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkGetFiltered looks up present and absent keys in a 200k-row
// memtable (about 33 MB) without and with a whole-key filter sized for it.
func BenchmarkGetFiltered(b *testing.B) {
	const n = 200000
	for _, expected := range []int64{0, 33 << 20} {
		m := NewFiltered(1, nil, expected)
		val := make([]byte, 100)
		for i := range n {
			var key [16]byte
			m.Add(&format.Row{Key: benchKey(key[:], uint64(2*i)), Seq: uint64(i + 1), Value: val})
		}
		for _, present := range []bool{true, false} {
			b.Run(fmt.Sprintf("filter=%t/present=%t", expected > 0, present), func(b *testing.B) {
				rng := rand.New(rand.NewSource(1))
				keys := make([][]byte, 4096)
				for i := range keys {
					k := 2 * uint64(rng.Intn(n))
					if !present {
						k++
					}
					keys[i] = benchKey(make([]byte, 16), k)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := processCPU()
				for i := 0; i < b.N; i++ {
					if _, ok := m.Get(keys[i%len(keys)], format.MaxSeq); ok != present {
						b.Fatalf("Get found=%v, want %v", ok, present)
					}
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
		m.Unref()
	}
}
