package bench

import "testing"

func TestPutsAtInterpolates(t *testing.T) {
	h := []Sample{{T: 0, Puts: 0}, {T: 1.1, Puts: 1100}, {T: 2.0, Puts: 2000}, {T: 3.3, Puts: 2000}}
	for _, c := range []struct {
		t    float64
		want int64
	}{
		{-1, 0}, {0, 0}, {0.55, 550}, {1.1, 1100}, {1.55, 1550}, {2.5, 2000}, {9, 2000},
	} {
		if got := putsAt(h, c.t); got != c.want {
			t.Errorf("putsAt(%v) = %d, want %d", c.t, got, c.want)
		}
	}
}
