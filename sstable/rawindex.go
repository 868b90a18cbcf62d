package sstable

// Raw index: how a compaction iterator walks a table's index without
// decoding it onto the Go heap.
//
// A compaction reads each input table once, front to back, and then the
// table is deleted. Decoding its whole index into a point index
// (pointindex.go) for that put every separator key and handle on the Go
// heap for the length of the compaction, at about twice its size in
// resident memory. Instead, a compaction iterator over a table whose point
// index is not loaded keeps the stored index block itself, read, CRC-checked
// and decompressed into one buffer outside the Go heap (metabuf.go), and
// decodes an entry only when its cursor reaches it. The iterator owns the
// buffer and frees it when it is closed or reset; nothing else sees it.
//
// Before the first entry is used the whole block is checked as
// buildPointIndex checks it (every entry decodes, every handle lies within
// the data blocks), so a corrupt index is the iterator's error from the
// start, naming the file and the block's offset.
//
// The index block has restart interval 1 (RFC 0002): entry i starts at
// restart offset i with its key stored whole, so the cursor reaches any
// entry directly (Last, Prev, and SeekGE by binary search over the entries)
// with no key buffer, and a copy of the cursor (read-ahead's) is
// independent of the original. A block written otherwise (no writer does)
// is still read: the iterator then builds a private point index from it.

import (
	"encoding/binary"

	"github.com/mayflydb/mayfly/format"
)

// rawIndex is a checked index block with one restart per entry.
type rawIndex struct {
	mem      metaBuf // owns data, unless data is a Go heap buffer of its own
	data     []byte  // the decoded block
	restarts int     // offset of the restart array: the entries end here
	n        int     // number of entries
	file     string
	blockOff int64
}

// walkIndex decodes every entry of the index block data (at blockOff in
// file), checks its handle lies before dataEnd, and calls fn with the
// entry (it, positioned at it) and its handle.
func walkIndex(data []byte, file string, blockOff int64, dataEnd uint64, fn func(it *blockIter, h blockHandle) error) error {
	var it blockIter
	if err := it.init(data, file, blockOff, true); err != nil {
		return err
	}
	for ok := it.first(); ok; ok = it.next() {
		h, ok := decodeHandle(it.row.Value)
		if !ok || !h.within(dataEnd) {
			return corruptf(file, blockOff, "index entry at %d: bad block handle", it.off)
		}
		if err := fn(&it, h); err != nil {
			return err
		}
	}
	return it.err
}

// newRawIndex checks the index block data (at blockOff in file) and returns
// it as a rawIndex, or nil (and no error) if its entries are not one per
// restart. The result does not own data's memory yet.
func newRawIndex(data []byte, file string, blockOff int64, dataEnd uint64) (*rawIndex, error) {
	x := &rawIndex{data: data, file: file, blockOff: blockOff}
	flat := true
	err := walkIndex(data, file, blockOff, dataEnd, func(it *blockIter, _ blockHandle) error {
		x.restarts = it.restarts
		// Read the restart offset directly: one that is out of range makes
		// the block not flat, not an error the point index would not give.
		if flat && (x.n >= it.numRestarts || it.shared != 0 ||
			int(binary.LittleEndian.Uint32(data[it.restarts+4*x.n:])) != it.off) {
			flat = false
		}
		x.n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !flat || x.n != int(binary.LittleEndian.Uint32(data[len(data)-4:])) {
		return nil, nil
	}
	return x, nil
}

// entry decodes entry i (0 <= i < n): its internal key and its handle. ok
// is false only if the block changed since newRawIndex checked it. It
// decodes with a blockIter of its own, so copies of a cursor over x stay
// independent; the key of a restart entry aliases the block, so nothing is
// copied.
func (x *rawIndex) entry(i int) (key []byte, h blockHandle, ok bool) {
	it := blockIter{data: x.data, restarts: x.restarts, numRestarts: x.n, file: x.file, blockOff: x.blockOff, isIndex: true}
	off := it.restartOffset(i)
	if off < 0 || !it.decodeAt(off) || it.shared != 0 {
		return nil, h, false
	}
	h, ok = decodeHandle(it.row.Value)
	return it.key, h, ok
}

// seek returns the first entry whose key is >= ikey (n if none), or -1 if
// an entry no longer decodes.
func (x *rawIndex) seek(ikey []byte) int {
	lo, hi := 0, x.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		k, _, ok := x.entry(m)
		if !ok {
			return -1
		}
		if format.CompareInternal(k, ikey) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// errAt is the error of an entry that no longer decodes.
func (x *rawIndex) errAt(i int) error {
	return corruptf(x.file, x.blockOff, "index entry %d no longer decodes", i)
}

// free releases the block's memory. x must not be used afterwards.
func (x *rawIndex) free() {
	x.mem.free()
	x.data = nil
	x.n = 0
}
