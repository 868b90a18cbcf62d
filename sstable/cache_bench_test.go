package sstable

import (
	"fmt"
	"testing"
)

// BenchmarkCacheHit measures a block-cache lookup that hits, alone and from
// parallel readers, over a working set of 4 KiB blocks that fits the cache.
func BenchmarkCacheHit(b *testing.B) {
	const blocks = 4096
	c := NewCache(64 << 20)
	defer c.Close()
	id := c.newID()
	for i := range blocks {
		c.set(cacheKey{id: id, off: uint64(i) * 4096}, make([]byte, 4096)).release()
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(4096)
		cpu := startThreadCPU()
		defer cpu.stop()
		i := uint64(0)
		for b.Loop() {
			ref, ok := c.get(cacheKey{id: id, off: (i % blocks) * 4096})
			if !ok {
				b.Fatal("miss on a cached block")
			}
			ref.release()
			i += 7
		}
		cpu.report(b)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(4096)
		b.RunParallel(func(pb *testing.PB) {
			i := uint64(0)
			for pb.Next() {
				ref, ok := c.get(cacheKey{id: id, off: (i % blocks) * 4096})
				if !ok {
					b.Error("miss on a cached block")
					return
				}
				ref.release()
				i += 13
			}
		})
	})
}

// BenchmarkScanCacheFill scans a table (4 MB of rows, Snappy) through a 1
// MiB cache, with read-ahead off and on: in the steady state every block
// misses, is decoded, cached and evicted again. It measures the fill path.
func BenchmarkScanCacheFill(b *testing.B) {
	rows := benchRows(30000)
	data, props := buildTable(b, rows, WriterOptions{Compression: SnappyCompression, BloomBitsPerKey: 10})
	for _, ra := range []int{0, 256 << 10} {
		b.Run(fmt.Sprintf("readahead=%dK", ra>>10), func(b *testing.B) {
			c := NewCache(1 << 20)
			defer c.Close()
			r, err := Open(newMemObject(data), ReaderOptions{Cache: c, Name: testName, FileNum: 1, ReadAhead: ra})
			if err != nil {
				b.Fatal(err)
			}
			benchScan(b, r, len(rows)) // warm: the cache is full from here on
			maps0 := slabMaps(c)
			b.ReportAllocs()
			b.SetBytes(int64(props.Size))
			for b.Loop() {
				benchScan(b, r, len(rows))
			}
			b.ReportMetric(float64(slabMaps(c)-maps0)/float64(b.N), "slab-maps/op")
		})
	}
}
