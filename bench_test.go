package mayfly_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// Benchmark shapes: 16-byte keys and 100-byte values, half random and half a
// repeated pattern, so that block compression has something but not
// everything to squeeze.
const (
	benchKeySize   = 16
	benchValueSize = 100
	benchRowBytes  = benchKeySize + benchValueSize
	benchPreload   = 100_000 // rows loaded before the read benchmarks
	benchValues    = 256     // distinct values cycled through
)

// benchValuePool returns benchValues distinct half-compressible values.
func benchValuePool() [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([][]byte, benchValues)
	for i := range vals {
		v := make([]byte, benchValueSize)
		for j := 0; j < benchValueSize/2; j++ {
			v[j] = byte(r.Uint32())
		}
		for j := benchValueSize / 2; j < benchValueSize; j++ {
			v[j] = byte('a' + j%8)
		}
		vals[i] = v
	}
	return vals
}

// splitmix64 is a cheap bijective mixer, used to derive well-spread keys from
// an index so the read benchmarks need not store their key set.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// benchKey writes the key of row i into k (len benchKeySize). Keys of
// distinct i are distinct and in random order.
func benchKey(k []byte, i uint64) {
	binary.BigEndian.PutUint64(k[0:8], splitmix64(i))
	binary.BigEndian.PutUint64(k[8:16], splitmix64(i^0x5555_5555_5555_5555))
}

// randomKey fills k with random bytes.
func randomKey(r *rand.Rand, k []byte) {
	binary.LittleEndian.PutUint64(k[0:8], r.Uint64())
	binary.LittleEndian.PutUint64(k[8:16], r.Uint64())
}

// openBenchDB opens a database with default options (auto compaction on) in
// a fresh temporary directory that lives as long as the benchmark.
func openBenchDB(b *testing.B, mutate func(*mayfly.Options)) *mayfly.DB {
	b.Helper()
	o := &mayfly.Options{}
	if mutate != nil {
		mutate(o)
	}
	db, err := mayfly.Open(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := db.Close(); err != nil {
			b.Error(err)
		}
	})
	return db
}

// cpuMeter measures the process's CPU time (user+system, all goroutines,
// background flushes, compactions and GC included). On a shared machine
// wall-clock ns/op swings with other load; cpu-ns/op is far steadier.
type cpuMeter struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuMeter { return cpuMeter{start: cpuNow()} }

// report adds the CPU time per op since startCPU as the cpu-ns/op metric.
func (c cpuMeter) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuNow()-c.start)/float64(b.N), "cpu-ns/op")
	}
}

// reportWriteMetrics adds the write stalls seen during the benchmark as a metric.
func reportWriteMetrics(b *testing.B, db *mayfly.DB, ops int) {
	m := db.Metrics()
	if ops > 0 {
		b.ReportMetric(float64(m.WALSyncs)/float64(ops), "syncs/op")
	}
	b.ReportMetric(float64(m.Flushes), "flushes")
	b.ReportMetric(float64(m.WriteStalls), "stalls")
}

// BenchmarkPut measures single-row, non-synced puts of random keys, with
// and without a TTL. The TTL case is the engine's main promise: it should
// cost within a few percent of the plain case.
func BenchmarkPut(b *testing.B) {
	b.Run("noTTL", func(b *testing.B) {
		benchPut(b, func(db *mayfly.DB, k, v []byte) error { return db.Put(k, v) })
	})
	b.Run("TTL", func(b *testing.B) {
		benchPut(b, func(db *mayfly.DB, k, v []byte) error {
			return db.PutTTL(k, v, mayfly.ExpireAfter(time.Hour))
		})
	})
}

func benchPut(b *testing.B, put func(db *mayfly.DB, k, v []byte) error) {
	db := openBenchDB(b, nil)
	vals := benchValuePool()
	r := rand.New(rand.NewPCG(3, 4))
	k := make([]byte, benchKeySize)
	b.SetBytes(benchRowBytes)
	b.ReportAllocs()
	i := 0
	cpu := startCPU()
	for b.Loop() {
		randomKey(r, k)
		if err := put(db, k, vals[i%benchValues]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	cpu.report(b)
	reportWriteMetrics(b, db, 0)
}

// BenchmarkPutBatch measures atomic batches of 100 rows; one op is one
// batch.
func BenchmarkPutBatch(b *testing.B) {
	const perBatch = 100
	db := openBenchDB(b, nil)
	vals := benchValuePool()
	r := rand.New(rand.NewPCG(5, 6))
	k := make([]byte, benchKeySize)
	b.SetBytes(perBatch * benchRowBytes)
	b.ReportAllocs()
	i := 0
	cpu := startCPU()
	for b.Loop() {
		bt := db.NewBatch()
		for j := 0; j < perBatch; j++ {
			randomKey(r, k)
			if err := bt.Put(k, vals[i%benchValues]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		if err := bt.Write(nil); err != nil {
			b.Fatal(err)
		}
		bt.Close()
	}
	b.StopTimer()
	cpu.report(b)
	reportWriteMetrics(b, db, 0)
}

// BenchmarkPutSync measures puts that wait for a WAL fsync, one writer.
func BenchmarkPutSync(b *testing.B) {
	db := openBenchDB(b, nil)
	vals := benchValuePool()
	r := rand.New(rand.NewPCG(7, 8))
	k := make([]byte, benchKeySize)
	b.SetBytes(benchRowBytes)
	b.ReportAllocs()
	i := 0
	cpu := startCPU()
	for b.Loop() {
		randomKey(r, k)
		if err := db.PutWith(k, vals[i%benchValues], mayfly.DefaultTTL(), mayfly.Sync); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	cpu.report(b)
	reportWriteMetrics(b, db, i)
}

// BenchmarkPutSyncParallel measures synced puts from 16 writers per CPU.
// Group commit lets one fsync cover many writers: syncs/op well below 1 is
// the evidence.
func BenchmarkPutSyncParallel(b *testing.B) {
	db := openBenchDB(b, nil)
	vals := benchValuePool()
	b.SetBytes(benchRowBytes)
	b.ReportAllocs()
	b.SetParallelism(16)
	var seed uint64
	var seedMu = make(chan struct{}, 1)
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		seedMu <- struct{}{}
		seed++
		r := rand.New(rand.NewPCG(seed, 9))
		<-seedMu
		k := make([]byte, benchKeySize)
		i := 0
		for pb.Next() {
			randomKey(r, k)
			if err := db.PutWith(k, vals[i%benchValues], mayfly.DefaultTTL(), mayfly.Sync); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.StopTimer()
	cpu.report(b)
	reportWriteMetrics(b, db, b.N)
}

// loadBench writes rows 0..n-1 (benchKey(i)) in batches of 1000.
func loadBench(b *testing.B, db *mayfly.DB, n int) {
	b.Helper()
	vals := benchValuePool()
	k := make([]byte, benchKeySize)
	bt := db.NewBatch()
	for i := 0; i < n; i++ {
		benchKey(k, uint64(i))
		if err := bt.Put(k, vals[i%benchValues]); err != nil {
			b.Fatal(err)
		}
		if bt.Len() == 1000 || i == n-1 {
			if err := bt.Write(nil); err != nil {
				b.Fatal(err)
			}
			bt = db.NewBatch()
		}
	}
}

// BenchmarkGet measures point lookups against 100k preloaded rows: hit and
// miss on flushed SSTables (a miss is normally answered by the bloom
// filter), hit on rows still in the memtable, and hit through a block cache
// of 1 MiB (hit-coldcache: most lookups miss the cache, so they read,
// check, decompress and cache a block and evict another; its cpu-ns/op is
// the whole process's, background work included).
func BenchmarkGet(b *testing.B) {
	flushed := openBenchDB(b, nil)
	loadBench(b, flushed, benchPreload)
	if err := flushed.Flush(); err != nil {
		b.Fatal(err)
	}
	smallCache := openBenchDB(b, func(o *mayfly.Options) { o.BlockCacheSize = 1 << 20 })
	loadBench(b, smallCache, benchPreload)
	if err := smallCache.Flush(); err != nil {
		b.Fatal(err)
	}
	inMem := openBenchDB(b, nil)
	loadBench(b, inMem, benchPreload)

	get := func(b *testing.B, db *mayfly.DB, offset uint64, wantHit bool) {
		r := rand.New(rand.NewPCG(10, 11))
		k := make([]byte, benchKeySize)
		b.SetBytes(benchRowBytes)
		b.ReportAllocs()
		before := db.Metrics()
		cpu := startCPU()
		for b.Loop() {
			benchKey(k, offset+r.Uint64N(benchPreload))
			_, err := db.Get(k)
			if (err == nil) != wantHit {
				b.Fatalf("Get: err = %v, want hit = %v", err, wantHit)
			}
		}
		b.StopTimer()
		cpu.report(b)
		m := db.Metrics()
		if !wantHit {
			b.ReportMetric(float64(m.BloomFalsePositives-before.BloomFalsePositives)/float64(b.N), "bloomFP/op")
		}
		if lookups := (m.BlockCacheHits - before.BlockCacheHits) + (m.BlockCacheMisses - before.BlockCacheMisses); lookups > 0 {
			b.ReportMetric(float64(m.BlockCacheHits-before.BlockCacheHits)/float64(lookups), "cacheHitRatio")
		}
	}
	b.Run("hit", func(b *testing.B) { get(b, flushed, 0, true) })
	b.Run("miss", func(b *testing.B) { get(b, flushed, 1<<40, false) })
	b.Run("memtable", func(b *testing.B) { get(b, inMem, 0, true) })
	b.Run("hit-coldcache", func(b *testing.B) { get(b, smallCache, 0, true) })
}

// BenchmarkScan measures a full forward scan of 100k flushed rows; one op is
// one whole scan, SetBytes counts every key and value it returns, and ns/key
// is the per-row cost.
func BenchmarkScan(b *testing.B) {
	db := openBenchDB(b, nil)
	loadBench(b, db, benchPreload)
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchPreload * benchRowBytes)
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		var err error
		n := 0
		for k, v := range db.Scan(nil, nil, &err) {
			if len(k) != benchKeySize || len(v) != benchValueSize {
				b.Fatalf("row %d: %d-byte key, %d-byte value", n, len(k), len(v))
			}
			n++
		}
		if err != nil {
			b.Fatal(err)
		}
		if n != benchPreload {
			b.Fatalf("scanned %d rows, want %d", n, benchPreload)
		}
	}
	cpu.report(b)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPreload, "ns/key")
}

// openMultiLevelDB loads benchPreload rows into a database with small
// memtables, tables and level targets, then waits for compaction, so that
// the rows spread over many tables in several levels (the shape of a real
// database, scaled down). It reports the number of tables as a metric.
func openMultiLevelDB(b *testing.B) *mayfly.DB {
	b.Helper()
	db := openBenchDB(b, func(o *mayfly.Options) {
		o.MemtableSize = 1 << 20
		o.TargetFileSize = 128 << 10
		o.LBaseMaxBytes = 256 << 10
		o.LevelSizeRatio = 4
	})
	loadBench(b, db, benchPreload)
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.WaitForCompactions(context.Background()); err != nil {
		b.Fatal(err)
	}
	return db
}

// reportShape adds the number of tables and of non-empty levels as metrics.
func reportShape(b *testing.B, db *mayfly.DB) {
	files, levels := 0, 0
	var perLevel []int
	for _, l := range db.Metrics().Levels {
		perLevel = append(perLevel, l.Files)
		files += l.Files
		if l.Files > 0 {
			levels++
		}
	}
	b.ReportMetric(float64(files), "tables")
	b.ReportMetric(float64(levels), "levels")
	b.Logf("files per level: %v", perLevel)
}

// BenchmarkScanMultiLevel is BenchmarkScan over a database whose rows are
// spread over many tables in several levels: one op is one whole scan.
func BenchmarkScanMultiLevel(b *testing.B) {
	db := openMultiLevelDB(b)
	// One untimed scan fills the block cache, so that the first (and with
	// small b.N dominant) iteration does not time decompression.
	for range db.Scan(nil, nil, nil) {
	}
	b.SetBytes(benchPreload * benchRowBytes)
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		var err error
		n := 0
		for range db.Scan(nil, nil, &err) {
			n++
		}
		if err != nil {
			b.Fatal(err)
		}
		if n != benchPreload {
			b.Fatalf("scanned %d rows, want %d", n, benchPreload)
		}
	}
	cpu.report(b)
	reportShape(b, db)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPreload, "ns/key")
}

// BenchmarkSeekGEMultiLevel measures one SeekGE to a random existing key
// (and reading the row it lands on) through a reused iterator, over the
// database of BenchmarkScanMultiLevel. "bounded" gives the iterator an
// upper bound just past a short key range, as a prefix scan would.
func BenchmarkSeekGEMultiLevel(b *testing.B) {
	db := openMultiLevelDB(b)
	seek := func(b *testing.B, opts *mayfly.IterOptions) {
		it, err := db.NewIter(opts)
		if err != nil {
			b.Fatal(err)
		}
		defer it.Close()
		r := rand.New(rand.NewPCG(20, 21))
		k := make([]byte, benchKeySize)
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			benchKey(k, r.Uint64N(benchPreload))
			if !it.SeekGE(k) {
				b.Fatalf("SeekGE(%x) found nothing: %v", k, it.Error())
			}
			if len(it.Value()) != benchValueSize {
				b.Fatalf("value of %d bytes", len(it.Value()))
			}
		}
		b.StopTimer()
		cpu.report(b)
		reportShape(b, db)
	}
	b.Run("unbounded", func(b *testing.B) { seek(b, nil) })
	// prefix opens a bounded iterator per op over the 8-byte prefix of a
	// random existing key, as a prefix lookup would, and reads its first row.
	b.Run("prefix", func(b *testing.B) {
		r := rand.New(rand.NewPCG(22, 23))
		k := make([]byte, benchKeySize)
		upper := make([]byte, 8)
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			benchKey(k, r.Uint64N(benchPreload))
			binary.BigEndian.PutUint64(upper, binary.BigEndian.Uint64(k)+1)
			it, err := db.NewIter(&mayfly.IterOptions{LowerBound: k[:8], UpperBound: upper})
			if err != nil {
				b.Fatal(err)
			}
			if !it.First() || len(it.Value()) != benchValueSize {
				b.Fatalf("prefix %x: no row (%v)", k[:8], it.Error())
			}
			if err := it.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cpu.report(b)
		reportShape(b, db)
	})
}

// BenchmarkFillSmallMemtable measures sustained sequential ingest through
// 16 MiB memtables (fillseq: one put per op; fillbatch: batches of 100,
// one row per op), including the flushes and compactions it causes: the
// timer stops only once WaitForCompactions returns. Run it with a fixed
// -benchtime such as 1000000x so that every run does the same level-0
// work; cpu-ns/op (the whole process) is the load-robust figure, wa the
// engine's write amplification.
func BenchmarkFillSmallMemtable(b *testing.B) {
	for _, batch := range []int{1, 100} {
		name := "fillseq"
		if batch > 1 {
			name = "fillbatch"
		}
		b.Run(name, func(b *testing.B) {
			db := openBenchDB(b, func(o *mayfly.Options) { o.MemtableSize = 16 << 20 })
			vals := benchValuePool()
			k := make([]byte, benchKeySize)
			b.SetBytes(benchRowBytes)
			cpu := startCPU()
			bt := db.NewBatch()
			i := 0
			for b.Loop() {
				binary.BigEndian.PutUint64(k[0:8], uint64(i))
				if err := bt.Put(k, vals[i%benchValues]); err != nil {
					b.Fatal(err)
				}
				i++
				if bt.Len() >= batch {
					if err := bt.Write(nil); err != nil {
						b.Fatal(err)
					}
					bt.Reset()
				}
			}
			if err := bt.Write(nil); err != nil {
				b.Fatal(err)
			}
			bt.Close()
			if err := db.WaitForCompactions(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu.report(b)
			m := db.Metrics()
			b.ReportMetric(m.WriteAmplification(), "wa")
			b.ReportMetric(float64(m.TrivialMoves), "moves")
			reportWriteMetrics(b, db, 0)
		})
	}
}
