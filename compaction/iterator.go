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
//
// Now must not be later than the clock time pinned by any open snapshot, so
// a snapshot never sees a row vanish that it could read before.
//
// This package is engine-internal: it is importable (tools and tests read
// its types), but it has no compatibility promise; the stable API is
// package mayfly, storage and its drivers, and clock.
package compaction

import (
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
		if !c.started {
			c.started = true
			c.inValid = c.in.First()
		} else if c.inValid {
			c.inValid = c.in.Next()
		}
		if !c.inValid {
			c.endKey()
			return false
		}
		r := c.in.Row()
		c.stats.RowsIn++
		if string(r.Key) != string(c.curKey) {
			c.endKey()
			c.curKey = append(c.curKey[:0], r.Key...)
			c.lastStripe = -1
		}
		s := c.stripe(r.Seq)
		if c.lastStripe >= 0 && s == c.lastStripe {
			c.stats.ShadowedDropped++
			continue
		}
		c.lastStripe = s
		out := *r
		expired := false
		if out.ExpiredAt(c.cfg.Now) {
			expired = true
			if c.cfg.Bottom || !c.cfg.KeepExpired {
				out = format.Row{Key: r.Key, Seq: r.Seq, Flags: format.FlagTombstone | format.FlagHasTS, TS: r.ExpireTS}
			}
		}
		if len(c.cfg.Filters) > 0 && !expired && !out.IsTombstone() && s == len(c.cfg.Snapshots) {
			// Through a field: taking out's address would move it to the
			// heap, one allocation per row even without filters.
			c.filtered = out
			c.applyFilters(&c.filtered)
			out = c.filtered
		}
		if c.cfg.Bottom && out.IsTombstone() {
			out.Key = append([]byte(nil), out.Key...)
			c.pending = append(c.pending, pendingTombstone{row: out, expired: expired})
			continue
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

// Error returns the input's error, if any.
func (c *Iterator) Error() error { return c.in.Error() }

// Stats returns the counts so far.
func (c *Iterator) Stats() Stats { return c.stats }
