package s3test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage/s3"
)

// scanRows is how many rows the read-ahead benchmarks write: about 4.5 MB
// of incompressible values. The test writes a quarter of that.
const scanRows = 36000

func scanValue(rng *rand.Rand) []byte {
	v := make([]byte, 120)
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	return v
}

// loadScanDB writes n rows to a fresh location and compacts them into the
// bottom level.
func loadScanDB(tb testing.TB, n int) string {
	tb.Helper()
	loc := location(tb)
	db := open(tb, loc, &mayfly.Options{Clock: manual()})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i += 1000 {
		b := db.NewBatch()
		for j := i; j < min(i+1000, n); j++ {
			b.Put(key("scan", j), scanValue(rng))
		}
		if err := b.Write(mayfly.NoSync); err != nil {
			tb.Fatal(err)
		}
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	return loc
}

type scanResult struct {
	rows      int
	sum       uint64 // FNV-1a of every key and value, in order
	rangeGets uint64
	elapsed   time.Duration
}

// scanDB opens loc read-only with read-ahead set to readAhead (0: the
// default; negative: DisableReadAhead), with a cold
// block cache, and scans every row; it counts only the scan's requests.
func scanDB(tb testing.TB, loc string, readAhead int) scanResult {
	tb.Helper()
	db := open(tb, loc, &mayfly.Options{Clock: manual(), ReadOnly: true, ReadAheadSize: max(readAhead, 0), DisableReadAhead: readAhead < 0})
	defer db.Close()
	before := db.Metrics().Storage
	start := time.Now()
	it, err := db.NewIter(nil)
	if err != nil {
		tb.Fatal(err)
	}
	h := fnv.New64a()
	var res scanResult
	for ok := it.First(); ok; ok = it.Next() {
		h.Write(it.Key())
		h.Write(it.Value())
		res.rows++
	}
	if err := it.Close(); err != nil {
		tb.Fatal(err)
	}
	res.elapsed = time.Since(start)
	res.sum = h.Sum64()
	res.rangeGets = storageDelta(before, db.Metrics().Storage)["range_get"]
	return res
}

// A full scan on an object store makes a handful of ranged GETs per table
// with read-ahead (on by default there), one per data block without, and
// sees the same rows.
func TestReadAheadScanRequests(t *testing.T) {
	const n = scanRows / 4
	loc := loadScanDB(t, n)
	off := scanDB(t, loc, -1)
	on := scanDB(t, loc, 0)
	t.Logf("full scan of %d rows: %d range GETs in %v without read-ahead, %d in %v with the default",
		off.rows, off.rangeGets, off.elapsed, on.rangeGets, on.elapsed)
	if off.rows != n || on.rows != off.rows || on.sum != off.sum {
		t.Fatalf("scan without read-ahead: %d rows (sum %x); with: %d rows (sum %x); want %d rows",
			off.rows, off.sum, on.rows, on.sum, n)
	}
	// 1.1 MB is about 280 blocks of 4 KiB, and 6 windows of 64 KiB
	// doubling to 1 MiB.
	if off.rangeGets < 250 || on.rangeGets*10 > off.rangeGets {
		t.Fatalf("range GETs: %d with read-ahead, %d without", on.rangeGets, off.rangeGets)
	}
}

// BenchmarkS3ScanDB measures a cold full scan through mayfly.Open on an
// s3:// location: ranged GETs and time per scan, by read-ahead cap.
func BenchmarkS3ScanDB(b *testing.B) {
	loc := loadScanDB(b, scanRows)
	for _, ra := range []int{-1, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("readahead=%dK", max(ra, 0)>>10), func(b *testing.B) {
			var gets uint64
			var elapsed time.Duration
			n := 0
			for b.Loop() {
				res := scanDB(b, loc, ra)
				gets += res.rangeGets
				elapsed += res.elapsed
				n++
			}
			b.ReportMetric(float64(gets)/float64(n), "range-GETs/scan")
			b.ReportMetric(float64(elapsed.Milliseconds())/float64(n), "ms/scan")
		})
	}
}

// BenchmarkS3ScanTable measures a cold full scan of one SSTable of about
// 4.5 MB on the S3 server through sstable.Reader: ranged GETs and time per
// scan, by read-ahead cap.
func BenchmarkS3ScanTable(b *testing.B) {
	cfg, err := s3.ParseURL(location(b))
	if err != nil {
		b.Fatal(err)
	}
	st, err := s3.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w, err := st.Create("sst/000001.sst")
	if err != nil {
		b.Fatal(err)
	}
	tw := sstable.NewWriter(w, sstable.WriterOptions{Compression: sstable.SnappyCompression, BloomBitsPerKey: 10})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range scanRows {
		if err := tw.Add(&format.Row{Key: key("scan", i), Seq: 1, Value: scanValue(rng)}); err != nil {
			b.Fatal(err)
		}
	}
	props, err := tw.Finish()
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	for _, ra := range []int{0, 64 << 10, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("readahead=%dK", ra>>10), func(b *testing.B) {
			var gets uint64
			for b.Loop() {
				f, err := st.Open("sst/000001.sst")
				if err != nil {
					b.Fatal(err)
				}
				r, err := sstable.Open(f, sstable.ReaderOptions{Name: "sst/000001.sst", ReadAhead: ra})
				if err != nil {
					b.Fatal(err)
				}
				before := st.Metrics().RangeGets
				it := r.NewIter()
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if err := it.Close(); err != nil || n != scanRows {
					b.Fatal(n, err)
				}
				gets += st.Metrics().RangeGets - before
				r.Close()
			}
			b.SetBytes(int64(props.Size))
			b.ReportMetric(float64(gets)/float64(b.N), "range-GETs/scan")
		})
	}
}
