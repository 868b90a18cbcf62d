package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/mayflydb/mayfly/bench"
)

// The scale curve (-scale N1,N2,...): for every size, repetition and
// engine, a worker loads N keys in fillrandom's order and lets compaction
// settle (reported as fillrandom: its ops/s are the load's timed phase,
// its write and space amplification are measured after the settle), then
// readrandom (cold), readmissing, seekrandom and readseq run on that
// database, each in its own worker after its files were dropped from the
// page cache (memlimit.go); the database is deleted before the next engine.
//
//	cd bench && go run ./cmd/compare -scale 1000000,10000000,50000000 -reps 1 -engines mayfly,pebble,badger
var (
	scaleNs      = flag.String("scale", "", "scale curve: comma-separated key counts, e.g. 1000000,10000000,50000000 (runs only the scale curve)")
	memLimitMiB  = flag.Int64("memlimit", 1024, "scale curve: memory cgroup limit of every worker, MiB (RSS + page cache); 0 = no cgroup")
	scaleReads   = flag.Int("scalereads", 1_000_000, "scale curve: reads per read workload at most (seekrandom: a tenth)")
	scaleTimeout = flag.Duration("scaletimeout", 4*time.Hour, "scale curve: time limit of one worker")
	scaleDoc     = flag.String("scaledoc", "../docs/benchmarks-scale.md", "scale curve: markdown report to write ('' for none)")

	wCgroup = flag.String("cgroup", "", "internal: memory cgroup directory the worker joins")
)

// scaleWorkloads are the scale curve's workloads in report order; "load"
// is reported as fillrandom, readrandom_cold as readrandom.
var scaleWorkloads = []string{"load", "readrandom_cold", "readmissing", "seekrandom", "readseq"}

func scaleLabel(w string) string {
	switch w {
	case "load":
		return "fillrandom"
	case "readrandom_cold":
		return "readrandom"
	}
	return w
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-scale: %q is not a positive key count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// scaleReadOps are the ops of the read workloads at n keys.
func scaleReadOps(n int) (reads, seeks int) {
	reads = min(n, *scaleReads)
	return reads, max(reads/10, 1)
}

func runScale() error {
	sizes, err := parseSizes(*scaleNs)
	if err != nil {
		return err
	}
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			return err
		}
	}
	engs := strings.Split(*engines, ",")
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		all, err := parseResults(b)
		if err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
		return publishScale(all, engs, sizes, *totalFlag, *from)
	}
	var cg *memCgroup
	if *memLimitMiB > 0 {
		if cg, err = newMemCgroup(*memLimitMiB << 20); err != nil {
			return fmt.Errorf("-memlimit %d: %w (run as root on cgroup v1, or pass -memlimit 0 to run with the page cache unbounded)", *memLimitMiB, err)
		}
		defer cg.remove()
	}
	cleanup, err := makeScratch()
	if err != nil {
		return err
	}
	defer cleanup()
	jsonPath, jf, err := createResults()
	if err != nil {
		return err
	}
	defer jf.Close()
	began := time.Now()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "[%6.0fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, a...))
	}
	logf("scale curve: %s", memoryMode(*memLimitMiB))
	var all []bench.Result
	for _, n := range sizes {
		reads, seeks := scaleReadOps(n)
		extra := []string{"-num=" + strconv.Itoa(n), "-reads=" + strconv.Itoa(reads), "-seeks=" + strconv.Itoa(seeks)}
		if cg != nil {
			extra = append(extra, "-cgroup="+cg.dir)
		}
		for rep := 1; rep <= *reps; rep++ {
			for _, e := range engs {
				rs, err := scaleEngine(e, n, rep, cg, extra, logf)
				for _, r := range rs {
					b, _ := json.Marshal(r)
					jf.Write(append(b, '\n'))
				}
				all = append(all, rs...)
				if err != nil {
					return err
				}
			}
		}
	}
	total := time.Since(began)
	logf("scale curve done in %s; results in %s", total.Round(time.Second), jsonPath)
	return publishScale(all, engs, sizes, total, jsonPath)
}

// scaleEngine loads n keys into a fresh database of engine e and runs the
// read workloads on it, each worker started with the database dropped from
// the page cache; it deletes the database and returns the results. A worker
// the cgroup's OOM killer ended is returned as a result with Error set, and
// the engine's later workloads at this size are skipped.
func scaleEngine(e string, n, rep int, cg *memCgroup, extra []string, logf func(string, ...any)) ([]bench.Result, error) {
	dir := filepath.Join(*workdir, fmt.Sprintf("scale-%s-%d", e, n))
	defer os.RemoveAll(dir)
	var out []bench.Result
	for _, w := range scaleWorkloads {
		var cached int64 // bytes of the database in the page cache as the worker starts
		if w != "load" {
			if err := dropCache(dir); err != nil {
				return out, err
			}
			var err error
			if cached, err = cachedBytes(dir); err != nil {
				return out, err
			}
		}
		var kills int64
		if cg != nil {
			kills = cg.oomKills()
		}
		prof := ""
		if *profile != "" {
			// The scale curve has no spare pass: its loads take minutes, and
			// every read run needs the loaded database, so the reported
			// runs themselves are profiled.
			prof = filepath.Join(*profile, fmt.Sprintf("%s-%d-%s.pprof", e, n, w))
		}
		r, err := runWorker(e, w, dir, rep, prof, extra...)
		if err != nil && cg != nil && cg.oomKills() > kills {
			r = bench.Result{Engine: e, Workload: w, Rep: rep, Num: n, ValueSize: *valueSize,
				Error: fmt.Sprintf("killed by the memory cgroup's OOM killer at -memlimit %d MiB", *memLimitMiB)}
		} else if err != nil {
			return out, err
		}
		if r.Extra == nil {
			r.Extra = map[string]float64{}
		}
		r.Extra["memlimit_mib"] = float64(*memLimitMiB)
		r.Extra["page_cache_bytes_at_start"] = float64(cached)
		out = append(out, r)
		if r.Error != "" {
			logf("N=%d rep %d %-10s %-9s %s", n, rep, scaleLabel(w), e, r.Error)
			return out, nil
		}
		logf("N=%d rep %d %-10s %-9s %12.0f ops/s%s", n, rep, scaleLabel(w), e, r.OpsPerSec, scaleLogExtra(r))
	}
	return out, nil
}

// memoryMode says how the run kept the data out of memory, given its
// -memlimit in MiB.
func memoryMode(limitMiB int64) string {
	const drop = "posix_fadvise(DONTNEED) on the database's files before every read workload"
	if limitMiB <= 0 {
		return "no memory cgroup (-memlimit 0): page cache NOT bounded; " + drop
	}
	return fmt.Sprintf("every worker in a cgroup v1 memory cgroup limited to %d MiB (RSS + page cache), and %s", limitMiB, drop)
}

func scaleLogExtra(r bench.Result) string {
	if r.Workload == "load" {
		return fmt.Sprintf(" write amp (io) %.2f space amp %.2f rss %.0f MB", r.IOWriteAmp, spaceAmp(r), float64(r.PeakRSS)/1e6)
	}
	return fmt.Sprintf(" read %.0f B/op rss %.0f MB", readAmp(r), float64(r.PeakRSS)/1e6)
}

// spaceAmp is a loaded database's allocated bytes after the settle and
// Close over its user bytes (every key once, key + value).
func spaceAmp(r bench.Result) float64 {
	return float64(r.DiskBytes) / (float64(r.Num) * float64(bench.KeySize+r.ValueSize))
}

// readAmp is device bytes read per operation (per row for readseq).
func readAmp(r bench.Result) float64 {
	if r.Ops == 0 {
		return 0
	}
	return r.Extra["io_read_bytes"] / float64(r.Ops)
}

// scaleAgg groups results by key count, workload and engine, and picks the
// repetition with the median ops/s.
type scaleAgg map[int]map[string]map[string]*agg

func aggregateScale(all []bench.Result) scaleAgg {
	byNum := map[int][]bench.Result{}
	for _, r := range all {
		if r.Error == "" {
			byNum[r.Num] = append(byNum[r.Num], r)
		}
	}
	out := scaleAgg{}
	for n, rs := range byNum {
		out[n] = aggregate(rs)
	}
	return out
}

func (s scaleAgg) get(n int, w, e string) *agg {
	return s[n][w][e]
}

func publishScale(all []bench.Result, engs []string, sizes []int, total time.Duration, jsonPath string) error {
	ag := aggregateScale(all)
	tables := scaleTables(ag, engs, sizes)
	fmt.Println(tables)
	if *scaleDoc == "" {
		return nil
	}
	if err := os.MkdirAll(*imgDir, 0o755); err != nil {
		return err
	}
	chart := filepath.Join(*imgDir, "bench-scale.png")
	if err := scaleChart(ag, engs, sizes, chart); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Scale curve: Mayfly vs Pebble and Badger as the data outgrows memory\n\n")
	b.WriteString("_Generated by `bench/cmd/compare -scale`; every figure comes from the run described here. " +
		"How to read it: [benchmarks.md](benchmarks.md#scale)._\n\n")
	fmt.Fprintf(&b, "- **Command:** `%s`\n", command())
	fmt.Fprintf(&b, "- **Results file:** `bench/%s`\n", filepath.ToSlash(jsonPath))
	fmt.Fprintf(&b, "- **Machine:** %s\n", machine())
	fmt.Fprintf(&b, "- **Engines:** %s\n", versions())
	limit := *memLimitMiB
	if len(all) > 0 {
		if v, ok := all[0].Extra["memlimit_mib"]; ok {
			limit = int64(v)
		}
	}
	fmt.Fprintf(&b, "- **Memory:** %s; database bytes in the page cache as a read worker started (mincore): %s.\n",
		memoryMode(limit), cachedAtStart(all))
	for _, r := range all {
		if r.Error != "" {
			fmt.Fprintf(&b, "- **Not measured:** %s at N=%d, %s (rep %d): %s; its later workloads at that size were skipped.\n",
				r.Engine, r.Num, scaleLabel(r.Workload), r.Rep, r.Error)
		}
	}
	fmt.Fprintf(&b, "- **Shape:** keys of %d bytes, values of %d bytes (half-compressible), block cache %d MiB, bloom %d bits/key; "+
		"read workloads do min(N, %d) reads, seekrandom a tenth of that, readseq scans all N.\n",
		bench.KeySize, *valueSize, *cacheMiB, *bloom, *scaleReads)
	if total > 0 {
		fmt.Fprintf(&b, "- **Wall time:** %s.\n", total.Round(time.Second))
	}
	lo, hi := loadRange(all)
	fmt.Fprintf(&b, "- **Machine load:** 1-minute load average %.1f..%.1f at the end of the workers (2 cores: above 2, the engines shared the CPU).\n", lo, hi)
	b.WriteString("- **Definitions:** fillrandom = loading N keys in a random order (timed), then compaction settles (untimed). " +
		"Write amp (io) = `/proc/self/io` write_bytes of the worker (WAL, tables, value log; fill, settle and Close) per user byte (key + value). " +
		"Space amp = bytes the directory allocates after the settle and Close per user byte. " +
		"Read amp = `/proc/self/io` read_bytes per operation (per row for readseq): device reads only, page-cache hits cost nothing.\n\n")
	b.WriteString(tables)
	rel, _ := filepath.Rel(filepath.Dir(*scaleDoc), chart)
	fmt.Fprintf(&b, "\n![scale curve](%s)\n", filepath.ToSlash(rel))
	if err := os.WriteFile(*scaleDoc, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %s\n", *scaleDoc, chart)
	return nil
}

// scaleTables: ops/s per size and workload (median (min..max) of the
// repetitions, and Mayfly's ratio to Pebble), then the amplification of
// each engine per size (from the median repetition).
func scaleTables(ag scaleAgg, engs []string, sizes []int) string {
	var b strings.Builder
	b.WriteString("| N | workload |")
	for _, e := range engs {
		b.WriteString(" " + e + " |")
	}
	b.WriteString(" Mayfly ÷ Pebble |\n|---|---|" + strings.Repeat("---:|", len(engs)+1) + "\n")
	for _, n := range sizes {
		for _, w := range scaleWorkloads {
			fmt.Fprintf(&b, "| %s | %s |", human(float64(n)), scaleLabel(w))
			for _, e := range engs {
				b.WriteString(" " + scaleCell(ag.get(n, w, e)) + " |")
			}
			m, p := ag.get(n, w, "mayfly"), ag.get(n, w, "pebble")
			if m != nil && p != nil && p.med > 0 {
				fmt.Fprintf(&b, " %.2f |\n", m.med/p.med)
			} else {
				b.WriteString(" — |\n")
			}
		}
	}
	b.WriteString("\n| N | engine | write amp (io) | write amp (engine) | space amp | read B/op: readrandom | readmissing | seekrandom | readseq (B/row) | peak RSS MB (load) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range sizes {
		for _, e := range engs {
			l := ag.get(n, "load", e)
			if l == nil {
				continue
			}
			x := l.medRun
			engineWA := "—"
			if x.WriteAmp > 0 {
				engineWA = fmt.Sprintf("%.2f", x.WriteAmp)
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f | %s | %.2f |", human(float64(n)), e, x.IOWriteAmp, engineWA, spaceAmp(x))
			for _, w := range scaleWorkloads[1:] {
				if a := ag.get(n, w, e); a != nil {
					fmt.Fprintf(&b, " %.0f |", readAmp(a.medRun))
				} else {
					b.WriteString(" — |")
				}
			}
			fmt.Fprintf(&b, " %.0f |\n", float64(x.PeakRSS)/1e6)
		}
	}
	return b.String()
}

func scaleCell(a *agg) string {
	if a == nil {
		return "—"
	}
	if len(a.runs) == 1 {
		return human(a.med)
	}
	return fmt.Sprintf("**%s** (%s..%s)", human(a.med), human(a.min), human(a.max))
}

// scaleSeries is one engine's figure per size (sizes without it skipped).
func scaleSeries(ag scaleAgg, sizes []int, w, e string, f func(*agg) float64) [][2]float64 {
	var out [][2]float64
	for _, n := range sizes {
		if a := ag.get(n, w, e); a != nil {
			out = append(out, [2]float64{float64(n), f(a)})
		}
	}
	return out
}

// scaleChart draws the curves against N (log scale): ops/s of each
// workload, write and space amplification, and readrandom's device bytes
// per read.
func scaleChart(ag scaleAgg, engs []string, sizes []int, path string) error {
	type panel struct {
		title, w string
		f        func(*agg) float64
	}
	ops := func(a *agg) float64 { return a.med / 1e3 }
	panels := []panel{
		{"fillrandom k ops/s", "load", ops}, {"readrandom k ops/s", "readrandom_cold", ops},
		{"readmissing k ops/s", "readmissing", ops}, {"seekrandom k ops/s", "seekrandom", ops},
		{"readseq k rows/s", "readseq", ops},
		{"write amp (io)", "load", func(a *agg) float64 { return a.medRun.IOWriteAmp }},
		{"space amp", "load", func(a *agg) float64 { return spaceAmp(a.medRun) }},
		{"readrandom device B/read", "readrandom_cold", func(a *agg) float64 { return readAmp(a.medRun) }},
	}
	const cols = 4
	plots := make([][]*plot.Plot, (len(panels)+cols-1)/cols)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "keys"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min = 0
		for _, e := range engs {
			xy := scaleSeries(ag, sizes, pn.w, e, pn.f)
			if len(xy) == 0 {
				continue
			}
			pts := make(plotter.XYs, len(xy))
			for j, v := range xy {
				pts[j] = plotter.XY{X: v[0], Y: v[1]}
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			l.Color, s.Color = engineColor[e], engineColor[e]
			p.Add(l, s)
			if i == 0 {
				p.Legend.Add(e, l, s)
			}
		}
		p.Legend.Top = true
		plots[i/cols][i%cols] = p
	}
	return savePanels(plots, vg.Points(cols*240), vg.Points(float64(len(plots))*230), path)
}

// loadRange is the lowest and highest 1-minute load average the workers
// recorded.
func loadRange(all []bench.Result) (lo, hi float64) {
	for i, r := range all {
		v := r.Extra["loadavg1"]
		if i == 0 {
			lo, hi = v, v
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// cachedAtStart states the most database bytes found in the page cache as
// a read worker started (0 when every drop worked).
func cachedAtStart(all []bench.Result) string {
	most, seen := 0.0, false
	for _, r := range all {
		if v, ok := r.Extra["page_cache_bytes_at_start"]; ok {
			most, seen = max(most, v), true
		}
	}
	if !seen {
		return "not recorded by this run"
	}
	return fmt.Sprintf("at most %.1f MB", most/1e6)
}
