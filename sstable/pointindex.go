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

import (
	"bytes"
	"encoding/binary"

	"github.com/mayflydb/mayfly/format"
)

// pointIndex is the decoded index of a table.
type pointIndex struct {
	keys    []byte        // separator internal keys, back to back
	ends    []uint32      // end of key i in keys
	handles []blockHandle // handle of data block i
	common  []byte        // the user-key prefix every separator starts with
	heads   []uint64      // keyHead of each separator's user key
}

// keyHead returns the 8 bytes of ukey after its first c (which it must
// have), zero-padded, big-endian. For keys sharing those c bytes,
// keyHead(a) < keyHead(b) implies a < b; equal heads decide nothing.
func keyHead(ukey []byte, c int) uint64 {
	var b [8]byte
	copy(b[:], ukey[c:])
	return binary.BigEndian.Uint64(b[:])
}

// buildPointIndex decodes every entry of the index block data (at blockOff
// in file) and checks each handle lies before dataEnd.
func buildPointIndex(data []byte, file string, blockOff int64, dataEnd uint64) (*pointIndex, error) {
	px := &pointIndex{}
	err := walkIndex(data, file, blockOff, dataEnd, func(it *blockIter, h blockHandle) error {
		if uint64(len(px.keys))+uint64(len(it.key)) > 1<<32-1 {
			return corruptf(file, blockOff, "index keys exceed 4 GiB")
		}
		px.keys = append(px.keys, it.key...)
		px.ends = append(px.ends, uint32(len(px.keys)))
		px.handles = append(px.handles, h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n := px.len(); n > 0 {
		// Sorted keys: the prefix of the first and last is everyone's.
		first, last := px.userKey(0), px.userKey(n-1)
		c := 0
		for c < len(first) && c < len(last) && first[c] == last[c] {
			c++
		}
		px.common = first[:c:c]
		px.heads = make([]uint64, n)
		for i := range px.heads {
			px.heads[i] = keyHead(px.userKey(i), c)
		}
	}
	return px, nil
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

// seek returns the index of the first block whose separator is >= ikey,
// or len() if there is none.
func (px *pointIndex) seek(ikey []byte) int {
	lo, hi := 0, len(px.ends)
	if hi == 0 {
		return 0
	}
	ukey := ikey[:len(ikey)-format.TrailerLen]
	c := len(px.common)
	if !bytes.HasPrefix(ukey, px.common) {
		// Below every separator, or above them all.
		if bytes.Compare(ukey, px.common) < 0 {
			return 0
		}
		return hi
	}
	h := keyHead(ukey, c)
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
