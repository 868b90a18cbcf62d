package bench

import (
	"sync/atomic"
	"testing"
	"time"
)

// tinyCounterParams is the counter workloads at a scale that runs in a
// second or two.
func tinyCounterParams() Params {
	p := tinyTTLParams()
	p.Counters, p.Reads = 50, 4000
	return p
}

// TestCounterWorkloadsCount runs the counter workloads on every engine that
// supports them: each checks its own counts and fails the run when they
// are wrong (a lost increment, an answer given twice).
func TestCounterWorkloadsCount(t *testing.T) {
	p := tinyCounterParams()
	for _, engine := range []string{"mayfly", "pebble", "badger"} {
		t.Run(engine, func(t *testing.T) {
			c := runWith(t, engine, "counter", p)
			if c.Ops != int64(p.Reads) || c.Extra["counted"] != float64(p.Reads) {
				t.Errorf("counter: %d ops, %v counted; want %d", c.Ops, c.Extra["counted"], p.Reads)
			}
			a := runWith(t, engine, "counteradd", p)
			if a.Ops != int64(p.Reads) || a.Extra["bad_counters"] != 0 {
				t.Errorf("counteradd: %d ops, %v bad counters", a.Ops, a.Extra["bad_counters"])
			}
			if !Supports(engine, "counterread") {
				return
			}
			r := runWith(t, engine, "counterread", p)
			if r.Extra["plain_get_ops_per_sec"] <= 0 || r.Extra["counter_to_plain_ratio"] <= 0 {
				t.Errorf("counterread: extras %v", r.Extra)
			}
		})
	}
}

// TestCounterWorkloadsCatchWrongCounts checks that the workloads' own
// checks can fail: an engine whose increments are lost is caught.
func TestCounterWorkloadsCatchWrongCounts(t *testing.T) {
	e, err := NewEngine("mayfly")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Open(t.TempDir(), 1<<20, 10); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p := tinyCounterParams()
	r := &runner{e: e, p: p, vals: NewValueGen(p.ValueSize)}
	lossy := lossyCounters{CounterOps: e.(CounterOps)}
	if _, _, err := r.countBlind(&lossy, &Result{Extra: map[string]float64{}}); err == nil {
		t.Error("counter: lost increments went unnoticed")
	}
	if _, _, err := r.countAnswering(&lossy, &Result{Extra: map[string]float64{}}); err == nil {
		t.Error("counteradd: wrong answers went unnoticed")
	}
}

// lossyCounters drops every 100th increment and answers it with the
// value before.
type lossyCounters struct {
	CounterOps
	n atomic.Int64
}

func (l *lossyCounters) Incr(k []byte, d int64, w time.Duration) error {
	if l.n.Add(1)%100 == 0 {
		return nil
	}
	return l.CounterOps.Incr(k, d, w)
}

func (l *lossyCounters) Add(k []byte, d int64, w time.Duration) (int64, error) {
	if l.n.Add(1)%100 == 0 {
		v, _, err := l.Counter(k)
		return v, err
	}
	return l.CounterOps.Add(k, d, w)
}

// TestWindowChurnSamples runs windowchurn briefly: it samples table and
// directory bytes against the live counters.
func TestWindowChurnSamples(t *testing.T) {
	p := tinyCounterParams()
	p.Churn = 1500 * time.Millisecond
	res := runWith(t, "mayfly", "windowchurn", p)
	if len(res.Samples) == 0 || res.Samples[0].LiveBytes <= 0 {
		t.Fatalf("windowchurn: samples %+v", res.Samples)
	}
}
