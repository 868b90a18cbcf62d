package mayfly

import (
	"runtime"
	"testing"
)

// TestAwaitReturnsTheRelease: a waiter returns the state it is released
// with, whether the release comes before it waits, while it spins or yields,
// or after it has parked (a synced writer parks at once: spin false).
func TestAwaitReturnsTheRelease(t *testing.T) {
	for _, c := range []struct {
		name         string
		spin, active bool
	}{
		{"active spin", true, true},
		{"yield", true, false},
		{"park at once", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, early := range []bool{true, false} {
				w := &commitWaiter{wake: make(chan struct{}, 1)}
				w.state.Store(waiterWaiting)
				got := make(chan uint32, 1)
				if early {
					w.release(waiterApply)
				}
				go func() { got <- w.await(c.spin, c.active) }()
				if !early {
					// Release once the waiter has parked, or at once if
					// it still spins: either way it must see the state.
					w.release(waiterApply)
				}
				if s := <-got; s != waiterApply {
					t.Fatalf("early %v: await returned %d, want waiterApply (%d)", early, s, waiterApply)
				}
			}
		})
	}
}

// TestReleaseWakesAParkedWaiter: a release of a parked waiter sends its
// wake-up exactly once, and a waiter released before it parks never blocks.
func TestReleaseWakesAParkedWaiter(t *testing.T) {
	w := &commitWaiter{wake: make(chan struct{}, 1)}
	w.state.Store(waiterWaiting)
	done := make(chan uint32)
	go func() { done <- w.await(false, false) }() // parks at once
	for w.state.Load() != waiterParked {
		select {
		case s := <-done:
			t.Fatalf("await returned %d before any release", s)
		default:
			runtime.Gosched()
		}
	}
	w.release(waiterFinished)
	if s := <-done; s != waiterFinished {
		t.Fatalf("await returned %d, want waiterFinished", s)
	}
	if len(w.wake) != 0 {
		t.Fatal("the wake-up was sent twice")
	}
}
