package main

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestDriveForStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int64
	l, err := driveFor(4, time.Minute, func(w, i int) error {
		if calls.Add(1) == 100 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("driveFor error = %v, want %v", err, boom)
	}
	if l.ops != calls.Load()-1 || l.hist.Count() != uint64(l.ops) {
		t.Errorf("driveFor counted %d ops and %d latencies for %d calls, one failed", l.ops, l.hist.Count(), calls.Load())
	}
}

func TestDriveCount(t *testing.T) {
	seen := make([]bool, 50)
	l, err := driveCount(50, func(i int) error { seen[i] = true; return nil })
	if err != nil || l.ops != 50 || l.hist.Count() != 50 {
		t.Fatalf("driveCount = %d ops, %d latencies, %v; want 50, 50, nil", l.ops, l.hist.Count(), err)
	}
	for i, s := range seen {
		if !s {
			t.Fatalf("driveCount never called op(%d)", i)
		}
	}
	boom := errors.New("boom")
	if _, err := driveCount(5, func(i int) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("driveCount error = %v, want %v", err, boom)
	}
}

// TestDrivePaced: the number of calls is the rate times the duration
// whatever the machine's speed; the wall time is close to the duration
// (calls start up to a millisecond early, and unpaced no-op calls would
// take microseconds).
func TestDrivePaced(t *testing.T) {
	const rate, d = 1000, 50 * time.Millisecond
	l, err := drivePaced(rate, d, func(i int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if l.ops != 50 {
		t.Errorf("drivePaced(%d/s, %v) made %d calls, want 50", rate, d, l.ops)
	}
	if l.elapsed < d-5*time.Millisecond {
		t.Errorf("drivePaced(%d/s, %v) took %v: not paced", rate, d, l.elapsed)
	}
}
