package memtable

import (
	"unsafe"

	"github.com/mayflydb/mayfly/internal/manual"
)

// Sorted runs. A run is an array of entries in ascending internal-key order
// outside the Go heap, carved from arena chunks (chunkEntries to a chunk,
// taken from the memtable's Pool) and searched with fences (see
// fenceShift). It holds two indexes of a memtable:
//
//   - the tail of a live memtable: the entries above every entry of its
//     B-tree, appended in ascending order (see insert in memtable.go), so
//     that ascending keys cost one comparison and an append instead of a
//     descent of the tree;
//   - the frozen array of a frozen memtable (frozen.go).
//
// Its chunks are counted under manual.PurposeMemtableFrozen in both roles.

// entrySize is the bytes of one entry in a run.
const entrySize = int(unsafe.Sizeof(entry{}))

// chunkEntries is how many entries one arena chunk holds.
const chunkEntries = arenaChunk / entrySize

// run is a sorted array of entries; the zero value is empty. Its entries
// change only under the memtable's write lock, and readers read them under
// the read lock.
type run struct {
	chunks [][]entry // chunkEntries entries each, carved from bufs
	bufs   [][]byte
	n      int
	fences []uint64 // see fenceShift
	// lazy: new chunks are mapped fresh and made resident page by page as
	// entries fill them, rather than taken whole from the pool (a tail:
	// most tails of random-order writes hold a few entries, which then
	// cost a page, not a chunk). Such chunks are unmapped when freed, not
	// pooled: the pool holds resident chunks only.
	lazy bool
}

// at returns entry i.
func (r *run) at(i int) entry { return r.chunks[i/chunkEntries][i%chunkEntries] }

// last returns the greatest entry; the run must not be empty.
func (r *run) last() entry { return r.at(r.n - 1) }

// push appends e, which must sort after every entry of r, taking a chunk
// (see lazy) when the last one is full.
func (r *run) push(pool *Pool, e entry) {
	if r.n == len(r.chunks)*chunkEntries {
		r.grow(pool)
	}
	if r.n&(1<<fenceShift-1) == 0 {
		r.fences = append(r.fences, e.k0)
	}
	r.chunks[r.n/chunkEntries][r.n%chunkEntries] = e
	r.n++
}

// reserve makes room for n entries in all, so that pushing them takes no
// chunk and grows no slice.
func (r *run) reserve(pool *Pool, n int) {
	chunks := (n + chunkEntries - 1) / chunkEntries
	r.chunks = append(make([][]entry, 0, chunks), r.chunks...)
	r.bufs = append(make([][]byte, 0, chunks), r.bufs...)
	r.fences = append(make([]uint64, 0, (n+1<<fenceShift-1)>>fenceShift), r.fences...)
	for len(r.chunks) < chunks {
		r.grow(pool)
	}
}

// buildFences sets the fences of r's n entries, filled in place.
func (r *run) buildFences() {
	r.fences = r.fences[:0]
	for i := 0; i < r.n; i += 1 << fenceShift {
		r.fences = append(r.fences, r.at(i).k0)
	}
}

// grow adds an empty chunk.
func (r *run) grow(pool *Pool) {
	var b []byte
	if r.lazy {
		b = manual.NewFor(manual.PurposeMemtableFrozen, arenaChunk)
	} else {
		b = pool.get(manual.PurposeMemtableFrozen)
	}
	r.bufs = append(r.bufs, b)
	r.chunks = append(r.chunks, unsafe.Slice((*entry)(unsafe.Pointer(unsafe.SliceData(b))), chunkEntries))
}

// reset empties r, handing all its chunks but the first to pool (keep:
// every chunk) for the entries pushed next. No reader may still reach its
// entries by position (iterators keep copies of entries, not positions).
func (r *run) reset(pool *Pool, keep bool) {
	r.n = 0
	r.fences = r.fences[:0]
	if keep || len(r.bufs) <= 1 {
		return
	}
	r.drop(pool, r.bufs[1:])
	clear(r.bufs[1:])
	clear(r.chunks[1:])
	r.bufs, r.chunks = r.bufs[:1], r.chunks[:1]
}

// free gives back every chunk (see drop) and empties r, keeping its kind.
func (r *run) free(pool *Pool) {
	r.drop(pool, r.bufs)
	*r = run{lazy: r.lazy}
}

// drop gives back chunks of r: unmapped if r is lazy, else to pool.
func (r *run) drop(pool *Pool, bufs [][]byte) {
	if !r.lazy {
		pool.release(manual.PurposeMemtableFrozen, bufs)
		return
	}
	for _, b := range bufs {
		manual.FreeFor(manual.PurposeMemtableFrozen, b)
	}
}

// fenceShift sets the spacing of a run's fences: fences[j] is the k0 of
// entry j<<fenceShift. A search first narrows the run to the 32-entry
// blocks whose first 8 key bytes can match, with integer compares over a
// small dense slice that stays in cache, and only then compares entries
// (which may touch the arena) within them. Entries are in internal-key
// order, so their k0 never decreases: every entry with k0 below the search
// key's sorts before it, every one above after.
//
// The fences cost 8 heap bytes per 32 rows (10 KiB for an 8 MiB memtable
// of 100-byte values).
const fenceShift = 5

// fenceRange returns [lo, hi), the part of r that holds every entry whose
// k0 equals k0, and the position where such entries would be.
func (r *run) fenceRange(k0 uint64) (lo, hi int) {
	f := r.fences
	// a: the first fence >= k0; entries before block a-1 have k0 < k0.
	a, b := 0, len(f)
	for a < b {
		mid := int(uint(a+b) >> 1)
		if f[mid] < k0 {
			a = mid + 1
		} else {
			b = mid
		}
	}
	// c: the first fence > k0; entries from block c on have k0 > k0.
	c, d := a, len(f)
	for c < d {
		mid := int(uint(c+d) >> 1)
		if f[mid] <= k0 {
			c = mid + 1
		} else {
			d = mid
		}
	}
	lo = max(a-1, 0) << fenceShift
	hi = min(c<<fenceShift, r.n)
	return lo, hi
}

// lowerBound returns the index of the first entry of r >= p. Caller holds
// mu.
func (m *Memtable) lowerBound(r *run, p entry) int {
	lo, hi := r.fenceRange(p.k0)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m.less(r.at(mid), p) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// upperBound returns the index of the first entry of r > p. Caller holds
// mu.
func (m *Memtable) upperBound(r *run, p entry) int {
	lo, hi := r.fenceRange(p.k0)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if !m.less(p, r.at(mid)) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// walkUp calls fn on the entries of r from index i up until fn returns
// false, and reports whether it ran off the end (fn never returned
// false). Caller holds mu.
func (r *run) walkUp(i int, fn func(entry) bool) bool {
	for ; i < r.n; i++ {
		if !fn(r.at(i)) {
			return false
		}
	}
	return true
}

// walkDown calls fn on the entries of r from index i down until fn returns
// false, and reports whether it ran off the start. Caller holds mu.
func (r *run) walkDown(i int, fn func(entry) bool) bool {
	for ; i >= 0; i-- {
		if !fn(r.at(i)) {
			return false
		}
	}
	return true
}
