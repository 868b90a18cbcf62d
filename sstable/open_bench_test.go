package sstable

import (
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// BenchmarkOpenLife times the life of a table that a fill writes: Open,
// then either nothing (a table that waits for compaction), one full
// compaction scan, or one Get (the first read of a table), then Close.
// B/op is what the table's metadata costs over that life.
func BenchmarkOpenLife(b *testing.B) {
	rows := benchRows(100_000)
	data, _ := buildTable(b, rows, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10})
	for _, use := range []string{"open", "compaction", "get"} {
		b.Run(use, func(b *testing.B) {
			cache := NewCache(64 << 20)
			defer cache.Close()
			b.ReportAllocs()
			for b.Loop() {
				r, err := Open(newMemObject(data), ReaderOptions{Cache: cache, Name: testName})
				if err != nil {
					b.Fatal(err)
				}
				switch use {
				case "compaction":
					it := r.NewCompactionIter()
					for ok := it.First(); ok; ok = it.Next() {
					}
					if err := it.Close(); err != nil {
						b.Fatal(err)
					}
				case "get":
					if _, found, err := r.Get(rows[len(rows)/2].Key, format.MaxSeq); err != nil || !found {
						b.Fatal(found, err)
					}
				}
				r.Close()
			}
		})
	}
}
