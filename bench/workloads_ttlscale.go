package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The ttlscale workload: TTL churn over a fixed key space (Params.Num keys)
// with mixed TTLs, for TTLScale.Duration of real time, with time simulated
// TTLScale.Speed times faster than real so that TTLs of 1 minute to 1 day
// cycle many times within the run.
//
// Time is simulated the same way for every engine: Mayfly runs on a clock
// (Options.Clock) that reads Speed simulated milliseconds per real
// millisecond, and every TTL is written in simulated time; an engine
// without an injectable clock (Badger) gets each TTL divided by Speed, which
// is the same thing for an engine whose only use of time for TTL is to
// compare a row's deadline with its wall clock (Badger's deadlines are whole
// Unix seconds: a row may expire up to one real second, Speed simulated
// seconds, early). Mayfly's own time constants (PeriodicCompactionInterval,
// the reclamation bound) are read on its clock, so they are simulated too.
//
// A writer puts at TTLScale.Rate rows per real second, each to a key drawn
// uniformly from the key space, with a TTL of k minutes, k in [1, 1440]
// drawn from a Zipf distribution of exponent TTLScale.Zipf (short TTLs are
// the most frequent). A reader gets uniformly drawn keys at
// TTLScale.ReadRate per real second. Every real second a sample records the
// bytes on disk, the live bytes (rows whose latest version has not expired,
// from an exact model of the writes), the bytes that expired within the
// last TTLScale.Bound (simulated), Mayfly's estimate of the expired bytes
// still on disk, and the reader's p99 over that second.

// TTLScaleParams configure the ttlscale workload; zero fields take the
// defaults of withDefaults.
type TTLScaleParams struct {
	Duration time.Duration // real run time; default 60 s
	Speed    float64       // simulated seconds per real second; default 60
	Rate     int           // puts per real second; default 20,000
	ReadRate int           // reads per real second; default 5,000
	Zipf     float64       // Zipf exponent (> 1) of the TTL in minutes; default 1.1
	// Bound is the reclamation bound, simulated: a row that expired more
	// than Bound ago must be off disk. Default: Mayfly's documented bound,
	// the default PeriodicCompactionInterval plus one compaction (counted
	// as 10 real seconds, 10 × Speed simulated).
	Bound time.Duration
}

// TTL range of the ttlscale workload, in minutes.
const ttlScaleMinMinutes, ttlScaleMaxMinutes = 1, 1440

func (p TTLScaleParams) withDefaults() TTLScaleParams {
	if p.Duration <= 0 {
		p.Duration = time.Minute
	}
	if p.Speed <= 0 {
		p.Speed = 60
	}
	if p.Rate <= 0 {
		p.Rate = 20_000
	}
	if p.ReadRate <= 0 {
		p.ReadRate = 5_000
	}
	if p.Zipf <= 1 {
		p.Zipf = 1.1
	}
	if p.Bound <= 0 {
		p.Bound = time.Hour + time.Duration(10*p.Speed*float64(time.Second))
	}
	return p
}

// TTLScaleSample is one ttlscale observation.
type TTLScaleSample struct {
	T         float64 `json:"t"`          // real seconds since start
	SimHours  float64 `json:"sim_hours"`  // simulated hours since start
	DiskBytes int64   `json:"disk_bytes"` // bytes allocated by the DB directory
	LiveBytes int64   `json:"live_bytes"` // key+value bytes of unexpired latest versions
	// WindowExpired is the key+value bytes of rows that expired within
	// the last Bound (simulated): what the bound lets stay on disk.
	WindowExpired int64 `json:"window_expired_bytes"`
	// EngineExpired is the engine's estimate of expired bytes still on
	// disk (Mayfly: the sum of LevelMetrics.ExpiredBytes; -1: none).
	EngineExpired int64   `json:"engine_expired_bytes"`
	ReadP99us     float64 `json:"read_p99_us"` // reads of the last second
	Puts          int64   `json:"puts"`
}

// SpaceAmp is disk bytes per live user byte (0 with nothing live).
func (s TTLScaleSample) SpaceAmp() float64 {
	if s.LiveBytes <= 0 {
		return 0
	}
	return float64(s.DiskBytes) / float64(s.LiveBytes)
}

// scaledClock reads speed simulated milliseconds per real millisecond from
// its creation; it never goes backwards (it follows the monotonic clock).
type scaledClock struct {
	start   time.Time
	startMs int64
	speed   float64
}

func newScaledClock(speed float64) *scaledClock {
	now := time.Now()
	return &scaledClock{start: now, startMs: now.UnixMilli(), speed: speed}
}

func (c *scaledClock) NowMillis() int64 { return c.startMs + c.sinceMillis() }

// sinceMillis is the simulated time since the clock's creation.
func (c *scaledClock) sinceMillis() int64 {
	return int64(float64(time.Since(c.start).Microseconds()) * c.speed / 1e3)
}

// ttlScale is a ttlscale run's time source: the clock Mayfly is opened
// with, or, for other engines, the divisor of every TTL.
type ttlScale struct {
	p      TTLScaleParams
	clk    *scaledClock
	native bool // the engine reads clk; otherwise TTLs are divided by Speed
}

// prepareTTLScale, for the ttlscale workload, hands the simulated clock to
// an engine that takes one; it must run before Open. Nil otherwise.
func prepareTTLScale(workload string, e Engine, p Params) *ttlScale {
	if workload != "ttlscale" {
		return nil
	}
	ts := &ttlScale{p: p.TTLScale.withDefaults()}
	ts.clk = newScaledClock(ts.p.Speed)
	if m, ok := e.(*mayflyEngine); ok {
		m.clock, ts.native = ts.clk, true
	}
	return ts
}

// engineTTL is the TTL to hand the engine for a simulated TTL.
func (ts *ttlScale) engineTTL(sim time.Duration) time.Duration {
	if ts.native {
		return sim
	}
	return time.Duration(float64(sim) / ts.p.Speed)
}

// ttlModel tracks, per simulated second, which rows are live: the latest
// version of each key and its deadline. Not safe for concurrent use.
type ttlModel struct {
	rowBytes int64
	deadline []uint32 // per key: simulated second its latest row expires after; 0 = never written
	due      []int32  // per second: latest versions expiring after it, not yet passed
	cum      []int64  // per passed second s: rows expired after seconds 0..s
	cursor   int      // the first second not yet passed
	live     int64
}

func newTTLModel(keys, horizonSec int, rowBytes int64) *ttlModel {
	return &ttlModel{rowBytes: rowBytes, deadline: make([]uint32, keys),
		due: make([]int32, horizonSec), cum: make([]int64, horizonSec)}
}

// advance passes every second before now: a row whose deadline second is d
// is live while now <= d.
func (m *ttlModel) advance(now int) {
	for ; m.cursor < now && m.cursor < len(m.due); m.cursor++ {
		m.live -= int64(m.due[m.cursor])
		prev := int64(0)
		if m.cursor > 0 {
			prev = m.cum[m.cursor-1]
		}
		m.cum[m.cursor] = prev + int64(m.due[m.cursor])
	}
}

// put records a write of key at simulated second now with a TTL of ttlSec
// seconds. It fails if the deadline is past the model's horizon.
func (m *ttlModel) put(key uint64, now, ttlSec int) error {
	m.advance(now)
	d := now + ttlSec
	if d >= len(m.due) {
		return fmt.Errorf("ttlscale: deadline %d s past the model's horizon %d s", d, len(m.due))
	}
	if old := int(m.deadline[key]); old != 0 && old >= m.cursor {
		m.due[old]-- // overwritten while live
	} else {
		m.live++
	}
	m.due[d]++
	m.deadline[key] = uint32(d)
	return nil
}

// liveBytes is the key+value bytes of live rows at the last advance.
func (m *ttlModel) liveBytes() int64 { return m.live * m.rowBytes }

// expiredSince is the key+value bytes of rows that expired after seconds
// from..cursor-1 (those that became invisible at from+1..cursor).
func (m *ttlModel) expiredSince(from int) int64 {
	if m.cursor == 0 {
		return 0
	}
	total := m.cum[m.cursor-1]
	if from > 0 && from <= m.cursor {
		total -= m.cum[from-1]
	}
	return total * m.rowBytes
}

// ttlScale runs the workload; see the comment at the top of the file.
func (r *runner) ttlScale(ts *ttlScale, res *Result) (int64, time.Duration, error) {
	p := ts.p
	rowBytes := int64(KeySize + r.p.ValueSize)
	simSec := func() int { return int(ts.clk.sinceMillis() / 1000) }
	horizon := int(p.Duration.Seconds()*p.Speed) + ttlScaleMaxMinutes*60 + 3600
	model := newTTLModel(r.p.Num, horizon, rowBytes)
	var mu sync.Mutex // guards model and window
	var window Hist   // reads since the last sample
	var puts atomic.Int64
	var stop atomic.Bool
	errs := make(chan error, 2)
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // writer
		defer wg.Done()
		rng := rand.New(rand.NewPCG(11, 12))
		zipf := rand.NewZipf(rng, p.Zipf, 1, ttlScaleMaxMinutes-ttlScaleMinMinutes)
		vals := NewValueGen(r.p.ValueSize)
		kb := make([]byte, KeySize)
		for i := 0; !stop.Load(); i++ {
			pace(start, i, p.Rate)
			key := rng.Uint64N(uint64(r.p.Num))
			minutes := int(zipf.Uint64()) + ttlScaleMinMinutes
			sim := time.Duration(minutes) * time.Minute
			mu.Lock()
			err := model.put(key, simSec(), minutes*60)
			mu.Unlock()
			if err == nil {
				err = r.e.PutTTL(PutKey(kb, key), vals.Next(), ts.engineTTL(sim))
			}
			if err != nil {
				errs <- err
				return
			}
			puts.Add(1)
		}
	}()
	go func() { // reader
		defer wg.Done()
		rng := rand.New(rand.NewPCG(13, 14))
		kb := make([]byte, KeySize)
		dst := make([]byte, 0, 4096)
		for i := 0; !stop.Load(); i++ {
			pace(start, i, p.ReadRate)
			t0 := time.Now()
			if _, _, err := r.e.Get(PutKey(kb, rng.Uint64N(uint64(r.p.Num))), dst[:0]); err != nil {
				errs <- err
				return
			}
			d := time.Since(t0)
			mu.Lock()
			window.Record(d)
			mu.Unlock()
		}
	}()
	stopProf := r.profile()
	var samples []TTLScaleSample
	tk := time.NewTicker(time.Second)
	var err error
	for err == nil && time.Since(start) < p.Duration {
		select {
		case err = <-errs:
			continue
		case <-tk.C:
		}
		now := simSec()
		s := TTLScaleSample{T: time.Since(start).Seconds(), SimHours: float64(now) / 3600,
			DiskBytes: DirBytes(dirOf(r.e)), Puts: puts.Load(), EngineExpired: engineExpired(r.e)}
		mu.Lock()
		model.advance(now)
		s.LiveBytes = model.liveBytes()
		s.WindowExpired = model.expiredSince(now - int(p.Bound.Seconds()))
		s.ReadP99us = float64(window.Quantile(0.99)) / 1e3
		r.hist.Merge(&window)
		window = Hist{}
		mu.Unlock()
		samples = append(samples, s)
		if bg, ok := r.e.(*badgerEngine); ok && len(samples)%10 == 0 {
			go bg.ValueLogGC() // as a Badger application must
		}
	}
	tk.Stop()
	stop.Store(true)
	wg.Wait()
	stopProf()
	d := time.Since(start)
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	n := puts.Load()
	r.written = n * rowBytes
	res.TTLScale = samples
	res.Extra = ttlScaleSummary(samples)
	res.Extra["sim_speed"] = p.Speed
	res.Extra["bound_sim_s"] = p.Bound.Seconds()
	return n, d, err
}

// pace sleeps until op i of a stream of rate ops per second is due.
func pace(start time.Time, i, rate int) {
	if due := start.Add(time.Duration(float64(i) / float64(rate) * float64(time.Second))); time.Until(due) > 0 {
		time.Sleep(time.Until(due))
	}
}

// engineExpired is the engine's estimate of expired bytes still on disk,
// -1 for an engine that reports none.
func engineExpired(e Engine) int64 {
	m, ok := e.(*mayflyEngine)
	if !ok {
		return -1
	}
	var n uint64
	for _, l := range m.db.Metrics().Levels {
		n += l.ExpiredBytes
	}
	return int64(n)
}

// ttlScaleSummary condenses the samples: the highest space amplification
// after the first quarter of the run (before it, fixed costs such as a
// preallocated WAL dominate a small live set), the largest excess of the
// engine's expired bytes on disk over what the bound lets stay (≤ 0: within
// the bound; -1 samples are skipped), and the read p99 per second (median
// and highest).
func ttlScaleSummary(samples []TTLScaleSample) map[string]float64 {
	out := map[string]float64{}
	if len(samples) == 0 {
		return out
	}
	from := samples[len(samples)-1].T / 4
	var p99s []float64
	excess, haveExcess := 0.0, false
	for _, s := range samples {
		if s.T > from {
			if a := s.SpaceAmp(); a > out["space_amp_max"] {
				out["space_amp_max"], out["space_amp_max_t"] = a, s.T
			}
		}
		if s.EngineExpired >= 0 {
			if e := float64(s.EngineExpired - s.WindowExpired); !haveExcess || e > excess {
				excess, haveExcess = e, true
			}
		}
		if s.ReadP99us > 0 {
			p99s = append(p99s, s.ReadP99us)
		}
	}
	if haveExcess {
		out["expired_excess_max_bytes"] = excess
	}
	last := samples[len(samples)-1]
	out["space_amp_final"] = last.SpaceAmp()
	out["sim_hours"] = last.SimHours
	if len(p99s) > 0 {
		out["read_p99_window_median_us"] = quantileOf(p99s, 0.5)
		out["read_p99_window_max_us"] = quantileOf(p99s, 1)
	}
	return out
}

// quantileOf returns the q-quantile (0..1, nearest rank) of v, sorting a copy.
func quantileOf(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
