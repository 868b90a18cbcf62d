package sstable

// Point index: the index block decoded once, on first use (lazy.go), for
// Get and iterators.
//
// A point lookup binary-searches the index for the first data block whose
// separator key is >= the seek key. Doing that on the stored index block
// decodes three varints at every probe; the point index instead keeps the
// separator keys back to back in one arena with their block handles already
// decoded, so a probe is one slice expression and one key comparison. It is
// built in memory from the (CRC-checked) index block and changes nothing on
// disk. Iterators walk it too (indexCursor, iterator.go), so a Reader keeps
// only this copy of its index, not the stored block as well.
//
// A binary search over thousands of separators touches a cold cache line
// at nearly every probe, so each separator also has an 8-byte head: the
// bytes of its user key that follow the prefix all separators share,
// zero-padded, as a big-endian integer. Heads sit in one dense array; a
// probe compares heads and reads the full key only when they are equal.
// The search is two-level: first over tops, every topStride-th head (one
// per 64-byte line of heads, an eighth of their size, so small enough to
// stay in the CPU cache between lookups), then within the one line of
// heads that group spans. A lookup thus touches one line of heads, where
// a binary search over all of them touched one cold line per probe of its
// last several levels.
//
// The arrays hold no pointers, so they are carved from one buffer outside
// the Go heap (metabuf.go), where a byte of index costs one byte of resident
// memory rather than about two. Its lifetime is a reference count: the
// Reader holds one from the load until Close, and each Get and iterator one
// while it reads; the last to let go frees the buffer, and no new reference
// can be taken after that.

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	"github.com/mayflydb/mayfly/format"
)

// pointIndex is the decoded index of a table. Its arrays are carved from one
// metadata buffer (metabuf.go: outside the Go heap unless small), laid out
// heads, tops, handles, ends, keys, so each array is aligned for its type
// (and, the buffer being line-aligned when it is outside the Go heap, each
// group of topStride heads fills one cache line).
//
// It is reference-counted: its builder holds the first reference (the
// Reader, or the compaction iterator a private one is built for) and every
// user (an iterator, a Get) takes one with tryRef for as long as it reads
// the arrays. The last unref frees the buffer, exactly once; after that
// tryRef fails, so no reader can start on freed memory.
type pointIndex struct {
	keys    []byte        // separator internal keys, back to back
	ends    []uint32      // end of key i in keys
	handles []blockHandle // handle of data block i
	common  []byte        // the user-key prefix every separator starts with
	heads   []uint64      // keyHead of each separator's user key
	tops    []uint64      // heads[topStride*j] for each j: the group leaders

	mem  metaBuf  // the buffer the arrays are carved from
	refs refCount // references; 0 once freed
}

// keyHead returns the 8 bytes of ukey after its first c (which it must
// have), zero-padded, big-endian. For keys sharing those c bytes,
// keyHead(a) < keyHead(b) implies a < b; equal heads decide nothing.
func keyHead(ukey []byte, c int) uint64 {
	var b [8]byte
	copy(b[:], ukey[c:])
	return binary.BigEndian.Uint64(b[:])
}

// carve returns the first n elements of b as a []T and the rest of b. b
// must be aligned for T and hold them.
func carve[T uint64 | uint32 | blockHandle](b []byte, n int) ([]T, []byte) {
	if n == 0 {
		return nil, b
	}
	size := int(unsafe.Sizeof(*new(T)))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n), b[n*size:]
}

// buildPointIndex decodes every entry of the index block data (at blockOff
// in file) and checks each handle lies before dataEnd. The result holds one
// reference, the caller's. It makes two passes over data: one to check it
// and size the buffer, one to fill it.
func buildPointIndex(data []byte, file string, blockOff int64, dataEnd uint64) (*pointIndex, error) {
	var n, keyBytes uint64
	err := walkIndex(data, file, blockOff, dataEnd, func(it *blockIter, _ blockHandle) error {
		n++
		if keyBytes += uint64(len(it.key)); keyBytes > 1<<32-1 {
			return corruptf(file, blockOff, "index keys exceed 4 GiB")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	px := &pointIndex{}
	px.refs.Store(1)
	if n == 0 {
		return px, nil
	}
	const perEntry = 8 + int(unsafe.Sizeof(blockHandle{})) + 4
	groups := (int(n) + topStride - 1) / topStride
	px.mem = newPointIndexBuf(int(n)*perEntry + 8*groups + int(keyBytes))
	rest := px.mem.b
	px.heads, rest = carve[uint64](rest, int(n))
	px.tops, rest = carve[uint64](rest, groups)
	px.handles, rest = carve[blockHandle](rest, int(n))
	px.ends, rest = carve[uint32](rest, int(n))
	px.keys = rest[:0:len(rest)]
	i := 0
	err = walkIndex(data, file, blockOff, dataEnd, func(it *blockIter, h blockHandle) error {
		if i == int(n) || len(px.keys)+len(it.key) > cap(px.keys) {
			return corruptf(file, blockOff, "index block changed while decoded")
		}
		px.keys = append(px.keys, it.key...)
		px.ends[i] = uint32(len(px.keys))
		px.handles[i] = h
		i++
		return nil
	})
	if err == nil && i != int(n) {
		err = corruptf(file, blockOff, "index block changed while decoded")
	}
	if err != nil {
		px.unref()
		return nil, err
	}
	// Sorted keys: the prefix of the first and last is everyone's.
	first, last := px.userKey(0), px.userKey(int(n)-1)
	c := 0
	for c < len(first) && c < len(last) && first[c] == last[c] {
		c++
	}
	px.common = first[:c:c]
	for i := range px.heads {
		px.heads[i] = keyHead(px.userKey(i), c)
	}
	for j := range px.tops {
		px.tops[j] = px.heads[j*topStride]
	}
	return px, nil
}

// tryRef takes a reference to px for reading its arrays, unless px has been
// freed; it reports whether it did.
func (px *pointIndex) tryRef() bool { return px.refs.tryRef() }

// unref drops a reference; the last one frees the arrays.
func (px *pointIndex) unref() {
	if !px.refs.release("point index") {
		return
	}
	px.keys, px.ends, px.handles, px.common, px.heads, px.tops = nil, nil, nil, nil, nil, nil
	px.mem.free()
}

// userKey returns the user key of separator i.
func (px *pointIndex) userKey(i int) []byte {
	k := px.key(i)
	return k[: len(k)-format.TrailerLen : len(k)-format.TrailerLen]
}

func (px *pointIndex) len() int { return len(px.ends) }

// key returns separator i.
func (px *pointIndex) key(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = px.ends[i-1]
	}
	return px.keys[start:px.ends[i]:px.ends[i]]
}

// topStride is how many heads a group leader in tops stands for: 8 heads
// of 8 bytes are one 64-byte cache line.
const topStride = 8

// seek returns the index of the first block whose separator is >= ikey,
// or len() if there is none.
func (px *pointIndex) seek(ikey []byte) int {
	n := len(px.ends)
	if n == 0 {
		return 0
	}
	ukey := ikey[:len(ikey)-format.TrailerLen]
	c := len(px.common)
	if !bytes.HasPrefix(ukey, px.common) {
		// Below every separator, or above them all.
		if bytes.Compare(ukey, px.common) < 0 {
			return 0
		}
		return n
	}
	h := keyHead(ukey, c)
	// The first group whose leader is >= ikey: every separator before the
	// previous leader is below ikey, and the answer is at most this leader.
	lo, hi := 0, len(px.tops)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		less := px.tops[m] < h
		if px.tops[m] == h {
			less = format.CompareInternal(px.key(m*topStride), ikey) < 0
		}
		if less {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0
	}
	// Separator (lo-1)*topStride is below ikey; search the rest of its
	// group, up to the next leader (or the end).
	lo, hi = (lo-1)*topStride+1, min(lo*topStride, n)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		less := px.heads[m] < h
		if px.heads[m] == h {
			less = format.CompareInternal(px.key(m), ikey) < 0
		}
		if less {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
