package bench

import (
	"math/bits"
	"math/rand/v2"
)

// KeySize is the length of every key: 15 decimal digits and a suffix byte.
const KeySize = 16

// PutKey writes key i (present keys end in 'k') into dst[:16].
func PutKey(dst []byte, i uint64) []byte { return putKey(dst, i, 'k') }

// PutMissingKey writes a key that sorts between present keys i and i+1
// but is never written, so a lookup has to consult filters or blocks.
func PutMissingKey(dst []byte, i uint64) []byte { return putKey(dst, i, 'm') }

func putKey(dst []byte, i uint64, suffix byte) []byte {
	dst = dst[:KeySize]
	for p := KeySize - 2; p >= 0; p-- {
		dst[p] = byte('0' + i%10)
		i /= 10
	}
	dst[KeySize-1] = suffix
	return dst
}

// ValueGen hands out values cut from a pre-generated buffer in which every
// run of bytes is half random and half a repeat of that randomness, so
// block compression saves about half (like db_bench's compression ratio 0.5).
// Every engine gets the same sequence.
type ValueGen struct {
	buf  []byte
	pos  int
	size int
}

// NewValueGen returns a generator of size-byte values.
func NewValueGen(size int) *ValueGen {
	const bufSize = 1 << 20
	r := rand.New(rand.NewPCG(301, 302))
	buf := make([]byte, 0, bufSize+size)
	for len(buf) < bufSize+size {
		piece := make([]byte, 50)
		for i := range piece {
			piece[i] = byte(' ' + r.IntN(95))
		}
		buf = append(buf, piece...)
		buf = append(buf, piece...)
	}
	return &ValueGen{buf: buf, size: size}
}

// Next returns the next value (valid until the generator wraps, ~1 MiB later).
func (g *ValueGen) Next() []byte {
	if g.pos+g.size > len(g.buf) {
		g.pos = 0
	}
	v := g.buf[g.pos : g.pos+g.size]
	g.pos += g.size
	return v
}

// Perm is a keyed pseudo-random bijection on [0, n), used for "random
// order, every key exactly once" fills without materialising a permutation.
type Perm struct {
	n    uint64
	bits uint
	mask uint64
	seed uint64
}

// NewPerm returns a permutation of [0, n).
func NewPerm(n uint64, seed uint64) *Perm {
	b := uint(bits.Len64(n - 1))
	if b < 4 {
		b = 4
	}
	return &Perm{n: n, bits: b, mask: 1<<b - 1, seed: seed}
}

func (p *Perm) mix(x uint64) uint64 {
	h := p.bits / 2
	for r := uint64(0); r < 3; r++ {
		x = (x ^ (p.seed+r*0x9e3779b97f4a7c15)&p.mask) & p.mask
		x = (x * 0xbf58476d1ce4e5b9) & p.mask // odd multiplier: bijective mod 2^bits
		x ^= x >> h
	}
	return x
}

// At returns the i-th element of the permutation (cycle walking).
func (p *Perm) At(i uint64) uint64 {
	x := p.mix(i)
	for x >= p.n {
		x = p.mix(x)
	}
	return x
}

// splitmix64 is a bijective mixer (used for ttlchurn's write-once keys).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
