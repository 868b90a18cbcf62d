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
	"sync/atomic"
)

// Shard sizing: up to maxClockShards shards, each with a budget of at least
// minClockShardBytes (a smaller cache has fewer shards, down to one).
const (
	maxClockShards     = 16
	minClockShardBytes = 512 << 10
)

type clockIndex struct {
	shards  []clockShard
	shift   uint // 64 - log2(len(shards))
	onEvict func(*cachedBlock, int64)
}

type clockShard struct {
	mu       sync.RWMutex
	m        map[cacheKey]int32 // key -> slot in ents
	ents     []clockEntry       // slots; cb == nil marks a free one
	free     []int32            // free slots
	hand     int
	weight   int64 // sum of the live entries' weights
	capacity int64
	_        [64]byte // keep neighbouring shards' locks off one cache line
}

type clockEntry struct {
	key    cacheKey
	cb     *cachedBlock
	weight int64
	ref    uint32 // CLOCK bit; set by hits under the read lock, atomically
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
		s.m = make(map[cacheKey]int32)
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
		var victims []clockEntry
		s.mu.Lock()
		s.capacity = capacity / n
		if i == 0 {
			s.capacity += capacity % n
		}
		for s.weight > s.capacity {
			victims = append(victims, s.evict())
		}
		s.mu.Unlock()
		for _, e := range victims {
			x.onEvict(e.cb, e.weight)
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

func (x *clockIndex) shard(k cacheKey) *clockShard {
	if len(x.shards) == 1 {
		return &x.shards[0]
	}
	h := (k.id ^ bits.RotateLeft64(k.off, 32)) * 0x9E3779B97F4A7C15
	return &x.shards[h>>x.shift]
}

// get returns the block cached under k with a reference taken for the
// caller, and marks it recently used.
func (x *clockIndex) get(k cacheKey) (*cachedBlock, bool) {
	s := x.shard(k)
	s.mu.RLock()
	i, ok := s.m[k]
	var cb *cachedBlock
	if ok {
		e := &s.ents[i]
		if atomic.LoadUint32(&e.ref) == 0 {
			atomic.StoreUint32(&e.ref, 1)
		}
		cb = e.cb
		ok = cb.tryRef()
	}
	s.mu.RUnlock()
	return cb, ok
}

// add inserts cb under k with weight w unless k is present or w exceeds
// the shard's whole budget; it reports whether cb was inserted. It evicts
// entries to make room first.
func (x *clockIndex) add(k cacheKey, cb *cachedBlock, w int64) bool {
	s := x.shard(k)
	var victims [4]clockEntry
	nv := 0
	var more []clockEntry // victims beyond the first four (mixed sizes)
	s.mu.Lock()
	if _, ok := s.m[k]; ok || w > s.capacity {
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
	var i int32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
		s.ents[i] = clockEntry{key: k, cb: cb, weight: w}
	} else {
		i = int32(len(s.ents))
		s.ents = append(s.ents, clockEntry{key: k, cb: cb, weight: w})
	}
	s.m[k] = i
	s.weight += w
	s.mu.Unlock()
	for _, e := range victims[:nv] {
		x.onEvict(e.cb, e.weight)
	}
	for _, e := range more {
		x.onEvict(e.cb, e.weight)
	}
	return true
}

// evict removes the entry the hand stops at and returns it. The shard must
// be write-locked and hold at least one entry (weight > 0 guarantees it).
func (s *clockShard) evict() clockEntry {
	for {
		if s.hand >= len(s.ents) {
			s.hand = 0
		}
		e := &s.ents[s.hand]
		if e.cb != nil {
			if e.ref == 0 {
				// Step past the slot: the new entry will take it, and
				// must not be the next one looked at.
				i := int32(s.hand)
				s.hand++
				return s.removeAt(i)
			}
			e.ref = 0
		}
		s.hand++
	}
}

// removeAt frees slot i and returns its entry. The shard must be
// write-locked.
func (s *clockShard) removeAt(i int32) clockEntry {
	e := s.ents[i]
	delete(s.m, e.key)
	s.ents[i] = clockEntry{}
	s.free = append(s.free, i)
	s.weight -= e.weight
	return e
}

// remove takes k out of the index, if present.
func (x *clockIndex) remove(k cacheKey) {
	s := x.shard(k)
	s.mu.Lock()
	i, ok := s.m[k]
	var e clockEntry
	if ok {
		e = s.removeAt(i)
	}
	s.mu.Unlock()
	if ok {
		x.onEvict(e.cb, e.weight)
	}
}

// clear removes every entry.
func (x *clockIndex) clear() {
	for i := range x.shards {
		s := &x.shards[i]
		s.mu.Lock()
		ents := s.ents
		s.ents, s.free, s.hand, s.weight = nil, nil, 0, 0
		clear(s.m)
		s.mu.Unlock()
		for _, e := range ents {
			if e.cb != nil {
				x.onEvict(e.cb, e.weight)
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
		for k := range s.m {
			ks = append(ks, k)
		}
		s.mu.RUnlock()
	}
	return ks
}
