package mayfly

import (
	"hash/maphash"
	"math"
	"sync/atomic"

	"github.com/mayflydb/mayfly/format"
)

// Recent writes by key hash (RFC 0009, "Single-key calls").
//
// A single-key call's peek (cond_peek.go) read its key at the visible
// sequence number p.seq. The leader may evaluate the call's condition on
// that read, without draining the publish queue or looking the key up, if
// no row of the key was logged after p.seq. recentWrites proves that: for
// each of recentSlots slots of a hash of the key space it keeps an upper
// bound of the sequence numbers of the rows LOGGED with a key in that slot.
// The leader raises a slot, under commitMu, for every row of every batch it
// logs (blind batches too), as it appends the batch to the WAL buffer: a
// batch logged but not yet applied is thus in the table. A slot at or below
// p.seq proves that no row of the key was logged after p.seq; a slot above
// it (a later row of this key, or of another key in the same slot) proves
// nothing, and the leader takes the draining path. Slots only grow, so the
// proof is never wrong, only sometimes missing.
//
// Tracking starts with the first single-key conditional call (enable) and
// costs the leader a decode, a hash and a store per logged row from then
// on; a database that never makes such calls pays nothing. enable takes
// commitMu and drains the publish queue before it turns tracking on: every
// batch logged before tracking is then applied and visible, so a peek that
// follows enable reads a sequence number at least as high as all of them,
// and every batch logged after enable is in the table.

// recentSlots is the number of slots: a peek's key shares its slot with a
// write of another key logged between the peek and the commit with odds of
// about the number of keys written meanwhile over recentSlots.
const recentSlots = 1 << 12

// recentSeed fixes the slot hash for the life of the process.
var recentSeed = maphash.MakeSeed()

// recentWrites is the table of recent writes. slots is guarded by commitMu
// and nil until tracking is on; on is set, under commitMu, once it is.
type recentWrites struct {
	on    atomic.Bool
	slots *[recentSlots]uint64
	left  *[leftSlots]leftState // states left by single-key calls (cond_left.go); nil until the first
}

// recentSlot returns the slot of key.
func recentSlot(key []byte) uint32 {
	return uint32(maphash.Bytes(recentSeed, key) % recentSlots)
}

// enableRecentWrites turns tracking on, once: it takes commitMu and waits
// until every batch logged so far is applied and visible. It returns the
// first apply failure if the database is poisoned.
func (db *DB) enableRecentWrites() error {
	if db.recent.on.Load() {
		return nil
	}
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	if db.recent.on.Load() {
		return nil
	}
	if err := db.pub.wait(); err != nil {
		return err
	}
	db.recent.slots = new([recentSlots]uint64)
	db.recent.on.Store(true)
	return nil
}

// note records the rows of the encoded batch data, logged at sequence
// numbers at most last. A batch note cannot decode raises every slot, which
// proves nothing that was not (its apply fails and poisons the database).
// Caller holds commitMu.
func (rw *recentWrites) note(data []byte, last uint64) {
	if rw.slots == nil {
		return
	}
	br, err := format.NewBatchReader(data)
	var r format.Row
	for err == nil {
		var ok bool
		if ok, err = br.Next(&r); !ok {
			break
		}
		if err == nil {
			s := &rw.slots[recentSlot(r.Key)]
			*s = max(*s, last)
		}
	}
	if err != nil {
		for i := range rw.slots {
			rw.slots[i] = max(rw.slots[i], last)
		}
	}
}

// unchangedSince reports whether no row with a key in slot was logged
// after seq: true is a proof, false means unknown. Caller holds commitMu.
func (rw *recentWrites) unchangedSince(slot uint32, seq uint64) bool {
	return rw.slots != nil && rw.slots[slot] <= seq
}

// provable reports whether every conditional batch of group may be proven
// by its peek (peekProof) or by the state a single-key call left its key in
// (leftProof), as far as the tables know before the group itself is
// logged: tracking is on and each is a single-key call of one entry whose
// peek saw the active memtable logNum and a slot not raised since, or whose
// key's last row was logged by such a call after the peek. Caller holds
// commitMu.
func (rw *recentWrites) provable(group []*commitWaiter, logNum uint64) bool {
	if rw.slots == nil {
		return false
	}
	for _, g := range group {
		if len(g.batch.cond.list) == 0 || rw.peekProof(g.batch, logNum) {
			continue
		}
		// Without the commit time, a recorded deadline is taken as not
		// passed: the proof may only get easier at the commit time.
		if _, ok := rw.leftProof(g.batch, math.MinInt64); !ok {
			return false
		}
	}
	return true
}

// peekProof reports whether the peek of b still describes its key: b is a
// single-key call (one entry, one condition, on the peeked key), the active
// memtable is the one the peek saw (logNum), and no row with a key in the
// peek's slot was logged after the peek's sequence number. Caller holds
// commitMu.
func (rw *recentWrites) peekProof(b *Batch, logNum uint64) bool {
	p := &b.cond.peek
	return b.peekedSingleKey() && p.logNum == logNum && rw.unchangedSince(p.slot, p.seq)
}

// peekedSingleKey reports whether b is a single-key call whose key was
// peeked: one entry, one condition on it, a peek taken for this commit.
func (b *Batch) peekedSingleKey() bool {
	return b.cond.peek.ok && b.count == 1 && len(b.cond.list) == 1
}
