package mayfly

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/mayflydb/mayfly/format"
)

// Condition evaluation in the commit pipeline (RFC 0009).
//
// The leader of a commit group stamps each batch and then, for a batch with
// conditions, evaluates them in commit order before the batch is appended to
// the WAL buffer. A condition sees its key's state as the group's overlay has
// it (the writes of earlier batches of the group and of earlier entries of
// its own batch, which are not in the memtable yet), else as the latest
// committed state (db.lookup at latestSeq: before evaluating, the leader
// waits until every batch logged before its group is applied and visible,
// and no other batch is logged while it holds commitMu). A group whose
// every condition belongs to a single-key call proven current by the table
// of recent writes skips the wait, the lookup and the overlay
// (cond_recent.go, condOverlay.admitPeeked). A batch whose
// condition fails is rolled back out of the overlay, is not logged and
// takes no sequence numbers. The WAL thus carries only outcomes: ordinary
// rows.

// condKind is the kind of a condition on one entry of a batch.
type condKind uint8

const (
	condAbsent  condKind = iota + 1 // the key has no live value
	condPresent                     // the key has a live value
	condEqual                       // the key's live value equals the operand
	// condDeadline: the key has a live value and the deadline row of the
	// entry may replace its deadline as the operand's ExpireCond says
	// (ttl_ops.go).
	condDeadline
	// condCounter: the key is absent or holds an 8-byte value to which the
	// Int64Add operand of the entry adds without overflow (DB.Add, merge.go).
	condCounter
)

func (k condKind) String() string {
	switch k {
	case condAbsent:
		return "if absent"
	case condPresent:
		return "if present"
	case condEqual:
		return "if equal"
	case condDeadline:
		return "if present and its deadline allows"
	case condCounter:
		return "if absent or a counter"
	}
	return fmt.Sprintf("condition %d", uint8(k))
}

// needsValue reports whether holds reads keyState.value.
func (k condKind) needsValue() bool { return k == condEqual || k == condCounter }

// keyState is a key's state as a condition sees it at the commit time: live
// is false for a missing, deleted or expired key, and then the other fields
// are zero.
type keyState struct {
	live     bool
	value    []byte
	expires  bool
	deadline int64 // Unix ms, valid if expires
	// none: the read found no version of the key, live or dead (set by
	// peekKey only, from findResolved; false where not known). The one
	// other state findResolved reports as not found, deadline rows over
	// no value, is counted as none too: the count that uses it
	// (batchConds.newKeys) is a compaction estimate, not a read.
	none bool
}

// holds reports whether a condition of kind k holds for entry e (stamped:
// its deadline is absolute) when its key is in state s; arg is the
// condition's operand (condEqual: the expected value).
func (k condKind) holds(s keyState, e *format.Row, arg []byte) bool {
	switch k {
	case condAbsent:
		return !s.live
	case condPresent:
		return s.live
	case condEqual:
		return s.live && bytes.Equal(s.value, arg)
	case condDeadline:
		return s.live && len(arg) == 1 && ExpireCond(arg[0]).allows(s, e)
	case condCounter:
		if !s.live {
			return true
		}
		n, ok := DecodeInt64(s.value)
		var d int64 // e is nil for a peek (cond_peek.go): the pipeline judges the sum
		if e != nil {
			d, _ = DecodeInt64(e.Value) // validated when added
		}
		return ok && !addOverflows(n, d)
	}
	return false
}

// addOverflows reports whether n+d leaves the int64 range.
func addOverflows(n, d int64) bool {
	return (d > 0 && n > math.MaxInt64-d) || (d < 0 && n < math.MinInt64-d)
}

// batchCond is a condition on entry `entry` of a batch; its operand is
// args[argOff:argOff+argLen] of the batch's batchConds.
type batchCond struct {
	entry          uint32
	kind           condKind
	capture        bool // copy the state's value into batchConds.got when it holds
	argOff, argLen uint32
}

// tokenSlot is an 8-byte slot at offset of the batch encoding that commit
// fills with the sequence number of entry `entry` (a lease's fencing token).
type tokenSlot struct {
	offset int
	entry  uint32
}

// batchConds is the conditional part of a Batch. Its buffers are kept across
// Reset, so a pooled batch adds conditions without allocating.
type batchConds struct {
	list   []batchCond // in entry order
	args   []byte
	tokens []tokenSlot
	got    []byte // value captured by a capture condition at the last commit
	// counter is the window the operand of the last condCounter entry
	// that held leaves its key in (DB.Add remembers the new state).
	counter counterWindow
	// peek is the key's state read before the pipeline, for a single-key
	// DB-level call (cond_peek.go); quiet makes a failed condition return
	// the bare ErrConditionFailed, which such a call turns into false.
	peek  condPeek
	quiet bool
	// newKeys counts the entries that, at the last commit, an if-absent
	// condition found to be their key's first version (keyState.none);
	// the applied batch passes it to its memtable (Memtable.NoteNewKeys).
	newKeys int
}

func (c *batchConds) reset() {
	c.peek.ok, c.quiet = false, false
	c.list = c.list[:0]
	c.args = c.args[:0]
	c.tokens = c.tokens[:0]
	c.got = c.got[:0]
	c.counter = counterWindow{}
	c.newKeys = 0
}

// add attaches a condition to entry.
func (c *batchConds) add(entry uint32, kind condKind, arg []byte, capture bool) {
	c.list = append(c.list, batchCond{entry: entry, kind: kind, capture: capture, argOff: uint32(len(c.args)), argLen: uint32(len(arg))})
	c.args = append(c.args, arg...)
}

func (c *batchConds) arg(bc *batchCond) []byte { return c.args[bc.argOff : bc.argOff+bc.argLen] }

// stampTokens writes each token slot's sequence number, given the batch's
// first sequence number seq.
func (c *batchConds) stampTokens(data []byte, seq uint64) {
	for _, t := range c.tokens {
		binary.LittleEndian.PutUint64(data[t.offset:], seq+uint64(t.entry))
	}
}

// lastConditional returns the index of the group's last batch with a
// condition, or -1 if none has one.
func lastConditional(group []*commitWaiter) int {
	last := -1
	for i, g := range group {
		if len(g.batch.cond.list) > 0 {
			last = i
		}
	}
	return last
}

// condOverlay is the state of the keys written earlier in the commit group
// being evaluated. The leader alone uses it, under commitMu.
type condOverlay struct {
	db      *DB
	now     int64
	keys    map[string]keyState
	undo    []overlayUndo // the current batch's changes to keys
	scratch []byte        // value buffer of the last lookup
	ops     [][]byte      // operand list of resolveMerge
	written []provenWrite // a group on the proven path: keys its conditional batches wrote (cond_peek.go)
	left    []pendingLeft // a group on the proven path: states its single-key calls leave (cond_left.go)
}

type overlayUndo struct {
	key  string
	prev keyState
	had  bool
}

// maxKeptOverlay bounds the overlay map kept between groups, and
// maxKeptScratch the value buffer kept between lookups.
const (
	maxKeptOverlay = 1 << 12
	maxKeptScratch = 64 << 10
)

// begin empties the overlay for a group committing at now.
func (o *condOverlay) begin(db *DB, now int64) {
	o.db, o.now = db, now
	clear(o.written)
	o.written = o.written[:0]
	clear(o.left)
	o.left = o.left[:0]
	if len(o.keys) > maxKeptOverlay {
		o.keys = nil
	} else {
		clear(o.keys)
	}
}

// admit evaluates the conditions of the stamped batch b and, if they all
// hold, records its writes in the overlay: all of them if feedAll (a later
// batch of the group has conditions), else only those a later condition of
// b itself can see. If a condition fails or a state cannot be read, admit
// leaves the overlay as it found it and returns the error (wrapping
// ErrConditionFailed for a failed condition).
func (o *condOverlay) admit(b *Batch, feedAll bool) error {
	c := &b.cond
	c.got, c.newKeys = c.got[:0], 0
	feedTo := b.count
	if !feedAll {
		feedTo = c.list[len(c.list)-1].entry
	}
	o.undo = o.undo[:0]
	br, err := format.NewBatchReader(b.data)
	if err != nil {
		return err
	}
	var r format.Row
	ci := 0
	for i := uint32(0); i < feedTo || ci < len(c.list); i++ {
		if ok, err := br.Next(&r); !ok || err != nil {
			o.rollback()
			return fmt.Errorf("batch entry %d of %d: %w", i, b.count, cmpOr(err, ErrCorruption))
		}
		for ; ci < len(c.list) && c.list[ci].entry == i; ci++ {
			bc := &c.list[ci]
			s, ok := o.peeked(&c.peek, r.Key)
			if !ok {
				if s, err = o.state(r.Key, bc.kind.needsValue() || bc.capture); err != nil {
					o.rollback()
					return err
				}
			}
			if err := c.judge(bc, s, &r); err != nil {
				o.rollback()
				return err
			}
		}
		if i < feedTo {
			s, err := o.resolve(&r)
			if err != nil {
				o.rollback()
				return err
			}
			o.set(r.Key, s)
		}
	}
	return nil
}

// judge evaluates condition bc of c on entry r (stamped) when r's key is in
// state s at the commit time: if it holds, it captures the value and the
// counter window as bc asks; else it returns an error wrapping
// ErrConditionFailed (the bare sentinel if c.quiet).
func (c *batchConds) judge(bc *batchCond, s keyState, r *format.Row) error {
	if !bc.kind.holds(s, r, c.arg(bc)) {
		if c.quiet {
			return ErrConditionFailed
		}
		return fmt.Errorf("%w: entry %d (%s), key %q", ErrConditionFailed, bc.entry, bc.kind, r.Key)
	}
	if bc.capture {
		c.got = append(c.got[:0], s.value...)
	}
	if bc.kind == condCounter {
		c.counter = operandWindow(s, r)
	}
	if bc.kind == condAbsent && s.none && r.HasValue() {
		c.newKeys++
	}
	return nil
}

func cmpOr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// state returns key's state at the commit time: the overlay's, else the
// latest committed one. Its value, when withValue, aliases a batch or the
// overlay's scratch buffer and is valid until the next call.
func (o *condOverlay) state(key []byte, withValue bool) (keyState, error) {
	if s, ok := o.keys[string(key)]; ok {
		return s, nil
	}
	r, err := o.db.lookup(key, latestSeq, o.now, o.scratch[:0], withValue)
	if errors.Is(err, ErrNotFound) {
		return keyState{}, nil
	}
	if err != nil {
		return keyState{}, err
	}
	if withValue && cap(r.Value) <= maxKeptScratch {
		o.scratch = r.Value // reused by the next lookup
	}
	return keyState{live: true, value: r.Value, expires: r.HasExpiry(), deadline: r.ExpireTS}, nil
}

// resolve returns the state a stamped batch row gives its key at the
// commit time.
func (o *condOverlay) resolve(r *format.Row) (keyState, error) {
	var s keyState
	if r.IsDeadline() || r.IsMerge() {
		var err error
		if s, err = o.state(r.Key, true); err != nil {
			return keyState{}, err
		}
	}
	return o.resolveOn(r, s)
}

// resolveOn returns the state a stamped batch row gives its key at the
// commit time when the key was in state s before it (read only for a
// deadline row or a merge operand). A deadline row keeps the key's value
// (copied: a looked-up value aliases the scratch buffer) under its own
// deadline.
func (o *condOverlay) resolveOn(r *format.Row, s keyState) (keyState, error) {
	if r.IsDeadline() {
		if !s.live {
			return keyState{}, nil
		}
		s.value = bytes.Clone(s.value)
		s.expires, s.deadline = r.HasExpiry(), r.ExpireTS
		if s.expires && s.deadline < o.now {
			return keyState{}, nil
		}
		return s, nil
	}
	if r.IsMerge() {
		return o.resolveMerge(r, s)
	}
	if !r.LiveAt(o.now) {
		return keyState{}, nil
	}
	return keyState{live: true, value: r.Value, expires: r.HasExpiry(), deadline: r.ExpireTS}, nil
}

func (o *condOverlay) set(key []byte, s keyState) {
	if o.keys == nil {
		o.keys = make(map[string]keyState)
	}
	k := string(key)
	prev, had := o.keys[k]
	o.undo = append(o.undo, overlayUndo{key: k, prev: prev, had: had})
	o.keys[k] = s
}

// rollback undoes the current batch's changes to the overlay.
func (o *condOverlay) rollback() {
	for i := len(o.undo) - 1; i >= 0; i-- {
		u := o.undo[i]
		if u.had {
			o.keys[u.key] = u.prev
		} else {
			delete(o.keys, u.key)
		}
	}
	o.undo = o.undo[:0]
}
