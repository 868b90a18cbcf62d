// Package slab hands out byte buffers for cached blocks from large slabs
// allocated outside the Go heap (internal/manual).
//
// Mapping memory costs a system call, and so does unmapping it, so mapping
// every 4 KiB block on its own would cost two syscalls per cache miss and
// eviction. An Allocator instead maps slabs of SlabSize bytes and cuts each
// into equal blocks of one size class:
//
//	class sizes:  128-byte steps up to 8 KiB    (128, 256, ... 8192)
//	              512-byte steps up to 16 KiB   (8704, ... 16384)
//	              4 KiB steps up to 64 KiB      (20480, ... 65536)
//	              powers of two up to 256 KiB   (131072, 262144)
//	larger:       a mapping of its own, rounded up to 4 KiB, unmapped on Free
//
// Data blocks end before the row that would take them past the block size
// (4 KiB by default), so most decode to just under it and fit the 4096-byte
// class. Tables written before that rule cut a block once it reached the
// block size, so their blocks are that size plus part of one row; the
// 128-byte steps up to 8 KiB keep the space lost to rounding small for
// those (a 4128-4134-byte block takes the 4224-byte class, where 512-byte
// steps would round it to 4608).
//
// Each slab keeps a stack of its free blocks and a count of live ones. A
// class allocates from its slabs with free blocks; a slab whose last block is
// freed is unmapped unless it is the class's only empty slab (kept so that a
// class oscillating around a slab boundary does not map and unmap on every
// miss). A kept slab's pages past its first keptResident bytes are given
// back to the kernel (madvise), so that it is mapped but not resident.
// Close unmaps the empty slabs and makes every later emptied slab be
// unmapped at once, so memory of an Allocator whose buffers were all freed
// is all returned.
//
// In builds with the race detector, freed blocks are overwritten with a
// poison pattern, so that a reader that uses a block after it was freed and
// reused reads visibly wrong bytes (which checksums and tests catch) rather
// than plausible ones.
package slab

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/internal/manual"
)

// SlabSize is the size of the slabs the size classes are cut from.
const SlabSize = 1 << 20

// MaxClassSize is the largest size class; larger buffers get a mapping of
// their own.
const MaxClassSize = 256 << 10

// pageSize rounds the sizes of buffers above MaxClassSize.
const pageSize = 4 << 10

// classSizes lists the size classes, ascending.
var classSizes = func() []int {
	var s []int
	for n := 128; n <= 8<<10; n += 128 {
		s = append(s, n)
	}
	for n := 8<<10 + 512; n <= 16<<10; n += 512 {
		s = append(s, n)
	}
	for n := 20 << 10; n <= 64<<10; n += 4 << 10 {
		s = append(s, n)
	}
	for n := 128 << 10; n <= MaxClassSize; n *= 2 {
		s = append(s, n)
	}
	return s
}()

// classOf returns the index of the smallest class holding n bytes (n must
// be in 1..MaxClassSize).
func classOf(n int) int {
	switch {
	case n <= 8<<10:
		return (n - 1) / 128
	case n <= 16<<10:
		return 64 + (n-(8<<10)-1)/512
	case n <= 64<<10:
		return 80 + (n-(16<<10)-1)/(4<<10)
	case n <= 128<<10:
		return 92
	default:
		return 93
	}
}

// inUse counts the class-size bytes of the Bufs handed out and not freed by
// every Allocator of the process (BufBytes summed), for InUse.
var inUse atomic.Int64

// InUse reports the bytes of the buffers handed out and not yet freed by
// all Allocators of the process, by the memory they take up (class size, or
// the rounded mapping of a large buffer). Set against the slab bytes mapped
// (manual.PurposeBlockCache) it shows the memory slabs hold but no buffer
// uses.
func InUse() int64 { return inUse.Load() }

// poison, if set, makes Free overwrite the freed bytes (see the package
// doc). It is set in race-detector builds.
var poison = raceEnabled

// PoisonByte is the pattern freed blocks are filled with when poisoning.
const PoisonByte = 0xDB

// Poison fills b with PoisonByte when poisoning is on (race-detector
// builds), so that a reader holding b past its release reads the pattern
// rather than plausible old data. Other hand-managed memory that is freed
// for reuse (memtable arena chunks) uses it too.
func Poison(b []byte) {
	if poison {
		for i := range b {
			b[i] = PoisonByte
		}
	}
}

// Buf is a buffer from an Allocator. B has the length asked for; its
// capacity is the size of its class and must not be used beyond len. A zero
// Buf is empty, and freeing it is a no-op.
type Buf struct {
	B []byte
	s *slab // nil for a buffer with a mapping of its own
	i int32 // block index within s
}

// slab is one mapping cut into blocks of one class.
type slab struct {
	mem   []byte
	class int
	free  []int32 // indices of free blocks below next
	next  int32   // blocks at and above next were never handed out
	live  int
	pidx  int // index in the class's partial list; -1 when full
}

func (s *slab) blocks() int32 { return int32(len(s.mem) / classSizes[s.class]) }

func (s *slab) hasFree() bool { return len(s.free) > 0 || s.next < s.blocks() }

type class struct {
	partial []*slab // slabs with a free block
	empty   int     // slabs in partial with no live block
}

// Stats are an Allocator's counters.
type Stats struct {
	// Slabs and SlabBytes count the slabs mapped; Large and LargeBytes the
	// buffers above MaxClassSize, each mapped on its own.
	Slabs, Large          int64
	SlabBytes, LargeBytes int64
	// Bufs and BufBytes count the buffers handed out and not freed, by their
	// class size (the memory they take up in their slab).
	Bufs, BufBytes int64
	// SlabMaps counts the slabs ever mapped (a system call each, and page
	// faults as their pages are first written).
	SlabMaps int64
}

// Empty reports whether the counters show no memory held: no slab, no
// large buffer, no buffer handed out.
func (s Stats) Empty() bool {
	return s.Slabs == 0 && s.Large == 0 && s.SlabBytes == 0 && s.LargeBytes == 0 && s.Bufs == 0 && s.BufBytes == 0
}

// Allocator hands out Bufs. It is safe for concurrent use. The zero value is
// not usable; use New.
type Allocator struct {
	mu      sync.Mutex
	classes []class
	stats   Stats
	closed  bool
}

// New returns an empty Allocator.
func New() *Allocator {
	return &Allocator{classes: make([]class, len(classSizes))}
}

// Alloc returns a buffer of n bytes (n > 0) whose contents are unspecified.
// It must be released with Free exactly once.
func (a *Allocator) Alloc(n int) Buf {
	if n <= 0 {
		panic(fmt.Sprintf("slab: Alloc of %d bytes", n))
	}
	if n > MaxClassSize {
		m := manual.NewFor(manual.PurposeBlockCache, (n+pageSize-1)/pageSize*pageSize)
		a.mu.Lock()
		a.stats.Large++
		a.stats.LargeBytes += int64(len(m))
		a.stats.Bufs++
		a.stats.BufBytes += int64(len(m))
		inUse.Add(int64(len(m)))
		a.mu.Unlock()
		return Buf{B: m[:n]}
	}
	ci := classOf(n)
	size := classSizes[ci]
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &a.classes[ci]
	if len(c.partial) == 0 {
		s := &slab{mem: manual.NewFor(manual.PurposeBlockCache, SlabSize), class: ci, pidx: 0}
		c.partial = append(c.partial, s)
		c.empty++
		a.stats.Slabs++
		a.stats.SlabBytes += SlabSize
		a.stats.SlabMaps++
	}
	s := c.partial[len(c.partial)-1]
	var i int32
	if k := len(s.free); k > 0 {
		i = s.free[k-1]
		s.free = s.free[:k-1]
	} else {
		i = s.next
		s.next++
	}
	if s.live == 0 {
		c.empty--
	}
	s.live++
	if !s.hasFree() {
		c.remove(s)
	}
	a.stats.Bufs++
	a.stats.BufBytes += int64(size)
	inUse.Add(int64(size))
	off := int(i) * size
	return Buf{B: s.mem[off : off+n : off+size], s: s, i: i}
}

// keptResident is how much of a class's kept empty slab stays resident:
// the blocks past it are given back to the kernel (slab.discard), so a
// class that once filled a slab does not hold its pages with no buffer in
// them, while a class whose live count oscillates around a slab boundary
// reuses the resident blocks at its start without a system call.
const keptResident = 64 << 10

// discard gives the pages of the empty slab s past keptResident back to the
// kernel and makes its blocks be handed out from the start again, the
// resident ones within keptResident first. The slab stays mapped. The
// caller holds the Allocator's mu.
func (s *slab) discard() {
	size := classSizes[s.class]
	keep := int32(keptResident / size) // blocks wholly within keptResident
	if s.next <= keep {
		return // every block handed out so far lies within keptResident
	}
	from := (int(keep)*size + pageSize - 1) / pageSize * pageSize
	if end := int(s.next) * size; end > from {
		manual.Discard(s.mem[from:end])
	}
	s.next, s.free = 0, s.free[:0]
}

// remove takes s out of c's partial list.
func (c *class) remove(s *slab) {
	last := len(c.partial) - 1
	c.partial[s.pidx] = c.partial[last]
	c.partial[s.pidx].pidx = s.pidx
	c.partial[last] = nil
	c.partial = c.partial[:last]
	s.pidx = -1
}

// Free releases b. b's bytes must not be used afterwards.
func (a *Allocator) Free(b Buf) {
	if b.B == nil {
		return
	}
	Poison(b.B[:cap(b.B)])
	s := b.s
	if s == nil {
		n := int64(cap(b.B))
		manual.FreeFor(manual.PurposeBlockCache, b.B)
		a.mu.Lock()
		a.stats.Large--
		a.stats.LargeBytes -= n
		a.stats.Bufs--
		a.stats.BufBytes -= n
		inUse.Add(-n)
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &a.classes[s.class]
	if s.pidx < 0 {
		s.pidx = len(c.partial)
		c.partial = append(c.partial, s)
	}
	s.free = append(s.free, b.i)
	s.live--
	a.stats.Bufs--
	a.stats.BufBytes -= int64(classSizes[s.class])
	inUse.Add(-int64(classSizes[s.class]))
	if s.live == 0 {
		c.empty++
		if a.closed || c.empty > 1 {
			a.release(c, s)
		} else {
			s.discard()
		}
	}
}

// release unmaps the empty slab s of class c.
func (a *Allocator) release(c *class, s *slab) {
	c.remove(s)
	c.empty--
	manual.FreeFor(manual.PurposeBlockCache, s.mem)
	s.mem = nil
	a.stats.Slabs--
	a.stats.SlabBytes -= SlabSize
}

// Close unmaps the empty slabs and makes the Allocator unmap every slab
// that empties from now on, so that once every Buf is freed the Allocator
// holds no memory. Alloc still works after Close.
func (a *Allocator) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for ci := range a.classes {
		c := &a.classes[ci]
		for i := len(c.partial) - 1; i >= 0; i-- {
			if s := c.partial[i]; s.live == 0 {
				a.release(c, s)
			}
		}
	}
}

// Stats returns the Allocator's counters.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// ClassSize returns the memory a buffer of n bytes takes up: its class size,
// or n rounded up to 4 KiB above MaxClassSize.
func ClassSize(n int) int {
	if n > MaxClassSize {
		return (n + pageSize - 1) / pageSize * pageSize
	}
	return classSizes[classOf(n)]
}
