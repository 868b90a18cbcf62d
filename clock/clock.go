// Package clock is Mayfly's only source of time. Every expiry decision — a
// read hiding an expired row, a compaction turning one into a tombstone, the
// deadline computed for a write — reads a Clock, so tests can move time by
// hand and production time never runs backwards.
package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock returns the current time in Unix milliseconds. Implementations must be
// safe for concurrent use and must never return a smaller value than they
// returned before.
type Clock interface {
	NowMillis() int64
}

// Notifier is implemented by a clock that can tell background work when its
// reading moves. A database whose Options.Clock implements it wakes its
// compaction scheduler on every advance, and relies on the advances alone to
// notice that data expired: it then sets no timer of its own for the next
// expiry (a clock that moves only by hand would never fire one).
//
// Notify registers and returns a new channel, kept for the clock's life.
// Implementations guarantee:
//   - after the reading moves, the channel holds a value, sent without
//     blocking the clock: it has a buffer of one, and a value still pending
//     stands for every move since it was sent (moves coalesce, none is
//     missed by a receiver that drains the channel and then reads the clock);
//   - the reading never moves without such a send, so a receiver that has
//     seen no value since it last read the clock may assume the reading is
//     unchanged;
//   - the channel is never closed.
//
// The clock a program runs on (NewSystem) does not implement Notifier; the
// scheduler then polls it and sets a timer for the next expiry.
type Notifier interface {
	Clock
	Notify() <-chan struct{}
}

// Monotonic wraps a time source so that its readings never go backwards: a
// reading below the highest one seen so far returns that highest one instead.
// Its floor can be raised (Observe) from persisted state, so that a restarted
// database never computes an expiry earlier than one it already handed out.
type Monotonic struct {
	source func() int64
	hwm    atomic.Int64
}

// NewSystem returns a Monotonic clock over the system's wall clock, which
// it reads once a second and advances in between by the monotonic clock
// (system.go): a step of the wall clock shows within a second.
func NewSystem() *Monotonic {
	return &Monotonic{source: newSystemSource().millis}
}

// NewMonotonic wraps source (Unix milliseconds) in a Monotonic clock.
func NewMonotonic(source func() int64) *Monotonic { return &Monotonic{source: source} }

// NowMillis returns max(source(), every earlier reading, every observed floor).
func (m *Monotonic) NowMillis() int64 {
	now := m.source()
	for {
		hwm := m.hwm.Load()
		if now <= hwm {
			return hwm
		}
		if m.hwm.CompareAndSwap(hwm, now) {
			return now
		}
	}
}

// Observe raises the clock's floor to t if t is higher.
func (m *Monotonic) Observe(t int64) {
	for {
		hwm := m.hwm.Load()
		if t <= hwm || m.hwm.CompareAndSwap(hwm, t) {
			return
		}
	}
}

// Manual is a clock that moves only when told to. Use it in tests. It
// implements Notifier.
type Manual struct {
	mu      sync.Mutex
	now     int64
	waiters []chan struct{}
}

var _ Notifier = (*Manual)(nil)

// NewManual returns a manual clock reading t.
func NewManual(t time.Time) *Manual { return &Manual{now: t.UnixMilli()} }

// NowMillis returns the current reading.
func (m *Manual) NowMillis() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Now returns the current reading as a time.Time.
func (m *Manual) Now() time.Time { return time.UnixMilli(m.NowMillis()) }

// Advance moves the clock forward by d (truncated to milliseconds). A
// negative d is ignored: the clock never goes backwards.
func (m *Manual) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	m.mu.Lock()
	m.now += d.Milliseconds()
	m.notifyLocked()
	m.mu.Unlock()
}

// Notify implements Notifier: every Advance or Set that moves the clock
// sends on every channel Notify returned, without blocking.
func (m *Manual) Notify() <-chan struct{} {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.waiters = append(m.waiters, ch)
	m.mu.Unlock()
	return ch
}

func (m *Manual) notifyLocked() {
	for _, ch := range m.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Set moves the clock to t if t is later than the current reading.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	if ms := t.UnixMilli(); ms > m.now {
		m.now = ms
		m.notifyLocked()
	}
	m.mu.Unlock()
}
