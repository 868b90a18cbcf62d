package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// The counter workloads (issue 20, RFC 0010). Each checks the counts it
// reads back and fails the run when one is wrong.
//
//   - counter: Reads blind increments (Incr) of Counters counters chosen
//     uniformly at random on Threads threads, each counter in a window of
//     counterWindow; then every counter is read back and the counts must
//     sum to Reads.
//   - counteradd: the same with the answering Add. Every value an Add
//     returns is checked: on each counter, the values returned are 1..n
//     exactly once, n its final count.
//   - counterread: Counters counters each given counterOperands blind
//     increments (preload, not timed; nothing is compacted on purpose),
//     and as many plain keys written once; then Reads random reads of
//     counters and Reads of plain keys, timed separately. The figure is
//     the counters' read rate; the plain reads' rate and the ratio are in
//     Extra.
//   - windowchurn (Mayfly): Counters counters in windows of
//     churnWindow, incremented at a steady rate for Churn; the disk held
//     is sampled against the live counters (workloads_counter_churn.go).

const (
	counterWindow    = 60 * time.Second
	counterOperands  = 100
	defaultCounters  = 10_000
	counterKeyOffset = 1 << 40 // counterread's plain keys, apart from the counters
)

// errNoCounters is returned for a counter workload on an engine without
// CounterOps.
var errNoCounters = errors.New("bench: engine has no counters")

// CounterWorkloads are the counter workloads, opt-in with -workloads.
var CounterWorkloads = []string{"counter", "counteradd", "counterread", "windowchurn"}

// IsCounterWorkload reports whether w is one of CounterWorkloads.
func IsCounterWorkload(w string) bool {
	for _, x := range CounterWorkloads {
		if x == w {
			return true
		}
	}
	return false
}

// counters is p.Counters, defaultCounters if unset.
func (r *runner) counters() int {
	if r.p.Counters > 0 {
		return r.p.Counters
	}
	return defaultCounters
}

func (r *runner) counterWorkload(w string, res *Result) (int64, time.Duration, error) {
	ops, ok := r.e.(CounterOps)
	if !ok || !Supports(r.e.Name(), w) {
		return 0, 0, fmt.Errorf("%w for %s", errNoCounters, w)
	}
	res.Extra = map[string]float64{}
	switch w {
	case "counter":
		return r.countBlind(ops, res)
	case "counteradd":
		return r.countAnswering(ops, res)
	case "counterread":
		return r.counterRead(ops, res)
	}
	return r.windowChurn(ops, res)
}

// countBlind is the counter workload.
func (r *runner) countBlind(e CounterOps, res *Result) (int64, time.Duration, error) {
	nc := uint64(r.counters())
	ops, d, err := r.parallel(r.threads(), func(t int, h *Hist, stop *atomic.Bool) error {
		rng := rand.New(rand.NewPCG(uint64(t), 21))
		kb := make([]byte, KeySize)
		for i := range share(r.p.Reads, r.threads(), t) {
			if i%256 == 0 && stop.Load() {
				return nil
			}
			key := PutKey(kb, rng.Uint64N(nc))
			t0 := time.Now()
			err := e.Incr(key, 1, counterWindow)
			h.Record(time.Since(t0))
			if err != nil {
				return err
			}
		}
		return nil
	})
	r.written = ops * int64(KeySize+8)
	if err != nil {
		return ops, d, err
	}
	sum, err := r.sumCounters(e, nc)
	res.Extra["counted"] = float64(sum)
	if err == nil && sum != ops {
		err = fmt.Errorf("counter: %d increments, the counters sum to %d", ops, sum)
	}
	return ops, d, err
}

// sumCounters reads counters 0..nc-1 and returns their sum.
func (r *runner) sumCounters(e CounterOps, nc uint64) (int64, error) {
	var sum int64
	for i := range nc {
		n, _, err := e.Counter(r.key(i))
		if err != nil {
			return sum, err
		}
		sum += n
	}
	return sum, nil
}

// countAnswering is the counteradd workload.
func (r *runner) countAnswering(e CounterOps, res *Result) (int64, time.Duration, error) {
	nc := uint64(r.counters())
	threads := r.threads()
	// seen[t][c] is the number of answers of thread t on counter c, and
	// sums[t][c] their sum: on counter c the answers must be 1..n once
	// each, so their count is n and their sum n(n+1)/2.
	seen := make([][]int64, threads)
	sums := make([][]int64, threads)
	ops, d, err := r.parallel(threads, func(t int, h *Hist, stop *atomic.Bool) error {
		rng := rand.New(rand.NewPCG(uint64(t), 22))
		kb := make([]byte, KeySize)
		seen[t], sums[t] = make([]int64, nc), make([]int64, nc)
		for i := range share(r.p.Reads, threads, t) {
			if i%256 == 0 && stop.Load() {
				return nil
			}
			c := rng.Uint64N(nc)
			t0 := time.Now()
			n, err := e.Add(PutKey(kb, c), 1, counterWindow)
			h.Record(time.Since(t0))
			if err != nil {
				return err
			}
			seen[t][c]++
			sums[t][c] += n
		}
		return nil
	})
	r.written = ops * int64(KeySize+8)
	if err != nil {
		return ops, d, err
	}
	bad := 0
	for c := range nc {
		var n, s int64
		for t := range threads {
			n, s = n+seen[t][c], s+sums[t][c]
		}
		got, _, err := e.Counter(r.key(c))
		if err != nil {
			return ops, d, err
		}
		if got != n || s != n*(n+1)/2 {
			bad++
		}
	}
	res.Extra["bad_counters"] = float64(bad)
	if bad > 0 {
		err = fmt.Errorf("counteradd: %d of %d counters answered wrong", bad, nc)
	}
	return ops, d, err
}

// counterRead is the counterread workload.
func (r *runner) counterRead(e CounterOps, res *Result) (int64, time.Duration, error) {
	nc := uint64(r.counters())
	for j := range counterOperands {
		for i := range nc {
			if err := e.Incr(r.key(i), 1, counterWindow); err != nil {
				return 0, 0, fmt.Errorf("preload operand %d: %w", j, err)
			}
		}
	}
	var v [8]byte
	for i := range nc {
		if err := r.e.Put(r.key(counterKeyOffset+i), counterBytes(v[:0], counterOperands)); err != nil {
			return 0, 0, fmt.Errorf("preload plain key: %w", err)
		}
	}
	read := func(offset uint64, get func(k []byte) (int64, error)) (int64, time.Duration, error) {
		return r.parallel(r.threads(), func(t int, h *Hist, stop *atomic.Bool) error {
			rng := rand.New(rand.NewPCG(uint64(t), 23))
			kb := make([]byte, KeySize)
			for i := range share(r.p.Reads, r.threads(), t) {
				if i%256 == 0 && stop.Load() {
					return nil
				}
				key := PutKey(kb, offset+rng.Uint64N(nc))
				t0 := time.Now()
				n, err := get(key)
				h.Record(time.Since(t0))
				if err != nil {
					return err
				}
				if n != counterOperands {
					return fmt.Errorf("counterread: %q reads %d, want %d", key, n, counterOperands)
				}
			}
			return nil
		})
	}
	plainOps, plainD, err := read(counterKeyOffset, func(k []byte) (int64, error) {
		v, ok, err := r.e.Get(k, nil)
		if err != nil || !ok {
			return 0, errors.Join(err, fmt.Errorf("plain key %q missing", k))
		}
		return counterValue(v)
	})
	if err != nil {
		return 0, 0, err
	}
	r.hist = Hist{} // the figures are the counters' reads
	ops, d, err := read(0, func(k []byte) (int64, error) {
		n, _, err := e.Counter(k)
		return n, err
	})
	plain := float64(plainOps) / plainD.Seconds()
	res.Extra["plain_get_ops_per_sec"] = plain
	if d > 0 {
		res.Extra["counter_to_plain_ratio"] = float64(ops) / d.Seconds() / plain
	}
	return ops, d, err
}
