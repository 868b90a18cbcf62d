package bench

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Workloads in report order. "load" builds the read fixture and is not
// reported; "fdatasync" is the disk reference (engine "disk").
var Workloads = []string{
	"fillseq", "fillrandom", "overwrite", "fillbatch", "fillsync",
	"readrandom_warm", "readrandom_cold", "readmissing", "readseq", "seekrandom",
	"readwhilewriting", "ttlchurn",
}

// NeedsFixture reports whether a workload starts from the loaded database
// (read-only use), and NeedsCopy whether it writes into a copy of it.
func NeedsFixture(w string) bool {
	switch w {
	case "readrandom_warm", "readrandom_cold", "readmissing", "readseq", "seekrandom":
		return true
	}
	return false
}

func NeedsCopy(w string) bool {
	return w == "overwrite" || w == "readwhilewriting" || IsRateWorkload(w)
}

// Params are the workload sizes and the shared engine configuration.
type Params struct {
	Num        int           // keys in the key space (and fill ops)
	ValueSize  int           // value bytes
	Reads      int           // ops of the read workloads
	Seeks      int           // ops of seekrandom
	SyncOps    int           // ops of fillsync and of the fdatasync reference
	BatchSize  int           // rows per batch in fillbatch
	TTL        time.Duration // row TTL in ttlchurn
	Churn      time.Duration // ttlchurn duration (real time)
	CacheBytes int64
	Bloom      int
	// The TTL-operation workloads (workloads_ttl.go): the number of
	// sessions preloaded by session, the keys of expirebytes, and the
	// threads of session, idempotency, onetime and touchwal. Their ops are
	// Reads, but for touchwal's.
	Sessions   int
	ExpireKeys int
	Threads    int
	TouchOps   int // ops of touchwal; Reads if 0
	// Counters is the number of counters of the counter workloads
	// (workloads_counter.go); 10,000 if 0.
	Counters   int
	CPUProfile string // path; profiles the timed phase only
	MemProfile string // path; heap profile taken at the end of the timed phase
	// PeakHeapProfile is a path; the heap profile of the collection with
	// the most live heap during the timed phase (see peakHeapProfiler).
	PeakHeapProfile string
	// RefNoGrowing skips the fdatasync reference's growing-file figure
	// (the compare command measures it once per engine and repetition).
	RefNoGrowing bool
	// YCSBOps are the transactions of ycsb_a..f (Reads if 0); FillBytes
	// caps the user bytes of a value-size sweep fill (workloads_ycsb.go).
	YCSBOps   int
	FillBytes int64

	// TTLScale configures the ttlscale workload (workloads_ttlscale.go).
	TTLScale TTLScaleParams

	// RateDuration is the reader's run time in the rate-limited
	// readwhilewriting workloads (workloads_rwrate.go); 10 s if 0.
	RateDuration time.Duration
}

// Sample is one ttlchurn observation.
type Sample struct {
	T         float64 `json:"t"`          // seconds since start
	DiskBytes int64   `json:"disk_bytes"` // bytes allocated by the DB directory
	LiveBytes int64   `json:"live_bytes"` // logical bytes of rows not yet expired
	// TableBytes is the engine's table bytes alone (windowchurn).
	TableBytes int64 `json:"table_bytes,omitempty"`
	Puts       int64 `json:"puts"` // puts so far
}

// Result is one run of one workload on one engine.
type Result struct {
	Engine    string  `json:"engine"`
	Workload  string  `json:"workload"`
	Rep       int     `json:"rep"`
	Num       int     `json:"num"`
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MBPerSec  float64 `json:"mb_per_sec"` // user bytes (key+value) per second
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	Found     int64   `json:"found,omitempty"`
	DiskBytes int64   `json:"disk_bytes"`
	// WriteAmp is the engine's own figure (SSTable bytes written by flushes
	// and compactions per byte flushed), 0 where the engine has none.
	WriteAmp float64 `json:"write_amp,omitempty"`
	// IOWriteAmp is /proc/self/io write_bytes (everything the process made
	// the kernel write: WAL, tables, value log) over user bytes written,
	// measured after Close.
	IOWriteAmp float64 `json:"io_write_amp,omitempty"`
	PeakRSS    int64   `json:"peak_rss_bytes"`
	// ttlchurn
	SpaceAmp  float64            `json:"space_amp,omitempty"`
	Samples   []Sample           `json:"samples,omitempty"`
	TTLScale  []TTLScaleSample   `json:"ttlscale_samples,omitempty"`
	Extra     map[string]float64 `json:"extra,omitempty"`
	CacheMiB  int64              `json:"cache_mib"`
	BloomBits int                `json:"bloom_bits"`
	ValueSize int                `json:"value_size"`
	Error     string             `json:"error,omitempty"`
	// fdatasync reference runs taken next to a fillsync run: the engine
	// whose run they bracket and "before" or "after". Empty in results
	// files from before adjacent references (one reference per repetition).
	RefFor  string `json:"ref_for,omitempty"`
	RefWhen string `json:"ref_when,omitempty"`
}

// RunWorker runs one workload on one engine in dir (already prepared by
// the caller: empty, the fixture, or a copy of it) and returns its result.
func RunWorker(engine, workload, dir string, p Params) (res Result, err error) {
	p = optInParams(workload, p)
	res = Result{Engine: engine, Workload: workload, Num: p.Num, CacheMiB: p.CacheBytes >> 20,
		BloomBits: p.Bloom, ValueSize: p.ValueSize}
	if workload == "fdatasync" {
		return fdatasyncRef(dir, p, res)
	}
	e, err := NewEngine(engine)
	if err != nil {
		return res, err
	}
	ts := prepareTTLScale(workload, e, p)
	if err := e.Open(dir, p.CacheBytes, p.Bloom); err != nil {
		return res, fmt.Errorf("open: %w", err)
	}
	r := &runner{e: e, p: p, vals: NewValueGen(p.ValueSize), rng: rand.New(rand.NewPCG(7, uint64(len(workload))))}
	var ops int64
	var elapsed time.Duration
	io0 := readIO()
	switch workload {
	case "load":
		perm := NewPerm(uint64(p.Num), 1)
		ops, elapsed, err = r.fill(func(i int) uint64 { return perm.At(uint64(i)) }, p.Num)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			err = e.Settle(ctx)
			cancel()
		}
	case "fillseq":
		ops, elapsed, err = r.timed(p.Num, func(i int) error { return e.Put(r.key(uint64(i)), r.vals.Next()) })
	case "fillrandom":
		perm := NewPerm(uint64(p.Num), 1)
		ops, elapsed, err = r.timed(p.Num, func(i int) error { return e.Put(r.key(perm.At(uint64(i))), r.vals.Next()) })
	case "overwrite":
		ops, elapsed, err = r.timed(p.Num, func(int) error { return e.Put(r.key(r.randKey()), r.vals.Next()) })
	case "fillbatch":
		ops, elapsed, err = r.fillBatch()
	case "fillsync":
		perm := NewPerm(uint64(p.Num), 3)
		ops, elapsed, err = r.timed(p.SyncOps, func(i int) error { return e.SyncPut(r.key(perm.At(uint64(i))), r.vals.Next()) })
	case "readrandom_warm":
		if _, _, err = r.reads(false); err == nil { // warm-up pass, untimed
			r.hist = Hist{}
			r.found = 0
			ops, elapsed, err = r.reads(false)
		}
	case "readrandom_cold":
		ops, elapsed, err = r.reads(false)
	case "readmissing":
		ops, elapsed, err = r.reads(true)
	case "readseq":
		ops, elapsed, err = r.readSeq()
	case "seekrandom":
		ops, elapsed, err = r.seekRandom()
	case "readwhilewriting":
		ops, elapsed, err = r.readWhileWriting(&res)
	case "ttlchurn":
		ops, elapsed, err = r.ttlChurn(&res)
	case "ttlscale":
		ops, elapsed, err = r.ttlScale(ts, &res)
	case "session", "idempotency", "onetime", "touchwal", "expirebytes":
		ops, elapsed, err = r.ttlWorkload(workload, &res)
	case "counter", "counteradd", "counterread", "windowchurn":
		ops, elapsed, err = r.counterWorkload(workload, &res)
	default:
		if rate, ok := WriteRateOf(workload); ok {
			ops, elapsed, err = r.readWhileWritingAt(rate, &res)
		} else {
			ops, elapsed, err = r.optIn(workload, &res)
		}
	}
	io1 := readIO()
	if err != nil {
		e.Close()
		return res, err
	}
	stats := e.Stats()
	if err := e.Close(); err != nil {
		return res, fmt.Errorf("close: %w", err)
	}
	res.Ops = ops
	res.Seconds = elapsed.Seconds()
	res.OpsPerSec = float64(ops) / elapsed.Seconds()
	res.MBPerSec = float64(ops) * float64(KeySize+p.ValueSize) / elapsed.Seconds() / 1e6
	if r.hist.Count() > 0 {
		res.P50us = float64(r.hist.Quantile(0.50)) / 1e3
		res.P99us = float64(r.hist.Quantile(0.99)) / 1e3
	}
	res.Found = r.found
	res.DiskBytes = DirBytes(dir)
	res.WriteAmp = stats["write_amp"]
	delete(stats, "write_amp")
	if res.Extra == nil {
		res.Extra = map[string]float64{}
	}
	for k, v := range stats {
		res.Extra[k] = v
	}
	if isWrite(workload) {
		if wb := ioWriteBytes(); wb > 0 && r.written > 0 {
			res.IOWriteAmp = float64(wb) / float64(r.written)
		}
	}
	res.PeakRSS = peakRSS()
	res.Extra["loadavg1"] = loadAvg()
	io1.sub(io0).addTo(res.Extra)
	if r.cpu > 0 && ops > 0 {
		// CPU per op of the timed loop, all of the process's threads:
		// it moves much less with the machine's load than ops/s does.
		res.Extra["cpu_us_per_op"] = float64(r.cpu.Microseconds()) / float64(ops)
	}
	return res, nil
}

// processCPU returns the user+system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAvg returns the 1-minute load average (the machine is shared).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func isWrite(w string) bool {
	switch w {
	case "fillseq", "fillrandom", "overwrite", "fillbatch", "fillsync", "ttlchurn", "load", "ycsb_load":
		return true
	}
	if _, ok := SweepSize(w); ok {
		return true
	}
	return false
}

type runner struct {
	e       Engine
	p       Params
	vals    *ValueGen
	rng     *rand.Rand
	keyBuf  [KeySize]byte
	hist    Hist
	found   int64
	written int64         // user bytes written
	cpu     time.Duration // process CPU (user+system) of the last timed loop
}

func (r *runner) key(i uint64) []byte { return PutKey(r.keyBuf[:], i) }
func (r *runner) randKey() uint64     { return r.rng.Uint64N(uint64(r.p.Num)) }

// profile starts the CPU profile if one was asked for; the returned func stops it.
func (r *runner) profile() func() {
	var peak *peakHeapProfiler
	if r.p.PeakHeapProfile != "" {
		peak = startPeakHeap(r.p.PeakHeapProfile)
	}
	var cpu *os.File
	if r.p.CPUProfile != "" {
		if f, err := os.Create(r.p.CPUProfile); err == nil {
			cpu = f
			pprof.StartCPUProfile(f)
		}
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if peak != nil {
			peak.Stop()
		}
		r.heapProfile()
	}
}

func (r *runner) heapProfile() {
	if r.p.MemProfile == "" {
		return
	}
	if f, err := os.Create(r.p.MemProfile); err == nil {
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
}

// timed runs op n times, timing each.
func (r *runner) timed(n int, op func(i int) error) (int64, time.Duration, error) {
	stop := r.profile()
	defer stop()
	cpu0 := processCPU()
	start := time.Now()
	last := start
	for i := 0; i < n; i++ {
		if err := op(i); err != nil {
			return int64(i), time.Since(start), err
		}
		now := time.Now()
		r.hist.Record(now.Sub(last))
		last = now
	}
	r.cpu = processCPU() - cpu0
	r.written += int64(n) * int64(KeySize+r.p.ValueSize)
	return int64(n), time.Since(start), nil
}

func (r *runner) fill(key func(i int) uint64, n int) (int64, time.Duration, error) {
	return r.timed(n, func(i int) error { return r.e.Put(r.key(key(i)), r.vals.Next()) })
}

func (r *runner) fillBatch() (int64, time.Duration, error) {
	bs := r.p.BatchSize
	keys := make([][]byte, bs)
	for i := range keys {
		keys[i] = make([]byte, KeySize)
	}
	vals := make([][]byte, bs)
	nb := r.p.Num / bs
	_, d, err := r.timed(nb, func(b int) error {
		for j := 0; j < bs; j++ {
			PutKey(keys[j], uint64(b*bs+j))
			vals[j] = r.vals.Next()
		}
		return r.e.Batch(keys, vals)
	})
	r.written = int64(nb*bs) * int64(KeySize+r.p.ValueSize)
	return int64(nb * bs), d, err
}

func (r *runner) reads(missing bool) (int64, time.Duration, error) {
	dst := make([]byte, 0, 4096)
	n := r.p.Reads
	ops, d, err := r.timed(n, func(int) error {
		i := r.randKey()
		k := r.key(i)
		if missing {
			k = PutMissingKey(r.keyBuf[:], i)
		}
		v, ok, err := r.e.Get(k, dst[:0])
		if ok {
			r.found++
			if len(v) != r.p.ValueSize {
				return fmt.Errorf("value of %q has %d bytes", k, len(v))
			}
		}
		return err
	})
	r.written = 0
	if err == nil && !missing && r.found != int64(n) {
		err = fmt.Errorf("readrandom found %d of %d keys", r.found, n)
	}
	if err == nil && missing && r.found != 0 {
		err = fmt.Errorf("readmissing found %d keys", r.found)
	}
	return ops, d, err
}

func (r *runner) readSeq() (int64, time.Duration, error) {
	stop := r.profile()
	defer stop()
	start := time.Now()
	it, err := r.e.NewIter()
	if err != nil {
		return 0, 0, err
	}
	var n, bytes int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
		bytes += int64(len(it.Key()) + len(it.Value()))
	}
	if err := it.Close(); err != nil {
		return n, 0, err
	}
	d := time.Since(start)
	r.found = n
	if n != int64(r.p.Num) {
		return n, d, fmt.Errorf("readseq saw %d keys, want %d", n, r.p.Num)
	}
	return n, d, nil
}

func (r *runner) seekRandom() (int64, time.Duration, error) {
	it, err := r.e.NewIter()
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	var sink int
	ops, d, err := r.timed(r.p.Seeks, func(int) error {
		if it.SeekGE(r.key(r.randKey())) {
			r.found++
			sink += len(it.Key()) + len(it.Value())
		}
		return nil
	})
	if err == nil && r.found != int64(r.p.Seeks) {
		err = fmt.Errorf("seekrandom found %d of %d", r.found, r.p.Seeks)
	}
	return ops, d, err
}

// readWhileWriting: one reader doing random Gets (timed, reported) while
// one writer overwrites random keys as fast as it can.
func (r *runner) readWhileWriting(res *Result) (int64, time.Duration, error) {
	var stop atomic.Bool
	var writes atomic.Int64
	var werr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		vals := NewValueGen(r.p.ValueSize)
		rng := rand.New(rand.NewPCG(99, 98))
		kb := make([]byte, KeySize)
		for !stop.Load() {
			if err := r.e.Put(PutKey(kb, rng.Uint64N(uint64(r.p.Num))), vals.Next()); err != nil {
				werr = err
				return
			}
			writes.Add(1)
		}
	}()
	start := time.Now()
	ops, d, err := r.reads(false)
	stop.Store(true)
	wg.Wait()
	if err == nil {
		err = werr
	}
	res.Extra = map[string]float64{"writer_ops_per_sec": float64(writes.Load()) / time.Since(start).Seconds()}
	return ops, d, err
}

// ttlChurn writes write-once keys (random order: a hash of a counter) with
// TTL p.TTL for p.Churn of real time, sampling disk bytes every second.
func (r *runner) ttlChurn(res *Result) (int64, time.Duration, error) {
	rowBytes := int64(KeySize + r.p.ValueSize)
	var puts atomic.Int64
	done := make(chan struct{})
	var samples []Sample
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		history := []Sample{{T: 0, Puts: 0}} // the start, for interpolation
		for {
			select {
			case <-done:
				samples = history[1:]
				return
			case <-tk.C:
				n := puts.Load()
				t := time.Since(start).Seconds() // when n was read
				s := Sample{T: t, Puts: n, DiskBytes: DirBytes(dirOf(r.e))}
				// live = puts within the last TTL: n minus the puts
				// completed one TTL ago, interpolated between the two
				// samples around that moment (ticks jitter, so "the last
				// sample at or before t-TTL" can be one TTL plus a second
				// ago and overstate live bytes by a second of writes).
				s.LiveBytes = (n - putsAt(history, t-r.p.TTL.Seconds())) * rowBytes
				history = append(history, s)
				if bg, ok := r.e.(*badgerEngine); ok && int(t)%10 == 0 {
					go bg.ValueLogGC() // as a Badger application must
				}
			}
		}
	}()
	stopProf := r.profile()
	kb := make([]byte, KeySize)
	var i uint64
	var err error
	deadline := start.Add(r.p.Churn)
	for {
		if i%256 == 0 && time.Now().After(deadline) {
			break
		}
		t0 := time.Now()
		binaryKey(kb, splitmix64(i))
		if err = r.e.PutTTL(kb, r.vals.Next(), r.p.TTL); err != nil {
			break
		}
		r.hist.Record(time.Since(t0))
		i++
		puts.Store(int64(i))
	}
	d := time.Since(start)
	stopProf()
	close(done)
	wg.Wait()
	r.written = int64(i) * rowBytes
	res.Samples = samples
	// Steady state: from three TTL periods in to the end.
	var disk, live float64
	var cnt int
	for _, s := range samples {
		if s.T >= 3*r.p.TTL.Seconds() {
			disk += float64(s.DiskBytes)
			live += float64(s.LiveBytes)
			cnt++
		}
	}
	if cnt > 0 && live > 0 {
		res.SpaceAmp = disk / live
		res.Extra = map[string]float64{"steady_disk_bytes": disk / float64(cnt), "steady_live_bytes": live / float64(cnt)}
	}
	return int64(i), d, err
}

// putsAt returns the number of puts completed at time t (seconds from the
// start), interpolated linearly between the samples of history (in time
// order, starting at {0, 0}) around t; 0 before the start, the last sample's
// count after it.
func putsAt(history []Sample, t float64) int64 {
	if t <= 0 {
		return 0
	}
	for i := 1; i < len(history); i++ {
		a, b := history[i-1], history[i]
		if t <= b.T {
			if b.T <= a.T {
				return b.Puts
			}
			f := (t - a.T) / (b.T - a.T)
			return a.Puts + int64(f*float64(b.Puts-a.Puts))
		}
	}
	return history[len(history)-1].Puts
}

// binaryKey writes a 16-byte key from a 64-bit hash: 16 hex digits.
func binaryKey(dst []byte, h uint64) {
	const hex = "0123456789abcdef"
	for p := KeySize - 1; p >= 0; p-- {
		dst[p] = hex[h&15]
		h >>= 4
	}
}

func dirOf(e Engine) string {
	switch e := e.(type) {
	case *mayflyEngine:
		return e.dir
	case *pebbleEngine:
		return e.dir
	case *badgerEngine:
		return e.dir
	case *leveldbEngine:
		return e.dir
	}
	return ""
}

// peakRSS returns VmHWM from /proc/self/status, in bytes.
func peakRSS() int64 { return procField("/proc/self/status", "VmHWM:") * 1024 }

// ioWriteBytes returns write_bytes from /proc/self/io.
func ioWriteBytes() int64 { return procField("/proc/self/io", "write_bytes:") }

func procField(path, name string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			fs := strings.Fields(rest)
			if len(fs) > 0 {
				n, _ := strconv.ParseInt(fs[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
