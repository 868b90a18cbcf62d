// Package compaction decides which rows survive when SSTables are rewritten,
// and (in later work) which files to rewrite.
//
// The rules, per user key, reading versions newest first:
//
//  1. Snapshot stripes. The open snapshots' sequence numbers cut the sequence
//     space into stripes. Within a stripe only the newest version of a key can
//     ever be read, so the others are dropped.
//  2. Expiry. A kept row whose expire_ts < Now becomes a tombstone with the
//     same sequence number, no expiry, and ts = its old expire_ts (so the
//     tombstone's age still measures how long ago the data expired). It must keep hiding older versions:
//     dropping it outright would let an older version come back. With
//     KeepExpired (flushes) the row is kept as it is instead, which hides
//     older versions as well.
//  3. The bottom. When the output is the bottom of the tree for the key (no
//     older data exists below it), a tombstone with no older kept version
//     beneath it hides nothing and is dropped, as is the expired row it came
//     from.
//  4. Deadline rows (format.FlagDeadline). A deadline row kept as the
//     newest version of its stripe is folded into the version beneath it
//     when that version lies in the same stripe: older deadline rows are
//     passed over, a value row becomes that value under the deadline row's
//     deadline and sequence number (format.Resolve), a tombstone becomes a
//     tombstone at the deadline row's sequence number. The folded row then
//     follows rules 2 and 3 like any other. A deadline row with no version
//     beneath it in the input hides nothing at the bottom and is dropped;
//     elsewhere it is kept as it is (its value lies in older data or an
//     older stripe).
//  5. Values a deadline row needs. A deadline row kept as it is (rule 4)
//     resolves against the next kept version of its key, so that version
//     keeps its value whatever its own expire_ts says: rule 2 does not
//     apply to it, and it is kept unchanged. The same holds for the newest
//     version of a key when a deadline row may lie above the input, in
//     newer data the compaction does not read: Config.DeadlineAbove says so
//     per key. A merge operand is such a row for the version beneath it.
//  6. Partial merges stay inside a window, 7. stripes are never combined,
//  8. operands fold into a value with their base or at the bottom: see
//     merge.go (RFC 0010).
//
// Now must not be later than the clock time pinned by any open snapshot, so
// a snapshot never sees a row vanish that it could read before.
//
// This package is engine-internal: it is importable (tools and tests read
// its types), but it has no compatibility promise; the stable API is
// package mayfly, storage and its drivers, and clock.
package compaction

import (
	"slices"

	"github.com/mayflydb/mayfly/format"
)

// Config says how an Iterator treats its input.
type Config struct {
	// Snapshots are the sequence numbers of open snapshots, ascending.
	Snapshots []uint64
	// Now is the time (Unix ms) used to decide expiry.
	Now int64
	// Bottom is true when no data older than the input exists below the
	// output for the keys being compacted.
	Bottom bool
	// KeepExpired emits a kept expired row unchanged instead of as a
	// tombstone (rule 2 does not apply; at the bottom it is still dropped).
	// A flush sets it: an expired row hides older versions just as a
	// tombstone does, and a level-0 table of TTL rows only stays eligible
	// for a whole-file drop, which a tombstone would prevent.
	KeepExpired bool
	// Level is the output level, passed to filters.
	Level int
	// Filters run, in order, on each live row that no snapshot can read;
	// the first decision other than Keep ends the chain.
	Filters []Filter
	// DeadlineAbove reports whether a deadline row for key may exist in
	// data newer than the input (newer memtables, tables of upper levels):
	// such a row sets the deadline of the key's newest version here, whose
	// own expire_ts then no longer counts (rule 5). nil: no deadline row
	// lies above. It is asked only when the newest kept version of a key
	// has expired.
	DeadlineAbove func(key []byte) bool
	// Merger folds merge operands (rules 6 to 8); nil: an input holding an
	// operand fails the iterator.
	Merger format.Merger
	// Below returns the state of key in the data beneath the output, all of
	// it older than the input, resolved in commit order
	// (format.MergeChain): a value row under its deadline, or ok false
	// when the key has none there. It is asked only for a key whose oldest
	// versions in the input are operands without a base, so that they fold
	// (rule 8) instead of staying apart. nil: the state beneath is unknown.
	Below func(key []byte) (r format.Row, ok bool, err error)
}

// Decision is a filter's verdict on a row.
type Decision uint8

// Filter decisions.
const (
	// Keep leaves the row as it is.
	Keep Decision = iota
	// Remove deletes the row: it becomes a tombstone with the same sequence
	// number (so it still hides older versions) and is dropped at the bottom.
	Remove
	// ChangeValue replaces the row's value, keeping key, sequence and expiry.
	ChangeValue
)

// FilterContext tells a filter where the row is going.
type FilterContext struct {
	Level  int   // output level
	Bottom bool  // output is the bottom of the tree for this key range
	Now    int64 // the compaction's clock, Unix ms
}

// Filter decides the fate of rows during compaction. It must be safe for
// concurrent use: compactions run in parallel.
type Filter interface {
	// Filter returns a decision for r and, with ChangeValue, the new value
	// (copied by the caller). r and its bytes are valid only during the call.
	Filter(ctx *FilterContext, r *format.Row) (Decision, []byte)
}

// Stats counts what an Iterator did.
type Stats struct {
	FilterRemoved      uint64 // rows a filter removed
	FilterChanged      uint64 // rows whose value a filter changed
	RowsIn             uint64 // rows read from the input
	RowsOut            uint64 // rows emitted
	ShadowedDropped    uint64 // older versions no reader can see
	ExpiredToTombstone uint64 // expired rows rewritten as tombstones
	ExpiredDropped     uint64 // expired rows dropped at the bottom
	TombstonesDropped  uint64 // tombstones dropped at the bottom
	DeadlinesFolded    uint64 // deadline rows folded into the version beneath
	DeadlinesDropped   uint64 // deadline rows with nothing beneath, at the bottom
	ExpiredKept        uint64 // expired rows kept for a deadline row above (rule 5)
	MergesFolded       uint64 // chains of operands folded into one row (rule 8)
	OperandsCombined   uint64 // operands combined into an older one (rule 6)
}

// Iterator yields the rows a compaction writes, in order.
type Iterator struct {
	in  format.Iterator
	cfg Config

	started    bool
	inValid    bool
	curKey     []byte // user key being processed (owned copy)
	lastStripe int    // stripe of the last kept version of curKey; -1 if none

	pending  []pendingTombstone // bottom only: tombstones awaiting an older kept row
	queue    []format.Row       // rows ready to emit before reading on
	row      format.Row
	filtered format.Row // the row being filtered
	stats    Stats

	// Rule 4: a deadline row of curKey waiting for the version beneath.
	holding    bool
	held       format.Row // Key is curKey
	heldStripe int
	// reread: the input's current row was read but not yet processed.
	reread bool
	// Rule 5: the next kept version of curKey must keep its value.
	needValue bool
	// above caches Config.DeadlineAbove for curKey: 0 unknown, 1 no, 2 yes.
	above uint8
	// keptAny: a version of curKey was kept (the next is not its newest).
	keptAny bool

	// Rules 6 to 8: the versions of curKey read for foldVersions, with
	// their values in arena.
	mrows []format.Row
	arena []byte
	fold  foldScratch
	err   error
}

type pendingTombstone struct {
	row     format.Row
	expired bool // it was an expired row, not a delete
}

// NewIterator returns an Iterator reading the merged input in.
func NewIterator(in format.Iterator, cfg Config) *Iterator {
	return &Iterator{in: in, cfg: cfg, lastStripe: -1}
}

// stripe returns the index of the smallest snapshot seq >= seq, or
// len(Snapshots) when the row is newer than every snapshot.
func (c *Iterator) stripe(seq uint64) int {
	lo, hi := 0, len(c.cfg.Snapshots)
	for lo < hi {
		mid := (lo + hi) / 2
		if c.cfg.Snapshots[mid] >= seq {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Next advances to the next output row.
func (c *Iterator) Next() bool {
	if len(c.queue) > 0 {
		c.row = c.queue[0]
		c.queue = c.queue[1:]
		c.stats.RowsOut++
		return true
	}
	for {
		switch {
		case c.reread:
			c.reread = false
		case !c.started:
			c.started = true
			c.inValid = c.in.First()
			c.stats.RowsIn += b2u(c.inValid)
		case c.inValid:
			c.inValid = c.in.Next()
			c.stats.RowsIn += b2u(c.inValid)
		}
		if !c.inValid {
			if c.holding && c.releaseHeld(true) {
				return true
			}
			c.endKey()
			return false
		}
		r := c.in.Row()
		if string(r.Key) != string(c.curKey) {
			if c.holding && c.releaseHeld(true) {
				c.reread = true
				return true
			}
			c.endKey()
			c.curKey = append(c.curKey[:0], r.Key...)
			c.lastStripe, c.needValue, c.above, c.keptAny = -1, false, 0, false
		}
		s := c.stripe(r.Seq)
		if c.holding {
			if s != c.heldStripe {
				// The version beneath is in an older stripe: a snapshot
				// reads it as it is, so the deadline row stays unfolded.
				if c.releaseHeld(false) {
					c.reread = true
					return true
				}
			} else if r.IsMerge() {
				c.holding = false
				if c.mergeKey(&c.held) {
					return true
				}
				continue
			} else if r.IsDeadline() {
				// The held row keeps the older commit time: a deadline
				// row's ts bounds from below when the deadline changes it
				// carries were made (PickDrops relies on it).
				c.held.TS = min(c.held.TS, r.TS)
				c.stats.ShadowedDropped++
				continue
			} else {
				c.holding = false
				c.stats.DeadlinesFolded++
				out, ok := format.Resolve(&c.held, r)
				if !ok {
					out = format.Row{Key: r.Key, Seq: c.held.Seq, Flags: format.FlagTombstone | format.FlagHasTS, TS: c.held.TS}
				}
				if c.keep(out, s) {
					return true
				}
				continue
			}
		}
		if c.lastStripe >= 0 && s == c.lastStripe {
			c.stats.ShadowedDropped++
			continue
		}
		c.lastStripe = s
		if r.IsMerge() {
			if c.mergeKey(nil) {
				return true
			}
			continue
		}
		if r.IsDeadline() {
			c.holding, c.held, c.heldStripe = true, *r, s
			c.held.Key = c.curKey
			continue
		}
		if c.keep(*r, s) {
			return true
		}
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// releaseHeld ends rule 4 for the held deadline row when no version beneath
// it can be folded in: with nothing beneath it in the input, at the bottom,
// it hides nothing and is dropped; otherwise it is kept as it is. It
// reports whether a row is ready.
func (c *Iterator) releaseHeld(nothingBeneath bool) bool {
	c.holding = false
	if c.cfg.Bottom && nothingBeneath {
		c.stats.DeadlinesDropped++
		return false
	}
	return c.keep(c.held, c.heldStripe)
}

// keep applies rules 2, 3 and 5 and the filters to out, the version of
// curKey kept for stripe s, and reports whether a row is ready in c.row.
func (c *Iterator) keep(out format.Row, s int) bool {
	protect, first := c.needValue, !c.keptAny
	c.needValue, c.keptAny = false, true
	expired := false
	if out.ExpiredAt(c.cfg.Now) && !out.IsMerge() {
		if protect || first && c.deadlineAbove() {
			protect = true
			c.stats.ExpiredKept++
		} else {
			expired = true
			if c.cfg.Bottom || !c.cfg.KeepExpired {
				out = format.Row{Key: out.Key, Seq: out.Seq, Flags: format.FlagTombstone | format.FlagHasTS, TS: out.ExpireTS}
			}
		}
	}
	if out.IsMerge() {
		// Rule 6: an operand's expire_ts is not its expiry, and the
		// version beneath it keeps its value (rule 5).
		c.needValue, expired, protect = true, false, true
	}
	if out.IsDeadline() {
		c.needValue = true // rule 5 for the version beneath
	}
	if len(c.cfg.Filters) > 0 && !expired && !protect && out.HasValue() && s == len(c.cfg.Snapshots) {
		// Through a field: taking out's address would move it to the
		// heap, one allocation per row even without filters.
		c.filtered = out
		c.applyFilters(&c.filtered)
		out = c.filtered
	}
	if c.cfg.Bottom && out.IsTombstone() {
		out.Key = append([]byte(nil), out.Key...)
		c.pending = append(c.pending, pendingTombstone{row: out, expired: expired})
		return false
	}
	if expired && out.IsTombstone() {
		c.stats.ExpiredToTombstone++
	}
	if len(c.pending) > 0 {
		// An older version is kept: the tombstones above it must stay.
		for _, p := range c.pending {
			if p.expired {
				c.stats.ExpiredToTombstone++
			}
			c.queue = append(c.queue, p.row)
		}
		c.pending = c.pending[:0]
		c.queue = append(c.queue, out)
		c.row = c.queue[0]
		c.queue = c.queue[1:]
		c.stats.RowsOut++
		return true
	}
	c.row = out
	c.stats.RowsOut++
	return true
}

// deadlineAbove asks Config.DeadlineAbove about curKey, once per key.
func (c *Iterator) deadlineAbove() bool {
	if c.cfg.DeadlineAbove == nil {
		return false
	}
	if c.above == 0 {
		c.above = 1
		if c.cfg.DeadlineAbove(c.curKey) {
			c.above = 2
		}
	}
	return c.above == 2
}

// applyFilters runs the filter chain on a live row no snapshot can read.
func (c *Iterator) applyFilters(out *format.Row) {
	ctx := FilterContext{Level: c.cfg.Level, Bottom: c.cfg.Bottom, Now: c.cfg.Now}
	for _, f := range c.cfg.Filters {
		switch d, v := f.Filter(&ctx, out); d {
		case Remove:
			*out = format.Row{Key: out.Key, Seq: out.Seq, Flags: format.FlagTombstone | format.FlagHasTS, TS: c.cfg.Now}
			c.stats.FilterRemoved++
			return
		case ChangeValue:
			out.Value = append([]byte(nil), v...)
			c.stats.FilterChanged++
			return
		}
	}
}

// endKey drops the tombstones still pending when a key's versions end: no
// older version was kept beneath them, so they hide nothing.
func (c *Iterator) endKey() {
	for _, p := range c.pending {
		if p.expired {
			c.stats.ExpiredDropped++
		} else {
			c.stats.TombstonesDropped++
		}
	}
	c.pending = c.pending[:0]
}

// Row returns the current output row. It may alias input memory and is
// valid until the next call to Next.
func (c *Iterator) Row() *format.Row { return &c.row }

// Error returns the input's error, if any, or the merge operator's.
func (c *Iterator) Error() error {
	if c.err != nil {
		return c.err
	}
	return c.in.Error()
}

// mergeKey reads the rest of curKey's versions, from the input's current
// row on (held, when not nil, is a deadline row above it), folds them by
// rules 6 to 8 (foldVersions) and queues the rows to write, each through
// keep. It reports whether a row is ready in c.row.
func (c *Iterator) mergeKey(held *format.Row) bool {
	c.mrows, c.arena = c.mrows[:0], c.arena[:0]
	if held != nil {
		c.mrows = append(c.mrows, *held)
	}
	for {
		// A state met twice at one sequence number (two inputs) counts
		// once; a value row or tombstone takes the place of an operand.
		r := c.in.Row()
		if n := len(c.mrows); n > 0 && c.mrows[n-1].Seq == r.Seq && r.Flags&(format.FlagMerge|format.FlagDeadline) == 0 {
			c.arena = c.arena[:len(c.arena)-len(c.mrows[n-1].Value)]
			c.mrows = c.mrows[:n-1]
		}
		if n := len(c.mrows); n == 0 || c.mrows[n-1].Seq != r.Seq {
			c.arena = append(c.arena, r.Value...)
			row := *r
			row.Key, row.Value = c.curKey, c.arena[len(c.arena)-len(r.Value):]
			c.mrows = append(c.mrows, row)
		}
		c.inValid = c.in.Next()
		c.stats.RowsIn += b2u(c.inValid)
		if !c.inValid || string(c.in.Row().Key) != string(c.curKey) {
			break
		}
	}
	c.reread = c.inValid
	// The arena may have moved while growing: point the values again.
	end := len(c.arena)
	for i := len(c.mrows) - 1; i >= 0; i-- {
		if i == 0 && held != nil {
			break
		}
		n := len(c.mrows[i].Value)
		c.mrows[i].Value = c.arena[end-n : end : end]
		end -= n
	}
	// A spare slot for the state beneath, which foldVersions may add.
	c.mrows = slices.Grow(c.mrows, 1)
	rows, err := foldVersions(c.mrows, c.stripe, c.cfg.Bottom, c.cfg.Below, c.cfg.Merger, &c.stats, &c.fold)
	if err != nil {
		c.err = err
		c.inValid, c.reread = false, false
		return false
	}
	var ready []format.Row
	for _, r := range rows {
		if c.keep(r, c.stripe(r.Seq)) {
			c.stats.RowsOut-- // counted again when Next hands it out
			ready = append(ready, c.row)
			ready = append(ready, c.queue...)
			c.queue = c.queue[:0]
		}
	}
	if len(ready) == 0 {
		return false
	}
	c.queue = append(ready[1:], c.queue...)
	c.row = ready[0]
	c.stats.RowsOut++
	return true
}

// Stats returns the counts so far.
func (c *Iterator) Stats() Stats { return c.stats }
