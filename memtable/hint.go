package memtable

import (
	"sync/atomic"
	"unsafe"
)

// The newest-version hint. A point lookup of a key the memtable does hold
// (a token read back after it was put, a session read on each request)
// passes the whole-key filter and would search the skiplist, about one
// cache miss per level. The hint answers most lookups of recently written
// keys with two: a table, indexed by key hash, of the node each slot last
// saw inserted, kept so that a node it names is always its key's newest.
//
// Each slot holds a node reference, tagged with 20 bits of its key's
// hash, and the highest sequence number ever offered to the slot. An
// insert of a row with sequence s, before its node is linked, raises the
// slot's sequence to s with a compare-and-swap and then stores its
// reference; if the slot already holds s or more it stores nothing.
// Sequence numbers are unique per row and a slot's only grows, so:
//
//   - a lookup that loads a reference, then finds that node's sequence
//     equal to the slot's, has the newest row of the node's key: a newer
//     row of that key, had it been offered, would have raised the slot
//     past it. The reference a slow insert stores after a newer one raised
//     the slot fails this check, and the lookup searches the list;
//   - a row a reader may see (its sequence published, so its insert
//     returned) has been offered before the reader loads the slot;
//   - a node is offered before it is linked, so the hint may name a node
//     whose next words are not set yet, but only one whose sequence is
//     not published: a lookup at a published sequence number never takes
//     it, and a lookup at format.MaxSeq (a check for any version at all)
//     does not use the hint (Versions).
//
// A lookup at sequence seq uses the hinted node if its key is the one
// asked for and its sequence is at most seq: it is then the newest row at
// or below seq, and the older versions follow it at level 0. Any other
// case (another key's node, a row newer than seq, an empty slot) searches
// the list. The tag rules out almost every other key's node without
// loading it: a lookup of a key the slot does not hold costs the slot's
// load, not a miss on a node. Slots are overwritten by other keys'
// inserts, so the hint serves keys written recently, which are the ones
// read back soon.

// hintSlots caps the slots of a memtable's hint (16 bytes each, and
// predEntriesPerSlot predecessor words per level: 48 bytes in all).
const hintSlots = 1 << 13

// hintSlot is one slot of the hint; seq is offered before ref is stored.
type hintSlot struct {
	seq atomic.Uint64 // highest sequence number offered to this slot
	ref atomic.Uint64 // hintTag of the key and node reference of the row last stored (0: none)
}

// The predecessor hint: for each of the lowest predLevels levels, a table
// of tagged words, each a key's predecessor at that level when a row of
// the key was last linked there. A table is set-associative: a key's hash
// picks a bucket of predWays words, and a key's word is whichever of them
// carries its tag. Storing overwrites the key's own word if the bucket has
// one, else an empty word, else a word picked by a hash of the row's
// sequence number, so that keys sharing a bucket keep up to predWays
// predecessors between them instead of evicting each other on every
// insert. Eight words (64 bytes) a bucket, rather than four in twice the
// buckets, leave fewer buckets with more keys than words (RFC 0011,
// "Predecessor hint").
const (
	predLevels         = 2 // levels with a predecessor table: nodes of height up to 2 skip the search
	predWaysLog        = 3
	predWays           = 1 << predWaysLog // words per bucket
	predEntriesPerSlot = 2                // words per level per hint slot
)

// predWalk is how many steps an insert takes along a level from its key's
// predecessor there before it searches from the head instead.
const predWalk = 8

// A slot's ref word holds the node reference (below 2^44: see makeRef and
// maxChunk) in its low hintTagShift bits and the top bits of the key's
// hash above.
const hintTagShift = 44

// hintTag is the tag of the key with hash kh: its top 20 bits, in place.
func hintTag(kh uint64) uint64 { return kh >> hintTagShift << hintTagShift }

// untag returns the node reference of tagged word w if its tag is that of
// the key with hash kh, else 0.
func untag(w, kh uint64) uint64 {
	if w == 0 || w&^(1<<hintTagShift-1) != hintTag(kh) {
		return 0
	}
	return w & (1<<hintTagShift - 1)
}

// newestHint is a memtable's newest-version hint; the zero value has no
// slots and hints nothing.
type newestHint struct {
	slots []hintSlot // a power of two of them
	mask  uint64
	// preds[l] is level l's predecessor table: buckets of predWays
	// words, a power of two of them, pmask+1.
	preds [predLevels][]atomic.Uint64
	pmask uint64
}

// makeNewestHint returns a hint for a memtable expected to grow to about
// expectedBytes (0: none): a slot per 8 of its filter's rows (a power of
// two, at least that many), at most hintSlots.
func makeNewestHint(expectedBytes int64) newestHint {
	if expectedBytes <= 0 {
		return newestHint{}
	}
	n := 1
	for n < hintSlots && int64(n)*8*filterRowBytes < expectedBytes {
		n <<= 1
	}
	h := newestHint{slots: make([]hintSlot, n), mask: uint64(n - 1)}
	buckets := max(n*predEntriesPerSlot/predWays, 1)
	for l := range h.preds {
		h.preds[l] = make([]atomic.Uint64, buckets*predWays)
	}
	h.pmask = uint64(buckets - 1)
	return h
}

// bytes is the memory the hint's slots and predecessor tables take.
func (h *newestHint) bytes() int64 {
	b := int64(len(h.slots)) * int64(unsafe.Sizeof(hintSlot{}))
	for _, t := range h.preds {
		b += int64(len(t)) * 8
	}
	return b
}

// slot returns the slot of the key with hash kh (the filter's hash: its
// bits above the probes' pick the slot).
func (h *newestHint) slot(kh uint64) *hintSlot { return &h.slots[kh>>24&h.mask] }

// offer records the node ref of a row with sequence seq and key hash kh,
// whose node is written but not yet linked.
func (h *newestHint) offer(kh, seq, ref uint64) {
	if h.slots == nil {
		return
	}
	s := h.slot(kh)
	for {
		cur := s.seq.Load()
		if seq <= cur {
			return
		}
		if s.seq.CompareAndSwap(cur, seq) {
			s.ref.Store(hintTag(kh) | ref)
			return
		}
	}
}

// hinted returns the reference of the newest row of the key with hash kh
// and internal key s if the hint names it and it is at most s.seq; 0
// otherwise (the caller searches the list).
func (v *view) hinted(kh uint64, s *searchKey) uint64 {
	h := &v.m.hint
	if h.slots == nil {
		return 0
	}
	sl := h.slot(kh)
	ref := untag(sl.ref.Load(), kh)
	if ref == 0 {
		return 0
	}
	n := v.node(ref)
	if n.seq > s.seq || n.seq != sl.seq.Load() || v.cmpUser(n, s) != 0 {
		return 0
	}
	return ref
}

// predBucket returns the bucket of level l's predecessor table that holds
// the word of the key with hash kh, if it has one.
func (h *newestHint) predBucket(kh uint64, l int) []atomic.Uint64 {
	i := (kh >> 24 & h.pmask) * predWays
	return h.preds[l][i : i+predWays]
}

// notePred records prev, the level-l predecessor the row with sequence
// number seq and key hash kh was just linked after (the head, or a level
// without a table: nothing to record).
func (h *newestHint) notePred(kh, seq, prev uint64, l int) {
	if h.slots == nil || prev == headRef || l >= predLevels {
		return
	}
	b, tag := h.predBucket(kh, l), hintTag(kh)
	free := -1
	for i := range b {
		w := b[i].Load()
		if w&^(1<<hintTagShift-1) == tag {
			b[i].Store(tag | prev)
			return
		}
		if w == 0 && free < 0 {
			free = i
		}
	}
	if free < 0 {
		// A key's predecessor is mostly the same node on every insert, so
		// the word to evict is picked by a hash of the row's sequence
		// number: two keys of a bucket never settle on evicting each other.
		free = int(seq * 0x9e3779b97f4a7c15 >> (64 - predWaysLog))
	}
	b[free].Store(tag | prev)
}

// fromPreds sets the levels of sp below h, the height of the node to link,
// from the predecessors the hint names for the key with hash kh, if it has
// a table for each of those levels and, at each, the predecessor sorts no
// later than s and s's place is at most predWalk steps after it; it
// reports whether it did. A word whose tag matches names a node linked at
// its level (only nodes linked there are recorded in its table), whatever
// key it was recorded for, so any that sorts before s is a valid start.
func (v *view) fromPreds(sp *splice, s *searchKey, h int, kh uint64) bool {
	if v.m.hint.slots == nil || h > predLevels {
		return false
	}
	for l := range h {
		if !v.fromPred(sp, s, kh, l) {
			return false
		}
	}
	return true
}

// predOf returns the node the word of the key with hash kh names in level
// l's predecessor table, or 0 if the key's bucket holds no word of its tag.
// The table must exist.
func (h *newestHint) predOf(kh uint64, l int) uint64 {
	b := h.predBucket(kh, l)
	for i := range b {
		if x := untag(b[i].Load(), kh); x != 0 {
			return x
		}
	}
	return 0
}

// fromPred sets level l of sp from the hint's level-l predecessor of the
// key with hash kh (see fromPreds) and reports whether it did.
func (v *view) fromPred(sp *splice, s *searchKey, kh uint64, l int) bool {
	x := v.m.hint.predOf(kh, l)
	if x == 0 || v.cmp(v.node(x), s) > 0 {
		return false
	}
	for range predWalk {
		nx := v.node(x).next(l)
		if nx == 0 || v.cmp(v.node(nx), s) > 0 {
			sp.prev[l], sp.next[l] = x, nx
			return true
		}
		x = nx
	}
	return false
}

// seekFromPred returns what seekGEPred(s) does, the first node not less
// than s and the node before it at level 0, starting from the level-0
// predecessor the hint names for the key with hash kh, if that node sorts
// before s and s's place is at most predWalk steps after it; ok is false
// otherwise (the caller searches). A lookup of a key written again and
// again (a counter, a session) thus costs the loads of a few nodes, not a
// search, when the newest-version slot has been taken by another key. Any
// node linked at level 0 that sorts before s is a valid start, whatever key
// it was recorded for, and the walk sees only linked nodes, so the answer
// is the search's at any sequence number, format.MaxSeq included.
func (v *view) seekFromPred(s *searchKey, kh uint64) (pred, next uint64, ok bool) {
	if v.m.hint.slots == nil {
		return 0, 0, false
	}
	x := v.m.hint.predOf(kh, 0)
	if x == 0 || v.cmp(v.node(x), s) >= 0 {
		return 0, 0, false
	}
	for range predWalk {
		nx := v.node(x).next(0)
		if nx == 0 || v.cmp(v.node(nx), s) >= 0 {
			return x, nx, true
		}
		x = nx
	}
	return 0, 0, false
}
