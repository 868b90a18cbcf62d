package bench

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// tinyYCSBParams is the YCSB workloads at a scale that runs in a second.
func tinyYCSBParams(threads int) Params {
	return Params{Num: 500, YCSBOps: 4000, Threads: threads, CacheBytes: 1 << 20, Bloom: 10}
}

func runYCSB(t *testing.T, engine, w string, p Params) Result {
	t.Helper()
	res, err := RunWorker(engine, w, t.TempDir(), p)
	if err != nil {
		t.Fatalf("%s/%s: %v", engine, w, err)
	}
	return res
}

func TestYCSBOpMix(t *testing.T) {
	p := tinyYCSBParams(4)
	// Share of transactions per operation type (YCSB's workloads a..f);
	// F's reads include those of its read-modify-writes.
	want := map[string]map[string]float64{
		"ycsb_a": {"read": 0.5, "update": 0.5},
		"ycsb_b": {"read": 0.95, "update": 0.05},
		"ycsb_c": {"read": 1},
		"ycsb_d": {"read": 0.95, "insert": 0.05},
		"ycsb_e": {"scan": 0.95, "insert": 0.05},
		"ycsb_f": {"read": 1, "update": 0.5, "rmw": 0.5},
	}
	// Every workload on Mayfly; the inserts, latest reads, scans and
	// read-modify-writes on the other engines' adapters too.
	for _, engine := range []string{"mayfly", "pebble", "badger"} {
		for _, w := range YCSBWorkloads[1:] {
			if engine != "mayfly" && w < "ycsb_d" {
				continue
			}
			t.Run(engine+"/"+w, func(t *testing.T) {
				res := runYCSB(t, engine, w, p)
				if res.Ops != int64(p.YCSBOps) || res.P99us == 0 {
					t.Fatalf("%d transactions, p99 %vµs; want %d", res.Ops, res.P99us, p.YCSBOps)
				}
				for _, op := range ycsbOps {
					got := res.Extra[op+"_ops"] / float64(p.YCSBOps)
					if math.Abs(got-want[w][op]) > 0.03 {
						t.Errorf("%s: %.3f of transactions, want %.2f", op, got, want[w][op])
					}
					if got > 0 && (res.Extra[op+"_p99_us"] <= 0 || res.Extra[op+"_max_us"] < res.Extra[op+"_p99_us"]) {
						t.Errorf("%s: p99 %vµs, max %vµs", op, res.Extra[op+"_p99_us"], res.Extra[op+"_max_us"])
					}
				}
			})
		}
	}
}

func TestYCSBLoad(t *testing.T) {
	p := tinyYCSBParams(4)
	res := runYCSB(t, "mayfly", "ycsb_load", p)
	if res.Ops != int64(p.Num) || res.Extra["insert_ops"] != float64(p.Num) {
		t.Fatalf("%d ops, %v inserts; want %d", res.Ops, res.Extra["insert_ops"], p.Num)
	}
	if res.ValueSize != ycsbFields*ycsbFieldLength || res.Extra["write_max_us"] <= 0 || res.IOWriteAmp <= 0 {
		t.Errorf("value size %d, write max %vµs, io write amp %v", res.ValueSize, res.Extra["write_max_us"], res.IOWriteAmp)
	}
}

func TestYCSBScanLength(t *testing.T) {
	res := runYCSB(t, "mayfly", "ycsb_e", tinyYCSBParams(4))
	if m := res.Extra["scan_rows_max"]; m > ycsbMaxScan || m < 2 {
		t.Errorf("longest scan %v rows, want 2..%d", m, ycsbMaxScan)
	}
	if avg := res.Extra["scan_rows"] / res.Extra["scan_ops"]; avg > ycsbMaxScan/2+10 || avg < 10 {
		t.Errorf("mean scan %.1f rows, want about %d (uniform 1..%d)", avg, ycsbMaxScan/2, ycsbMaxScan)
	}
}

// engineCall is one Get or Put seen by recordingEngine.
type engineCall struct {
	put bool
	key string
}

// recordingEngine logs the keys of an engine's Gets and Puts in order.
type recordingEngine struct {
	Engine
	mu    sync.Mutex
	calls []engineCall
}

func (e *recordingEngine) Get(key, dst []byte) ([]byte, bool, error) {
	e.log(false, key)
	return e.Engine.Get(key, dst)
}

func (e *recordingEngine) Put(key, value []byte) error {
	e.log(true, key)
	return e.Engine.Put(key, value)
}

func (e *recordingEngine) log(put bool, key []byte) {
	e.mu.Lock()
	e.calls = append(e.calls, engineCall{put, string(key)})
	e.mu.Unlock()
}

// recordYCSB runs workload w on one thread against a recording Mayfly and
// returns the engine calls of its transactions (after the load).
func recordYCSB(t *testing.T, w string) (load, run []engineCall, res Result) {
	t.Helper()
	p := tinyYCSBParams(1)
	inner, err := NewEngine("mayfly")
	if err != nil {
		t.Fatal(err)
	}
	if err := inner.Open(t.TempDir(), p.CacheBytes, p.Bloom); err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	e := &recordingEngine{Engine: inner}
	r := &runner{e: e, p: optInParams(w, p), rng: rand.New(rand.NewPCG(1, 2))}
	res.Extra = map[string]float64{}
	if _, _, err := r.ycsb(w, &res); err != nil {
		t.Fatal(err)
	}
	return e.calls[:p.Num], e.calls[p.Num:], res
}

func TestYCSBReadModifyWriteReadsFirst(t *testing.T) {
	_, run, res := recordYCSB(t, "ycsb_f")
	writes := 0
	for i, c := range run {
		if !c.put {
			continue
		}
		writes++
		if i == 0 || run[i-1].put || run[i-1].key != c.key {
			t.Fatalf("write %d of %q not right after a read of it (previous call %+v)", i, c.key, run[max(i-1, 0)])
		}
	}
	if writes == 0 || float64(writes) != res.Extra["rmw_ops"] {
		t.Errorf("%d writes, %v read-modify-writes", writes, res.Extra["rmw_ops"])
	}
}

func TestYCSBLatestReadsNewKeys(t *testing.T) {
	load, run, _ := recordYCSB(t, "ycsb_d")
	order := map[string]int{} // key -> insertion index
	for _, c := range load {
		order[c.key] = len(order)
	}
	var reads, recent, ofRun int
	for _, c := range run {
		if c.put {
			order[c.key] = len(order)
			continue
		}
		idx, ok := order[c.key]
		if !ok {
			t.Fatalf("read of %q, never inserted", c.key)
		}
		reads++
		if len(order)-1-idx < len(order)/10 {
			recent++ // among the newest tenth of the keys inserted so far
		}
		if idx >= len(load) {
			ofRun++
		}
	}
	// Uniform reads would put a tenth among the newest tenth.
	if reads == 0 || float64(recent) < 0.5*float64(reads) || ofRun == 0 {
		t.Errorf("%d reads: %d of the newest tenth of keys, %d of keys inserted by the run", reads, recent, ofRun)
	}
}
