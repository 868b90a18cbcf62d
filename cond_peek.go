package mayfly

import (
	"bytes"
	"fmt"

	"github.com/mayflydb/mayfly/format"
)

// Peeking before the commit pipeline (RFC 0009, "Single-key calls").
//
// A DB-level conditional call (PutIfAbsent, GetDel, Expire, ...) first reads
// its key outside the pipeline, as Get does, in parallel with other callers:
//
//   - If that read already decides a failure (the key is live for
//     PutIfAbsent, absent for GetDel), the call returns it without entering
//     the pipeline: a failed condition writes nothing, so it is a read,
//     linearized at the read.
//   - Otherwise the read travels with the batch (condPeek). The leader, under
//     commitMu, uses it instead of looking the key up again when nothing can
//     have changed the key since. It proves that first from the table of
//     recent writes (cond_recent.go), without waiting for earlier batches
//     to be applied; if every conditional batch of its group is proven so,
//     the group goes through the pipeline as a blind one does
//     (commitGroup). Otherwise, once every earlier batch is applied, it
//     proves it from the memtable: the active memtable is the one the read
//     saw (every write after the read went there) and holds no version of
//     the key newer than the read's sequence number (peeked). Only the
//     expiry is judged again, at the commit time. Failing both, the leader
//     looks the key up as usual.

// condPeek is the state of a single-key conditional call's key read before
// the pipeline.
type condPeek struct {
	ok     bool     // st is valid for this commit attempt
	seq    uint64   // the visible sequence number the read saw
	logNum uint64   // the WAL segment number of the active memtable then
	slot   uint32   // the key's slot in the table of recent writes
	valued bool     // st.value was read (peekKey's withValue)
	st     keyState // value aliases buf
	buf    []byte
	key    []byte // the key read (a copy, reused with the batch)
}

// peekKey reads key's state into p as of now, after the read (so it may
// take effect after every write the read saw), copying the value only if
// withValue. It turns the table of recent writes on first (cond_recent.go):
// the read must come after every batch the table does not hold.
func (db *DB) peekKey(key []byte, withValue bool, p *condPeek) error {
	p.ok = false
	if err := checkReadKey(key); err != nil {
		return err
	}
	if err := db.enableRecentWrites(); err != nil {
		return err
	}
	rs, seq, err := db.loadReadStateSeq()
	if err != nil {
		return err
	}
	defer rs.release()
	r, ref, found, err := db.findResolved(rs, key, seq)
	defer ref.Release()
	if err != nil {
		return err
	}
	p.st = keyState{none: !found}
	if found && r.HasValue() {
		if r.HasExpiry() && r.ExpiredAt(db.clock.NowMillis()) {
			found = false
		}
		if found {
			p.st = keyState{live: true, expires: r.HasExpiry(), deadline: r.ExpireTS}
			if withValue {
				p.buf = append(p.buf[:0], r.Value...)
				p.st.value = p.buf
			}
		}
	}
	p.ok, p.seq, p.logNum, p.slot, p.valued = true, seq, rs.mem.LogNum(), recentSlot(key), withValue
	p.key = append(p.key[:0], key...)
	return nil
}

// state returns the state p read, judged at the commit time now.
func (p *condPeek) state(now int64) keyState {
	s := p.st
	if s.live && s.expires && s.deadline < now {
		s = keyState{}
	}
	return s
}

// admitPeeked evaluates the condition of b, a single-key call, in a group
// on the proven path, without the memtable or a lookup. The key's state at
// the commit time is known exactly in two cases, else admitPeeked returns
// proved false having changed nothing:
//
//   - An earlier call of the group, evaluated here, wrote the key and
//     recorded the state it left (o.written), and no batch of the group
//     logged since wrote the key's slot: that state. rests is then true:
//     b's outcome rests on a batch not published yet, so a failure must not
//     be returned before it is (commitWaiter.noop).
//   - No such call wrote the key, and recentWrites.peekProof proves b's
//     peek current: the peek's state, judged at the commit time.
//
// If the condition holds and feed is set (a later batch of the group has a
// condition), the state b leaves its key in is recorded in o.written, unless
// it depends on a value the peek did not copy (a deadline row or a merge
// operand over a peek without the value): a later call on the key then
// finds its slot raised and is not proven. Caller holds commitMu; o.begin
// was called for the group.
func (o *condOverlay) admitPeeked(b *Batch, logNum uint64, feed bool) (proved, rests bool, err error) {
	c := &b.cond
	br, err := format.NewBatchReader(b.data)
	if err != nil {
		return true, false, err
	}
	var r format.Row
	if ok, err := br.Next(&r); !ok || err != nil {
		return true, false, fmt.Errorf("batch entry 0 of %d: %w", b.count, cmpOr(err, ErrCorruption))
	}
	s, valued, rests, ok := o.provenState(b, r.Key, logNum)
	if !ok {
		return false, false, nil
	}
	c.got, c.newKeys = c.got[:0], 0
	if err := c.judge(&c.list[0], s, &r); err != nil {
		return true, rests, err
	}
	if valued || !r.IsDeadline() && !r.IsMerge() {
		ns, err := o.resolveOn(&r, s)
		if err != nil {
			return true, rests, err
		}
		if feed {
			o.written = append(o.written, provenWrite{key: r.Key, st: ns, seq: r.Seq})
		}
		if b.count == 1 {
			o.left = append(o.left, pendingLeft{key: r.Key, st: ns, seq: r.Seq, slot: b.cond.peek.slot})
		}
	}
	return true, rests, nil
}

// provenWrite is the state a batch of a group on the proven path left key
// in; seq is the batch's sequence number. key and the state's value alias
// the batch or a merge result, stable until the group is logged.
type provenWrite struct {
	key []byte
	st  keyState
	seq uint64
}

// provenState returns key's state at the commit time of b, a single-key
// call on key, in a group on the proven path, whether its value is known
// (a live state read without it has none), whether it is the state an
// earlier batch of the group left, and whether it is proven (admitPeeked).
func (o *condOverlay) provenState(b *Batch, key []byte, logNum uint64) (s keyState, valued, inGroup, ok bool) {
	rw := &o.db.recent
	p := &b.cond.peek
	for i := len(o.written) - 1; i >= 0; i-- {
		if w := &o.written[i]; bytes.Equal(w.key, key) {
			return w.st, true, true, rw.slots != nil && rw.slots[p.slot] == w.seq
		}
	}
	if rw.peekProof(b, logNum) {
		return p.state(o.now), p.valued, false, true
	}
	if s, ok := rw.leftProof(b, o.now); ok {
		return s, false, true, true
	}
	return keyState{}, false, false, false
}

// peeked returns the state key has at the commit time now if p still
// describes it: no later write can have reached the key. Caller holds
// commitMu (so db.mem is stable) and every batch logged so far is in the
// memtable (commitGroup waits for that before evaluating conditions), so
// every write since the read is a version m.Get finds.
func (o *condOverlay) peeked(p *condPeek, key []byte) (keyState, bool) {
	if !p.ok {
		return keyState{}, false
	}
	if _, written := o.keys[string(key)]; written {
		return keyState{}, false
	}
	m := o.db.mem
	if m.LogNum() != p.logNum {
		return keyState{}, false // rotated since: later writes may be anywhere
	}
	if r, found := m.Get(key, format.MaxSeq); found && r.Seq > p.seq {
		return keyState{}, false
	}
	return p.state(o.now), true
}

// writeCondOn writes the single-key conditional batch b on key, whose
// building err reports, with no sync: it peeks at key first and returns a
// failure the peek decides without entering the pipeline.
func (b *Batch) writeCondOn(key []byte, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	c := &b.cond
	if len(c.list) == 1 && !b.db.opts.ReadOnly {
		bc := &c.list[0]
		if err := b.db.peekKey(key, bc.kind.needsValue() || bc.capture, &c.peek); err != nil {
			return false, err
		}
		st := c.peek.st
		if bc.kind == condDeadline && !st.live || bc.kind != condDeadline && !bc.kind.holds(st, nil, c.arg(bc)) {
			b.db.metrics.condReadFailures.Add(1)
			return false, nil
		}
		c.quiet = true
	}
	return condApplied(b.Write(nil))
}
