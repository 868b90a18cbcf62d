package bench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The rate-limited readwhilewriting workloads (issue 21, "Reads under
// writes"): readwhilewriting_<rate>, e.g. readwhilewriting_10k, runs one
// reader doing random Gets of present keys for Params.RateDuration while
// one writer overwrites random keys at <rate> rows per second, so that the
// readers of every engine are compared under the same write load. They
// start from a copy of the fixture, like readwhilewriting (whose writer is
// unlimited and which stays as it is).
//
// The result's ops, ops/s and p50/p99 are the reader's. Extra holds the
// writer's figures: write_rate_asked, writer_ops_per_sec (achieved),
// max_write_us (the longest single Put: a stall), write_p99_us, and
// writer_rows_forgiven (rows the pacer dropped from its schedule because
// the writer fell more than a burst behind). sched_delay_max_us is the
// machine's share of a stall: the longest a goroutine that only sleeps
// (schedProbeTick at a time) woke late, which no engine lock can cause.

// RateWorkloadPrefix begins the name of every rate-limited readwhilewriting.
const RateWorkloadPrefix = "readwhilewriting_"

// paceBurst is the pacer's bucket: the writer may owe at most this much of
// its schedule; beyond it the schedule is forgiven rather than caught up.
// It spans two of the Go scheduler's 10 ms preemption slices: a writer
// woken while the reader and a background goroutine hold both Ps of a
// 2-core machine may wait a slice for one, and that wait is the
// machine's, not the engine's, so it is caught up rather than forgiven.
const paceBurst = 20 * time.Millisecond

// schedProbeTick is the sleep of the scheduling-delay probe.
const schedProbeTick = time.Millisecond

// defaultRateDuration is the reader's run time when Params.RateDuration is 0.
const defaultRateDuration = 10 * time.Second

// RateWorkload names the readwhilewriting whose writer is held at rate rows
// per second: "readwhilewriting_10k" for 10000, "readwhilewriting_1500" for 1500.
func RateWorkload(rate int) string {
	if rate%1000 == 0 {
		return RateWorkloadPrefix + strconv.Itoa(rate/1000) + "k"
	}
	return RateWorkloadPrefix + strconv.Itoa(rate)
}

// WriteRateOf returns the write rate a RateWorkload name asks for; ok is
// false for any other name (including the unlimited readwhilewriting).
func WriteRateOf(w string) (rate int, ok bool) {
	s, found := strings.CutPrefix(w, RateWorkloadPrefix)
	if !found || s == "" {
		return 0, false
	}
	mul := 1
	if t, k := strings.CutSuffix(s, "k"); k {
		s, mul = t, 1000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n * mul, true
}

// IsRateWorkload reports whether w is a rate-limited readwhilewriting.
func IsRateWorkload(w string) bool {
	_, ok := WriteRateOf(w)
	return ok
}

// ParseWriteRates parses a comma-separated list of positive rows-per-second
// rates ("10000,50000,200000") into workload names, in the order given.
func ParseWriteRates(spec string) ([]string, error) {
	var ws []string
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bench: write rate %q is not a positive number of rows per second", f)
		}
		ws = append(ws, RateWorkload(n))
	}
	return ws, nil
}

// pacer is a token bucket on an absolute schedule: slot i (counting from
// 0) is due at start + i/rate, so pacing does not drift however the writes
// and sleeps fall. A writer behind schedule may take at most burst rows at
// once; when it owes more (after a stall), the slots beyond the burst are
// forgiven (counted, never written), so a stall is not followed by a run
// of writes faster than the rate.
type pacer struct {
	rate     float64 // rows per second
	burst    int64
	start    time.Time
	taken    int64
	forgiven int64
}

func newPacer(rate float64, burst time.Duration, start time.Time) *pacer {
	b := max(int64(rate*burst.Seconds()), 1)
	return &pacer{rate: rate, burst: b, start: start}
}

// take returns how many rows may be written at now, at most the burst.
// When none may, it returns how long until the next one is due.
func (p *pacer) take(now time.Time) (rows int, wait time.Duration) {
	next := p.taken + p.forgiven                                   // the first slot not yet used
	owed := int64(float64(now.Sub(p.start))*p.rate/1e9) + 1 - next // slots 0..k are due once k/rate has passed
	if owed > p.burst {
		p.forgiven += owed - p.burst
		owed = p.burst
	}
	if owed <= 0 {
		return 0, p.start.Add(time.Duration(float64(next) * 1e9 / p.rate)).Sub(now)
	}
	p.taken += owed
	return int(owed), 0
}

// readWhileWritingAt: one reader doing random Gets of present keys (timed,
// reported) for p.RateDuration while one writer overwrites random keys at
// rate rows per second.
func (r *runner) readWhileWritingAt(rate int, res *Result) (int64, time.Duration, error) {
	dur := r.p.RateDuration
	if dur <= 0 {
		dur = defaultRateDuration
	}
	var stop atomic.Bool
	var ws writerStats
	var werr error
	var wg sync.WaitGroup
	pc := newPacer(float64(rate), paceBurst, time.Now())
	wg.Add(1)
	go func() {
		defer wg.Done()
		vals := NewValueGen(r.p.ValueSize)
		rng := rand.New(rand.NewPCG(99, 98))
		kb := make([]byte, KeySize)
		ws, werr = pacedWrites(pc, time.Now, time.Sleep, &stop, func() error {
			return r.e.Put(PutKey(kb, rng.Uint64N(uint64(r.p.Num))), vals.Next())
		})
	}()
	var schedDelay time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		schedDelay = maxOversleep(time.Now, time.Sleep, &stop, schedProbeTick)
	}()
	ops, d, err := r.readFor(dur)
	stop.Store(true)
	wg.Wait()
	if err == nil {
		err = werr
	}
	res.Extra = map[string]float64{
		"write_rate_asked":     float64(rate),
		"writer_ops_per_sec":   float64(ws.writes) / ws.elapsed.Seconds(),
		"max_write_us":         float64(ws.maxWrite) / 1e3,
		"write_p99_us":         float64(ws.hist.Quantile(0.99)) / 1e3,
		"writer_rows_forgiven": float64(pc.forgiven),
		"sched_delay_max_us":   float64(schedDelay) / 1e3,
	}
	return ops, d, err
}

// writerStats are what pacedWrites measured.
type writerStats struct {
	writes   int64
	elapsed  time.Duration // from the pacer's start to the writer's stop
	maxWrite time.Duration // the longest single write
	hist     Hist          // every write's latency
}

// pacedWrites calls put as pc allows, timing each call with now, sleeping
// with sleep while no row is due, until stop is set or put fails.
func pacedWrites(pc *pacer, now func() time.Time, sleep func(time.Duration), stop *atomic.Bool, put func() error) (ws writerStats, err error) {
	defer func() { ws.elapsed = now().Sub(pc.start) }()
	for !stop.Load() {
		k, wait := pc.take(now())
		if k == 0 {
			sleep(wait)
			continue
		}
		for range k {
			t0 := now()
			if err := put(); err != nil {
				return ws, err
			}
			d := now().Sub(t0)
			ws.hist.Record(d)
			ws.maxWrite = max(ws.maxWrite, d)
			ws.writes++
		}
	}
	return ws, nil
}

// maxOversleep sleeps tick at a time until stop is set and returns the
// longest a sleep overran its tick.
func maxOversleep(now func() time.Time, sleep func(time.Duration), stop *atomic.Bool, tick time.Duration) time.Duration {
	var worst time.Duration
	for !stop.Load() {
		t0 := now()
		sleep(tick)
		worst = max(worst, now().Sub(t0)-tick)
	}
	return worst
}

// readFor does random Gets of present keys for d, timing each, and fails
// if one is missing or has the wrong size.
func (r *runner) readFor(d time.Duration) (int64, time.Duration, error) {
	stop := r.profile()
	defer stop()
	dst := make([]byte, 0, 4096)
	cpu0 := processCPU()
	start := time.Now()
	deadline := start.Add(d)
	last := start
	var n int64
	for ; n%64 != 0 || last.Before(deadline); n++ {
		k := r.key(r.randKey())
		v, ok, err := r.e.Get(k, dst[:0])
		if err != nil {
			return n, time.Since(start), err
		}
		if !ok || len(v) != r.p.ValueSize {
			return n, time.Since(start), fmt.Errorf("read of %q while writing: found %v, %d bytes", k, ok, len(v))
		}
		now := time.Now()
		r.hist.Record(now.Sub(last))
		last = now
	}
	r.cpu = processCPU() - cpu0
	r.found = n
	return n, time.Since(start), nil
}
