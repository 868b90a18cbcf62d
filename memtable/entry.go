package memtable

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// entry is what the B-tree orders: user key ascending, then sequence number
// descending. It holds no Go pointer, so B-tree nodes are never scanned by
// the garbage collector and copying entries needs no write barriers.
//
// The first 16 key bytes are kept inline (big-endian, zero-padded) with a
// key-length hint, so two keys of at most 16 bytes, or two keys that differ
// in their first 16 bytes, compare without touching the arena. The sequence
// number and flags stay in the arena record: only two versions of one key
// need them to compare, and leaving them out makes an entry 24 bytes rather
// than 32 (a quarter less B-tree heap per row).
type entry struct {
	k0, k1 uint64 // key bytes 0-7 and 8-15, big-endian, zero-padded
	loc    uint64 // see makeLoc
}

// An entry's loc packs, from the top bit down:
//
//	bit 63      pivot: a search key, not a stored row
//	bits 40-62  arena chunk index (a pivot: probe slot, or 0 for a short key)
//	bits 20-39  record offset within the chunk
//	bits 0-19   key length, capped at klenCap
const (
	pivotBit  = 1 << 63
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

// less orders entries by internal key (the B-tree uses it reversed: see
// treeLess). Caller holds mu.
func (m *Memtable) less(a, b entry) bool {
	if a.k0 != b.k0 {
		return a.k0 < b.k0
	}
	if a.k1 != b.k1 {
		return a.k1 < b.k1
	}
	la, lb := a.loc&klenMask, b.loc&klenMask
	if la > inlineKey || lb > inlineKey {
		// The first 16 (zero-padded) bytes agree, so the key bytes past
		// them decide; a key of at most 16 bytes has none and sorts first.
		if c := bytes.Compare(m.suffix(a), m.suffix(b)); c != 0 {
			return c < 0
		}
	} else if la != lb {
		return la < lb
	}
	// Same user key: a pivot sorts before every version, versions newest
	// first.
	if a.loc&pivotBit != 0 || b.loc&pivotBit != 0 {
		return b.loc&pivotBit == 0
	}
	return m.trailer(a)>>8 > m.trailer(b)>>8
}

// treeLess is the B-tree's order: less reversed, so that the tree holds
// entries in descending internal-key order. google/btree splits a full node
// in the middle; the left half keeps the node's item slice (sized for a full
// node) and the right half gets a fresh, exactly sized one. Inserts in
// ascending key order, the common case (sequential keys, time-ordered IDs),
// all land in the last leaf: in ascending tree order each left half left
// behind would keep a slice twice its size (52 heap bytes per row in
// BenchmarkHeapPerRow), in descending tree order the halves left behind are
// the exactly sized ones (27 bytes). Random order costs the same either way
// (36 bytes); descending keys now cost what ascending ones did. Walks go
// through ascendFrom and its siblings, which undo the reversal.
func (m *Memtable) treeLess(a, b entry) bool { return m.less(b, a) }

// The walks below cover the whole index: the frozen array of a frozen
// memtable, else the tree and then the tail, whose entries all sort after
// the tree's (see index in memtable.go).

// ascendFrom calls fn on the entries at or after p in internal-key order,
// ascending, until fn returns false. Caller holds mu.
func (m *Memtable) ascendFrom(p entry, fn func(entry) bool) {
	if m.tree == nil {
		m.frozen.walkUp(m.lowerBound(&m.frozen, p), fn)
		return
	}
	t := &m.tail
	if t.n > 0 && m.less(t.at(0), p) {
		// p is past the tree's last entry: the walk starts in the tail.
		t.walkUp(m.lowerBound(t, p), fn)
		return
	}
	more := true
	m.tree.DescendLessOrEqual(p, func(e entry) bool { more = fn(e); return more })
	if more {
		t.walkUp(0, fn)
	}
}

// descendFrom calls fn on the entries at or before p in internal-key order,
// descending, until fn returns false. Caller holds mu.
func (m *Memtable) descendFrom(p entry, fn func(entry) bool) {
	if m.tree == nil {
		m.frozen.walkDown(m.upperBound(&m.frozen, p)-1, fn)
		return
	}
	if t := &m.tail; t.n > 0 && !t.walkDown(m.upperBound(t, p)-1, fn) {
		return
	}
	m.tree.AscendGreaterOrEqual(p, fn)
}

// ascendAll calls fn on every entry in internal-key order, ascending, until
// fn returns false. Caller holds mu.
func (m *Memtable) ascendAll(fn func(entry) bool) {
	if m.tree == nil {
		m.frozen.walkUp(0, fn)
		return
	}
	more := true
	m.tree.Descend(func(e entry) bool { more = fn(e); return more })
	if more {
		m.tail.walkUp(0, fn)
	}
}

// descendAll calls fn on every entry in internal-key order, descending,
// until fn returns false. Caller holds mu.
func (m *Memtable) descendAll(fn func(entry) bool) {
	if m.tree == nil {
		m.frozen.walkDown(m.frozen.n-1, fn)
		return
	}
	if !m.tail.walkDown(m.tail.n-1, fn) {
		return
	}
	m.tree.Ascend(fn)
}

// sameKey reports whether a and b carry the same user key. Caller holds mu.
func (m *Memtable) sameKey(a, b entry) bool {
	return a.k0 == b.k0 && a.k1 == b.k1 && a.loc&klenMask == b.loc&klenMask &&
		(a.loc&klenMask <= inlineKey || bytes.Equal(m.suffix(a), m.suffix(b)))
}

// suffix returns the key bytes of e past the first 16. Caller holds mu.
func (m *Memtable) suffix(e entry) []byte {
	if e.loc&klenMask <= inlineKey {
		return nil
	}
	if e.loc&pivotBit != 0 {
		return probeKey(locChunk(e.loc))[inlineKey:]
	}
	return m.recordKey(e.loc)[inlineKey:]
}

// makePivot returns a search entry that sorts just before every version of
// key. A key longer than 16 bytes is parked in a probe slot until dropPivot,
// since the entry cannot point at it.
func makePivot(key []byte) entry {
	k0, k1 := inline(key)
	loc := uint64(pivotBit) | uint64(min(len(key), klenCap))
	if len(key) > inlineKey {
		loc |= uint64(acquireProbe(key)) << (offBits + klenBits)
	}
	return entry{k0: k0, k1: k1, loc: loc}
}

// dropPivot releases the probe slot of a pivot from makePivot, if any.
func dropPivot(e entry) {
	if e.loc&pivotBit != 0 && e.loc&klenMask > inlineKey {
		releaseProbe(locChunk(e.loc))
	}
}

// Search keys longer than 16 bytes of readers currently walking a tree are
// parked in probe slots. A slot is owned by one goroutine from acquireProbe
// to releaseProbe, and only that goroutine reads it (comparisons run in the
// searching goroutine), so the key needs no lock; ownership passes between
// goroutines through the slot's atomic busy flag.
//
// The fixed table is claimed lock-free, starting at a random slot so that
// concurrent readers rarely touch the same cache line; only when more than
// fixedProbes long-key searches run at once do the rest use the overflow
// table behind a mutex, which grows to the largest such number.
const fixedProbes = 256

var fixedProbe [fixedProbes]struct {
	busy atomic.Bool
	key  []byte
	_    [64 - 8 - 24]byte // one slot per cache line
}

var overflowProbes struct {
	mu    sync.Mutex
	free  []int
	slots atomic.Pointer[[]*probe]
}

type probe struct{ key []byte }

func acquireProbe(key []byte) int {
	start := rand.Uint32N(fixedProbes)
	for i := range uint32(fixedProbes) {
		idx := (start + i) % fixedProbes
		if s := &fixedProbe[idx]; s.busy.CompareAndSwap(false, true) {
			s.key = key
			return int(idx)
		}
	}
	return fixedProbes + acquireOverflowProbe(key)
}

func acquireOverflowProbe(key []byte) int {
	o := &overflowProbes
	o.mu.Lock()
	defer o.mu.Unlock()
	var idx int
	if n := len(o.free); n > 0 {
		idx = o.free[n-1]
		o.free = o.free[:n-1]
	} else {
		var old []*probe
		if p := o.slots.Load(); p != nil {
			old = *p
		}
		if len(old) > maxChunk-fixedProbes {
			panic("memtable: too many concurrent long-key searches")
		}
		grown := append(old[:len(old):len(old)], &probe{})
		o.slots.Store(&grown)
		idx = len(grown) - 1
	}
	(*o.slots.Load())[idx].key = key
	return idx
}

func releaseProbe(idx int) {
	if idx < fixedProbes {
		s := &fixedProbe[idx]
		s.key = nil
		s.busy.Store(false)
		return
	}
	idx -= fixedProbes
	o := &overflowProbes
	(*o.slots.Load())[idx].key = nil
	o.mu.Lock()
	o.free = append(o.free, idx)
	o.mu.Unlock()
}

func probeKey(idx int) []byte {
	if idx < fixedProbes {
		return fixedProbe[idx].key
	}
	return (*overflowProbes.slots.Load())[idx-fixedProbes].key
}
