package mayfly

import (
	"errors"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// TestSlidingWindow: the estimate is the current window's count plus the
// previous window's weighted by the part of it still inside the sliding
// window; a window two back no longer counts.
func TestSlidingWindow(t *testing.T) {
	start := epoch.Truncate(time.Minute)
	clk := clock.NewManual(start)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	key := []byte("api:ada")
	for range 4 {
		if _, _, err := SlidingWindow(db, key, 10, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// 15 s into the next window: 4 * 45/60 = 3, plus this request.
	clk.Set(start.Add(75 * time.Second))
	ok, est, err := SlidingWindow(db, key, 10, time.Minute)
	if err != nil || !ok || est != 4 {
		t.Fatalf("estimate %v (allowed %v, %v), want 4", est, ok, err)
	}
	// Over the limit within one window.
	for range 6 {
		if _, _, err := SlidingWindow(db, key, 10, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	ok, est, err = SlidingWindow(db, key, 10, time.Minute)
	if err != nil || ok || est != 11 {
		t.Fatalf("estimate %v (allowed %v, %v), want 11 and refused", est, ok, err)
	}
	// Two windows later only the new request counts.
	clk.Set(start.Add(3 * time.Minute))
	ok, est, err = SlidingWindow(db, key, 10, time.Minute)
	if err != nil || !ok || est != 1 {
		t.Fatalf("estimate %v (allowed %v, %v), want 1", est, ok, err)
	}
	if _, _, err := SlidingWindow(db, key, 10, 0); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("zero window: %v", err)
	}
	if _, _, err := FixedWindow(db, key, 10, 0); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("zero window: %v", err)
	}
}

// TestFixedWindow: requests within the limit are allowed, the ones over it
// refused and counted; the window's end is fixed by its first request, and
// the next request after it starts a new window.
func TestFixedWindow(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	key := []byte("api:ada")
	for i := int64(1); i <= 5; i++ {
		ok, n, err := FixedWindow(db, key, 3, time.Minute)
		if err != nil || n != i || ok != (i <= 3) {
			t.Fatalf("request %d: allowed %v, count %d, %v", i, ok, n, err)
		}
		clk.Advance(10 * time.Second)
	}
	clk.Set(epoch.Add(time.Minute)) // the window's last millisecond
	if ok, n, err := FixedWindow(db, key, 3, time.Minute); err != nil || ok || n != 6 {
		t.Fatalf("at the window's end: allowed %v, count %d, %v", ok, n, err)
	}
	clk.Advance(time.Millisecond)
	if ok, n, err := FixedWindow(db, key, 3, time.Minute); err != nil || !ok || n != 1 {
		t.Fatalf("in the next window: allowed %v, count %d, %v", ok, n, err)
	}
}
