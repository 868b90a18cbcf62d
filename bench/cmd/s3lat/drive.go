package main

import (
	"sync"
	"time"

	"github.com/mayflydb/mayfly/bench"
)

// load is what a driver measured: calls made, wall time, and the latency
// of every call.
type load struct {
	ops     int64
	elapsed time.Duration
	hist    bench.Hist
}

// perSec is the call rate over the wall time.
func (l *load) perSec() float64 {
	if l.elapsed <= 0 {
		return 0
	}
	return float64(l.ops) / l.elapsed.Seconds()
}

// driveFor runs n goroutines, each calling op(worker, i) for i = 0, 1, ...
// until d has passed since the start, and times every call. The first
// error stops every goroutine and is returned.
func driveFor(n int, d time.Duration, op func(worker, i int) error) (*load, error) {
	var (
		mu    sync.Mutex
		total load
		first error
		wg    sync.WaitGroup
		stop  = make(chan struct{})
		once  sync.Once
	)
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	start := time.Now()
	deadline := start.Add(d)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var own load
			for i := 0; time.Now().Before(deadline) && !stopped(); i++ {
				t0 := time.Now()
				if err := op(w, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					once.Do(func() { close(stop) })
					break
				}
				own.hist.Record(time.Since(t0))
				own.ops++
			}
			mu.Lock()
			total.ops += own.ops
			total.hist.Merge(&own.hist)
			mu.Unlock()
		}()
	}
	wg.Wait()
	total.elapsed = time.Since(start)
	return &total, first
}

// driveCount calls op(i) for i in [0, n) on one goroutine and times every
// call.
func driveCount(n int, op func(i int) error) (*load, error) {
	var l load
	start := time.Now()
	for i := range n {
		if err := l.timed(op, i); err != nil {
			return nil, err
		}
	}
	l.elapsed = time.Since(start)
	return &l, nil
}

// drivePaced calls op(i) on one goroutine at rate calls per second for d,
// catching up without sleeping when behind, and times every call.
func drivePaced(rate int, d time.Duration, op func(i int) error) (*load, error) {
	var l load
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := 0; ; i++ {
		due := time.Duration(i) * interval
		if due >= d {
			break
		}
		// Sleep only for gaps worth a timer; shorter ones are caught up
		// by the next call that finds itself behind.
		if wait := due - time.Since(start); wait > time.Millisecond {
			time.Sleep(wait)
		}
		if err := l.timed(op, i); err != nil {
			return nil, err
		}
	}
	l.elapsed = time.Since(start)
	return &l, nil
}

// timed calls op(i) and records its latency in l.
func (l *load) timed(op func(i int) error, i int) error {
	t0 := time.Now()
	if err := op(i); err != nil {
		return err
	}
	l.hist.Record(time.Since(t0))
	l.ops++
	return nil
}
