package memtable

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
)

// The whole-key filter. A point lookup of a key the memtable does not hold
// (most lookups: the memtable holds the newest few megabytes of a larger
// database) would otherwise search the skiplist, about one cache miss per
// level. The filter answers most of them with one load.
//
// It is a bloom filter blocked to one 64-bit word per key: a key's hash
// picks a word and filterProbes bits within it. An insert sets them with
// one atomic OR before its node is linked, so a reader that can see a row
// finds its bits set (the sequence number that makes the row visible is
// published after the insert returns); a reader racing an insert may miss
// the row, as it would miss it in the skiplist. Bits are never cleared, so
// "absent" is always true; "may be present" is wrong for a few percent of
// absent keys, and for more if the memtable holds more rows than its size
// foresaw (the lookup then searches the list, as without a filter). RFC
// 0011, "Whole-key filter", has the sizing and its measured rates.

// filterProbes is how many bits of its word a key sets.
const filterProbes = 4

// filterRowBytes is the smallest arena footprint a row is assumed to take
// (a node and a record with a short key and value): a filter gets one word
// per eight rows of that size in the memtable's expected bytes, eight
// bits per row.
const filterRowBytes = 64

// keyFilter is a memtable's whole-key filter; the zero value has no words
// and may contain every key.
type keyFilter struct {
	words []atomic.Uint64 // a power of two of them
	shift uint            // 64 - log2(len(words)): a hash's top bits pick the word
}

// makeKeyFilter returns a filter sized for a memtable expected to grow to
// about expectedBytes (0: no filter).
func makeKeyFilter(expectedBytes int64) keyFilter {
	if expectedBytes <= 0 {
		return keyFilter{}
	}
	rows := uint64(max(expectedBytes/filterRowBytes, 64))
	n := uint64(1) << bits.Len64((rows+7)/8-1) // a power of two >= rows/8
	return keyFilter{words: make([]atomic.Uint64, n), shift: uint(64 - bits.TrailingZeros64(n))}
}

// bytes is the memory the filter's words take.
func (f *keyFilter) bytes() int64 { return int64(len(f.words)) * 8 }

// filterMask is the filterProbes bits of a word that hash h sets, each
// from 6 bits of its low end (the word from its top bits).
func filterMask(h uint64) uint64 {
	var m uint64
	for i := range filterProbes {
		m |= 1 << (h >> (6 * i) & 63)
	}
	return m
}

// add sets the bits of the key with hash h.
func (f *keyFilter) add(h uint64) {
	if f.words != nil {
		f.words[h>>f.shift].Or(filterMask(h))
	}
}

// mayContain reports whether a key with hash h may have been added.
func (f *keyFilter) mayContain(h uint64) bool {
	if f.words == nil {
		return true
	}
	m := filterMask(h)
	return f.words[h>>f.shift].Load()&m == m
}

// keyHash hashes a user key whose first 16 bytes (zero-padded) are k0 and
// k1: the filter's hash, which depends on every byte of the key and on its
// length.
func keyHash(k0, k1 uint64, key []byte) uint64 {
	const (
		m1 = 0x9E3779B97F4A7C15
		m2 = 0xC2B2AE3D27D4EB4F
	)
	h := uint64(len(key))*m1 ^ k0
	h = bits.RotateLeft64(h*m2, 29) ^ k1
	for rest := key[min(len(key), inlineKey):]; len(rest) > 0; {
		var w uint64
		if len(rest) >= 8 {
			w, rest = binary.LittleEndian.Uint64(rest), rest[8:]
		} else {
			var b [8]byte
			copy(b[:], rest)
			w, rest = binary.LittleEndian.Uint64(b[:]), nil
		}
		h = bits.RotateLeft64(h*m2, 29) ^ w
	}
	// Final mix, so that both the top bits (the word) and the low bits
	// (the probes) depend on every input bit.
	h ^= h >> 33
	h *= m1
	h ^= h >> 29
	h *= m2
	return h ^ h>>32
}
