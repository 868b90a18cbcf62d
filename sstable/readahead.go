package sstable

// Read-ahead for forward scans.
//
// On an object store every read is a ranged GET, so a scan that reads its
// 4 KiB data blocks one at a time is a chain of round trips. Data blocks are
// contiguous in the file (each followed by its trailer) and the index holds
// their handles, so an Iterator stepping forward from one data block to the
// next reads a window of the following blocks with a single ReadAt:
//
//	SeekGE -> block k           read alone (a seek that needs one block costs one read)
//	Next   -> block k+1         window W1 = blocks k+1.. up to initialReadAhead bytes, read now
//	Next   -> middle block of W1 W2 (the next blocks, twice W1's bytes) fetched in the background
//	Next   -> first block of W2  wait for W2 if still in flight; W3 (twice W2) starts at W2's middle block
//
// Rules:
//   - With ReaderOptions.ReadAheadAfter = n, the first n forward steps
//     after a reset read their blocks alone; windows start at step n+1.
//   - Windows start at initialReadAhead bytes (or the cap if smaller) and
//     double with every window up to ReaderOptions.ReadAhead. Loading a
//     block that is not in a window other than by a forward step (First,
//     Last, SeekGE, SeekLT, Prev) drops the windows and starts over.
//   - A window holds whole blocks only, all contiguous, none past the data
//     blocks' end. It is larger than the cap only when its single block is.
//     A handle that does not continue the window ends it. (Every handle was
//     checked to lie within the data blocks when the point index was built,
//     pointindex.go.)
//   - A window's stored bytes stay in its read buffer; each block is checked
//     (CRC) and decoded like any other when the iterator reaches it, straight
//     into the cache's slab memory (cache.go) when there is a cache, so that
//     reaching a block hands it to the cache without a copy. A scan that
//     ends inside a window thus decodes only the blocks it reached, and a
//     block the cache already holds is taken from the cache, not decoded
//     from the window (takeBlock). A
//     compaction iterator, which reaches every block, has the fetching
//     goroutine decode them all. Blocks enter the block cache only when the
//     iterator reaches them, so read-ahead caches nothing a scan without it
//     would not have cached; a compaction iterator's blocks never enter it,
//     and are freed when the iterator moves past them. A window's buffer
//     and its blocks not reached are freed with the window (by the fetching
//     goroutine if it is still running when the window is dropped).
//   - An error reading or checking a fetched block surfaces at the iterator
//     when it reaches that block, where reading the block alone would have
//     reported it; a short read fails only the blocks it cut off.
//   - The next window is fetched in the background once the iterator
//     reaches the middle block of the current one (its second, for a
//     window of two): a scan that ends in the first half of a window never
//     reads the next, and the rest of the window leaves the fetch time to
//     land (a window's blocks are decoded one by one as they are reached).
//   - At most one background fetch per window is started, so an iterator
//     holds at most two windows. Close waits for every fetch it started.
//   - Point lookups (Reader.Get) never read ahead.

import (
	"sort"
	"sync"
	"sync/atomic"
)

// initialReadAhead is the size of the first window after a reset.
const initialReadAhead = 64 << 10

// raFetches counts background fetches running, for tests.
var raFetches atomic.Int64

// raDecoded counts the blocks decoded from windows, for tests.
var raDecoded atomic.Int64

// testHookCloseWait, if set, runs when Close is about to wait for
// background fetches.
var testHookCloseWait func()

// raWindow is a run of contiguous data blocks fetched with one read.
type raWindow struct {
	handles []blockHandle
	// raw holds the window's stored bytes from one ReadAt (n of them read,
	// readErr why not all), from pool; it is given back when the window is
	// freed. A block is checked and decoded from it by decode, when the
	// iterator reaches it (or, for a compaction iterator, by the fetch).
	raw     []byte
	n       int
	readErr error
	pool    *windowPool
	cache   *Cache // decode into its slab memory; nil: the Go heap
	alloc   blockAlloc
	cur     int // the block being decoded, for alloc
	decoded []bool
	blocks  [][]byte // decoded blocks
	errs    []error
	// slab holds the blocks decoded into slab memory, each with one
	// reference, the window's; take hands it to the iterator and sets
	// taken. Blocks left are freed when the window is dropped.
	slab  []*cachedBlock
	taken []bool
	done  chan struct{} // nil for a window fetched by the iterator itself
	// mu guards fetched and dropped: whichever of the fetch and the drop
	// comes second frees the blocks left.
	mu               sync.Mutex
	fetched, dropped bool
}

// fetchDone marks w's fetch finished, freeing its blocks if it was dropped
// meanwhile.
func (w *raWindow) fetchDone() { w.settle(true) }

// drop gives up w: its blocks not taken are freed now, or by its fetch
// when it finishes. A nil w is ignored.
func (w *raWindow) drop() {
	if w != nil {
		w.settle(false)
	}
}

// settle records the end of w's fetch (fetch) or its drop; whichever of
// the two comes second frees the blocks left.
func (w *raWindow) settle(fetch bool) {
	w.mu.Lock()
	if fetch {
		w.fetched = true
	} else {
		w.dropped = true
	}
	free := w.fetched && w.dropped
	w.mu.Unlock()
	if free {
		w.freeBlocks()
	}
}

func (w *raWindow) freeBlocks() {
	for i, cb := range w.slab {
		if cb != nil && !w.taken[i] {
			cb.unref()
		}
		w.slab[i], w.blocks[i] = nil, nil
	}
	if w.raw != nil {
		w.pool.put(w.raw)
		w.raw = nil
	}
}

// find returns the index of the block at off in w, or -1.
func (w *raWindow) find(off uint64) int {
	i := sort.Search(len(w.handles), func(i int) bool { return w.handles[i].offset >= off })
	if i < len(w.handles) && w.handles[i].offset == off {
		return i
	}
	return -1
}

// fetchWindow reads w's blocks with one ReadAt, to be decoded into slab
// memory from c if c is not nil; with all, it decodes every block now (a
// compaction reads them all), else each when the iterator reaches it, so
// that a short scan does not pay for blocks past its end. It marks w
// fetched.
func (r *Reader) fetchWindow(w *raWindow, c *Cache, all bool) {
	defer w.fetchDone()
	first, last := w.handles[0], w.handles[len(w.handles)-1]
	w.pool = r.cache.windowPool()
	w.raw = w.pool.get(int(last.offset + last.length + trailerLen - first.offset))
	w.n, w.readErr = r.f.ReadAt(w.raw, int64(first.offset))
	w.decoded = make([]bool, len(w.handles))
	w.blocks = make([][]byte, len(w.handles))
	w.errs = make([]error, len(w.handles))
	w.slab = make([]*cachedBlock, len(w.handles))
	w.taken = make([]bool, len(w.handles))
	if c != nil {
		w.cache = c
		w.alloc = func(n int) []byte {
			w.slab[w.cur] = w.cache.newBlock(n)
			return w.slab[w.cur].buf.B
		}
	}
	if all {
		for i := range w.handles {
			r.decode(w, i)
		}
	}
}

// decode checks and decodes block i of the fetched window w, once.
func (r *Reader) decode(w *raWindow, i int) {
	if w.decoded[i] {
		return
	}
	w.decoded[i] = true
	raDecoded.Add(1)
	h := w.handles[i]
	lo, hi := h.offset-w.handles[0].offset, h.offset-w.handles[0].offset+h.length+trailerLen
	if hi > uint64(w.n) {
		w.errs[i] = r.readErr(int64(h.offset), w.readErr)
		return
	}
	w.cur = i
	w.blocks[i], w.errs[i] = r.decodeBlock(w.raw[lo:hi:hi], h, "data", true, w.alloc)
	if cb := w.slab[i]; cb != nil && (w.errs[i] != nil || len(w.blocks[i]) == 0 || &w.blocks[i][0] != &cb.buf.B[0]) {
		cb.unref() // failed, or decoded elsewhere
		w.slab[i] = nil
	}
}

// slabCache returns the cache into whose slab memory blocks read ahead by
// it are decoded, or nil if they stay on the Go heap (no cache, or a closed
// one). A compaction iterator's blocks are decoded there too, but never
// inserted: each is freed when the iterator moves past it.
func (it *Iterator) slabCache() *Cache {
	if c := it.r.cache; c.usable() {
		return c
	}
	return nil
}

// dataBlock returns the data block at h, from the cache if it holds it.
func (it *Iterator) dataBlock(h blockHandle) (blockRef, error) {
	if b, ok := it.r.cachedBlock(h); ok {
		return b, nil
	}
	return it.readDataBlock(h)
}

// readDataBlock reads the data block at h, which the cache missed: through
// the cache, or for a compaction iterator into slab memory it alone holds.
func (it *Iterator) readDataBlock(h blockHandle) (blockRef, error) {
	if it.noFill && it.r.cache.usable() {
		return it.ra.loader.read(it.r, h)
	}
	return it.r.readDataBlock(h, !it.noFill)
}

// slabLoader decodes the blocks a compaction iterator misses into the
// cache's slab memory without caching them: the iterator holds the only
// reference, and its release frees the block. One per iterator, made once,
// so that a block read allocates nothing on the Go heap but its
// cachedBlock.
type slabLoader struct {
	c     *Cache
	cb    *cachedBlock
	alloc blockAlloc // newBuf, bound once
}

// newBuf is the loader's blockAlloc.
func (l *slabLoader) newBuf(n int) []byte {
	l.cb.unref() // not expected: one buffer per block
	l.cb = l.c.newBlock(n)
	return l.cb.buf.B
}

// read reads and decodes the data block at h of r, whose cache must be
// usable.
func (l *slabLoader) read(r *Reader, h blockHandle) (blockRef, error) {
	if l.alloc == nil {
		l.alloc = l.newBuf
	}
	l.c, l.cb = r.cache, nil
	b, err := r.readBlockInto(h, "data", l.alloc)
	cb := l.cb
	l.cb = nil
	switch {
	case err != nil:
		cb.unref()
		return blockRef{}, err
	case cb != nil && len(b) > 0 && len(b) == len(cb.buf.B) && &b[0] == &cb.buf.B[0]:
		return blockRef{b: b, c: cb}, nil
	default:
		// Decoded somewhere else (a large uncompressed block read into a
		// buffer of its own): keep that Go heap copy.
		cb.unref()
		return blockRef{b: b}, nil
	}
}

// readAhead is an Iterator's read-ahead state.
type readAhead struct {
	size    int         // size of the next window
	steps   int         // forward block steps since the last reset (counted up to ReadAheadAfter)
	idx     indexCursor // at the first index entry not yet in a window
	planned bool        // idx is positioned (after the last window planned)
	cur     *raWindow   // the window the iterator is in
	next    *raWindow   // the window after cur, maybe still being fetched
	wg      sync.WaitGroup
	loader  slabLoader // a compaction iterator's misses (not read-ahead state, but per iterator too)
}

// reset drops the windows (background fetches finish on their own; Close
// waits for them) and shrinks the window size back.
func (ra *readAhead) reset(maxSize int) {
	ra.size = min(initialReadAhead, maxSize)
	ra.steps = 0
	ra.cur.drop()
	ra.next.drop()
	ra.planned, ra.cur, ra.next = false, nil, nil
}

// plan takes the index entries at idx into a window of at most size bytes
// (or one block), or returns nil if there are none left.
func (ra *readAhead) plan(size int) *raWindow {
	var hs []blockHandle
	var start, end uint64
	for ra.idx.valid() {
		h := ra.idx.handle()
		n := h.length + trailerLen
		if len(hs) > 0 && (h.offset != end || end-start+n > uint64(size)) {
			break
		}
		if len(hs) == 0 {
			start = h.offset
		}
		hs = append(hs, h)
		end = h.offset + n
		ra.idx.next()
	}
	if len(hs) == 0 {
		return nil
	}
	return &raWindow{handles: hs}
}

// grow doubles the window size up to maxSize.
func (ra *readAhead) grow(maxSize int) {
	ra.size = min(2*ra.size, maxSize)
}

// readBlock returns the data block at h, which the index iterator is at;
// forward says the iterator stepped to it from the block before.
func (it *Iterator) readBlock(h blockHandle, forward bool) (blockRef, error) {
	r, ra := it.r, &it.ra
	if it.raMax <= 0 {
		return it.dataBlock(h)
	}
	if b, err, ok := it.fromWindow(h); ok {
		return b, err
	}
	if !forward {
		ra.reset(it.raMax)
		return it.dataBlock(h)
	}
	if ra.steps < it.r.raAfter {
		// Not yet a long scan: a short range read should not fetch and
		// decode a window of blocks it will not reach.
		ra.steps++
		return it.dataBlock(h)
	}
	if b, ok := r.cachedBlock(h); ok {
		return b, nil
	}
	// A forward step out of the windows: fetch a window starting at h.
	ra.idx = it.index
	ra.planned = ra.idx.valid()
	var w *raWindow
	if ra.planned {
		w = ra.plan(ra.size)
	}
	if w == nil || w.handles[0] != h {
		ra.reset(it.raMax)
		return it.readDataBlock(h)
	}
	ra.grow(it.raMax)
	r.fetchWindow(w, it.slabCache(), it.noFill)
	ra.cur.drop()
	ra.next.drop()
	ra.cur, ra.next = w, nil
	return it.take(w, 0)
}

// fromWindow returns the block at h if a window holds it.
func (it *Iterator) fromWindow(h blockHandle) (b blockRef, err error, ok bool) {
	ra := &it.ra
	if w := ra.cur; w != nil {
		if i := w.find(h.offset); i >= 0 {
			b, err = it.take(w, i)
			return b, err, true
		}
	}
	if w := ra.next; w != nil {
		if i := w.find(h.offset); i >= 0 {
			ra.cur.drop()
			ra.cur, ra.next = w, nil
			b, err = it.take(w, i)
			return b, err, true
		}
	}
	return blockRef{}, nil, false
}

// take returns block i of window w, and starts the background fetch of
// the following window once the iterator reaches w's middle block (its
// second of two).
func (it *Iterator) take(w *raWindow, i int) (blockRef, error) {
	b, err := it.takeBlock(w, i)
	if err != nil {
		return blockRef{}, err
	}
	if i > 0 && i >= len(w.handles)/2 && w == it.ra.cur {
		it.prefetch()
	}
	return b, nil
}

// takeBlock returns block i of window w: from the cache if it holds the
// block, else decoded from the window once w's fetch is done. A block the
// cache holds (a scan over a range other scans read, the hot keys of a
// skewed workload) is thus not decoded again, allocated again and offered
// to the cache only to be dropped as a duplicate, and its take does not
// wait for the window's read; the window keeps its raw bytes, and decodes
// them if the iterator comes back to the block after the cache let it go.
// A compaction iterator's windows are decoded whole by their fetch, and
// it takes from them alone.
func (it *Iterator) takeBlock(w *raWindow, i int) (blockRef, error) {
	if !it.noFill {
		if b, ok := it.r.cachedBlock(w.handles[i]); ok {
			return b, nil
		}
	}
	if w.done != nil {
		<-w.done
	}
	it.r.decode(w, i)
	if err := w.errs[i]; err != nil {
		return blockRef{}, err
	}
	var b blockRef
	switch cb := w.slab[i]; {
	case w.taken[i]:
		// Taken before (the iterator came back to it): its memory is the
		// cache's or freed now; read it as any block.
		var err error
		if b, err = it.dataBlock(w.handles[i]); err != nil {
			return blockRef{}, err
		}
	case cb != nil && it.noFill:
		// The window's reference passes to the iterator, which frees the
		// block when it moves past it.
		w.taken[i] = true
		b = blockRef{b: cb.buf.B, c: cb}
	case cb != nil:
		w.taken[i] = true
		b = it.r.cache.insert(cacheKey{id: it.r.cacheID, off: w.handles[i].offset}, cb)
	case it.noFill:
		b = blockRef{b: w.blocks[i]}
	default:
		b = it.r.cacheBlock(w.handles[i], w.blocks[i])
	}
	return b, nil
}

// prefetch starts fetching the window after the last one planned, unless
// one is already waiting or there is nothing left to plan.
func (it *Iterator) prefetch() {
	r, ra := it.r, &it.ra
	if !ra.planned || ra.next != nil {
		return
	}
	w := ra.plan(ra.size)
	if w == nil {
		return
	}
	ra.grow(it.raMax)
	c, all := it.slabCache(), it.noFill
	w.done = make(chan struct{})
	ra.next = w
	ra.wg.Add(1)
	raFetches.Add(1)
	go func() {
		defer ra.wg.Done()
		defer close(w.done)
		defer raFetches.Add(-1)
		r.fetchWindow(w, c, all)
	}()
}

// closeReadAhead waits for the background fetches and drops the windows.
func (it *Iterator) closeReadAhead() {
	if testHookCloseWait != nil {
		testHookCloseWait()
	}
	it.ra.wg.Wait()
	it.ra.reset(it.raMax)
}
