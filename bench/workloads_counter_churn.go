package bench

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// windowchurn: Counters counters live in fixed windows of churnWindow that
// start with a counter's first increment (RFC 0010, rules 1-3). One writer
// increments counters chosen at random at churnRate increments a second
// (about churnPerWindow per counter and window) for Churn, real time.
// Every second it samples the bytes the engine holds on disk against the
// bytes of the counters live at that moment (key + 8-byte count each):
//
//   - disk_bytes: the whole directory, WAL included;
//   - table bytes (Sample.TableBytes): the SSTables alone, where expired
//     windows must not pile up.
//
// The figure of record, SpaceAmp, is the steady-state table bytes over
// the live bytes, from three windows in.

const (
	churnWindow    = 10 * time.Second
	churnPerWindow = 10
)

// tableMeter is implemented by engines that report the bytes of their
// tables alone.
type tableMeter interface {
	TableBytes() int64
}

func (r *runner) windowChurn(e CounterOps, res *Result) (int64, time.Duration, error) {
	tm, ok := r.e.(tableMeter)
	if !ok {
		return 0, 0, fmt.Errorf("%w for windowchurn", errNoCounters)
	}
	nc := r.counters()
	rate := float64(nc*churnPerWindow) / churnWindow.Seconds()
	starts := make([]time.Time, nc) // the start of each counter's window
	live := func(now time.Time) int64 {
		n := int64(0)
		for _, s := range starts {
			if !s.IsZero() && now.Before(s.Add(churnWindow)) {
				n++
			}
		}
		return n
	}
	rng := rand.New(rand.NewPCG(24, 25))
	kb := make([]byte, KeySize)
	var samples []Sample
	start := time.Now()
	next := start.Add(time.Second)
	var i int64
	var err error
	for {
		now := time.Now()
		if now.Sub(start) >= r.p.Churn {
			break
		}
		if now.After(next) {
			samples = append(samples, Sample{T: now.Sub(start).Seconds(), Puts: i,
				DiskBytes: r.e.DiskBytes(), TableBytes: tm.TableBytes(),
				LiveBytes: live(now) * int64(KeySize+8)})
			next = next.Add(time.Second)
		}
		// Paced: increment i is due at start + i/rate.
		if due := start.Add(time.Duration(float64(i) / rate * float64(time.Second))); now.Before(due) {
			time.Sleep(due.Sub(now))
			continue
		}
		c := rng.IntN(nc)
		t0 := time.Now()
		if err = e.Incr(PutKey(kb, uint64(c)), 1, churnWindow); err != nil {
			break
		}
		r.hist.Record(time.Since(t0))
		if s := starts[c]; s.IsZero() || !t0.Before(s.Add(churnWindow)) {
			starts[c] = t0
		}
		i++
	}
	d := time.Since(start)
	r.written = i * int64(KeySize+8)
	res.Samples = samples
	var tables, disk, lb float64
	var cnt int
	for _, s := range samples {
		if s.T >= 3*churnWindow.Seconds() {
			tables += float64(s.TableBytes)
			disk += float64(s.DiskBytes)
			lb += float64(s.LiveBytes)
			cnt++
		}
	}
	if cnt > 0 && lb > 0 {
		res.SpaceAmp = tables / lb
		res.Extra["steady_table_bytes"] = tables / float64(cnt)
		res.Extra["steady_disk_bytes"] = disk / float64(cnt)
		res.Extra["steady_live_bytes"] = lb / float64(cnt)
	}
	return i, d, err
}
