package mayfly

import (
	"fmt"
	"math"
	"time"
)

// TTL says when a written row expires. The zero value means "the database's
// DefaultTTL". Build other values with NoExpiry, ExpireAfter and ExpireAt.
//
// Expiry has millisecond resolution. A row whose deadline is D is visible to
// reads at any clock time <= D and is absent from D+1ms on. An expired row
// still hides every older version of its key: expiry never brings back an
// older value.
type TTL struct {
	kind     ttlKind
	duration time.Duration // ttlAfter
	deadline int64         // ttlAt, Unix ms
	err      error
}

type ttlKind uint8

const (
	ttlDefault ttlKind = iota
	ttlNone
	ttlAfter
	ttlAt
)

// DefaultTTL returns the zero TTL: the database's Options.DefaultTTL applies.
func DefaultTTL() TTL { return TTL{} }

// NoExpiry returns a TTL under which the row never expires, whatever the
// database's default.
func NoExpiry() TTL { return TTL{kind: ttlNone} }

// ExpireAfter returns a TTL that expires the row d after the write commits.
// d is rounded up to a whole millisecond. A d below one millisecond
// (including zero and negative values) is invalid: the write fails with
// ErrInvalidTTL and nothing is written.
func ExpireAfter(d time.Duration) TTL {
	if d < time.Millisecond {
		return TTL{kind: ttlAfter, err: fmt.Errorf("%w: ExpireAfter(%v) is below the 1ms resolution", ErrInvalidTTL, d)}
	}
	return TTL{kind: ttlAfter, duration: d}
}

// ExpireAt returns a TTL that expires the row at deadline t (truncated to
// the millisecond): the row is visible while the clock reads <= t.
//
// A deadline that has already passed when the write commits is accepted: the
// row is written as already expired, so it hides the key (and any older
// version) exactly as if it had expired a moment after being written. This
// makes a deadline set by someone else mean the same thing whether it arrives
// early or late. The zero time and times before the Unix epoch are invalid
// (ErrInvalidTTL), and so are times past MaxDeadline.
func ExpireAt(t time.Time) TTL {
	if t.IsZero() || t.Before(time.UnixMilli(0)) {
		return TTL{kind: ttlAt, err: fmt.Errorf("%w: ExpireAt(%v) is before the Unix epoch", ErrInvalidTTL, t)}
	}
	if t.After(MaxDeadline) {
		return TTL{kind: ttlAt, err: fmt.Errorf("%w: ExpireAt(%v) is past MaxDeadline", ErrInvalidTTL, t)}
	}
	return TTL{kind: ttlAt, deadline: t.UnixMilli()}
}

// String describes the TTL.
func (t TTL) String() string {
	switch t.kind {
	case ttlNone:
		return "NoExpiry"
	case ttlAfter:
		return fmt.Sprintf("ExpireAfter(%v)", t.duration)
	case ttlAt:
		return fmt.Sprintf("ExpireAt(%v)", time.UnixMilli(t.deadline).UTC())
	}
	return "DefaultTTL"
}

// resolve turns t into the form stored in a batch before commit: whether the
// row expires, and either a relative duration in ms (relative == true) or an
// absolute deadline.
func (t TTL) resolve(def time.Duration) (expires, relative bool, v int64, err error) {
	if t.err != nil {
		return false, false, 0, t.err
	}
	switch t.kind {
	case ttlNone:
		return false, false, 0, nil
	case ttlAt:
		return true, false, t.deadline, nil
	case ttlAfter:
		return true, true, ceilMillis(t.duration), nil
	}
	if def == 0 {
		return false, false, 0, nil
	}
	return true, true, ceilMillis(def), nil
}

func ceilMillis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// MaxDeadline is the latest expiry Mayfly stores: the last millisecond of
// the year 9999 UTC. Deadlines past it, whether given by ExpireAt or reached
// by ExpireAfter, are rejected with ErrInvalidTTL rather than silently stored
// as "never".
var MaxDeadline = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)

var maxDeadlineMillis = MaxDeadline.UnixMilli()

// deadlineFrom adds a relative TTL to the commit time, refusing deadlines
// past MaxDeadline (and so any overflow).
func deadlineFrom(now, ttlMillis int64) (int64, error) {
	if ttlMillis > math.MaxInt64-now || now+ttlMillis > maxDeadlineMillis {
		return 0, fmt.Errorf("%w: a TTL of %dms at %d passes MaxDeadline", ErrInvalidTTL, ttlMillis, now)
	}
	return now + ttlMillis, nil
}
