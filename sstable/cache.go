package sstable

// Block cache.
//
// One Cache is shared by all the readers of a DB. It maps
// (reader cache id, block offset) to the decoded (decompressed, CRC-checked)
// bytes of a data block, and is bounded by the memory the blocks take up.
//
// Cached blocks live outside the Go heap, in slabs of an internal/slab
// Allocator owned by the Cache, so that a full cache costs its budget in
// resident memory rather than up to twice that under GOGC, and an evicted
// block's memory is reused at once instead of waiting for a collection.
// Their lifetime is therefore managed by hand, with a reference count kept
// on the Go heap beside the block (cachedBlock):
//
//   - the cache holds one reference while the block is in it; eviction,
//     Invalidate and Close drop it;
//   - a reader takes one for as long as it uses the block's bytes (a
//     block iterator while positioned in the block, a point lookup until its
//     caller has copied the value out) and drops it with blockRef.release;
//   - a lookup that finds a block whose count already reached zero (being
//     freed) treats it as a miss: a reference is only ever taken from a
//     count above zero (tryRef), so a freed block is never resurrected;
//   - the last release gives the memory back to the slab allocator.
//
// A compaction iterator's misses are decoded into slab memory too but not
// inserted (slabLoader, readahead.go): the iterator holds the only reference and the
// block is freed when it moves past it, so a compaction's blocks neither
// grow the Go heap nor wait for a collection. Blocks that are not in slab
// memory (no cache, a closed one) stay Go heap slices; their blockRef has
// no cachedBlock and release does nothing, so every reader follows one
// code path.

import (
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/internal/slab"
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

// cachedBlock is a block in slab memory and its reference count, and for
// a block in the cache its entry in the cache's index (clockcache.go): its
// key, weight and CLOCK bit, written when it is added. The struct itself
// is on the Go heap, so checking the count of a block that was freed is
// always safe.
type cachedBlock struct {
	refs   refCount
	clock  atomic.Uint32 // CLOCK referenced bit
	key    cacheKey
	weight int64
	buf    slab.Buf
	alloc  *slab.Allocator
}

// tryRef takes a reference unless the count already reached zero.
func (cb *cachedBlock) tryRef() bool { return cb.refs.tryRef() }

// unref drops a reference, freeing the block's memory with the last one.
// A nil cb (a block outside the cache) has nothing to drop.
func (cb *cachedBlock) unref() {
	if cb == nil {
		return
	}
	if cb.refs.release("cached block") {
		cb.alloc.Free(cb.buf)
		cb.buf = slab.Buf{}
	}
}

// blockRef is a reader's hold on a decoded block: b is valid until
// release. For a block outside the cache (c nil) release does nothing.
type blockRef struct {
	b []byte
	c *cachedBlock
}

// release drops the reference; b must not be used afterwards.
func (r blockRef) release() { r.c.unref() }

// BlockRef keeps the block that a row returned by Reader.GetAfterFilter
// aliases alive. Release it once the row's key and value are no longer
// used; the zero BlockRef's Release does nothing.
type BlockRef struct{ c *cachedBlock }

// Release drops the reference. It must be called at most once.
func (r BlockRef) Release() { r.c.unref() }

// Cache is a block cache with a byte budget, safe for concurrent use. A nil
// *Cache, or one of capacity 0, caches nothing.
type Cache struct {
	c     *clockIndex // nil for a cache of capacity 0
	alloc *slab.Allocator
	// windows recycles the read buffers of read-ahead windows
	// (readahead_buf.go); nil for a cache of capacity 0.
	windows *windowPool
	hits    stripedCounter
	misses  stripedCounter
	size    atomic.Int64
	nextID  atomic.Uint64
	closed  atomic.Bool
	// loading makes concurrent misses of one block read it once: on an
	// object store each miss is a ranged GET.
	loadMu  sync.Mutex
	loading map[cacheKey]*blockLoad
	// capacity is NewCache's; charged is the table metadata charged to it
	// (charge.go).
	capacity int64
	chargeMu sync.Mutex
	charged  int64
	applied  int64 // the data blocks' share last set
}

// blockLoad is a read of one block that other readers missing the same
// block wait for.
type blockLoad struct {
	wg  sync.WaitGroup
	b   blockRef // the loader's reference; waiters take their own
	err error
	// The loader's own state: the cache and the slab block it decodes
	// into (a field rather than a variable captured by a closure, which
	// would cost a heap allocation of its own per miss).
	c  *Cache
	cb *cachedBlock
}

// newBuf is a load's blockAlloc: it gives the block n bytes of slab memory.
func (l *blockLoad) newBuf(n int) []byte {
	if l.cb != nil {
		l.cb.unref() // not expected: one buffer per block
	}
	l.cb = l.c.newBlock(n)
	return l.cb.buf.B
}

// entryOverhead is what each cached block costs on the Go heap besides its
// slab memory, charged to the capacity with it: its cachedBlock (80
// bytes), its CLOCK ring pointer (8) and one or two hash table slots (8
// each), rounded up with the slices' growth slack.
const entryOverhead = 128

// CacheMetrics is a snapshot of a cache's counters.
type CacheMetrics struct {
	Hits, Misses uint64
	// SizeBytes is the memory the blocks held take up (each block's slab
	// size class, a little above its length).
	SizeBytes int64
}

// NewCache returns a cache holding at most about capacityBytes of blocks,
// counting each block's slab class and its bookkeeping (entryOverhead),
// less the index and filter memory of the Readers open on it (charge.go).
// A capacity <= 0 yields a cache that holds nothing but still counts misses.
func NewCache(capacityBytes int64) *Cache {
	c := &Cache{}
	if capacityBytes <= 0 {
		return c
	}
	c.alloc = slab.New()
	c.windows = new(windowPool)
	c.capacity, c.applied = capacityBytes, capacityBytes
	c.c = newClockIndex(capacityBytes, func(cb *cachedBlock, w int64) {
		c.size.Add(-(w - entryOverhead))
		cb.unref()
	})
	return c
}

// Close empties the cache and stops it from caching: blocks that readers
// still hold stay valid until released, and their memory is returned then;
// so are the read buffers of read-ahead fetches still running.
// Readers may go on using a closed cache; they read every block from its
// file. Close is idempotent; a nil Cache's Close does nothing.
func (c *Cache) Close() {
	if c == nil || c.c == nil || c.closed.Swap(true) {
		return
	}
	c.c.clear()
	c.alloc.Close()
	c.windows.close()
}

// windowPool returns the pool of read-ahead window buffers of c, nil if c
// is nil or has no capacity (each window then maps a buffer of its own).
func (c *Cache) windowPool() *windowPool {
	if c == nil {
		return nil
	}
	return c.windows
}

// AllocStats returns the counters of the slab allocator behind the cache
// (zero for a cache of capacity 0). Tests use it to check that every block
// is given back.
func (c *Cache) AllocStats() slab.Stats {
	if c == nil || c.alloc == nil {
		return slab.Stats{}
	}
	return c.alloc.Stats()
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

// usable reports whether c caches blocks and hands out slab memory: it
// is not nil, has a capacity and is not closed.
func (c *Cache) usable() bool {
	return c != nil && c.c != nil && !c.closed.Load()
}

// lookup returns a reference to the cached block for k, if the cache holds
// one that is not being freed.
func (c *Cache) lookup(k cacheKey) (blockRef, bool) {
	if cb, ok := c.c.get(k); ok {
		return blockRef{b: cb.buf.B, c: cb}, true
	}
	return blockRef{}, false
}

func (c *Cache) get(k cacheKey) (blockRef, bool) {
	if c == nil {
		return blockRef{}, false
	}
	if c.c != nil {
		if b, ok := c.lookup(k); ok {
			c.hits.add(k.stripe())
			return b, true
		}
	}
	c.misses.add(k.stripe())
	return blockRef{}, false
}

// set copies block b into slab memory, inserts it and returns a reference
// to it for the caller. If the cache is disabled or closed, it returns b
// itself (a Go heap block, nothing to release).
func (c *Cache) set(k cacheKey, b []byte) blockRef {
	if c == nil || c.c == nil || len(b) == 0 || c.closed.Load() {
		return blockRef{b: b}
	}
	cb := c.newBlock(len(b))
	copy(cb.buf.B, b)
	return c.insert(k, cb)
}

// newBlock returns an uncached block of n bytes of slab memory, with one
// reference: its creator's.
func (c *Cache) newBlock(n int) *cachedBlock {
	cb := &cachedBlock{buf: c.alloc.Alloc(n), alloc: c.alloc}
	cb.refs.Store(1)
	return cb
}

// insert adds cb, which holds one reference (the caller's), to the cache
// under k and returns the caller's reference to it. If k is already cached
// (or cb is larger than a cache shard's whole budget) cb stays out of the
// cache: the caller's reference is then its only one, and the memory is
// freed at its release.
func (c *Cache) insert(k cacheKey, cb *cachedBlock) blockRef {
	cb.refs.Add(1) // the cache's
	n := int64(cap(cb.buf.B))
	c.size.Add(n)
	if !c.c.add(k, cb, n+entryOverhead) {
		c.size.Add(-n)
		cb.refs.Add(-1)
		return blockRef{b: cb.buf.B, c: cb}
	}
	if c.closed.Load() {
		// Close may have emptied the cache before the insert: take it out
		// again so its memory is not left behind.
		c.c.remove(k)
	}
	return blockRef{b: cb.buf.B, c: cb}
}

// load returns the block for k from read, caching it; concurrent loads of
// the same k share one call of read, and a load that starts after another
// cached k returns the cached block. read decodes the block into a buffer
// from the allocator it is given (slab memory). c must have a backing
// cache.
func (c *Cache) load(k cacheKey, read func(blockAlloc) ([]byte, error)) (blockRef, error) {
	c.loadMu.Lock()
	if l, ok := c.loading[k]; ok {
		c.loadMu.Unlock()
		l.wg.Wait()
		if l.err != nil {
			return blockRef{}, l.err
		}
		if l.b.c == nil || l.b.c.tryRef() {
			return l.b, nil
		}
		// Evicted and freed since: read it again.
		return c.load(k, read)
	}
	// A load that finished between the caller's miss and here.
	if b, ok := c.lookup(k); ok {
		c.loadMu.Unlock()
		return b, nil
	}
	if c.loading == nil {
		c.loading = make(map[cacheKey]*blockLoad)
	}
	l := &blockLoad{c: c}
	l.wg.Add(1)
	c.loading[k] = l
	c.loadMu.Unlock()
	defer func() {
		c.loadMu.Lock()
		delete(c.loading, k)
		c.loadMu.Unlock()
		l.wg.Done()
	}()
	var alloc blockAlloc
	if !c.closed.Load() {
		alloc = l.newBuf
	}
	b, err := read(alloc)
	if err != nil {
		if l.cb != nil {
			l.cb.unref()
		}
		l.err = err
		return blockRef{}, err
	}
	l.b = c.adopt(k, l.cb, b)
	return l.b, nil
}

// adopt caches block b for k, which a load decoded with cb as its slab
// buffer (nil if it had none), and returns the caller's reference: to cb
// itself if b lies in it (the caller's alone if the cache is closed),
// else to a copy of b (decoded somewhere else: a block too large for the
// pooled read buffer, stored uncompressed), cb being freed.
func (c *Cache) adopt(k cacheKey, cb *cachedBlock, b []byte) blockRef {
	if cb != nil && len(b) > 0 && len(b) == len(cb.buf.B) && &b[0] == &cb.buf.B[0] {
		if c.closed.Load() {
			return blockRef{b: b, c: cb}
		}
		return c.insert(k, cb)
	}
	if cb != nil {
		cb.unref()
	}
	return c.set(k, b)
}

// soloLoad is the state of a miss read without sharing (ReaderOptions.
// IndependentMisses): the slab block the read decodes into. Pooled, with
// its blockAlloc bound once, so that such a miss allocates nothing on the
// Go heap but the block's cachedBlock.
type soloLoad struct {
	l     blockLoad
	alloc blockAlloc
}

var soloLoads = sync.Pool{New: func() any {
	s := new(soloLoad)
	s.alloc = s.l.newBuf
	return s
}}

// soloLoader returns a soloLoad for a read into c's slab memory.
func (c *Cache) soloLoader() *soloLoad {
	s := soloLoads.Get().(*soloLoad)
	s.l.c = c
	return s
}

// finishSolo caches the block for k that a read with s's allocator
// returned (b, err) and returns a reference to it, or to the copy another
// reader cached first (then b's block is freed at the caller's release);
// it gives s back to the pool.
func (c *Cache) finishSolo(k cacheKey, s *soloLoad, b []byte, err error) (blockRef, error) {
	cb := s.l.cb
	s.l.cb, s.l.c = nil, nil
	soloLoads.Put(s)
	if err != nil {
		if cb != nil {
			cb.unref()
		}
		return blockRef{}, err
	}
	return c.adopt(k, cb, b), nil
}
