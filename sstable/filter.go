package sstable

// Filter block: a bloom filter over the distinct USER keys of the table,
// serialized with bloom.BloomFilter.MarshalBinary (all big-endian):
//
//	+-------+-------+------------------+--------------------------+
//	| m u64 | k u64 | bitset len u64   | ceil(m/64) words of u64  |
//	| bits  | hashes| (= m)            |                          |
//	+-------+-------+------------------+--------------------------+
//
// The writer sizes the filter at BloomBitsPerKey bits per distinct key and
// uses k = round(BloomBitsPerKey * ln 2) hashes. The block is always stored
// uncompressed. A reader checks the CRC, then that m, k and the bitset
// length agree with the block size, before UnmarshalBinary allocates.

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
)

const (
	filterHeaderLen = 24
	maxFilterHashes = 64
)

// filterWriter collects the distinct user keys of a table; the filter is
// sized when the count is known, at Finish.
type filterWriter struct {
	bitsPerKey int
	arena      []byte   // the keys, back to back
	ends       []uint32 // end offset of each key in arena
	last       []byte
}

// maxPooledFilterArena bounds the key arena a filterWriter keeps for reuse.
const maxPooledFilterArena = 64 << 20

// filterPool recycles filterWriters between tables, so that a flush or
// compaction does not regrow the key arena and offsets from empty for
// every table it writes.
var filterPool = sync.Pool{New: func() any { return &filterWriter{} }}

func newFilterWriter(bitsPerKey int) *filterWriter {
	f := filterPool.Get().(*filterWriter)
	f.bitsPerKey = bitsPerKey
	return f
}

// release empties f and returns it to the pool; f must not be used after.
func (f *filterWriter) release() {
	if cap(f.arena) > maxPooledFilterArena {
		return
	}
	f.arena, f.ends, f.last = f.arena[:0], f.ends[:0], nil
	filterPool.Put(f)
}

// add records ukey; consecutive duplicates (versions of a key) count once.
func (f *filterWriter) add(ukey []byte) {
	if len(f.ends) > 0 && bytes.Equal(ukey, f.last) {
		return
	}
	start := len(f.arena)
	f.arena = append(f.arena, ukey...)
	f.ends = append(f.ends, uint32(len(f.arena)))
	f.last = f.arena[start:len(f.arena):len(f.arena)]
}

// canAdd reports whether the arena can hold n more bytes (its offsets are u32).
func (f *filterWriter) canAdd(n int) bool {
	return uint64(len(f.arena))+uint64(n) <= math.MaxUint32
}

func (f *filterWriter) build() ([]byte, error) {
	n := uint(len(f.ends))
	m := max(n*uint(f.bitsPerKey), 64)
	k := uint(math.Round(float64(f.bitsPerKey) * math.Ln2))
	k = min(max(k, 1), 30)
	bf := bloom.New(m, k)
	start := uint32(0)
	for _, end := range f.ends {
		bf.Add(f.arena[start:end])
		start = end
	}
	return bf.MarshalBinary()
}

// decodeFilter checks and decodes a filter block at off.
func decodeFilter(b []byte, file string, off int64) (*bloom.BloomFilter, error) {
	if len(b) < filterHeaderLen {
		return nil, corruptf(file, off, "filter block of %d bytes is shorter than its header", len(b))
	}
	m := binary.BigEndian.Uint64(b[0:])
	k := binary.BigEndian.Uint64(b[8:])
	bits := binary.BigEndian.Uint64(b[16:])
	words := uint64(len(b)-filterHeaderLen) / 8
	switch {
	case m == 0 || bits != m:
		return nil, corruptf(file, off, "filter of %d bits with a %d-bit set", m, bits)
	case k == 0 || k > maxFilterHashes:
		return nil, corruptf(file, off, "filter with %d hash functions", k)
	case uint64(len(b)-filterHeaderLen)%8 != 0 || words != m/64+min(m%64, 1):
		return nil, corruptf(file, off, "filter of %d bits does not fit its %d-byte block", m, len(b))
	}
	bf := &bloom.BloomFilter{}
	if err := bf.UnmarshalBinary(b); err != nil {
		return nil, corruptf(file, off, "filter: %v", err)
	}
	return bf, nil
}
