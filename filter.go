package mayfly

import (
	"time"

	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/format"
)

// FilterDecision is what a CompactionFilter decides for a row.
type FilterDecision uint8

// Compaction filter decisions.
const (
	// FilterKeep leaves the row unchanged.
	FilterKeep FilterDecision = iota
	// FilterRemove deletes the row. Above the bottom of the tree it becomes
	// a tombstone with the same sequence number, so older versions of the
	// key stay hidden; at the bottom it disappears.
	FilterRemove
	// FilterChangeValue replaces the row's value; key, sequence number and
	// expiry stay.
	FilterChangeValue
)

// FilterContext tells a filter where a compaction writes.
type FilterContext struct {
	// Level is the output level (0 to 6).
	Level int
	// Bottom is true when the output is the bottom of the tree for the
	// row's key range: nothing older lies beneath it.
	Bottom bool
	// Now is the compaction's clock: the engine clock when it started,
	// capped at the time of the oldest open snapshot.
	Now time.Time
}

// FilterRow is a row offered to a filter. Key and Value are valid only
// during the call.
type FilterRow struct {
	Key   []byte
	Value []byte
	Seq   uint64
	// CreatedAt is when the row was committed, if recorded (rows with an
	// expiry record it); otherwise the zero time.
	CreatedAt time.Time
	// ExpiresAt is the row's deadline, or the zero time if it has none.
	ExpiresAt time.Time
}

// CompactionFilter rewrites or removes rows as compactions copy them. A
// filter sees only live rows (never tombstones or expired rows) that no
// open snapshot can read, so it never changes what a snapshot sees. It must
// be safe for concurrent use and deterministic for a given row and context.
type CompactionFilter interface {
	// Name identifies the filter in logs.
	Name() string
	// Filter returns the decision for row and, with FilterChangeValue, the
	// new value.
	Filter(ctx FilterContext, row FilterRow) (FilterDecision, []byte)
}

// filterAdapter lets a public CompactionFilter run inside the compaction
// package.
type filterAdapter struct{ f CompactionFilter }

func (a filterAdapter) Filter(ctx *compaction.FilterContext, r *format.Row) (compaction.Decision, []byte) {
	row := FilterRow{Key: r.Key, Value: r.Value, Seq: r.Seq}
	if r.Flags&format.FlagHasTS != 0 {
		row.CreatedAt = time.UnixMilli(r.TS)
	}
	if r.HasExpiry() {
		row.ExpiresAt = time.UnixMilli(r.ExpireTS)
	}
	d, v := a.f.Filter(FilterContext{Level: ctx.Level, Bottom: ctx.Bottom, Now: time.UnixMilli(ctx.Now)}, row)
	switch d {
	case FilterRemove:
		return compaction.Remove, nil
	case FilterChangeValue:
		return compaction.ChangeValue, v
	}
	return compaction.Keep, nil
}
