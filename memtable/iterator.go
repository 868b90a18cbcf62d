package memtable

import (
	"github.com/mayflydb/mayfly/format"
)

// iterChunk is how many nodes a backward step gathers at once (see
// collectBack).
const iterChunk = 32

// iterator walks the skiplist without a lock. A step with nothing
// buffered gathers up to iterChunk nodes in its direction, which the next
// steps that way consume; a row linked among them after the gathering is
// not seen by those steps (a gathering sees every row linked before it).
// Forward it follows level-0 links from its node into fwd (several
// stretches at once over a frozen memtable walked from First: lanes.go),
// then reads the first byte of each of their records before decoding any
// (see touch).
// Backward, nodes have no links, so it searches for its node's
// predecessors and gathers the nodes before it into back (collectBack).
type iterator struct {
	m    *Memtable
	v    view
	nd   uint64   // current node; 0: not positioned
	fwd  []uint64 // nodes after nd, nearest first (see Next)
	fpos int      // next unread entry of fwd
	back []uint64 // nodes before nd, nearest first (see Prev)
	bpos int      // next unread entry of back
	row  format.Row
	sink byte // see touch
	// Lanes (lanes.go): if fromFirst, which only First sets, on a frozen
	// memtable, l1 is the first level-1 node after the last node gathered
	// forward (after First's node before the first gathering; 0: none);
	// sequential reports the last gathering's nodes at ascending, nearby
	// addresses.
	l1         uint64
	fromFirst  bool
	sequential bool
	laneCap    int // nodes a gathering takes from one stretch at most: laneCap (tests lower it)
	lanes      *laneBufs
	lanedNodes int // nodes gathered by lanes, for tests
}

// at positions on node x (0: invalid).
func (it *iterator) at(x uint64) bool {
	it.nd = x
	if x == 0 {
		it.row = format.Row{}
		return false
	}
	it.row = it.v.row(it.v.node(x).loc)
	return true
}

// reset checks the memtable is live and drops both buffers.
func (it *iterator) reset() {
	it.m.live()
	if it.v.m == nil {
		it.v = it.m.view()
	}
	it.back, it.bpos = it.back[:0], 0
	it.fwd, it.fpos = it.fwd[:0], 0
	it.fromFirst = false
}

// touch reads the first byte of the record of each node of nodes.
//
// Rows inserted in random key order lie scattered over the arena, so in key
// order nearly every record is a cache miss (a 16 MiB memtable is far larger
// than the cache). Loads that do not depend on each other let the CPU
// overlap those misses; decoding record by record would wait for them one
// after another.
func (it *iterator) touch(nodes []uint64) {
	v := &it.v
	var b byte
	for _, x := range nodes {
		loc := v.node(x).loc
		b |= v.chunk(locChunk(loc))[locOff(loc)]
	}
	it.sink = b // a store the compiler cannot drop, so neither the loads
}

// gather fills back from preds (see collectBack) and moves to its first
// node.
func (it *iterator) gather(preds *[maxHeight]uint64, top int, last, stop uint64) bool {
	it.back = it.v.collectBack(it.back[:0], preds, top, last, stop)
	it.touch(it.back)
	it.bpos = 0
	return it.popBack()
}

func (it *iterator) popBack() bool {
	if it.bpos >= len(it.back) {
		return it.at(0)
	}
	it.bpos++
	return it.at(it.back[it.bpos-1])
}

// SeekGE positions at the newest version of the first user key >= key.
func (it *iterator) SeekGE(key []byte) bool {
	it.reset()
	s := makeSearchKey(key, pivotSeq)
	return it.at(it.v.seekGE(&s))
}

// SeekLT positions at the oldest version of the last user key < key.
func (it *iterator) SeekLT(key []byte) bool {
	it.reset()
	// The pivot of key sorts before every version of key; everything
	// below it has a smaller user key.
	s := makeSearchKey(key, pivotSeq)
	var preds [maxHeight]uint64
	top := it.v.preds(&s, &preds)
	return it.gather(&preds, top, preds[0], 0)
}

func (it *iterator) First() bool {
	it.reset()
	first := it.m.head.next[0].Load()
	if it.m.Frozen() {
		// The first gathering is serial, and finds out whether lanes pay.
		it.l1, it.fromFirst, it.sequential = it.m.head.next[1].Load(), true, true
		if it.l1 == first && first != 0 {
			it.l1 = it.v.node(first).next(1)
		}
	}
	return it.at(first)
}

func (it *iterator) Last() bool {
	it.reset()
	var preds [maxHeight]uint64
	top := it.v.preds(nil, &preds)
	return it.gather(&preds, top, preds[0], 0)
}

func (it *iterator) Next() bool {
	if it.nd == 0 {
		return false
	}
	it.m.live()
	it.back, it.bpos = it.back[:0], 0
	if it.fpos < len(it.fwd) {
		it.fpos++
		return it.at(it.fwd[it.fpos-1])
	}
	it.fwd, it.fpos = it.fwd[:0], 0
	if it.fromFirst && !it.sequential {
		it.gatherLanes()
	} else {
		it.gatherSerial()
	}
	if len(it.fwd) == 0 {
		return it.at(0)
	}
	it.touch(it.fwd)
	it.fpos = 1
	return it.at(it.fwd[0])
}

func (it *iterator) Prev() bool {
	if it.nd == 0 {
		return false
	}
	it.m.live()
	it.fwd, it.fpos = it.fwd[:0], 0
	it.fromFirst = false
	if it.bpos < len(it.back) {
		return it.popBack()
	}
	// Gather the nodes before this one: search for its internal key, and
	// walk to the node itself (rows with an equal key that went in before
	// it come before it).
	n := it.v.node(it.nd)
	s := makeSearchKey(it.v.recordKey(n.loc), n.seq)
	var preds [maxHeight]uint64
	top := it.v.preds(&s, &preds)
	return it.gather(&preds, top, 0, it.nd)
}

func (it *iterator) Valid() bool      { return it.nd != 0 }
func (it *iterator) Row() *format.Row { return &it.row }
func (it *iterator) Error() error     { return nil }
func (it *iterator) Close() error     { it.fwd, it.back, it.nd = nil, nil, 0; return nil }
