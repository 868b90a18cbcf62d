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
