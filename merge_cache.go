package mayfly

import (
	"bytes"
	"hash/maphash"
	"sync"

	"github.com/mayflydb/mayfly/format"
)

// The resolved-counter cache: a read that folds a long chain of merge
// operands remembers the state it resolved, keyed by the key and the
// sequence number of the chain's newest version. A later read of the key
// that meets a version with that sequence number takes the remembered
// state in place of it and everything beneath, so a counter read while
// operands pile up in the memtable folds only those newer than the last
// read.
//
// Why it is exact: the state a key's versions resolve to at a sequence
// number is fixed by commit order (RFC 0010 rules 1-3, never the reader's
// clock), and flushes and compactions keep it for every version they keep:
// they drop a version only together with everything it could be resolved
// against (a fold writes the state at the newest sequence number of the
// versions folded; a combined operand takes the newer one's number and
// its meaning). A version met at the remembered number is that state, in
// the memtable, a table, or the value row a flush folded it into; an
// expired value turned into a tombstone by compaction rule 2 resolves the
// same for every operand that can still be above it (each committed after
// its deadline). Deadlines are judged by the reader, as always.

// mergeCacheMin is the shortest chain worth remembering.
const mergeCacheMin = 2

// mergeCacheShards and mergeCacheShardSize bound the cache: at most
// mergeCacheShards*mergeCacheShardSize keys, each holding one state (a
// key, a slot and a state with its value: about 100 bytes for a counter).
const (
	mergeCacheShards    = 64
	mergeCacheShardSize = 512
)

// mergeState is a resolved state: live (in commit order) with its value
// and deadline, or absent, as of version seq. A state is never modified
// once the cache holds it: a newer state replaces it.
type mergeState struct {
	seq         uint64
	live        bool
	hasDeadline bool
	deadline    int64
	value       []byte // inline[:n] when it fits there, else its own copy
	key         []byte // keyBuf[:n] when it fits there, else its own copy
	inline      [8]byte
	keyBuf      [24]byte
}

// newMergeState returns a state of the given window holding a copy of
// value, allocated together with the state when it is 8 bytes or shorter.
func newMergeState(seq uint64, live, hasDeadline bool, deadline int64, value []byte) *mergeState {
	s := &mergeState{seq: seq, live: live}
	if !live {
		return s
	}
	s.hasDeadline, s.deadline = hasDeadline, deadline
	s.value = own(s.inline[:0], value)
	return s
}

// own returns a copy of b in buf's array when it fits, else in a new one.
func own(buf, b []byte) []byte {
	if len(b) <= cap(buf) {
		return append(buf[:0:len(b)], b...)
	}
	return append([]byte(nil), b...)
}

// row is the state as a version the chain can end at: a value row, or a
// tombstone when absent.
func (s *mergeState) row() format.Row {
	if !s.live {
		return format.Row{Seq: s.seq, Flags: format.FlagTombstone}
	}
	r := format.Row{Seq: s.seq, Value: s.value}
	if s.hasDeadline {
		r.Flags, r.ExpireTS = format.FlagHasExpire, s.deadline
	}
	return r
}

// mergeCache maps the 64-bit hash of a key (one hash per access, which
// also picks the shard) to the key's state, which holds the key: a state
// of another key under the same hash is a collision, a miss for the key
// looked up. A lookup thus reads the map and the state only; a newer state
// of a key replaces the map's value, allocating the state alone.
type mergeCache struct {
	seed   maphash.Seed
	shards [mergeCacheShards]struct {
		mu sync.Mutex
		m  map[uint64]*mergeState
		_  [48]byte // one cache line each: shards locked apart do not share one
	}
}

func newMergeCache() *mergeCache { return &mergeCache{seed: maphash.MakeSeed()} }

// get returns the state remembered for key; nil if none.
func (c *mergeCache) get(key []byte) *mergeState {
	if c == nil {
		return nil
	}
	h := maphash.Bytes(c.seed, key)
	sh := &c.shards[h%mergeCacheShards]
	sh.mu.Lock()
	s := sh.m[h]
	sh.mu.Unlock()
	if s != nil && !bytes.Equal(s.key, key) {
		return nil
	}
	return s
}

// put remembers the state r (ok false: absent) of key at version seq,
// copying the value, unless a newer state is remembered already, and
// returns the copy (immutable; nil when absent). A full shard forgets an
// arbitrary key first.
func (c *mergeCache) put(key []byte, seq uint64, r *format.Row, ok bool) []byte {
	s := newMergeState(seq, ok, r.HasExpiry(), r.ExpireTS, r.Value)
	c.remember(key, s)
	return s.value
}

// remember makes s, a state not yet shared, key's state unless a state of
// key at least as new is remembered. A key whose hash collides with a
// remembered one's takes its place.
func (c *mergeCache) remember(key []byte, s *mergeState) {
	s.key = own(s.keyBuf[:0], key)
	h := maphash.Bytes(c.seed, key)
	sh := &c.shards[h%mergeCacheShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old, had := sh.m[h]
	if had && old.seq >= s.seq && bytes.Equal(old.key, key) {
		return
	}
	if sh.m == nil {
		sh.m = make(map[uint64]*mergeState)
	}
	if !had && len(sh.m) >= mergeCacheShardSize {
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	sh.m[h] = s
}
