package sstable

import (
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/storage"
)

// BenchmarkScanLocalFile scans a table (4 MB of rows, 0.8 MB with Snappy)
// in a local file from first to last row, without a block cache, with
// read-ahead off and at a few caps: does read-ahead help when the OS
// already reads ahead?
func BenchmarkScanLocalFile(b *testing.B) {
	rows := benchRows(30000)
	data, props := buildTable(b, rows, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10})
	st, err := storage.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w, err := st.Create("sst/000001.sst")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	for _, ra := range []int{0, 64 << 10, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("readahead=%dK", ra>>10), func(b *testing.B) {
			f, err := st.Open("sst/000001.sst")
			if err != nil {
				b.Fatal(err)
			}
			r, err := Open(f, ReaderOptions{Name: "sst/000001.sst", ReadAhead: ra})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ReportAllocs()
			b.SetBytes(int64(props.Size))
			for b.Loop() {
				benchScan(b, r, len(rows))
			}
		})
	}
}

// benchScan walks r from first to last row and fails b unless it finds n
// rows without an error.
func benchScan(b *testing.B, r *Reader, n int) {
	it := r.NewIter()
	got := 0
	for ok := it.First(); ok; ok = it.Next() {
		got++
	}
	if err := it.Close(); err != nil || got != n {
		b.Fatal(got, err)
	}
}

// BenchmarkCompactionScan reads a table (4 MB of rows, Snappy) in memory
// with a compaction iterator over a block cache that holds none of its
// blocks, block by block (the local default) and reading ahead: the path
// whose blocks are decoded for the iterator alone.
func BenchmarkCompactionScan(b *testing.B) {
	rows := benchRows(30000)
	data, props := buildTable(b, rows, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10})
	for _, ra := range []int{-1, 256 << 10} {
		b.Run(fmt.Sprintf("readahead=%dK", max(ra, 0)>>10), func(b *testing.B) {
			c := NewCache(8 << 20)
			defer c.Close()
			r, err := Open(newMemObject(data), ReaderOptions{Name: testName, Cache: c, ReadAhead: 256 << 10, CompactionReadAhead: ra})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ReportAllocs()
			b.SetBytes(int64(props.Size))
			for b.Loop() {
				it := r.NewCompactionIter()
				got := 0
				for ok := it.First(); ok; ok = it.Next() {
					got++
				}
				if err := it.Close(); err != nil || got != len(rows) {
					b.Fatal(got, err)
				}
			}
		})
	}
}

// BenchmarkScanPartlyCached scans a table (the rows of BenchmarkScanLocalFile,
// Snappy, in memory) from first to last row through a block cache that
// holds its middle half from an earlier scan: the scan reads ahead in the first
// quarter, reaches cached blocks inside its windows, and reads ahead again
// in the last quarter. ns/block counts the timed scans alone (the cache
// is made again and warmed outside them).
func BenchmarkScanPartlyCached(b *testing.B) {
	rows := benchRows(30000)
	data, props := buildTable(b, rows, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10})
	for b.Loop() {
		b.StopTimer()
		cache := NewCache(64 << 20)
		r, err := Open(newCountingObject(data), ReaderOptions{Name: testName, ReadAhead: 256 << 10, Cache: cache})
		if err != nil {
			b.Fatal(err)
		}
		it := r.NewIter()
		n := len(rows) / 2
		for ok := it.SeekGE(rows[len(rows)/4].Key); ok && n > 0; ok = it.Next() {
			n--
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		benchScan(b, r, len(rows))
		b.StopTimer()
		r.Close()
		cache.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(props.NumDataBlocks), "ns/block")
}
