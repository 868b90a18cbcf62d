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

// hintSlots caps the slots of a memtable's hint (24 bytes each).
const hintSlots = 1 << 13

// hintSlot is one slot of the hint; seq is offered before ref is stored.
type hintSlot struct {
	seq  atomic.Uint64 // highest sequence number offered to this slot
	ref  atomic.Uint64 // hintTag of the key and node reference of the row last stored (0: none)
	pred atomic.Uint64 // hintTag of the key and its level-0 predecessor when last linked (0: none)
}

// predWalk is how many level-0 steps an insert takes from its key's
// predecessor before it searches from the head instead.
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
	return newestHint{slots: make([]hintSlot, n), mask: uint64(n - 1)}
}

// bytes is the memory the hint's slots take.
func (h *newestHint) bytes() int64 { return int64(len(h.slots)) * int64(unsafe.Sizeof(hintSlot{})) }

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

// notePred records prev, the level-0 predecessor a row of the key with hash
// kh was just linked after (the head: nothing to record).
func (h *newestHint) notePred(kh, prev uint64) {
	if h.slots != nil && prev != headRef {
		h.slot(kh).pred.Store(hintTag(kh) | prev)
	}
}

// fromPred sets level 0 of sp from the predecessor the slot of the key with
// hash kh names, if it sorts no later than s and s's place is at most
// predWalk steps after it, and reports whether it did.
func (v *view) fromPred(sp *splice, s *searchKey, kh uint64) bool {
	h := &v.m.hint
	if h.slots == nil {
		return false
	}
	x := untag(h.slot(kh).pred.Load(), kh)
	if x == 0 || v.cmp(v.node(x), s) > 0 {
		return false
	}
	for range predWalk {
		nx := v.node(x).next(0)
		if nx == 0 || v.cmp(v.node(nx), s) > 0 {
			sp.prev[0], sp.next[0] = x, nx
			return true
		}
		x = nx
	}
	return false
}
