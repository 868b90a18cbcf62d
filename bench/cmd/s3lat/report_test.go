package main

import (
	"strings"
	"testing"
	"time"
)

// loadOf returns a load of n calls of latency d over elapsed.
func loadOf(n int, d, elapsed time.Duration) *load {
	l := &load{ops: int64(n), elapsed: elapsed}
	for range n {
		l.hist.Record(d)
	}
	return l
}

func TestReportTargets(t *testing.T) {
	r := &result{
		rtt:       20 * time.Millisecond,
		sync:      loadOf(100, 150*time.Millisecond, time.Second), // > 2×20ms + 100ms
		nosync:    loadOf(100, time.Microsecond, time.Second),
		mixedSync: loadOf(50, 60*time.Millisecond, time.Second), mixedNoSync: loadOf(100, 2*time.Millisecond, time.Second),
		steady: loadOf(100, time.Microsecond, time.Second), steadyReqs: map[string]uint64{"put": 10},
		idle: time.Second, idleReqs: map[string]uint64{"head": 1},
		cold: loadOf(10, time.Millisecond, time.Second), warm: loadOf(10, 500*time.Microsecond, time.Second),
		readTput: loadOf(10, time.Microsecond, time.Second),
	}
	var b strings.Builder
	report(&b, params{writers: 1, readers: 1, rate: 100, steadyDur: time.Second}, r)
	out := b.String()
	for _, want := range []string{
		"target p99 <= 2 RTT + WAL FlushInterval (100ms): MISSED (> 140.00 ms)",
		"idle 1s after that: 1 requests (head 1), $1.04 per month; target zero: MISSED",
		"steady 100 writes/s for 1s (100/s achieved): put 10.00/s",
		"one unsynced writer at 100 writes/s (100/s achieved) beside 1 synced writers, 0s: its latency p50 2.00 ms",
		"target p99 <= 1 ms: met (<= 1.00 ms)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
