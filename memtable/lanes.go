package memtable

// Lanes: forward steps over a frozen memtable gather their nodes from
// several stretches of level 0 at once. A serial walk of level 0 loads
// each node's next word only after the previous node's load completed, so
// rows inserted in random key order, scattered over the arena, cost one
// cache miss after another. Level 1 cuts level 0 into stretches (a node
// goes up a level with probability 1/4, so a stretch averages four nodes):
// the walk follows level 1 for the next few stretch starts, then advances
// every stretch by one node per round, so up to lanes loads are in flight
// together. Lanes gather the same nodes, in the same order, as the serial
// walk.
//
// The walk needs the first level-1 node after its position, which a
// forward walk from First keeps (iterator.l1); any other positioning goes
// back to the serial walk. A frozen memtable takes no more inserts, so the
// stretches do not change under the walk (a node linked at level 1 is
// linked at level 0 first, so a stretch's walk always reaches its end).
// When the last gathering found its nodes at ascending, nearby arena
// addresses (rows inserted in key order; see nearbyRun), the serial walk's
// loads are prefetched already and lanes would only add bookkeeping: the
// next gathering is serial.

// lanes is how many stretches a gathering walks side by side, and
// laneCap the nodes it takes from one stretch (a stretch longer than that
// ends the gathering there).
const (
	lanes   = 8
	laneCap = 32
)

// nearby is the largest step, in arena bytes, from one node's reference
// to the next one's that counts as sequential (a node with all its levels
// is 192 bytes).
const nearby = 512

// laneBufs holds the nodes each lane gathered.
type laneBufs [lanes][laneCap]uint64

// gatherSerial appends to it.fwd up to iterChunk nodes after it.nd,
// following level 0, and, walking from First, keeps it.l1 past them.
func (it *iterator) gatherSerial() {
	v := &it.v
	l1 := it.l1
	if !it.fromFirst {
		l1 = 0 // no cursor to keep; a gathered node is never 0
	}
	for x := v.node(it.nd).next(0); x != 0 && len(it.fwd) < iterChunk; x = v.node(x).next(0) {
		it.fwd = append(it.fwd, x)
		if x == l1 {
			l1 = v.node(x).next(1)
		}
	}
	it.l1, it.sequential = l1, nearbyRun(it.nd, it.fwd)
}

// nearbyRun reports whether the last of nodes, gathered after from, lies
// above from by at most nearby bytes per node gathered: nodes allocated
// one after another, as rows inserted in key order are.
func nearbyRun(from uint64, nodes []uint64) bool {
	if len(nodes) == 0 {
		return true
	}
	last := nodes[len(nodes)-1]
	return last > from && last-from <= nearby*uint64(len(nodes))
}

// gatherLanes appends to it.fwd the nodes after it.nd up to the end of the
// lanes-th stretch, or of the first stretch with more than it.laneCap
// nodes, and moves it.l1 to the level-1 node that ends them.
func (it *iterator) gatherLanes() {
	v := &it.v
	// Stretch i runs from pos[i] up to, not including, end[i].
	var pos, end [lanes]uint64
	pos[0], end[0] = v.node(it.nd).next(0), it.l1
	k := 1
	for ; k < lanes && end[k-1] != 0; k++ {
		pos[k], end[k] = end[k-1], v.node(end[k-1]).next(1)
	}
	if it.lanes == nil {
		it.lanes = new(laneBufs)
		it.fwd = make([]uint64, 0, lanes*laneCap)
	}
	buf := it.lanes
	var n [lanes]int
	last, open := k-1, 0
	for i := range k {
		if pos[i] != end[i] {
			open++
		}
	}
rounds:
	for open > 0 {
		for i := range k {
			x := pos[i]
			if x == end[i] {
				continue
			}
			if n[i] == it.laneCap {
				last = i // the stretches after it wait for the next gathering
				break rounds
			}
			buf[i][n[i]] = x
			n[i]++
			pos[i] = v.node(x).next(0)
			if pos[i] == end[i] {
				open--
			}
		}
	}
	for i := range last + 1 {
		it.fwd = append(it.fwd, buf[i][:n[i]]...)
	}
	it.l1, it.sequential = end[last], nearbyRun(it.nd, it.fwd)
	it.lanedNodes += len(it.fwd)
}
