package sstable

// The block cache's index: which blocks are cached, and which to evict.
//
// clockIndex maps cache keys to cached blocks and keeps their total weight
// (slab bytes) within a budget, evicting with the CLOCK algorithm: every
// entry has a referenced bit that a hit sets; to make room, a hand sweeps
// the entries, clearing set bits and evicting the first entry whose bit is
// clear. A new entry takes the slot of the entry evicted for it (the slot
// just behind the hand), so it gets a whole sweep to be hit before the hand
// comes back to it.
//
// Layout: the cachedBlock of an entry carries its key, weight and
// referenced bit itself, so an entry costs the Go heap one 80-byte object,
// one pointer in its shard's CLOCK ring (ents) and one or two 8-byte slots
// of the shard's hash table: a pointer-free open-addressed table (linear
// probing, at most half full, backward-shift deletion) mapping a key to its
// slot in the ring. A table slot holds the ring slot and the low 32 bits of
// the key's hash: a probe that passes another key's slot, and the
// backward shift of a deletion (which needs each moved entry's home
// position), read the table alone instead of each entry's cachedBlock, a
// cache miss apiece on a cache larger than the processor's. That is about
// 100 bytes per cached block, where a Go map from key to slot beside a ring
// of (key, block, weight, bit) entries and a separate reference-count
// object took about 150.
//
// The index is split into shards by a hash of the key, each with its own
// lock, budget and hand, so that concurrent readers of different blocks
// rarely contend. A hit takes only its shard's read lock and sets the bit
// atomically; an insert takes the write lock and evicts synchronously, in
// the inserting goroutine: there is no background goroutine and nothing to
// wait for. Evicted blocks are handed to the owner's callback after the
// shard's lock is released.

import (
	"math/bits"
	"sync"
)

// Shard sizing: up to maxClockShards shards, each with a budget of at least
// minClockShardBytes (a smaller cache has fewer shards, down to one).
const (
	maxClockShards     = 16
	minClockShardBytes = 512 << 10
)

// minClockTable is the smallest hash table a shard allocates.
const minClockTable = 16

type clockIndex struct {
	shards  []clockShard
	shift   uint // 64 - log2(len(shards))
	onEvict func(*cachedBlock, int64)
}

type clockShard struct {
	mu sync.RWMutex
	// table maps keys to ring slots (tableEntry): 0 marks an empty
	// position. Its length is zero or a power of two at least twice live.
	table    []uint64
	ents     []*cachedBlock // the CLOCK ring; nil marks a free slot
	free     []int32        // free slots
	live     int            // entries present
	hand     int
	weight   int64 // sum of the live entries' weights
	capacity int64
	_        [64]byte // keep neighbouring shards' locks off one cache line
}

// keyHash mixes k into 64 bits: the top bits choose the shard, the low bits
// the position in the shard's table.
//
// A table entry packs the low 32 bits of its key's hash above its ring
// slot plus one, so that no entry is 0 (empty); a table never has more
// than 2^31 positions, so the home position of an entry is its hash bits
// masked.
func tableEntry(h uint64, slot int32) uint64 { return uint64(uint32(h))<<32 | uint64(slot+1) }

// entrySlot and entryHash unpack a table entry.
func entrySlot(e uint64) int32  { return int32(uint32(e)) - 1 }
func entryHash(e uint64) uint32 { return uint32(e >> 32) }

func keyHash(k cacheKey) uint64 {
	h := k.id*0x9E3779B97F4A7C15 ^ bits.RotateLeft64(k.off, 32)*0xC2B2AE3D27D4EB4F
	h ^= h >> 31
	h *= 0xD6E8FEB86659FD93
	return h ^ h>>32
}

// newClockIndex returns an index holding at most capacity bytes of
// entries; onEvict receives every entry that leaves it (evicted, removed or
// cleared) with its weight, outside any lock.
func newClockIndex(capacity int64, onEvict func(*cachedBlock, int64)) *clockIndex {
	n := 1
	for n < maxClockShards && capacity/int64(2*n) >= minClockShardBytes {
		n *= 2
	}
	x := &clockIndex{shards: make([]clockShard, n), shift: uint(64 - bits.TrailingZeros(uint(n))), onEvict: onEvict}
	for i := range x.shards {
		s := &x.shards[i]
		s.capacity = capacity / int64(n)
		if i == 0 {
			s.capacity += capacity % int64(n)
		}
	}
	return x
}

// setCapacity changes the index's total budget, split over the shards as
// at creation, and evicts at once from each shard that now holds more.
func (x *clockIndex) setCapacity(capacity int64) {
	n := int64(len(x.shards))
	for i := range x.shards {
		s := &x.shards[i]
		var victims []*cachedBlock
		s.mu.Lock()
		s.capacity = capacity / n
		if i == 0 {
			s.capacity += capacity % n
		}
		for s.weight > s.capacity {
			victims = append(victims, s.evict())
		}
		s.mu.Unlock()
		for _, cb := range victims {
			x.onEvict(cb, cb.weight)
		}
	}
}

// maximum returns the index's total budget.
func (x *clockIndex) maximum() int64 {
	var n int64
	for i := range x.shards {
		s := &x.shards[i]
		s.mu.RLock()
		n += s.capacity
		s.mu.RUnlock()
	}
	return n
}

// shard returns k's shard and hash.
func (x *clockIndex) shard(k cacheKey) (*clockShard, uint64) {
	h := keyHash(k)
	if len(x.shards) == 1 {
		return &x.shards[0], h
	}
	return &x.shards[h>>x.shift], h
}

// find returns the table position holding k and true, or the empty
// position where k would go and false (-1 for a shard without a table).
// The shard must be locked.
func (s *clockShard) find(k cacheKey, h uint64) (int, bool) {
	mask := len(s.table) - 1
	if mask < 0 {
		return -1, false
	}
	for p := int(h) & mask; ; p = (p + 1) & mask {
		e := s.table[p]
		if e == 0 {
			return p, false
		}
		if entryHash(e) == uint32(h) && s.ents[entrySlot(e)].key == k {
			return p, true
		}
	}
}

// get returns the block cached under k with a reference taken for the
// caller, and marks it recently used.
func (x *clockIndex) get(k cacheKey) (*cachedBlock, bool) {
	s, h := x.shard(k)
	s.mu.RLock()
	p, ok := s.find(k, h)
	var cb *cachedBlock
	if ok {
		cb = s.ents[entrySlot(s.table[p])]
		if cb.clock.Load() == 0 {
			cb.clock.Store(1)
		}
		ok = cb.tryRef()
	}
	s.mu.RUnlock()
	return cb, ok
}

// add inserts cb under k with weight w unless k is present or w exceeds
// the shard's whole budget; it reports whether cb was inserted. It evicts
// entries to make room first. cb must not have been added before.
func (x *clockIndex) add(k cacheKey, cb *cachedBlock, w int64) bool {
	s, h := x.shard(k)
	var victims [4]*cachedBlock
	nv := 0
	var more []*cachedBlock // victims beyond the first four (mixed sizes)
	s.mu.Lock()
	if _, ok := s.find(k, h); ok || w > s.capacity {
		s.mu.Unlock()
		return false
	}
	for s.weight+w > s.capacity {
		e := s.evict()
		if nv < len(victims) {
			victims[nv] = e
			nv++
		} else {
			more = append(more, e)
		}
	}
	cb.key, cb.weight = k, w
	cb.clock.Store(0)
	var i int32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
		s.ents[i] = cb
	} else {
		i = int32(len(s.ents))
		s.ents = append(s.ents, cb)
	}
	if 2*(s.live+1) > len(s.table) {
		s.grow()
	}
	p, _ := s.find(k, h)
	s.table[p] = tableEntry(h, i)
	s.live++
	s.weight += w
	s.mu.Unlock()
	for _, e := range victims[:nv] {
		x.onEvict(e, e.weight)
	}
	for _, e := range more {
		x.onEvict(e, e.weight)
	}
	return true
}

// grow doubles the shard's table (or allocates its first) and re-enters
// every entry. The shard must be write-locked.
func (s *clockShard) grow() {
	old := s.table
	s.table = make([]uint64, max(minClockTable, 2*len(old)))
	mask := len(s.table) - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		p := int(entryHash(e)) & mask
		for s.table[p] != 0 {
			p = (p + 1) & mask
		}
		s.table[p] = e
	}
}

// unlink empties table position p, moving back the entries after it in
// its run that could no longer be found otherwise (backward-shift
// deletion: no tombstones, so lookups never slow down as entries come and
// go). The shard must be write-locked.
func (s *clockShard) unlink(p int) {
	mask := len(s.table) - 1
	for q := (p + 1) & mask; s.table[q] != 0; q = (q + 1) & mask {
		home := int(entryHash(s.table[q])) & mask
		// The entry at q may fill the hole at p unless its home lies
		// cyclically within (p, q].
		if (q-home)&mask >= (q-p)&mask {
			s.table[p] = s.table[q]
			p = q
		}
	}
	s.table[p] = 0
}

// evict removes the entry the hand stops at and returns it. The shard must
// be write-locked and hold at least one entry (weight > 0 guarantees it).
func (s *clockShard) evict() *cachedBlock {
	for {
		if s.hand >= len(s.ents) {
			s.hand = 0
		}
		if cb := s.ents[s.hand]; cb != nil {
			if cb.clock.Load() == 0 {
				// Step past the slot: the new entry will take it, and
				// must not be the next one looked at.
				i := int32(s.hand)
				s.hand++
				return s.removeAt(i)
			}
			cb.clock.Store(0)
		}
		s.hand++
	}
}

// removeAt frees slot i and returns its entry. The shard must be
// write-locked.
func (s *clockShard) removeAt(i int32) *cachedBlock {
	cb := s.ents[i]
	p, _ := s.find(cb.key, keyHash(cb.key))
	s.unlink(p)
	s.ents[i] = nil
	s.free = append(s.free, i)
	s.live--
	s.weight -= cb.weight
	return cb
}

// remove takes k out of the index, if present.
func (x *clockIndex) remove(k cacheKey) {
	s, h := x.shard(k)
	s.mu.Lock()
	p, ok := s.find(k, h)
	var cb *cachedBlock
	if ok {
		cb = s.removeAt(entrySlot(s.table[p]))
	}
	s.mu.Unlock()
	if ok {
		x.onEvict(cb, cb.weight)
	}
}

// clear removes every entry.
func (x *clockIndex) clear() {
	for i := range x.shards {
		s := &x.shards[i]
		s.mu.Lock()
		ents := s.ents
		s.table, s.ents, s.free, s.live, s.hand, s.weight = nil, nil, nil, 0, 0, 0
		s.mu.Unlock()
		for _, cb := range ents {
			if cb != nil {
				x.onEvict(cb, cb.weight)
			}
		}
	}
}

// keys returns the keys present (for tests).
func (x *clockIndex) keys() []cacheKey {
	var ks []cacheKey
	for i := range x.shards {
		s := &x.shards[i]
		s.mu.RLock()
		for _, cb := range s.ents {
			if cb != nil {
				ks = append(ks, cb.key)
			}
		}
		s.mu.RUnlock()
	}
	return ks
}
