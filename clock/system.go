package clock

import (
	"sync/atomic"
	"time"
)

// The system clock's source. Reading the wall clock (time.Now) costs two
// clock readings, the wall's and the monotonic one; the engine reads the
// time on every write and on most reads. wallSource reads the wall clock
// once per anchor period and, in between, adds the monotonic time elapsed
// since (time.Since, one reading) to it.
//
// Both clocks run at the same rate: the kernel slews them alike when it
// corrects the wall clock gradually. They part only when the wall clock is
// stepped (set by hand, or a large correction), and the source follows a
// step at the next anchor, at most anchorPeriod later. A step backwards is
// then absorbed by Monotonic, as it would be with time.Now.

// anchorPeriod is how long a wall-clock reading anchors the source.
const anchorPeriod = time.Second

// wallAnchor is a wall-clock reading (Unix nanoseconds) and the
// monotonic reading taken with it.
type wallAnchor struct {
	unixNano int64
	mono     time.Duration
}

// wallSource is a wall clock in Unix milliseconds, re-anchored every
// period. wall reads the wall clock (Unix nanoseconds); mono reads a
// monotonic clock (both injectable for tests).
type wallSource struct {
	wall   func() int64
	mono   func() time.Duration
	period time.Duration
	anchor atomic.Pointer[wallAnchor]
}

// newSystemSource is the system clock's source: the wall clock, and the
// monotonic time since the source was made.
func newSystemSource() *wallSource {
	base := time.Now()
	return newWallSource(func() int64 { return time.Now().UnixNano() },
		func() time.Duration { return time.Since(base) }, anchorPeriod)
}

func newWallSource(wall func() int64, mono func() time.Duration, period time.Duration) *wallSource {
	s := &wallSource{wall: wall, mono: mono, period: period}
	s.reanchor()
	return s
}

func (s *wallSource) reanchor() *wallAnchor {
	a := &wallAnchor{unixNano: s.wall(), mono: s.mono()}
	s.anchor.Store(a)
	return a
}

// millis returns the anchor's wall time plus the monotonic time elapsed
// since it, anchoring again first once the anchor is a period old.
func (s *wallSource) millis() int64 {
	a := s.anchor.Load()
	el := s.mono() - a.mono
	if el >= s.period || el < 0 {
		a = s.reanchor()
		el = 0
	}
	return (a.unixNano + int64(el)) / int64(time.Millisecond)
}
