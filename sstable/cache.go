package sstable

// Block cache.
//
// One Cache is shared by all the readers of a DB. It maps
// (reader cache id, block offset) to the decoded (decompressed, CRC-checked)
// bytes of a data block, and is bounded by the total length of the blocks it
// holds. A cached block is immutable: it is never written to or reused, so
// rows that alias it stay valid for as long as they are referenced.

import (
	"sync"
	"sync/atomic"

	"github.com/maypok86/otter/v2"
)

type cacheKey struct {
	id  uint64 // ReaderOptions.FileNum, or an id the cache assigned
	off uint64 // block offset in the file
}

// stripe spreads the counters of different blocks over different stripes.
func (k cacheKey) stripe() uint64 { return k.off>>12 ^ k.id }

// stripedCounter is a counter that readers on different CPUs can bump
// without sharing a cache line, as long as they touch different blocks:
// each increment goes to one of its stripes, and the total is their sum.
type stripedCounter [8]struct {
	n atomic.Uint64
	_ [56]byte // one stripe per 64-byte cache line
}

func (s *stripedCounter) add(stripe uint64) { s[stripe%uint64(len(s))].n.Add(1) }

func (s *stripedCounter) load() uint64 {
	var t uint64
	for i := range s {
		t += s[i].n.Load()
	}
	return t
}

// Cache is a block cache with a byte budget, safe for concurrent use. A nil
// *Cache, or one of capacity 0, caches nothing.
type Cache struct {
	c      *otter.Cache[cacheKey, []byte]
	hits   stripedCounter
	misses stripedCounter
	size   atomic.Int64
	nextID atomic.Uint64
	// loading makes concurrent misses of one block read it once: on an
	// object store each miss is a ranged GET.
	loadMu  sync.Mutex
	loading map[cacheKey]*blockLoad
}

// blockLoad is a read of one block that other readers missing the same
// block wait for.
type blockLoad struct {
	wg  sync.WaitGroup
	b   []byte
	err error
}

// CacheMetrics is a snapshot of a cache's counters.
type CacheMetrics struct {
	Hits, Misses uint64
	SizeBytes    int64 // bytes of blocks held
}

// NewCache returns a cache holding at most about capacityBytes of blocks.
// A capacity <= 0 yields a cache that holds nothing but still counts misses.
func NewCache(capacityBytes int64) *Cache {
	c := &Cache{}
	if capacityBytes <= 0 {
		return c
	}
	c.c = otter.Must(&otter.Options[cacheKey, []byte]{
		MaximumWeight: uint64(capacityBytes),
		Weigher:       func(_ cacheKey, v []byte) uint32 { return uint32(len(v)) },
		OnAtomicDeletion: func(e otter.DeletionEvent[cacheKey, []byte]) {
			c.size.Add(-int64(len(e.Value)))
		},
	})
	return c
}

// Metrics returns the cache's counters.
func (c *Cache) Metrics() CacheMetrics {
	if c == nil {
		return CacheMetrics{}
	}
	return CacheMetrics{Hits: c.hits.load(), Misses: c.misses.load(), SizeBytes: c.size.Load()}
}

// newID returns an id for a reader without a file number. Assigned ids have
// the top bit set so they never collide with file numbers.
func (c *Cache) newID() uint64 {
	return 1<<63 | c.nextID.Add(1)
}

func (c *Cache) get(k cacheKey) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	if c.c != nil {
		if b, ok := c.c.GetIfPresent(k); ok {
			c.hits.add(k.stripe())
			return b, true
		}
	}
	c.misses.add(k.stripe())
	return nil, false
}

// set inserts block b (which must never be modified afterwards) and returns
// the cached block for k: b, or a block another reader inserted first.
func (c *Cache) set(k cacheKey, b []byte) []byte {
	if c == nil || c.c == nil {
		return b
	}
	c.size.Add(int64(len(b)))
	v, inserted := c.c.SetIfAbsent(k, b)
	if !inserted {
		c.size.Add(-int64(len(b)))
	}
	return v
}

// load returns the block for k from read, caching it; concurrent loads of
// the same k share one call of read, and a load that starts after another
// cached k returns the cached block. c must have a backing cache.
func (c *Cache) load(k cacheKey, read func() ([]byte, error)) ([]byte, error) {
	c.loadMu.Lock()
	if l, ok := c.loading[k]; ok {
		c.loadMu.Unlock()
		l.wg.Wait()
		return l.b, l.err
	}
	// A load that finished between the caller's miss and here.
	if b, ok := c.c.GetIfPresent(k); ok {
		c.loadMu.Unlock()
		return b, nil
	}
	if c.loading == nil {
		c.loading = make(map[cacheKey]*blockLoad)
	}
	l := &blockLoad{}
	l.wg.Add(1)
	c.loading[k] = l
	c.loadMu.Unlock()
	defer func() {
		c.loadMu.Lock()
		delete(c.loading, k)
		c.loadMu.Unlock()
		l.wg.Done()
	}()
	l.b, l.err = read()
	if l.err != nil {
		l.b = nil
		return nil, l.err
	}
	l.b = c.set(k, l.b)
	return l.b, nil
}
