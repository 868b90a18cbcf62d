package mayfly

import (
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
//     have changed the key since: the active memtable is the one the read
//     saw (every write after the read went there) and holds no version of
//     the key newer than the read's sequence number. Only the expiry is
//     judged again, at the commit time. Otherwise the leader looks the key up
//     as usual.

// condPeek is the state of a single-key conditional call's key read before
// the pipeline.
type condPeek struct {
	ok     bool     // st is valid for this commit attempt
	seq    uint64   // the visible sequence number the read saw
	logNum uint64   // the WAL segment number of the active memtable then
	st     keyState // value aliases buf
	buf    []byte
}

// peekKey reads key's state into p as of now, after the read (so it may
// take effect after every write the read saw), copying the value only if
// withValue.
func (db *DB) peekKey(key []byte, withValue bool, p *condPeek) error {
	p.ok = false
	if err := checkReadKey(key); err != nil {
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
	p.st = keyState{}
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
	p.ok, p.seq, p.logNum = true, seq, rs.mem.LogNum()
	return nil
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
	s := p.st
	if s.live && s.expires && s.deadline < o.now {
		s = keyState{}
	}
	return s, true
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
