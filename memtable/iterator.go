package memtable

import (
	"github.com/mayflydb/mayfly/format"
)

// iterChunk is how many nodes a backward step gathers at once (see
// collectBack).
const iterChunk = 32

// iterator walks the skiplist without a lock. Forward it follows level-0
// links from its node, so it sees every row linked after that node by the
// time it steps. Backward, nodes have no links, so a step that has nothing
// buffered searches for its node's predecessors and gathers up to
// iterChunk nodes before it into back (collectBack), which the next Prev
// calls consume; a row linked among them after the gathering is not seen by
// those calls.
type iterator struct {
	m    *Memtable
	v    view
	nd   uint64   // current node; 0: not positioned
	back []uint64 // nodes before nd, nearest first (see Prev)
	bpos int      // next unread entry of back
	row  format.Row
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

// reset checks the memtable is live and drops the backward buffer.
func (it *iterator) reset() {
	it.m.live()
	if it.v.m == nil {
		it.v = it.m.view()
	}
	it.back, it.bpos = it.back[:0], 0
}

// gather fills back from preds (see collectBack) and moves to its first
// node.
func (it *iterator) gather(preds *[maxHeight]uint64, top int, last, stop uint64) bool {
	it.back = it.v.collectBack(it.back[:0], preds, top, last, stop)
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
	return it.at(it.m.head.next[0].Load())
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
	it.reset()
	return it.at(it.v.node(it.nd).next(0))
}

func (it *iterator) Prev() bool {
	if it.nd == 0 {
		return false
	}
	it.m.live()
	if it.bpos < len(it.back) {
		return it.popBack()
	}
	// Gather the nodes before this one: search for its internal key, and
	// walk to the node itself (rows with an equal key that went in before
	// it come before it).
	n := it.v.node(it.nd)
	s := makeSearchKey(it.v.recordKey(n.loc), it.v.trailer(n.loc)>>8)
	var preds [maxHeight]uint64
	top := it.v.preds(&s, &preds)
	return it.gather(&preds, top, 0, it.nd)
}

func (it *iterator) Valid() bool      { return it.nd != 0 }
func (it *iterator) Row() *format.Row { return &it.row }
func (it *iterator) Error() error     { return nil }
func (it *iterator) Close() error     { it.back, it.nd = nil, 0; return nil }
