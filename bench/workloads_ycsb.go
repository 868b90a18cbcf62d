package bench

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/go-ycsb/pkg/generator"
	"github.com/pingcap/go-ycsb/pkg/util"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// The YCSB core workloads (issue 21): YCSB's core workload op mix
// (site.ycsb.workloads.CoreWorkload and its workloads/workloada..f files)
// on go-ycsb's generators (pkg/generator; none of its database clients),
// on Params.Threads threads (4 if unset) against the Engine surface.
// go-ycsb's own core workload (pkg/workload) shares its generators between
// threads, which mutate them unsynchronized (the race detector finds it);
// here every thread has its own generators and only the insert key
// sequence is shared, behind a mutex.
//
//   - ycsb_load: insert Params.Num records (timed), in YCSB's hashed order.
//   - ycsb_a..ycsb_f: insert Params.Num records (untimed), Settle, then
//     Params.YCSBOps transactions (timed) with YCSB's mix for that workload
//     (ycsbMixes).
//
// A record is YCSB's: 10 fields of 100 bytes (cut from the harness's
// half-compressible values) under keys "user<FNV hash of the record
// number>". It is stored as one value per key (ycsbEncode), so a read, an
// update and an insert are each one engine call and a scan is one
// iterator. Updates write all fields (YCSB's writeallfields=true; its
// default updates one field, which on a one-value-per-key store is a
// read-modify-write of its own); reads read all fields (YCSB's default).
// Every read of a loaded or acknowledged key must find it: a miss fails
// the run.
//
// Latency is recorded per operation type (the engine call only) and per
// transaction (the timed Result.P50us/P99us); Result.Extra carries
// "<op>_ops", "<op>_p50_us", "<op>_p99_us" and "<op>_max_us" for op in
// read, update, insert, scan and rmw (F's read-modify-write, read and
// update together), and "write_max_us", the slowest single update or
// insert.

// YCSBWorkloads are the YCSB core workloads. They are not in Workloads (the
// run of record); ask for them with -workloads.
var YCSBWorkloads = []string{"ycsb_load", "ycsb_a", "ycsb_b", "ycsb_c", "ycsb_d", "ycsb_e", "ycsb_f"}

// IsYCSB reports whether w is one of YCSBWorkloads.
func IsYCSB(w string) bool { return slices.Contains(YCSBWorkloads, w) }

// YCSB record shape and scan length (uniform over 1..ycsbMaxScan).
const (
	ycsbFields      = 10
	ycsbFieldLength = 100
	ycsbMaxScan     = 100
)

// ycsbMix is one core workload's operation proportions and whether its
// keys are chosen by YCSB's "latest" distribution (else Zipfian, constant
// 0.99: go-ycsb's generator.ZipfianConstant).
type ycsbMix struct {
	read, update, insert, scan, rmw float64
	latest                          bool
}

// The YCSB operation codes, in Discrete's values.
const (
	ycsbRead int64 = iota
	ycsbUpdate
	ycsbInsert
	ycsbScan
	ycsbRMW
)

// ycsbMixes are YCSB's workloads/workloada..f.
var ycsbMixes = map[string]ycsbMix{
	"ycsb_a": {read: 0.5, update: 0.5},
	"ycsb_b": {read: 0.95, update: 0.05},
	"ycsb_c": {read: 1},
	"ycsb_d": {read: 0.95, insert: 0.05, latest: true},
	"ycsb_e": {scan: 0.95, insert: 0.05},
	"ycsb_f": {read: 0.5, rmw: 0.5},
}

// ycsbInserts is the insert key sequence the threads share: go-ycsb's
// acknowledged counter (a key becomes "latest" once its insert returned),
// whose state is not safe for concurrent use, behind a mutex.
type ycsbInserts struct {
	mu sync.Mutex
	c  *generator.AcknowledgedCounter
}

func (s *ycsbInserts) Next(r *rand.Rand) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Next(r)
}

// Last is the highest key number below which every insert is acknowledged.
func (s *ycsbInserts) Last() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Last()
}

func (s *ycsbInserts) ack(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.Acknowledge(n)
}

// ycsbClient is one thread's generators, as YCSB's CoreWorkload builds
// them from its properties.
type ycsbClient struct {
	r       *rand.Rand
	op      *generator.Discrete
	keys    ycsb.Generator
	scanLen *generator.Uniform
	inserts *ycsbInserts
	vals    *ValueGen
	fields  []string
	row     map[string][]byte
}

func newYCSBClient(mix ycsbMix, records, ops int64, inserts *ycsbInserts, seed int64) *ycsbClient {
	c := &ycsbClient{r: rand.New(rand.NewSource(seed)), op: generator.NewDiscrete(),
		scanLen: generator.NewUniform(1, ycsbMaxScan), inserts: inserts,
		vals: NewValueGen(ycsbFieldLength), row: make(map[string][]byte, ycsbFields)}
	for _, o := range []struct {
		w  float64
		op int64
	}{{mix.read, ycsbRead}, {mix.update, ycsbUpdate}, {mix.insert, ycsbInsert}, {mix.scan, ycsbScan}, {mix.rmw, ycsbRMW}} {
		if o.w > 0 {
			c.op.Add(o.w, o.op)
		}
	}
	if mix.latest {
		c.keys = generator.NewSkewedLatest(inserts)
	} else {
		// YCSB's key range for Zipfian requests: the loaded keys and
		// twice the inserts expected, so new keys are reachable.
		expectedNew := int64(float64(ops) * mix.insert * 2)
		c.keys = generator.NewScrambledZipfian(0, records-1+expectedNew, generator.ZipfianConstant)
	}
	for i := range ycsbFields {
		c.fields = append(c.fields, "field"+strconv.Itoa(i))
	}
	return c
}

// ycsbKey is YCSB's key of record n (insertorder=hashed, zeropadding=1).
func ycsbKey(n int64) string { return "user" + strconv.FormatInt(util.Hash64(n), 10) }

// values is a fresh record (valid until the next call).
func (c *ycsbClient) values() map[string][]byte {
	for _, f := range c.fields {
		c.row[f] = c.vals.Next()
	}
	return c.row
}

func (c *ycsbClient) insert(ctx context.Context, db ycsbDB) error {
	n := c.inserts.Next(c.r)
	defer c.inserts.ack(n) // as YCSB: acknowledged whatever the outcome
	return db.Insert(ctx, "", ycsbKey(n), c.values())
}

// transaction runs one operation chosen by the mix.
func (c *ycsbClient) transaction(ctx context.Context, db ycsbDB) error {
	op := c.op.Next(c.r)
	if op == ycsbInsert {
		return c.insert(ctx, db)
	}
	key := ycsbKey(c.keys.Next(c.r))
	switch op {
	case ycsbRead:
		_, err := db.Read(ctx, "", key, c.fields)
		return err
	case ycsbUpdate:
		return db.Update(ctx, "", key, c.values())
	case ycsbScan:
		_, err := db.Scan(ctx, "", key, int(c.scanLen.Next(c.r)), c.fields)
		return err
	}
	if _, err := db.Read(ctx, "", key, c.fields); err != nil {
		return err
	}
	return db.Update(ctx, "", key, c.values())
}

// ycsb runs workload w: the load (timed for ycsb_load, untimed and settled
// otherwise), then for ycsb_a..f the timed transactions.
func (r *runner) ycsb(w string, res *Result) (int64, time.Duration, error) {
	records, ops := int64(r.p.Num), int64(r.p.YCSBOps)
	if ops <= 0 {
		ops = int64(r.p.Reads)
	}
	mix := ycsbMixes[w]
	inserts := &ycsbInserts{c: generator.NewAcknowledgedCounter(records)}
	db := ycsbDB{r.e}
	var next atomic.Int64 // the next record number to load
	load := func(_ int, h *Hist, stop *atomic.Bool, ctx context.Context) (int, error) {
		vals, row := NewValueGen(ycsbFieldLength), make(map[string][]byte, ycsbFields)
		done := 0
		for n := next.Add(1) - 1; n < records; n = next.Add(1) - 1 {
			if done%256 == 0 && stop.Load() {
				break
			}
			for i := range ycsbFields {
				row["field"+strconv.Itoa(i)] = vals.Next()
			}
			t0 := time.Now()
			err := db.Insert(ctx, "", ycsbKey(n), row)
			h.Record(time.Since(t0))
			if err != nil {
				return done, err
			}
			done++
		}
		return done, nil
	}
	if w == "ycsb_load" {
		n, d, err := r.ycsbPhase(db, res, load)
		r.written = n * int64(ycsbRowBytes())
		return n, d, err
	}
	if _, _, err := r.ycsbPhase(db, nil, load); err != nil {
		return 0, 0, fmt.Errorf("load: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err := r.e.Settle(ctx)
	cancel()
	if err != nil {
		return 0, 0, fmt.Errorf("settle: %w", err)
	}
	r.hist = Hist{}
	n, d, err := r.ycsbPhase(db, res, func(t int, h *Hist, stop *atomic.Bool, ctx context.Context) (int, error) {
		c := newYCSBClient(mix, records, ops, inserts, int64(t)+1)
		th := threadOf(ctx)
		n := share(int(ops), r.threads(), t)
		for i := range n {
			if i%256 == 0 && stop.Load() {
				return i, nil
			}
			th.calls = th.calls[:0]
			t0 := time.Now()
			err := c.transaction(ctx, db)
			d := time.Since(t0)
			h.Record(d)
			if string(th.calls) == "rw" {
				th.record("rmw", d)
			}
			if err != nil {
				return i, err
			}
		}
		return n, nil
	})
	r.written = int64(res.Extra["update_ops"]+res.Extra["insert_ops"]) * int64(ycsbRowBytes())
	return n, d, err
}

// optInParams adjusts p for the opt-in workloads: a YCSB record's payload
// is its value size, and a value-size sweep fill sets its own value size
// and caps its keys at Params.FillBytes of user bytes.
func optInParams(w string, p Params) Params {
	if IsYCSB(w) {
		p.ValueSize = ycsbFields * ycsbFieldLength
	}
	if size, ok := SweepSize(w); ok {
		p.ValueSize = size
		if p.FillBytes > 0 {
			p.Num = int(max(1, min(int64(p.Num), p.FillBytes/int64(KeySize+size))))
		}
	}
	return p
}

// optIn runs the workloads that are not in Workloads: the YCSB core
// workloads and the value-size sweep fills.
func (r *runner) optIn(w string, res *Result) (int64, time.Duration, error) {
	if IsYCSB(w) {
		return r.ycsb(w, res)
	}
	if _, ok := SweepSize(w); ok {
		perm := NewPerm(uint64(r.p.Num), 1)
		return r.fill(func(i int) uint64 { return perm.At(uint64(i)) }, r.p.Num)
	}
	return 0, 0, fmt.Errorf("unknown workload %q", w)
}

// ycsbRowBytes is the stored size of a key and an encoded record, roughly
// (keys are "user" and up to 20 digits).
func ycsbRowBytes() int {
	return 24 + ycsbFields*(1+len("field0")+1+ycsbFieldLength)
}

// ycsbPhase runs body on the runner's threads, each with its go-ycsb
// thread context, and folds the per-operation latencies into res (nil: an
// untimed phase whose figures are dropped). It returns the operations
// done and the wall time.
func (r *runner) ycsbPhase(db ycsbDB, res *Result,
	body func(t int, h *Hist, stop *atomic.Bool, ctx context.Context) (int, error)) (int64, time.Duration, error) {
	threads := r.threads()
	states := make([]*ycsbThread, threads)
	done := make([]int64, threads)
	_, d, err := r.parallel(threads, func(t int, h *Hist, stop *atomic.Bool) error {
		ctx := db.InitThread(context.Background(), t, threads)
		defer db.CleanupThread(ctx)
		states[t] = threadOf(ctx)
		n, err := body(t, h, stop, ctx)
		done[t] = int64(n)
		return err
	})
	var n int64
	for _, x := range done {
		n += x
	}
	if res == nil {
		r.hist = Hist{}
		return n, d, err
	}
	all := map[string]*opHist{}
	var writeMax time.Duration
	var scanRows int64
	scanMax := 0
	for _, s := range states {
		if s == nil {
			continue
		}
		for op, o := range s.ops {
			if all[op] == nil {
				all[op] = &opHist{}
			}
			all[op].merge(o)
			if op == "update" || op == "insert" {
				writeMax = max(writeMax, o.max)
			}
		}
		scanRows += s.scanRows
		scanMax = max(scanMax, s.scanMax)
	}
	if res.Extra == nil {
		res.Extra = map[string]float64{}
	}
	for op, o := range all {
		res.Extra[op+"_ops"] = float64(o.h.Count())
		res.Extra[op+"_p50_us"] = us(o.h.Quantile(0.50))
		res.Extra[op+"_p99_us"] = us(o.h.Quantile(0.99))
		res.Extra[op+"_max_us"] = us(o.max)
	}
	if writeMax > 0 {
		res.Extra["write_max_us"] = us(writeMax)
	}
	if all["scan"] != nil {
		res.Extra["scan_rows"] = float64(scanRows)
		res.Extra["scan_rows_max"] = float64(scanMax)
	}
	res.Extra["records"] = float64(r.p.Num)
	return n, d, err
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// YCSBLogExtra formats a YCSB result's per-operation figures for a log line.
func YCSBLogExtra(x Result) string {
	var b strings.Builder
	for _, op := range ycsbOps {
		if x.Extra[op+"_ops"] > 0 {
			fmt.Fprintf(&b, " %s p99 %.0fµs max %.0fµs", op, x.Extra[op+"_p99_us"], x.Extra[op+"_max_us"])
		}
	}
	return b.String()
}
