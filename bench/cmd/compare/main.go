// Command compare runs the Mayfly/Pebble/Badger/goleveldb comparison: every
// engine+workload in its own process (this binary re-executed with
// -worker), repeated -reps times, and writes JSON lines, a markdown report
// and PNG charts. With -from it rebuilds the report and charts from an
// earlier run's JSON lines without running anything.
//
//	cd bench && go run ./cmd/compare -num 1000000 -reps 3
//	cd bench && go run ./cmd/compare -from results/results-X.jsonl -num 1000000 -reps 3 ...
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mayflydb/mayfly/bench"
)

var (
	num       = flag.Int("num", 1_000_000, "keys in the key space / ops of the fill workloads")
	reps      = flag.Int("reps", 3, "repetitions of every engine+workload")
	valueSize = flag.Int("value", 100, "value size in bytes")
	reads     = flag.Int("reads", 0, "ops of the read workloads (default -num)")
	seeks     = flag.Int("seeks", 0, "ops of seekrandom (default -num/10)")
	syncOps   = flag.Int("syncops", 20_000, "ops of fillsync and of the fdatasync reference")
	batchSize = flag.Int("batch", 100, "rows per batch in fillbatch")
	ttl       = flag.Duration("ttl", 5*time.Second, "row TTL in ttlchurn")
	churn     = flag.Duration("churn", 60*time.Second, "real-time duration of ttlchurn and windowchurn")
	sessions  = flag.Int("sessions", 100_000, "sessions preloaded by the session workload")
	counters  = flag.Int("counters", 10_000, "counters of the counter, counteradd, counterread and windowchurn workloads")
	expKeys   = flag.Int("expirekeys", 50_000, "1 KiB keys of the expirebytes workload")
	touchOps  = flag.Int("touchops", 0, "ops of touchwal (default -reads)")
	threads   = flag.Int("threads", 4, "threads of session, idempotency, onetime and touchwal (whose ops are -reads) and of the ycsb_* workloads")
	ycsbOps   = flag.Int("ycsbops", 500_000, "transactions of ycsb_a..ycsb_f (their records are -num)")
	fillBytes = flag.Int64("fillbytes", 1<<30, "user bytes at most per value-size sweep fill (its keys: min(-num, this / row size))")
	valSizes  = flag.String("valuesizes", "", "value sizes of the fillrandom value-size sweep, e.g. 100,1024,4096,65536 (adds workloads fillrandom_v<size>)")
	cacheMiB  = flag.Int64("cache", 64, "block cache budget for every engine, MiB")
	bloom     = flag.Int("bloom", 10, "bloom filter bits per key for every engine")
	engines   = flag.String("engines", strings.Join(bench.Engines, ","), "engines to run")
	workloads = flag.String("workloads", strings.Join(bench.Workloads, ","), "workloads to run")
	workdir   = flag.String("workdir", os.TempDir(), "directory in which each run makes its own scratch directory for databases, removed at the end (same disk as the report)")
	results   = flag.String("results", "results", "directory for the JSON lines file")
	doc       = flag.String("doc", "../docs/benchmarks-comparison.md", "markdown report to write ('' for none)")
	imgDir    = flag.String("img", "../docs/img", "directory for the PNG charts")
	profile   = flag.String("profile", "", "if set: one extra, unreported pass writing CPU profiles of the timed phase to this directory (with -scale: the reported runs are profiled, one file per size, engine and workload)")
	noFsync   = flag.Bool("nofsyncref", false, "skip the fdatasync reference (otherwise measured right before and after every fillsync run)")
	from      = flag.String("from", "", "rebuild the report and charts from this JSON lines file instead of running (pass the original run's flags too)")
	totalFlag = flag.Duration("total", 0, "with -from: the original run's wall time, for the report")
	fromHost  = flag.String("machine", "", "with -from: the machine the results were measured on, for the report (default: this machine, named as the one that rebuilt it)")
	fromRev   = flag.String("commit", "", "with -from: the Mayfly commit the results were measured at, for the report")

	worker  = flag.Bool("worker", false, "internal: run one engine+workload and print its result")
	wEngine = flag.String("engine", "", "internal: worker engine")
	wLoad   = flag.String("workload", "", "internal: worker workload")
	wDir    = flag.String("dir", "", "internal: worker database directory")
	wRep    = flag.Int("rep", 0, "internal: repetition number")
	wNoGrow = flag.Bool("refnogrow", false, "internal: fdatasync reference without the growing-file figure")
	cpuProf = flag.String("cpuprofile", "", "worker: write a CPU profile of the timed phase")
	memProf = flag.String("memprofile", "", "worker: write a heap profile at the end of the timed phase")
	peakMem = flag.String("peakheap", "", "worker: write the heap profile of the collection with the most live heap in the timed phase")
)

func params() bench.Params {
	p := bench.Params{Num: *num, ValueSize: *valueSize, Reads: *reads, Seeks: *seeks, SyncOps: *syncOps,
		BatchSize: *batchSize, TTL: *ttl, Churn: *churn, CacheBytes: *cacheMiB << 20, Bloom: *bloom,
		Sessions: *sessions, ExpireKeys: *expKeys, Threads: *threads, TouchOps: *touchOps, Counters: *counters, YCSBOps: *ycsbOps, FillBytes: *fillBytes,
		CPUProfile: *cpuProf, MemProfile: *memProf, PeakHeapProfile: *peakMem, RefNoGrowing: *wNoGrow,
		RateDuration: *rwTime, TTLScale: ttlScaleParams()}
	if p.Reads <= 0 {
		p.Reads = p.Num
	}
	if p.Seeks <= 0 {
		p.Seeks = max(p.Num/10, 1)
	}
	return p
}

// createResults creates this run's results file in -results, named by the
// time it starts.
func createResults() (string, *os.File, error) {
	if err := os.MkdirAll(*results, 0o755); err != nil {
		return "", nil, err
	}
	path := filepath.Join(*results, "results-"+time.Now().UTC().Format("20060102T150405Z")+".jsonl")
	f, err := os.Create(path)
	return path, f, err
}

// makeScratch points *workdir at a new directory of its own inside it, so
// that runs started side by side never share (or remove) each other's
// databases, and returns the function that removes it.
func makeScratch() (func(), error) {
	if err := os.MkdirAll(*workdir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(*workdir, "mayfly-bench-")
	if err != nil {
		return nil, err
	}
	*workdir = dir
	return func() { os.RemoveAll(dir) }, nil
}

func main() {
	flag.Parse()
	if *worker {
		if *peakMem != "" {
			// Sample every 4 KiB allocated rather than every 512 KiB, so the
			// peak profile's small entries are figures, not guesses.
			runtime.MemProfileRate = 4096
		}
		if err := joinCgroup(*wCgroup); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		res, err := bench.RunWorker(*wEngine, *wLoad, *wDir, params())
		res.Rep = *wRep
		if err != nil {
			res.Error = err.Error()
		}
		b, _ := json.Marshal(res)
		fmt.Printf("RESULT %s\n", b)
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		return
	}
	if err := applyWriteRates(); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	if *scaleNs != "" {
		if err := runScale(); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		return
	}
	if *from != "" {
		if err := rebuild(); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		return
	}
	if err := orchestrate(); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// runWorker re-executes this binary for one engine+workload, passing extra
// worker flags after the shared ones.
func runWorker(engine, workload, dir string, rep int, prof string, extra ...string) (bench.Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return bench.Result{}, err
	}
	args := []string{"-worker", "-engine", engine, "-workload", workload, "-dir", dir, "-rep", fmt.Sprint(rep)}
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "num", "value", "reads", "seeks", "syncops", "batch", "ttl", "churn", "cache", "bloom",
			"sessions", "expirekeys", "threads", "touchops", "ycsbops", "fillbytes", "rwtime", "counters":
			args = append(args, "-"+f.Name+"="+f.Value.String())
		default:
			if strings.HasPrefix(f.Name, "ttlscale-") {
				args = append(args, "-"+f.Name+"="+f.Value.String())
			}
		}
	})
	args = append(args, extra...)
	if prof != "" {
		args = append(args, "-cpuprofile", prof, "-memprofile", strings.TrimSuffix(prof, ".pprof")+".heap.pprof")
	}
	ctx, cancel := context.WithTimeout(context.Background(), workerTimeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	runErr := cmd.Run()
	var res bench.Result
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	got := false
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				return res, err
			}
			got = true
		}
	}
	if runErr != nil {
		if res.Error != "" {
			return res, fmt.Errorf("%s/%s: %s", engine, workload, res.Error)
		}
		return res, fmt.Errorf("%s/%s: %w", engine, workload, runErr)
	}
	if !got {
		return res, fmt.Errorf("%s/%s: no result", engine, workload)
	}
	return res, nil
}

func orchestrate() error {
	engs := strings.Split(*engines, ",")
	wls, err := workloadList()
	if err != nil {
		return err
	}
	p := params()
	cleanup, err := makeScratch()
	if err != nil {
		return err
	}
	defer cleanup()
	began := time.Now()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "[%6.0fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, a...))
	}

	needFixture := false
	for _, w := range wls {
		needFixture = needFixture || bench.NeedsFixture(w) || bench.NeedsCopy(w)
	}
	fixture := func(e string) string { return filepath.Join(*workdir, "fixture-"+e) }
	if needFixture {
		for _, e := range engs {
			r, err := runWorker(e, "load", fixture(e), 0, "")
			if err != nil {
				return err
			}
			logf("fixture %-9s %d keys loaded+settled in %.1fs, %.1f MB on disk", e, p.Num, r.Seconds, float64(r.DiskBytes)/1e6)
		}
	}

	var all []bench.Result
	runOne := func(e, w string, rep int, prof string) (bench.Result, error) {
		dir := filepath.Join(*workdir, fmt.Sprintf("%s-%s-%d", e, w, rep))
		switch {
		case bench.NeedsFixture(w):
			dir = fixture(e)
		case bench.NeedsCopy(w):
			if err := copyDir(fixture(e), dir); err != nil {
				return bench.Result{}, err
			}
		}
		r, err := runWorker(e, w, dir, rep, prof)
		if dir != fixture(e) {
			os.RemoveAll(dir)
		}
		return r, err
	}

	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			return err
		}
		for _, w := range wls {
			for _, e := range engs {
				if !bench.Supports(e, w) {
					continue
				}
				prof, _ := filepath.Abs(filepath.Join(*profile, e+"-"+w+".pprof"))
				r, err := runOne(e, w, 0, prof)
				if err != nil {
					return err
				}
				logf("profile %-16s %-9s %12.0f ops/s -> %s", w, e, r.OpsPerSec, prof)
			}
		}
		return nil
	}

	jsonPath, jf, err := createResults()
	if err != nil {
		return err
	}
	defer jf.Close()
	emit := func(r bench.Result) {
		all = append(all, r)
		b, _ := json.Marshal(r)
		jf.Write(append(b, '\n'))
	}
	// ref measures the disk's synced write rate next to engine e's
	// fillsync run, in a sibling of its directory (same file system).
	ref := func(e string, rep int, when string) (bench.Result, error) {
		var extra []string
		if when == "after" {
			extra = []string{"-refnogrow"} // once per engine+rep is enough
		}
		r, err := runWorker("disk", "fdatasync", filepath.Join(*workdir, fmt.Sprintf("fdatasync-%s-%d-%s", e, rep, when)), rep, "", extra...)
		if err != nil {
			return r, err
		}
		r.RefFor, r.RefWhen = e, when
		emit(r)
		grow := ""
		if g, ok := r.Extra["growing_file_ops_per_sec"]; ok {
			grow = fmt.Sprintf("; growing file %.0f ops/s", g)
		}
		logf("rep %d fdatasync %-6s %-9s %8.0f ops/s (4 KiB, preallocated)%s", rep, when, e, r.OpsPerSec, grow)
		return r, nil
	}
	for rep := 1; rep <= *reps; rep++ {
		for _, w := range wls {
			for _, e := range engs {
				if !bench.Supports(e, w) {
					continue
				}
				adjacent := w == "fillsync" && !*noFsync
				var before bench.Result
				if adjacent {
					if before, err = ref(e, rep, "before"); err != nil {
						return err
					}
				}
				r, err := runOne(e, w, rep, "")
				if err != nil {
					return err
				}
				if adjacent {
					after, err := ref(e, rep, "after")
					if err != nil {
						return err
					}
					setShare(&r, before, after)
					logf("rep %d fillsync %-9s %.0f%% of the adjacent fdatasync reference (%.0f ops/s)",
						rep, e, 100*r.Extra["fdatasync_share"], r.Extra["fdatasync_ref_ops_per_sec"])
				}
				emit(r)
				extra := ""
				if w == "ttlchurn" {
					extra = fmt.Sprintf(" space amp %.2f", r.SpaceAmp)
				}
				extra += ttlLogExtra(r) + bench.YCSBLogExtra(r) + rateLogExtra(r) + ttlScaleLogExtra(r)
				logf("rep %d %-16s %-9s %12.0f ops/s p50 %7.1fµs p99 %8.1fµs disk %7.1f MB rss %6.1f MB%s",
					rep, w, e, r.OpsPerSec, r.P50us, r.P99us, float64(r.DiskBytes)/1e6, float64(r.PeakRSS)/1e6, extra)
			}
		}
	}
	total := time.Since(began)
	logf("all runs done in %s; results in %s", total.Round(time.Second), jsonPath)

	return publish(all, engs, wls, p, total, jsonPath)
}

// rebuild regenerates the report from an earlier run's JSON lines; it runs
// no benchmark.
func rebuild() error {
	b, err := os.ReadFile(*from)
	if err != nil {
		return err
	}
	all, err := parseResults(b)
	if err != nil {
		return fmt.Errorf("%s: %w", *from, err)
	}
	wls, err := workloadList()
	if err != nil {
		return err
	}
	return publish(all, strings.Split(*engines, ","), wls, params(), *totalFlag, *from)
}

// parseResults reads a results file: one bench.Result per non-blank line.
// An unreadable line is an error naming its line number.
func parseResults(b []byte) ([]bench.Result, error) {
	var all []bench.Result
	for i, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var r bench.Result
		if err := json.Unmarshal(l, &r); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		all = append(all, r)
	}
	if len(all) == 0 {
		return nil, errors.New("no results")
	}
	return all, nil
}

func publish(all []bench.Result, engs, wls []string, p bench.Params, total time.Duration, jsonPath string) error {
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	rep := buildReport(all, engs, wls, p, total, jsonPath)
	fmt.Println(rep.table)
	if *doc != "" {
		if err := os.MkdirAll(*imgDir, 0o755); err != nil {
			return err
		}
		charts, err := writeCharts(all, engs, wls, *imgDir)
		if err != nil {
			return err
		}
		md := rep.markdown(charts, *doc, *imgDir)
		if err := os.WriteFile(*doc, []byte(md), 0o644); err != nil {
			return err
		}
		logf("wrote %s and %d charts", *doc, len(charts))
	}
	return nil
}

// copyDir copies a database directory with cp, which keeps sparse files
// sparse (Badger maps large sparse files).
func copyDir(src, dst string) error {
	out, err := exec.Command("cp", "-a", "--sparse=always", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp %s: %v: %s", src, err, out)
	}
	return nil
}

func createFile(path string) (*os.File, error) { return os.Create(path) }
