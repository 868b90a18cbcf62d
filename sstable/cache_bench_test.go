package sstable

import (
	"testing"
)

// BenchmarkCacheHit measures a block-cache lookup that hits, alone and from
// parallel readers, over a working set of 4 KiB blocks that fits the cache.
func BenchmarkCacheHit(b *testing.B) {
	const blocks = 4096
	c := NewCache(64 << 20)
	id := c.newID()
	for i := range blocks {
		c.set(cacheKey{id: id, off: uint64(i) * 4096}, make([]byte, 4096))
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(4096)
		cpu := startThreadCPU()
		defer cpu.stop()
		i := uint64(0)
		for b.Loop() {
			if _, ok := c.get(cacheKey{id: id, off: (i % blocks) * 4096}); !ok {
				b.Fatal("miss on a cached block")
			}
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
				if _, ok := c.get(cacheKey{id: id, off: (i % blocks) * 4096}); !ok {
					b.Error("miss on a cached block")
					return
				}
				i += 13
			}
		})
	})
}
