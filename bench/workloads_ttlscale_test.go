package bench

import (
	"testing"
	"time"
)

// The model counts a key once however often it is rewritten, moves an
// overwritten row's deadline, and expires rows one second after their
// deadline second, counting them in expiredSince.
func TestTTLModel(t *testing.T) {
	m := newTTLModel(10, 1000, 100)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.put(1, 0, 60))  // live through second 60
	must(m.put(2, 0, 120)) // live through second 120
	must(m.put(1, 30, 60)) // rewritten while live: now through second 90
	if got := m.liveBytes(); got != 200 {
		t.Fatalf("live bytes after three puts to two keys: %d; want 200", got)
	}
	m.advance(61)
	if got := m.liveBytes(); got != 200 {
		t.Fatalf("at 61 s (key 1's first deadline, overwritten): live %d; want 200", got)
	}
	m.advance(91)
	if got, exp := m.liveBytes(), m.expiredSince(0); got != 100 || exp != 100 {
		t.Fatalf("at 91 s: live %d, expired %d; want 100 and 100", got, exp)
	}
	m.advance(121)
	if got := m.liveBytes(); got != 0 {
		t.Fatalf("at 121 s: live %d; want 0", got)
	}
	if got := m.expiredSince(100); got != 100 {
		t.Fatalf("expired after 100 s: %d; want 100 (key 2 only)", got)
	}
	must(m.put(1, 200, 60)) // rewritten after it expired: live again
	if got := m.liveBytes(); got != 100 {
		t.Fatalf("key 1 rewritten after expiry: live %d; want 100", got)
	}
	if err := m.put(3, 950, 60); err == nil {
		t.Fatal("a deadline past the horizon was accepted")
	}
}

// The summary skips the first quarter for space amplification, takes the
// largest excess of the engine's expired bytes over the bound's window,
// and the median and highest per-second read p99.
func TestTTLScaleSummary(t *testing.T) {
	s := []TTLScaleSample{
		{T: 1, DiskBytes: 900, LiveBytes: 100, EngineExpired: 50, WindowExpired: 10, ReadP99us: 10}, // first quarter
		{T: 2, DiskBytes: 110, LiveBytes: 100, EngineExpired: 5, WindowExpired: 10, ReadP99us: 30},
		{T: 3, DiskBytes: 130, LiveBytes: 100, EngineExpired: 12, WindowExpired: 10, ReadP99us: 20},
		{T: 4, DiskBytes: 100, LiveBytes: 100, EngineExpired: 0, WindowExpired: 10, ReadP99us: 40},
	}
	got := ttlScaleSummary(s)
	want := map[string]float64{"space_amp_max": 1.3, "space_amp_max_t": 3, "space_amp_final": 1,
		"expired_excess_max_bytes": 40, "read_p99_window_median_us": 30, "read_p99_window_max_us": 40}
	for k, v := range want {
		if d := got[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v; want %v", k, got[k], v)
		}
	}
	s[0].EngineExpired, s[1].EngineExpired, s[2].EngineExpired, s[3].EngineExpired = -1, -1, -1, -1
	if _, ok := ttlScaleSummary(s)["expired_excess_max_bytes"]; ok {
		t.Error("excess reported for an engine without an expired-bytes figure")
	}
}

// Mayfly gets the simulated clock and simulated TTLs; Badger gets TTLs
// divided by the speed.
func TestTTLScaleTime(t *testing.T) {
	p := Params{TTLScale: TTLScaleParams{Speed: 60}}
	m := &mayflyEngine{}
	ts := prepareTTLScale("ttlscale", m, p)
	if m.clock != ts.clk || ts.engineTTL(time.Hour) != time.Hour {
		t.Fatalf("mayfly: clock %v, TTL of 1h handed as %v", m.clock, ts.engineTTL(time.Hour))
	}
	if ts.p.Bound != time.Hour+10*time.Minute {
		t.Fatalf("default bound at speed 60: %v; want 1h10m", ts.p.Bound)
	}
	if got := prepareTTLScale("ttlscale", &badgerEngine{}, p).engineTTL(time.Hour); got != time.Minute {
		t.Fatalf("badger: TTL of 1h simulated handed as %v; want 1m", got)
	}
	if prepareTTLScale("ttlchurn", m, p) != nil {
		t.Fatal("a clock prepared for another workload")
	}
}

// A short ttlscale run on each TTL engine: puts at the asked rate, samples
// every second, reads recorded.
func TestTTLScaleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 2 s per engine")
	}
	for _, engine := range []string{"mayfly", "badger"} {
		t.Run(engine, func(t *testing.T) {
			p := Params{Num: 5000, ValueSize: 100, CacheBytes: 1 << 20, Bloom: 10,
				TTLScale: TTLScaleParams{Duration: 2 * time.Second, Speed: 600, Rate: 2000, ReadRate: 1000}}
			res, err := RunWorker(engine, "ttlscale", t.TempDir(), p)
			if err != nil {
				t.Fatal(err)
			}
			if res.Ops < 3000 || res.Ops > 4100 || len(res.TTLScale) < 1 || res.P99us == 0 {
				t.Fatalf("%d puts (want about 4000), %d samples, read p99 %vµs", res.Ops, len(res.TTLScale), res.P99us)
			}
			if s := res.TTLScale[0]; s.LiveBytes <= 0 || s.DiskBytes <= 0 || s.SimHours < 0.1 {
				t.Fatalf("first sample %+v", s)
			}
			if _, ok := res.Extra["expired_excess_max_bytes"]; ok != (engine == "mayfly") {
				t.Fatalf("expired-bytes figure present: %v", ok)
			}
		})
	}
}

func TestQuantileOf(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	if a, b, c := quantileOf(v, 0), quantileOf(v, 0.5), quantileOf(v, 1); a != 1 || b != 3 || c != 5 {
		t.Fatalf("quantiles 0, 0.5, 1 of 1..5: %v %v %v", a, b, c)
	}
	if v[0] != 5 {
		t.Fatal("quantileOf sorted its argument")
	}
}
