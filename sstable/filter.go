package sstable

// Filter block: a bloom filter over the distinct USER keys of the table. The
// block is always stored uncompressed. Its first byte is the filter type:
//
//	0  legacy   bits-and-blooms/bloom/v3's MarshalBinary (all big-endian):
//	            | m u64 bits | k u64 hashes | bitset len u64 (= m) |
//	            | ceil(m/64) words of u64 |
//	            Its first byte is the top byte of m, which is 0 for any m a
//	            block could hold, so type 0 needs no byte of its own.
//	            Written by format version 1 tables; still read.
//	1  blocked  a cache-line-blocked bloom filter (format version 2 and
//	            later; the only type this package writes):
//
//	+---------+--------+-----------+--------------+-----------------------+
//	| type u8 | k u8   | 0 u16     | lines u32 LE | lines x 64-byte lines |
//	| = 1     | probes | reserved  |              | (8 u64 LE words each) |
//	+---------+--------+-----------+--------------+-----------------------+
//
// A blocked filter hashes a key once (filterHash, 64 bits); the high 32 bits
// pick one 512-bit line, the low 32 bits drive the k probes inside it (each
// probe takes the top 9 bits, then multiplies by an odd constant), so a
// lookup touches one cache line instead of k. The writer uses
// ceil(keys*BloomBitsPerKey/512) lines and k = round(BloomBitsPerKey*ln 2)
// clamped to [1, maxBlockedProbes]. Blocking costs a few false positives:
// 0.9-1.0% at 10 bits per key in TestBlockedFilterFPRate, where a standard
// bloom filter has about 0.8%.
//
// A reader checks the type, k, the reserved bytes and that the line count
// agrees with the block size before it allocates; for a legacy filter it
// checks that m, k and the bitset length agree with the block size before
// UnmarshalBinary allocates.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/mayflydb/mayfly/internal/manual"
)

const (
	filterTypeLegacy  = 0
	filterTypeBlocked = 1

	filterHeaderLen        = 24 // legacy
	maxFilterHashes        = 64 // legacy
	blockedHeaderLen       = 8
	blockedLineBytes       = 64
	blockedLineWords       = blockedLineBytes / 8
	blockedLineBits        = blockedLineBytes * 8
	maxBlockedProbes       = 16
	blockedProbeMultiplier = 0x9E3779B9 // odd, so each step is a bijection
)

// filterHash is the 64-bit key hash of blocked filters. It is part of the
// on-disk format: changing it needs a new filter type.
func filterHash(key []byte) uint64 {
	const (
		m1 = 0x9E3779B97F4A7C15
		m2 = 0xC2B2AE3D27D4EB4F
		m3 = 0x165667B19E3779F9
	)
	h := m3 ^ uint64(len(key))*m1
	for len(key) >= 8 {
		h ^= binary.LittleEndian.Uint64(key) * m2
		h = bits.RotateLeft64(h, 31) * m1
		key = key[8:]
	}
	if len(key) > 0 {
		var t uint64
		for i, c := range key {
			t |= uint64(c) << (8 * i)
		}
		h ^= t * m3
		h = bits.RotateLeft64(h, 27) * m1
	}
	h ^= h >> 33
	h *= m2
	h ^= h >> 29
	h *= m3
	h ^= h >> 32
	return h
}

// tableFilter is a table's decoded filter: exactly one of legacy and
// blocked is set.
type tableFilter struct {
	legacy  *bloom.BloomFilter
	blocked blockedFilter
}

// mayContain reports whether ukey may be in the table.
func (f *tableFilter) mayContain(ukey []byte) bool {
	if f.legacy != nil {
		return f.legacy.Test(ukey)
	}
	return f.blocked.mayContain(ukey)
}

// blockedFilter is a decoded blocked filter; words holds the lines, 64-byte
// aligned in memory so that a line is one cache line.
type blockedFilter struct {
	words []uint64
	lines uint64
	k     uint32
}

// blockedLine returns the index of the line that key hash h probes.
func blockedLine(h, lines uint64) uint64 { return (h >> 32) * lines >> 32 }

func (f *blockedFilter) mayContain(ukey []byte) bool {
	return f.mayContainHash(filterHash(ukey))
}

// mayContainHash is mayContain for a key whose filterHash is h.
func (f *blockedFilter) mayContainHash(h uint64) bool {
	line := f.words[blockedLine(h, f.lines)*blockedLineWords:][:blockedLineWords]
	p := uint32(h)
	for range f.k {
		bit := p >> (32 - 9)
		if line[bit>>6]&(1<<(bit&63)) == 0 {
			return false
		}
		p *= blockedProbeMultiplier
	}
	return true
}

// filterWriter collects the hash (filterHash) of each distinct user key of
// a table; the filter is sized when the count is known, at build. A blocked
// filter needs only the 64-bit hash of a key, so a key costs 8 bytes here
// however long it is.
//
// The hashes are kept in fixed chunks of filterChunkHashes rather than one
// slice grown by appending: a grown slice carries up to a quarter of spare
// capacity and, while it is copied, holds old and new arrays at once (about
// 2.25 times the hashes); a flush of a 16 MiB memtable adds about 70k keys.
// Chunks cost 8 bytes per key plus at most one partly filled chunk. They
// are carved from slabs outside the Go heap (internal/manual), where they
// cost their own size in resident memory rather than up to twice that under
// the garbage collector's heap goal; release frees the slabs, once, when
// the table is finished or abandoned (Writer.Finish, Writer.Abort).
type filterWriter struct {
	bitsPerKey int
	chunks     *manual.Carver // backs full and cur; nil after release
	full       [][]uint64     // filled chunks, each of filterChunkHashes hashes
	cur        []uint64       // the chunk being filled
	n          uint64         // hashes added (distinct keys)
	last       []byte         // copy of the last key added, to skip its versions
}

// filterChunkHashes is the number of hashes per chunk: 32 KiB.
const filterChunkHashes = 4096

// filterChunksPerSlab is how many chunks share one mapping: a slab of
// 256 KiB serves about 32k keys, so a flush maps memory a few times rather
// than once per 4096 keys. A slab's untouched pages take no memory.
const filterChunksPerSlab = 8

// maxFilterBits is the most bits a blocked filter can have: its line
// count is a u32.
const maxFilterBits = math.MaxUint32 * blockedLineBits

func newFilterWriter(bitsPerKey int) *filterWriter {
	return &filterWriter{
		bitsPerKey: bitsPerKey,
		chunks:     manual.NewCarverFor(manual.PurposeFilterBuilder, filterChunkHashes*8, filterChunksPerSlab),
	}
}

// release frees f's hashes; f must not be used after. It is the only place
// the chunks are freed, and it clears every reference to them first.
func (f *filterWriter) release() {
	f.full, f.cur, f.last = nil, nil, nil
	if f.chunks != nil {
		f.chunks.FreeAll()
		f.chunks = nil
	}
}

// add records ukey; consecutive duplicates (versions of a key) count once.
func (f *filterWriter) add(ukey []byte) {
	if f.n > 0 && bytes.Equal(ukey, f.last) {
		return
	}
	if len(f.cur) == cap(f.cur) {
		if f.cur != nil {
			f.full = append(f.full, f.cur)
		}
		b := f.chunks.Get() // page-aligned slabs: 8-byte aligned
		f.cur = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), filterChunkHashes)[:0]
	}
	f.cur = append(f.cur, filterHash(ukey))
	f.n++
	f.last = append(f.last[:0], ukey...)
}

// canAdd reports whether the filter can take one more key: its line count
// must fit a u32.
func (f *filterWriter) canAdd() bool {
	return f.n+1 <= maxFilterBits/uint64(f.bitsPerKey)
}

// build returns the encoded blocked filter block.
func (f *filterWriter) build() ([]byte, error) {
	n := f.n
	lines := max((n*uint64(f.bitsPerKey)+blockedLineBits-1)/blockedLineBits, 1)
	if lines > math.MaxUint32 {
		return nil, fmt.Errorf("sstable: filter of %d keys at %d bits per key needs %d lines", n, f.bitsPerKey, lines)
	}
	k := uint32(math.Round(float64(f.bitsPerKey) * math.Ln2))
	k = min(max(k, 1), maxBlockedProbes)
	b := make([]byte, blockedHeaderLen+lines*blockedLineBytes)
	b[0], b[1] = filterTypeBlocked, byte(k)
	binary.LittleEndian.PutUint32(b[4:], uint32(lines))
	body := b[blockedHeaderLen:]
	set := func(hashes []uint64) {
		for _, h := range hashes {
			line := body[blockedLine(h, lines)*blockedLineBytes:][:blockedLineBytes]
			p := uint32(h)
			for range k {
				bit := p >> (32 - 9)
				line[bit>>3] |= 1 << (bit & 7)
				p *= blockedProbeMultiplier
			}
		}
	}
	for _, c := range f.full {
		set(c)
	}
	set(f.cur)
	return b, nil
}

// decodeFilter checks and decodes a filter block at off.
func decodeFilter(b []byte, file string, off int64) (*tableFilter, error) {
	if len(b) == 0 {
		return nil, corruptf(file, off, "empty filter block")
	}
	switch b[0] {
	case filterTypeLegacy:
		bf, err := decodeLegacyFilter(b, file, off)
		if err != nil {
			return nil, err
		}
		return &tableFilter{legacy: bf}, nil
	case filterTypeBlocked:
		bf, err := decodeBlockedFilter(b, file, off)
		if err != nil {
			return nil, err
		}
		return &tableFilter{blocked: bf}, nil
	}
	return nil, corruptf(file, off, "unknown filter type %d", b[0])
}

func decodeBlockedFilter(b []byte, file string, off int64) (blockedFilter, error) {
	if len(b) < blockedHeaderLen {
		return blockedFilter{}, corruptf(file, off, "blocked filter of %d bytes is shorter than its header", len(b))
	}
	k := uint32(b[1])
	lines := uint64(binary.LittleEndian.Uint32(b[4:]))
	switch {
	case k == 0 || k > maxBlockedProbes:
		return blockedFilter{}, corruptf(file, off, "blocked filter with %d probes", k)
	case b[2] != 0 || b[3] != 0:
		return blockedFilter{}, corruptf(file, off, "blocked filter with reserved bytes %#x %#x", b[2], b[3])
	case lines == 0 || uint64(len(b)-blockedHeaderLen) != lines*blockedLineBytes:
		return blockedFilter{}, corruptf(file, off, "blocked filter of %d lines does not fit its %d-byte block", lines, len(b))
	}
	words := alignedWords(int(lines) * blockedLineWords)
	body := b[blockedHeaderLen:]
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(body[8*i:])
	}
	return blockedFilter{words: words, lines: lines, k: k}, nil
}

// alignedWords returns n zeroed words starting on a 64-byte boundary.
func alignedWords(n int) []uint64 {
	w := make([]uint64, n+blockedLineWords-1)
	skip := 0
	if rem := uintptr(unsafe.Pointer(&w[0])) % blockedLineBytes; rem != 0 {
		skip = int(blockedLineBytes-rem) / 8
	}
	return w[skip : skip+n : skip+n]
}

// decodeLegacyFilter checks and decodes a type-0 (bits-and-blooms) filter.
func decodeLegacyFilter(b []byte, file string, off int64) (*bloom.BloomFilter, error) {
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
