package sstable

// Charging open tables' metadata to the block cache.
//
// A Reader keeps its table's decoded point index and filter in memory from
// their first use (lazy.go) for as long as it is open, outside the cache.
// Left out of the budget, they would make a DB's memory the cache's
// capacity plus a few MB per GB of tables, doubled by GC headroom where they
// live on the Go heap (RFC 0003, "Block cache").
//
// So a Reader opened with a Cache charges the bytes it holds to it (each
// structure when it is loaded), and the Cache lowers the share of its
// capacity that data blocks may take by the total charged, evicting blocks
// at once if they now exceed it. Close gives the charge back. Charges never
// squeeze data blocks below minBlockShare of the capacity: a database whose
// tables' metadata alone exceeds the budget still caches some blocks (its
// memory then exceeds the budget by that metadata).

// minBlockShare is the smallest fraction (1/minBlockShare) of a Cache's
// capacity that charges leave to data blocks.
const minBlockShare = 4

// charge adds n bytes (negative to give them back) held outside the cache
// to what its capacity pays for, and resizes the data blocks' share,
// evicting at once if the blocks now exceed it. A nil Cache, or one of
// capacity 0, ignores it.
func (c *Cache) charge(n int64) {
	if c == nil || c.c == nil || n == 0 {
		return
	}
	c.chargeMu.Lock()
	defer c.chargeMu.Unlock()
	c.charged += n
	if blocks := max(c.capacity-c.charged, c.capacity/minBlockShare); blocks != c.applied {
		c.c.setCapacity(blocks)
		c.applied = blocks
	}
}

// Charged returns the bytes of table metadata charged to the cache by the
// Readers open on it.
func (c *Cache) Charged() int64 {
	if c == nil {
		return 0
	}
	c.chargeMu.Lock()
	defer c.chargeMu.Unlock()
	return c.charged
}

// metaBytes returns the memory r keeps for its table's metadata loaded so
// far (the point index and the filter), as charged to its cache.
func (r *Reader) metaBytes() int64 {
	r.meta.mu.Lock()
	defer r.meta.mu.Unlock()
	return r.meta.charged
}
