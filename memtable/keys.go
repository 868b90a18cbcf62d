package memtable

import (
	"bytes"
	"encoding/binary"
	"math"
)

// Keys. Nodes are ordered by internal key: user key ascending, then
// sequence number descending. A node carries the first 16 bytes of its key
// inline (big-endian, zero-padded, as k0 and k1) with a key-length hint in
// its record location, so two keys of at most 16 bytes, or two keys that
// differ in their first 16 bytes, compare without touching the record; the
// node's copy of the sequence number orders two versions of one key.

// A record location (a node's loc word) packs, from the top bit down:
//
//	bit 63      unused (0)
//	bits 40-62  arena chunk index
//	bits 20-39  record offset within the chunk
//	bits 0-19   key length, capped at klenCap
const (
	maxChunk  = 1<<23 - 1
	offBits   = 20
	klenBits  = 20
	klenCap   = 1<<klenBits - 1
	klenMask  = klenCap
	inlineKey = 16 // key bytes held in k0, k1
)

func makeLoc(chunk, off, klen int) uint64 {
	return uint64(chunk)<<(offBits+klenBits) | uint64(off)<<klenBits | uint64(min(klen, klenCap))
}

func locChunk(loc uint64) int { return int(loc>>(offBits+klenBits)) & maxChunk }
func locOff(loc uint64) int   { return int(loc>>klenBits) & (1<<offBits - 1) }

// inline returns the first 16 bytes of k as two big-endian integers.
func inline(k []byte) (k0, k1 uint64) {
	if len(k) >= inlineKey {
		return binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:])
	}
	var b [inlineKey]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:]), binary.BigEndian.Uint64(b[8:])
}

// pivotSeq is the sequence number of a search key that sorts before every
// version of its user key (stored sequence numbers are below 1<<56).
const pivotSeq = math.MaxUint64

// searchKey is an internal key to search for or insert: a user key and a
// sequence number (pivotSeq: before every version of the key).
type searchKey struct {
	k0, k1 uint64
	key    []byte
	seq    uint64
}

func makeSearchKey(key []byte, seq uint64) searchKey {
	k0, k1 := inline(key)
	return searchKey{k0: k0, k1: k1, key: key, seq: seq}
}

// cmpUser compares the user key of the node at p with s's: -1, 0 or +1.
func (v *view) cmpUser(p *node, s *searchKey) int {
	if p.k0 != s.k0 {
		return cmpUint(p.k0, s.k0)
	}
	if p.k1 != s.k1 {
		return cmpUint(p.k1, s.k1)
	}
	la, lb := p.loc&klenMask, uint64(min(len(s.key), klenCap))
	if la > inlineKey || lb > inlineKey {
		// The first 16 (zero-padded) bytes agree, so the key bytes past
		// them decide; a key of at most 16 bytes has none and sorts first.
		var a []byte
		if la > inlineKey {
			a = v.recordKey(p.loc)[inlineKey:]
		}
		var b []byte
		if lb > inlineKey {
			b = s.key[inlineKey:]
		}
		return bytes.Compare(a, b)
	}
	return cmpUint(la, lb)
}

// cmp compares the internal key of the node at p with s: -1 if the node
// sorts first, +1 if after, 0 if both have the same user key and sequence
// number.
func (v *view) cmp(p *node, s *searchKey) int {
	if c := v.cmpUser(p, s); c != 0 {
		return c
	}
	// Same user key: newer versions first.
	return cmpUint(s.seq, p.seq)
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
