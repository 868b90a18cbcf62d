package mayfly

import (
	"bytes"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/memtable"
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

// Answering without a search. A state remembered with the memtable position
// of the version it is the state at (memtable.Position, "Positions"), in the
// active memtable, answers a read at or above that version's sequence number
// with one load, before the read searches the memtable: while the position
// is current no newer version of the key exists anywhere (every write since
// the version went to the active memtable, and a version a read can see is
// linked there), so the state is what the versions would resolve to. A
// state gets its position from the second read that finds it current
// (findMerged), so a counter that changes between reads pays no extra
// search; one whose position goes stale (another key's row linked just
// before its version) looks again, at most maxPositions times in a
// memtable. A read first tests the key's bit in mayHold, a bitmap of the
// hashes of keys remembered with a position, so that reads of other keys
// pay a hash and one load, and nothing while no state has a position.

// mayHoldBits is the size of the bitmap of positioned keys: one bit per hash
// slot, so a key of another hash tests a bit that is set only when a
// positioned key shares its slot.
const mayHoldBits = 1 << 17

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
	value       []byte            // inline[:n] when it fits there, else its own copy
	memLog      uint64            // LogNum of the memtable pos is in
	pos         memtable.Position // of version seq, when remembered with one
	tries       uint8             // positions looked for in memLog's memtable
	key         []byte            // keyBuf[:n] when it fits there, else its own copy
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
	seed       maphash.Seed
	positioned atomic.Bool // some state was remembered with a position
	mayHold    [mayHoldBits / 64]atomic.Uint64
	shards     [mergeCacheShards]struct {
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
	return c.getHash(maphash.Bytes(c.seed, key), key)
}

// answer returns the state remembered for key if it answers a read at seq
// whose active memtable is m without a search (see "Answering without a
// search"); nil otherwise.
func (c *mergeCache) answer(m *memtable.Memtable, key []byte, seq uint64) *mergeState {
	if c == nil || !c.positioned.Load() {
		return nil
	}
	h := maphash.Bytes(c.seed, key)
	if word, bit := c.mayHoldBit(h); word.Load()&bit == 0 {
		return nil
	}
	s := c.getHash(h, key)
	if s == nil || s.pos.IsZero() || s.memLog != m.LogNum() || s.seq > seq || !m.StillNewest(s.pos) {
		return nil
	}
	return s
}

// position remembers s again, found current by a read whose active
// memtable is m, with the position of its version in m if m holds that
// version as its key's newest, and in any case with m's LogNum and the
// number of positions looked for in m, so that reads in m do not look
// again unless the position goes stale, and not after maxPositions looks
// (rows of other keys linked again and again just before the version).
func (c *mergeCache) position(m *memtable.Memtable, key []byte, s *mergeState) {
	ns := newMergeState(s.seq, s.live, s.hasDeadline, s.deadline, s.value)
	ns.memLog, ns.tries = m.LogNum(), 1
	if s.memLog == ns.memLog {
		ns.tries = min(s.tries, maxPositions) + 1
	}
	if ns.tries <= maxPositions {
		if p, seq, ok := m.Newest(key); ok && seq == s.seq {
			ns.pos = p
		}
	}
	c.remember(key, ns)
}

// maxPositions bounds the positions a state looks for in one memtable.
const maxPositions = 4

// mayHoldBit returns the word of mayHold and the bit in it of hash h.
func (c *mergeCache) mayHoldBit(h uint64) (*atomic.Uint64, uint64) {
	return &c.mayHold[h/64%(mayHoldBits/64)], 1 << (h % 64)
}

// getHash is get of key, whose hash is h.
func (c *mergeCache) getHash(h uint64, key []byte) *mergeState {
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
	if had && bytes.Equal(old.key, key) && (old.seq > s.seq || old.seq == s.seq &&
		(old.memLog > s.memLog || old.memLog == s.memLog && old.tries >= s.tries)) {
		return // as new, and as informed
	}
	if !s.pos.IsZero() {
		word, bit := c.mayHoldBit(h)
		word.Or(bit)
		c.positioned.Store(true)
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
