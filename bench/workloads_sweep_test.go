package bench

import "testing"

func TestValueSweepFill(t *testing.T) {
	if got := SweepWorkloads([]int{100, 65536}); got[0] != "fillrandom_v100" || got[1] != "fillrandom_v65536" {
		t.Fatalf("SweepWorkloads: %v", got)
	}
	for _, w := range []string{"fillrandom", "fillrandom_v", "fillrandom_v0", "fillrandom_vx"} {
		if _, ok := SweepSize(w); ok {
			t.Errorf("%s parsed as a sweep fill", w)
		}
	}
	p := Params{Num: 1000, ValueSize: 100, FillBytes: 50 * (KeySize + 4096), CacheBytes: 1 << 20, Bloom: 10}
	res := runYCSB(t, "mayfly", "fillrandom_v4096", p)
	if res.ValueSize != 4096 || res.Num != 50 || res.Ops != 50 || res.MBPerSec <= 0 {
		t.Errorf("value size %d, num %d, ops %d, %.1f MB/s; want 4096, 50, 50", res.ValueSize, res.Num, res.Ops, res.MBPerSec)
	}
}
