package memtable

import (
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/mayflydb/mayfly/format"
)

// The index: a concurrent skiplist whose nodes live in the arena, in chunks
// of their own (arena.go). A node is 8-byte aligned (every allocation in a
// node chunk is a multiple of 8 bytes, and chunks are page aligned):
//
//	+--------+--------+---------+---------+------------+-----+---------------+
//	| k0 u64 | k1 u64 | loc u64 | seq u64 | next[0] u64| ... | next[h-1] u64 |
//	+--------+--------+---------+---------+------------+-----+---------------+
//
// k0 and k1 are the key's first 16 bytes, loc locates its record (see
// keys.go) and seq is the row's sequence number, so that versions of one
// key compare without touching their records; next[l] is the node reference (see makeRef) of the following
// node at level l, 0 at the end. h, the node's height, is drawn at random
// with P(h > k) = 4^-k, capped at maxHeight. Being aligned, the next words
// are updated with atomic operations on the arena memory.
// The list's head is a node of maxHeight levels on the Go heap (headNode).
//
// Nodes are never removed or moved, and k0, k1, loc, seq and the record are
// written before the node is published, so they never change once seen.
// Insertion links a node bottom-up, each level with one compare-and-swap of
// its predecessor's next word from the successor the node's own next word
// was set to: a CAS that fails (another node went in between) searches that
// level again from the same predecessor, which still sorts before the new
// node. Hence:
//
//   - a node reachable at any level is linked at level 0, and level 0 is
//     always the whole list in internal-key order: a reader that finds a
//     node sees all of its row, and a reader that walks level 0 sees every
//     row linked before the walk reached its place;
//   - readers take no lock and write nothing: they load next words (a
//     sequentially consistent atomic load, which makes the node's and
//     record's plain writes, done before the CAS that published it,
//     visible) and follow them.
//
// Two rows with the same internal key (user key and sequence number; the
// engine never writes them) are both kept: an insert goes after every node
// not greater than its key, so the one inserted first sorts first, and
// Get finds it.
type node struct {
	k0, k1, loc, seq uint64
	// next words follow: see nextWord.
}

// nodeHeader is the bytes of a node before its next words.
const nodeHeader = int(unsafe.Sizeof(node{}))

// maxHeight caps a node's height: 4^20 rows are beyond any memtable.
const maxHeight = 20

// headNode is the list's head: a node with every level.
type headNode struct {
	node
	next [maxHeight]atomic.Uint64
}

// headRef is the reference of the head node; 0 is the end of a level.
const headRef = 1 << 62

// A node reference is the node's arena chunk index plus one above refOff
// bits of offset.
const refOff = 20

func makeRef(chunk, off int) uint64 { return uint64(chunk+1)<<refOff | uint64(off) }

// nodeSize returns the bytes of a node of height h.
func nodeSize(h int) int { return nodeHeader + 8*h }

// randomHeight draws a node height: each level above the first with
// probability 1/4 (two more trailing zero bits of a random word).
func randomHeight() int {
	return min(1+bits.TrailingZeros64(rand.Uint64())/2, maxHeight)
}

// nextWord returns the next word of n at level l, which n must have.
func (n *node) nextWord(l int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Add(unsafe.Pointer(n), nodeHeader+8*l))
}

// next returns the node after n at level l (0: none).
func (n *node) next(l int) uint64 { return n.nextWord(l).Load() }

// view resolves node references and record locations for one reader or
// writer: it caches the arena's chunk table and loads it again when a
// reference names a chunk past it (see chunkTable).
type view struct {
	m      *Memtable
	chunks [][]byte
}

func (m *Memtable) view() view { return view{m: m, chunks: m.chunks()} }

// chunk returns arena chunk i.
func (v *view) chunk(i int) []byte {
	if i >= len(v.chunks) {
		v.chunks = v.m.chunks()
	}
	return v.chunks[i]
}

// node returns the node of reference ref (not 0).
func (v *view) node(ref uint64) *node {
	if ref == headRef {
		return &v.m.head.node
	}
	c := v.chunk(int(ref>>refOff) - 1)
	return (*node)(unsafe.Pointer(&c[ref&(1<<refOff-1)]))
}

// splice is, for each level below height, the nodes between which a key
// goes: prev sorts before it (or is the head), next after it (or is 0). A
// writer keeps one across the rows of a call, so that rows in ascending
// order find their place with a comparison or two (see findSplice).
type splice struct {
	height     int
	prev, next [maxHeight]uint64
}

// insert copies r into the arena, links its node and returns the arena
// bytes it took. Safe for concurrent use.
func (m *Memtable) insert(v *view, sp *splice, r *format.Row) int64 {
	h := randomHeight()
	ns, rl := nodeSize(h), recordLen(r)
	c, off := m.alloc(nodeSpace, ns)
	ref := makeRef(c, off)
	var rc, roff int
	if rl > arenaChunk/4 {
		rc = m.allocBig(rl)
	} else {
		rc, roff = m.alloc(recordSpace, rl)
	}
	writeRecord(v.chunk(rc)[roff:roff+rl:roff+rl], r)
	loc := makeLoc(rc, roff, len(r.Key))
	n := v.node(ref)
	n.k0, n.k1 = inline(r.Key)
	n.loc, n.seq = loc, r.Seq
	s := searchKey{k0: n.k0, k1: n.k1, key: r.Key, seq: r.Seq}
	kh := keyHash(n.k0, n.k1, r.Key)
	m.filter.add(kh) // before the node can be seen
	m.hint.offer(kh, r.Seq, ref)
	v.link(sp, ref, n, h, &s, kh)
	return int64(ns + rl)
}

// link inserts node n (reference ref, height h, internal key s, key hash
// kh) into the list, bottom-up (see the top of this file).
func (v *view) link(sp *splice, ref uint64, n *node, h int, s *searchKey, kh uint64) {
	m := v.m
	top := int(m.height.Load())
	for h > top && !m.height.CompareAndSwap(int32(top), int32(h)) {
		top = int(m.height.Load())
	}
	v.findSplice(sp, s, h, max(h, top), kh)
	for l := range h {
		for {
			n.nextWord(l).Store(sp.next[l])
			if v.node(sp.prev[l]).nextWord(l).CompareAndSwap(sp.next[l], ref) {
				break
			}
			sp.prev[l], sp.next[l] = v.spliceLevel(s, l, sp.prev[l])
		}
		// A predecessor of the same key (the row went in behind a newer
		// one, out of sequence order) serves neither the key's next insert
		// nor its lookups, which go before every row of the key: keep the
		// one recorded.
		if p := sp.prev[l]; p == headRef || v.cmpUser(v.node(p), s) != 0 {
			m.hint.notePred(kh, s.seq, p, l)
		}
		if sp.next[l] == 0 {
			m.tail[l].Store(ref) // n went in last at level l
		}
		// The next key of an ascending run goes right after n.
		sp.prev[l] = ref
	}
}

// findSplice sets sp to where s goes, at least at the levels below h (the
// height of the node to link) and at most at top, the list's height. In
// order of preference:
//
//   - the splice left by the previous insert of the same call, kept when s
//     still goes right after its level-0 predecessor (rows in ascending
//     order): its predecessors at every level sort no later than that one,
//     so they still sort before s, and a successor found stale makes the
//     CAS fail and the level searched again;
//   - the list's tail (Memtable.tail), when s sorts at or after its last
//     node at level 0 (keys ascending across calls): each level below h is
//     walked from its last node, found without a search;
//   - for a node of height up to predLevels, the predecessors at each of
//     its levels that its key's last inserts there had (hint.go, the
//     predecessor hint), when each still sorts before s and a few steps
//     reach s's place from it;
//   - a search from the head.
func (v *view) findSplice(sp *splice, s *searchKey, h, top int, kh uint64) {
	if sp.height == top && (sp.prev[0] == headRef || v.cmp(v.node(sp.prev[0]), s) <= 0) &&
		(sp.next[0] == 0 || v.cmp(v.node(sp.next[0]), s) > 0) {
		return
	}
	if v.fromTail(sp, s, h) || v.fromPreds(sp, s, h, kh) {
		sp.height = 0 // levels from h up were not set: no splice to keep
		return
	}
	x := uint64(headRef)
	for l := top - 1; l >= 0; l-- {
		sp.prev[l], sp.next[l] = v.spliceLevel(s, l, x)
		x = sp.prev[l]
	}
	sp.height = top
}

// fromTail sets the levels of sp below h from the list's tail if every
// tail node of those levels sorts no later than s, and reports whether it
// did. A tail word names a node that was last at its level when it was
// stored (an empty word: the level had no node, so the head starts it);
// any node at or before s is a valid start for the walk of its level.
func (v *view) fromTail(sp *splice, s *searchKey, h int) bool {
	tail := &v.m.tail
	t := tail[0].Load()
	if t == 0 || v.cmp(v.node(t), s) > 0 {
		return false
	}
	for l := range h {
		start := uint64(headRef)
		if l > 0 {
			t = tail[l].Load()
		}
		if t != 0 {
			if l > 0 && v.cmp(v.node(t), s) > 0 {
				return false
			}
			start = t
		}
		sp.prev[l], sp.next[l] = v.spliceLevel(s, l, start)
	}
	return true
}

// spliceLevel walks level l from start, which sorts no later than s, to
// the last node not greater than s, and returns it and its successor.
func (v *view) spliceLevel(s *searchKey, l int, start uint64) (prev, next uint64) {
	x := start
	for {
		nx := v.node(x).next(l)
		if nx == 0 || v.cmp(v.node(nx), s) > 0 {
			return x, nx
		}
		x = nx
	}
}

// seekGE returns the first node not less than s, or 0.
func (v *view) seekGE(s *searchKey) uint64 {
	_, nx := v.seekGEPred(s)
	return nx
}

// seekGEPred returns the first node not less than s, or 0, and the node
// before it at level 0 (the last node less than s, or the head).
func (v *view) seekGEPred(s *searchKey) (pred, next uint64) {
	x := uint64(headRef)
	var nx, bound uint64 // bound: a node known not to be less than s
	for l := int(v.m.height.Load()) - 1; l >= 0; l-- {
		for {
			nx = v.node(x).next(l)
			if nx == 0 || nx == bound || v.cmp(v.node(nx), s) >= 0 {
				break
			}
			x = nx
		}
		bound = nx
	}
	return x, nx
}

// preds sets preds[l], for every level below the returned height, to the
// last node at level l less than s (s nil: the last node), or the head.
func (v *view) preds(s *searchKey, preds *[maxHeight]uint64) int {
	top := int(v.m.height.Load())
	x := uint64(headRef)
	var bound uint64
	for l := top - 1; l >= 0; l-- {
		for {
			nx := v.node(x).next(l)
			if nx == 0 || nx == bound || s != nil && v.cmp(v.node(nx), s) >= 0 {
				bound = nx
				break
			}
			x = nx
		}
		preds[l] = x
	}
	return top
}

// backLevel is the level whose predecessor a backward walk starts from:
// nodes of height > 3 are about 64 apart, so the walk to the search key
// usually gathers a buffer's worth (iterChunk) at the first try.
const backLevel = 3

// collectBack appends to out, last first, up to iterChunk nodes that sort
// just before a point, found from preds and top (see preds): the nodes up
// to and including last, or, with last 0, those before node stop. It
// walks level 0 from the predecessor at backLevel, and from higher ones
// while that gathers fewer than iterChunk nodes, so that nodes never need
// a link backwards. The end is recognised by identity, so no key is
// compared.
func (v *view) collectBack(out []uint64, preds *[maxHeight]uint64, top int, last, stop uint64) []uint64 {
	if top == 0 || last == headRef {
		return out // nothing before the point
	}
	var ring [iterChunk]uint64
	l := min(backLevel, top-1)
	for {
		start := preds[l]
		n := 0
		x := start
		if x == headRef {
			x = v.m.head.next[0].Load()
		}
		for x != 0 && x != stop {
			ring[n%iterChunk] = x
			n++
			if x == last {
				break
			}
			x = v.node(x).next(0)
		}
		if n >= iterChunk || start == headRef {
			for i := range min(n, iterChunk) {
				out = append(out, ring[(n-1-i)%iterChunk])
			}
			return out
		}
		for l < top && preds[l] == start {
			l++
		}
		if l == top {
			l = top - 1
			preds[l] = headRef
		}
	}
}
