package bench

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRateWorkloadNames(t *testing.T) {
	for _, rate := range []int{10_000, 50_000, 200_000, 1500, 1} {
		w := RateWorkload(rate)
		if got, ok := WriteRateOf(w); !ok || got != rate {
			t.Errorf("WriteRateOf(%q) = %d, %v; want %d", w, got, ok, rate)
		}
		if !NeedsCopy(w) || NeedsFixture(w) {
			t.Errorf("%s: NeedsCopy %v NeedsFixture %v, want a copy of the fixture", w, NeedsCopy(w), NeedsFixture(w))
		}
	}
	if w := RateWorkload(200_000); w != "readwhilewriting_200k" {
		t.Errorf("RateWorkload(200000) = %q", w)
	}
	for _, w := range []string{"readwhilewriting", "readwhilewriting_", "readwhilewriting_k", "readwhilewriting_0k",
		"readwhilewriting_-5", "readwhilewriting_010", "readwhilewriting_1m", "readrandom_warm"} {
		if r, ok := WriteRateOf(w); ok {
			t.Errorf("WriteRateOf(%q) = %d, want not a rate workload", w, r)
		}
	}
	ws, err := ParseWriteRates("10000, 50000,200000")
	if err != nil || strings.Join(ws, ",") != "readwhilewriting_10k,readwhilewriting_50k,readwhilewriting_200k" {
		t.Errorf("ParseWriteRates = %v, %v", ws, err)
	}
	for _, bad := range []string{"", "10k", "0", "-5", "10000,,5"} {
		if ws, err := ParseWriteRates(bad); err == nil {
			t.Errorf("ParseWriteRates(%q) = %v, want an error", bad, ws)
		}
	}
}

// fakeTime is a clock that moves only when told: sleeps overshoot by
// oversleep (as real timers do), each write takes the next of writeCost
// (cycling), and stopAt sets stop.
type fakeTime struct {
	now       time.Time
	oversleep time.Duration
	writeCost []time.Duration
	writes    int
	stopAt    time.Time
	stop      *atomic.Bool
	starts    []time.Time // when each write began
}

func (f *fakeTime) Now() time.Time { return f.now }
func (f *fakeTime) Sleep(d time.Duration) {
	f.now = f.now.Add(max(d, 0) + f.oversleep)
	if !f.now.Before(f.stopAt) {
		f.stop.Store(true)
	}
}
func (f *fakeTime) Put() error {
	f.starts = append(f.starts, f.now)
	f.now = f.now.Add(f.writeCost[f.writes%len(f.writeCost)])
	f.writes++
	if !f.now.Before(f.stopAt) {
		f.stop.Store(true)
	}
	return nil
}

// burstiest is the most rows f wrote in any interval beyond what the rate
// allows in it: max over a ≤ b of (b-a) - rate·(t_b-t_a), in one pass. A
// token bucket keeps it at most the burst, plus a row at each end of the
// interval for slots taken as soon as they fall due.
func (f *fakeTime) burstiest(rate float64) float64 {
	worst, low := 0.0, math.Inf(1)
	for i, t := range f.starts {
		v := float64(i) - rate*t.Sub(f.starts[0]).Seconds()
		low = min(low, v)
		worst = max(worst, v-low)
	}
	return worst
}

func runPaced(rate float64, run time.Duration, f *fakeTime) (writerStats, *pacer) {
	var stop atomic.Bool
	f.stop = &stop
	f.now = time.Unix(1000, 0)
	f.stopAt = f.now.Add(run)
	pc := newPacer(rate, paceBurst, f.now)
	ws, err := pacedWrites(pc, f.Now, f.Sleep, &stop, f.Put)
	if err != nil {
		panic(err)
	}
	return ws, pc
}

// On a fake clock whose every sleep overshoots and whose writes cost a few
// microseconds, the pacer holds each asked rate within 0.1% over 10 s,
// never writes more than its burst beyond the rate in any interval, and
// forgives nothing while the writer keeps up.
func TestPacerHoldsRate(t *testing.T) {
	for _, rate := range []float64{10_000, 50_000, 200_000} {
		f := &fakeTime{oversleep: 80 * time.Microsecond,
			writeCost: []time.Duration{2 * time.Microsecond, 3 * time.Microsecond, 9 * time.Microsecond}}
		ws, pc := runPaced(rate, 10*time.Second, f)
		got := float64(ws.writes) / ws.elapsed.Seconds()
		if math.Abs(got/rate-1) > 0.001 {
			t.Errorf("rate %.0f: achieved %.1f rows/s (%d writes in %v)", rate, got, ws.writes, ws.elapsed)
		}
		if b := f.burstiest(rate); b > float64(pc.burst+2) || pc.forgiven != 0 {
			t.Errorf("rate %.0f: %.0f rows beyond the rate in one interval (burst %d), %d forgiven", rate, b, pc.burst, pc.forgiven)
		}
		if ws.maxWrite != 9*time.Microsecond || ws.hist.Count() != uint64(ws.writes) {
			t.Errorf("rate %.0f: longest write %v, %d latencies for %d writes", rate, ws.maxWrite, ws.hist.Count(), ws.writes)
		}
	}
}

// A writer that falls behind the schedule by more than the burst (one
// write of 150 ms) catches up at most a burst, records the stall as its
// longest write, and then holds the rate again: the skipped slots are
// forgiven, not written in a rush.
func TestPacerStallForgivenNotBurst(t *testing.T) {
	const rate = 200_000
	cost := make([]time.Duration, 400_000)
	for i := range cost {
		cost[i] = 2 * time.Microsecond
	}
	cost[100_000] = 150 * time.Millisecond // half a second in
	f := &fakeTime{oversleep: 50 * time.Microsecond, writeCost: cost}
	ws, pc := runPaced(rate, 2*time.Second, f)
	if ws.maxWrite != 150*time.Millisecond {
		t.Errorf("longest write %v, want the 150ms stall", ws.maxWrite)
	}
	if b := f.burstiest(rate); b > float64(pc.burst+2) {
		t.Errorf("%.0f rows beyond the rate in one interval after the stall, burst %d", b, pc.burst)
	}
	// The stall owes 30,000 rows; all but a burst are forgiven.
	if want := int64(0.150*rate) - pc.burst; pc.forgiven < want-2*pc.burst || pc.forgiven > want+2*pc.burst {
		t.Errorf("%d rows forgiven, want about %d", pc.forgiven, want)
	}
	if got, want := ws.writes+pc.forgiven, int64(2*rate); got < want-pc.burst || got > want+pc.burst {
		t.Errorf("%d written + %d forgiven, want about %d slots in 2 s", ws.writes, pc.forgiven, want)
	}
}

// The rate workloads run on every compared engine at a tiny scale, read
// only present keys, and record the writer's figures.
func TestReadWhileWritingAtTiny(t *testing.T) {
	p := Params{Num: 2000, ValueSize: 100, CacheBytes: 1 << 20, Bloom: 10, RateDuration: 300 * time.Millisecond}
	for _, engine := range []string{"mayfly", "pebble", "badger"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := RunWorker(engine, "load", dir, p); err != nil {
				t.Fatal(err)
			}
			res, err := RunWorker(engine, "readwhilewriting_10k", dir, p)
			if err != nil {
				t.Fatal(err)
			}
			x := res.Extra
			if res.Ops == 0 || res.Found != res.Ops || res.P99us <= 0 || res.Seconds < p.RateDuration.Seconds() {
				t.Errorf("reader: %d ops, %d found, p99 %vµs in %.3fs", res.Ops, res.Found, res.P99us, res.Seconds)
			}
			// Real time on a shared machine: how close the writer comes to
			// the rate depends on the load (the pacer's precision is
			// TestPacerHoldsRate's), but it never writes ahead of it.
			if x["write_rate_asked"] != 10_000 || x["writer_ops_per_sec"] <= 0 || x["writer_ops_per_sec"] > 10_500 {
				t.Errorf("writer: asked %v, achieved %v rows/s", x["write_rate_asked"], x["writer_ops_per_sec"])
			}
			if x["sched_delay_max_us"] <= 0 {
				t.Errorf("scheduling probe: longest oversleep %vµs", x["sched_delay_max_us"])
			}
			if x["max_write_us"] <= 0 || x["max_write_us"] < x["write_p99_us"] {
				t.Errorf("writer: longest write %vµs, p99 %vµs", x["max_write_us"], x["write_p99_us"])
			}
		})
	}
}

// The probe reports the longest oversleep, not the sum or the last.
func TestMaxOversleep(t *testing.T) {
	var stop atomic.Bool
	late := []time.Duration{3 * time.Microsecond, 40 * time.Millisecond, 0, 7 * time.Millisecond}
	now, i := time.Unix(5, 0), 0
	got := maxOversleep(func() time.Time { return now }, func(d time.Duration) {
		now = now.Add(d + late[i])
		if i++; i == len(late) {
			stop.Store(true)
		}
	}, &stop, time.Millisecond)
	if got != 40*time.Millisecond || i != len(late) {
		t.Fatalf("maxOversleep = %v after %d sleeps, want 40ms after %d", got, i, len(late))
	}
}
