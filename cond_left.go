package mayfly

import "bytes"

// States left by single-key calls (RFC 0009, "Single-key calls").
//
// A single-key call whose peek saw its key before another call changed it
// cannot be proven by its peek (recentWrites.peekProof): its slot was
// raised since. Two calls racing on one key (two GetDels of a one-time
// token, a repeated idempotency key) are the common case, and without more
// the later one takes the draining path: it waits, holding commitMu, until
// every logged batch is applied, then looks the key up.
//
// The leader knows better. When it logs a single-key call on the proven
// path, it knows the state the call leaves its key in (the peek's state,
// or the group's, with the call's row applied). It records that state, without
// the value, in the table of left states, once the group is stamped. A
// later call on the key whose peek is out of date is proven from it
// instead when the table shows that the recorded call is the last row
// logged with a key in the slot (the slot's bound equals its sequence
// number): the key's state at the commit time is then the recorded one,
// judged at the commit time for expiry, whatever the peek saw. The later
// call's outcome rests on the recorded call's batch, which may not be
// published yet: a failure is returned only once it is (commitWaiter.noop),
// and a success is logged after it anyway. A state recorded without its
// value proves nothing to a condition that reads the value or a call that
// returns it (GetDel of a live key, CompareAndSwap): those still drain.

// leftSlots is the number of entries of the table of left states, indexed
// by recentSlot modulo leftSlots; leftKeyMax is the longest key an entry
// holds (calls on longer keys are not recorded).
const (
	leftSlots  = 1 << 10
	leftKeyMax = 32
)

// leftState is the state a single-key call logged at seq left its key in;
// seq 0 is an empty entry.
type leftState struct {
	seq           uint64
	deadline      int64
	live, expires bool
	klen          uint8
	key           [leftKeyMax]byte
}

// pendingLeft is a state to record once the group that logs it is stamped;
// key aliases the batch.
type pendingLeft struct {
	key  []byte
	st   keyState
	seq  uint64
	slot uint32 // recentSlot(key)
}

// leave records the states of a stamped group's single-key calls. Caller
// holds commitMu.
func (rw *recentWrites) leave(pending []pendingLeft) {
	if rw.left == nil && len(pending) > 0 {
		rw.left = new([leftSlots]leftState)
	}
	for _, p := range pending {
		if len(p.key) > leftKeyMax {
			continue
		}
		e := &rw.left[p.slot%leftSlots]
		*e = leftState{seq: p.seq, deadline: p.st.deadline, live: p.st.live, expires: p.st.expires, klen: uint8(len(p.key))}
		copy(e.key[:], p.key)
	}
}

// leftProof returns the state b, a single-key call whose peek is out of
// date, finds its key in at the commit time now, from the table of left
// states: ok is false unless the entry of b's key is the last row logged
// in its slot and holds all b needs (no value unless the key is absent).
// Caller holds commitMu.
func (rw *recentWrites) leftProof(b *Batch, now int64) (s keyState, ok bool) {
	p, c := &b.cond.peek, &b.cond
	if rw.left == nil || rw.slots == nil || !b.peekedSingleKey() {
		return keyState{}, false
	}
	e := &rw.left[p.slot%leftSlots]
	if e.seq == 0 || rw.slots[p.slot] != e.seq {
		return keyState{}, false
	}
	if !bytes.Equal(e.key[:e.klen], p.key) {
		return keyState{}, false
	}
	s = keyState{live: e.live, expires: e.expires, deadline: e.deadline}
	if s.live && s.expires && s.deadline < now {
		s = keyState{}
	}
	if bc := &c.list[0]; s.live && (bc.kind.needsValue() || bc.capture) {
		return keyState{}, false
	}
	return s, true
}
