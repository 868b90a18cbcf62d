package bench

import (
	"testing"
	"time"
)

func TestHistQuantile(t *testing.T) {
	var h Hist
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}} {
		got := h.Quantile(c.q)
		if d := float64(got-c.want) / float64(c.want); d > 0.01 || d < -0.04 {
			t.Errorf("q%.2f = %v, want ≈ %v", c.q, got, c.want)
		}
	}
}

func TestPermIsBijection(t *testing.T) {
	for _, n := range []uint64{1, 7, 1000, 65537} {
		p := NewPerm(n, 42)
		seen := make([]bool, n)
		for i := uint64(0); i < n; i++ {
			x := p.At(i)
			if x >= n || seen[x] {
				t.Fatalf("n=%d: At(%d)=%d repeated or out of range", n, i, x)
			}
			seen[x] = true
		}
	}
}

func TestKeysOrder(t *testing.T) {
	a, m, b := PutKey(make([]byte, 16), 41), PutMissingKey(make([]byte, 16), 41), PutKey(make([]byte, 16), 42)
	if !(string(a) < string(m) && string(m) < string(b)) {
		t.Fatalf("want %q < %q < %q", a, m, b)
	}
}

func TestHistMerge(t *testing.T) {
	var a, b Hist
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Microsecond)
		b.Record(time.Duration(100+i) * time.Microsecond)
	}
	a.Merge(&b)
	if a.Count() != 200 {
		t.Fatalf("count %d, want 200", a.Count())
	}
	if got, want := a.Quantile(0.75), 150*time.Microsecond; got < want*96/100 || got > want {
		t.Errorf("q0.75 = %v, want ≈ %v", got, want)
	}
}
