package clock

import (
	"testing"
	"time"
)

// fakeClocks is a wall clock and a monotonic clock moved by hand.
type fakeClocks struct {
	wall int64 // Unix nanoseconds
	mono time.Duration
}

func (f *fakeClocks) source(period time.Duration) *wallSource {
	return newWallSource(func() int64 { return f.wall }, func() time.Duration { return f.mono }, period)
}

// advance moves both clocks by d, as time passing does.
func (f *fakeClocks) advance(d time.Duration) {
	f.wall += int64(d)
	f.mono += d
}

// TestWallSourceAddsMonotonicTime: between anchors the source reads the
// anchor's wall time plus the monotonic time since; a step of the wall
// clock shows at the next anchor, a period after the last one.
func TestWallSourceAddsMonotonicTime(t *testing.T) {
	f := &fakeClocks{wall: 1_700_000_000_123_456_789, mono: 5 * time.Second}
	s := f.source(time.Second)
	if got, want := s.millis(), f.wall/1e6; got != want {
		t.Fatalf("at the anchor: %d, want %d", got, want)
	}
	f.advance(700 * time.Millisecond)
	if got, want := s.millis(), f.wall/1e6; got != want {
		t.Fatalf("700 ms later: %d, want %d", got, want)
	}
	// The wall clock is stepped forward an hour: the source follows the
	// monotonic clock until the anchor is a period old.
	f.wall += int64(time.Hour)
	f.advance(299 * time.Millisecond)
	if got, want := s.millis(), (f.wall-int64(time.Hour))/1e6; got != want {
		t.Fatalf("999 ms after the anchor, stepped: %d, want the unstepped %d", got, want)
	}
	f.advance(time.Millisecond)
	if got, want := s.millis(), f.wall/1e6; got != want {
		t.Fatalf("a period after the anchor: %d, want the stepped %d", got, want)
	}
	// A monotonic reading below the anchor's (not one time.Since gives)
	// anchors again rather than reading backwards from the anchor.
	f.mono -= time.Minute
	if got, want := s.millis(), f.wall/1e6; got != want {
		t.Fatalf("monotonic clock behind the anchor: %d, want %d", got, want)
	}
}

// TestSystemClockTracksWallClock: the system clock reads the wall clock
// (between two time.Now readings, to the millisecond) and never goes back.
func TestSystemClockTracksWallClock(t *testing.T) {
	c := NewSystem()
	prev := int64(0)
	for range 1000 {
		before := time.Now().UnixMilli()
		got := c.NowMillis()
		after := time.Now().UnixMilli()
		if got < before-1 || got > after+1 || got < prev {
			t.Fatalf("NowMillis = %d, wall clock read %d then %d, previous reading %d", got, before, after, prev)
		}
		prev = got
	}
}

// BenchmarkSystemNowMillis reads the system clock, against time.Now.
func BenchmarkSystemNowMillis(b *testing.B) {
	b.Run("system", func(b *testing.B) {
		c := NewSystem()
		for b.Loop() {
			c.NowMillis()
		}
	})
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			time.Now().UnixMilli()
		}
	})
}
