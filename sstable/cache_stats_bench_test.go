package sstable

// slabMaps returns the slabs c's allocator has mapped so far.
func slabMaps(c *Cache) int64 { return c.AllocStats().SlabMaps }
