package clock

import (
	"sync"
	"testing"
	"time"
)

func TestMonotonicNeverGoesBack(t *testing.T) {
	readings := []int64{100, 90, 120, 50, 121}
	i := 0
	c := NewMonotonic(func() int64 { v := readings[i]; i++; return v })
	want := []int64{100, 100, 120, 120, 121}
	for j, w := range want {
		if got := c.NowMillis(); got != w {
			t.Fatalf("reading %d: got %d want %d", j, got, w)
		}
	}
}

func TestMonotonicObserveRaisesFloor(t *testing.T) {
	c := NewMonotonic(func() int64 { return 10 })
	c.Observe(500)
	if got := c.NowMillis(); got != 500 {
		t.Fatalf("got %d want 500", got)
	}
	c.Observe(400) // lower floor: ignored
	if got := c.NowMillis(); got != 500 {
		t.Fatalf("got %d want 500", got)
	}
}

func TestMonotonicConcurrent(t *testing.T) {
	c := NewSystem()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for i := 0; i < 1000; i++ {
				now := c.NowMillis()
				if now < last {
					t.Errorf("clock went back: %d after %d", now, last)
					return
				}
				last = now
			}
		}()
	}
	wg.Wait()
}

func TestManual(t *testing.T) {
	start := time.UnixMilli(1_000_000)
	m := NewManual(start)
	m.Advance(1500 * time.Millisecond)
	if got := m.NowMillis(); got != 1_001_500 {
		t.Fatalf("got %d", got)
	}
	m.Advance(-time.Hour)
	m.Set(start)
	if got := m.NowMillis(); got != 1_001_500 {
		t.Fatalf("manual clock went backwards: %d", got)
	}
	m.Set(start.Add(time.Hour))
	if !m.Now().Equal(start.Add(time.Hour)) {
		t.Fatalf("Set forward failed: %v", m.Now())
	}
}

// TestManualNotify checks the Notifier contract the compaction scheduler
// relies on: every move sends, moves coalesce into one pending value, every
// registered channel is told, and calls that do not move the clock send
// nothing.
func TestManualNotify(t *testing.T) {
	start := time.UnixMilli(1_000_000)
	m := NewManual(start)
	var n Notifier = m
	a, b := n.Notify(), n.Notify()
	pending := func(ch <-chan struct{}) int {
		k := 0
		for {
			select {
			case <-ch:
				k++
			default:
				return k
			}
		}
	}
	m.Advance(time.Second)
	m.Advance(time.Second)
	if got := pending(a); got != 1 {
		t.Fatalf("after two advances channel a holds %d values, want 1", got)
	}
	if got := pending(b); got != 1 {
		t.Fatalf("after two advances channel b holds %d values, want 1", got)
	}
	m.Advance(-time.Second)
	m.Advance(0)
	m.Set(start)
	if got := pending(a); got != 0 {
		t.Fatalf("calls that did not move the clock sent %d values", got)
	}
	m.Set(start.Add(time.Hour))
	if got := pending(a); got != 1 {
		t.Fatalf("Set forward sent %d values, want 1", got)
	}
}
