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

// Monotonic wraps a time source so that its readings never go backwards: a
// reading below the highest one seen so far returns that highest one instead.
// Its floor can be raised (Observe) from persisted state, so that a restarted
// database never computes an expiry earlier than one it already handed out.
type Monotonic struct {
	source func() int64
	hwm    atomic.Int64
}

// NewSystem returns a Monotonic clock over the system's wall clock.
func NewSystem() *Monotonic {
	return &Monotonic{source: func() int64 { return time.Now().UnixMilli() }}
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

// Manual is a clock that moves only when told to. Use it in tests.
type Manual struct {
	mu      sync.Mutex
	now     int64
	waiters []chan struct{}
}

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

// Notify returns a channel that receives a value (without blocking the
// clock; a pending value is not duplicated) every time the clock moves.
// Background work that must react to time passing, such as periodic
// compaction, listens on it.
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
