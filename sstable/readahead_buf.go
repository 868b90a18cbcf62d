package sstable

// Read buffers of read-ahead windows.
//
// A window's stored bytes are read with one ReadAt into a buffer that is
// needed until its blocks are checked and decoded, which happens as the
// iterator reaches them: the window owns the buffer and gives it back when
// it is freed (raWindow.freeBlocks). decodeBlock copies even an
// uncompressed block out, and an error names offsets, never bytes, so
// nothing refers to the buffer after that. A scan goes through a window of
// up to ReadAhead bytes every few blocks.
//
// The buffers live outside the Go heap (internal/manual): on the heap, a
// buffer in use or waiting in a sync.Pool counted toward the GC's heap goal
// and so cost up to twice its size in resident memory, and a pool emptied
// by a collection made the next windows allocate afresh (bench/HISTORY.md,
// "Read path Go heap (branch scanheap)"). Mapping a buffer per window would cost a system
// call and page faults per window, so the block cache owns a windowPool
// that recycles them through a small free list per power-of-two size
// class, from initialReadAhead up to maxPooledWindow, holding at most
// maxIdleWindowBytes in all; a buffer that does not fit is unmapped. A
// window above maxPooledWindow, or read by a Reader without a cache, gets
// a mapping of its own, unmapped after its fetch (one system call pair per
// 64 KiB or more read).
//
// Every buffer is owned by exactly one window from get to put, which either
// keeps it on the free list (owned by the list, handed to one later fetch)
// or frees it; the cache's Close frees the list and makes every later put
// free its buffer. So a buffer is never freed twice or while a fetch uses
// it, and once the cache is closed and its fetches are done every buffer
// is unmapped.

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/internal/manual"
)

// maxPooledWindow bounds the window read buffers kept for reuse: the
// default read-ahead on an object store (Options.ReadAheadSize).
const maxPooledWindow = 1 << 20

// maxIdleWindowBytes bounds the bytes of the free buffers kept for reuse:
// enough for the windows of a couple of scans running at once.
const maxIdleWindowBytes = 2 << 20

// windowClasses is the number of pooled size classes: initialReadAhead,
// twice that, ..., maxPooledWindow.
const windowClasses = 5

// windowPool is a free list of window read buffers. A nil *windowPool
// keeps nothing: get maps and put unmaps.
type windowPool struct {
	mu     sync.Mutex
	free   [windowClasses][][]byte // len 0, cap the class size
	idle   int                     // bytes in free
	closed bool
}

// windowMaps counts the buffers ever mapped, for tests.
var windowMaps atomic.Int64

// windowClass returns the pool class for a buffer of n bytes, or -1 if it
// is above maxPooledWindow.
func windowClass(n int) int {
	if n > maxPooledWindow {
		return -1
	}
	if n <= initialReadAhead {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(initialReadAhead-1))
}

// get returns a buffer of length n (n > 0) outside the Go heap, recycled
// when n is at most maxPooledWindow. Give it back with put, exactly once,
// once nothing refers to its bytes.
func (p *windowPool) get(n int) []byte {
	c := windowClass(n)
	if c < 0 || p == nil {
		windowMaps.Add(1)
		return manual.NewFor(manual.PurposeReadAhead, n)
	}
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		b := p.free[c][k-1]
		p.free[c][k-1] = nil
		p.free[c] = p.free[c][:k-1]
		p.idle -= cap(b)
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	windowMaps.Add(1)
	return manual.NewFor(manual.PurposeReadAhead, initialReadAhead<<c)[:n]
}

// put recycles or frees a buffer from get.
func (p *windowPool) put(b []byte) {
	if c := windowClass(cap(b)); p != nil && c >= 0 && cap(b) == initialReadAhead<<c {
		p.mu.Lock()
		if !p.closed && p.idle+cap(b) <= maxIdleWindowBytes {
			p.free[c] = append(p.free[c], b[:0])
			p.idle += cap(b)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	manual.FreeFor(manual.PurposeReadAhead, b)
}

// close frees the buffers on the free list and makes put free every buffer
// given back from now on.
func (p *windowPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for c := range p.free {
		for i, b := range p.free[c] {
			manual.FreeFor(manual.PurposeReadAhead, b)
			p.free[c][i] = nil
		}
		p.free[c] = nil
	}
	p.idle = 0
}
