package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/bench"
)

// agg is the spread of one engine+workload over its repetitions.
type agg struct {
	med, min, max float64
	medRun        bench.Result // the repetition with the median ops/s
	runs          []bench.Result
}

func aggregate(all []bench.Result) map[string]map[string]*agg {
	out := map[string]map[string]*agg{}
	groups := map[[2]string][]bench.Result{}
	for _, r := range all {
		k := [2]string{r.Workload, r.Engine}
		groups[k] = append(groups[k], r)
	}
	for k, rs := range groups {
		slices.SortFunc(rs, func(a, b bench.Result) int {
			switch {
			case a.OpsPerSec < b.OpsPerSec:
				return -1
			case a.OpsPerSec > b.OpsPerSec:
				return 1
			}
			return 0
		})
		a := &agg{min: rs[0].OpsPerSec, max: rs[len(rs)-1].OpsPerSec, medRun: rs[len(rs)/2], runs: rs}
		a.med = median(rs, func(r bench.Result) float64 { return r.OpsPerSec })
		if out[k[0]] == nil {
			out[k[0]] = map[string]*agg{}
		}
		out[k[0]][k[1]] = a
	}
	return out
}

func median(rs []bench.Result, f func(bench.Result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return medianOf(v)
}

func spread(rs []bench.Result, f func(bench.Result) float64) (lo, med, hi float64) {
	med = median(rs, f)
	lo, hi = f(rs[0]), f(rs[0])
	for _, r := range rs {
		lo, hi = min(lo, f(r)), max(hi, f(r))
	}
	return
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

type report struct {
	agg      map[string]map[string]*agg
	engs     []string
	wls      []string
	p        bench.Params
	total    time.Duration
	jsonPath string
	table    string
	fsync    []bench.Result
}

// target describes the goal for Mayfly vs Pebble on one workload.
var targets = map[string]float64{
	"fillseq": 1.0, "fillrandom": 1.0, "overwrite": 1.0, "fillbatch": 1.0, "fillsync": 1.0,
	"readrandom_warm": 1.5, "readrandom_cold": 1.5, "readmissing": 2.0, "readseq": 1.0,
}

func buildReport(all []bench.Result, engs, wls []string, p bench.Params, total time.Duration, jsonPath string) *report {
	r := &report{agg: aggregate(all), engs: engs, wls: wls, p: p, total: total, jsonPath: jsonPath}
	for _, x := range all {
		if x.Workload == "fdatasync" {
			r.fsync = append(r.fsync, x)
		}
	}
	r.table = r.mainTable() + r.ttlTables() + r.counterTables() + r.ycsbTables() + r.rateTable() + r.pointReadTable() + r.ttlScaleTable()
	return r
}

func (r *report) cell(w, e string) string {
	a := r.agg[w][e]
	if a == nil {
		return "—"
	}
	if len(a.runs) == 1 {
		return human(a.med)
	}
	return fmt.Sprintf("**%s** (%s..%s)", human(a.med), human(a.min), human(a.max))
}

func (r *report) ratio(w, e, base string) (float64, bool) {
	a, b := r.agg[w][e], r.agg[w][base]
	if a == nil || b == nil || b.med == 0 {
		return 0, false
	}
	return a.med / b.med, true
}

// mainTable: ops/s median (min..max) per workload and engine, Mayfly's
// ratio to Pebble and the target.
func (r *report) mainTable() string {
	if !slices.ContainsFunc(r.wls, func(w string) bool { return r.agg[w] != nil && !ownTable(w) }) {
		return "" // the TTL and rate-limited workloads have their own tables
	}
	var b strings.Builder
	b.WriteString("| workload |")
	for _, e := range r.engs {
		b.WriteString(" " + e + " |")
	}
	b.WriteString(" mayfly / pebble | target | met |\n|---|")
	for range r.engs {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---|---|\n")
	fsyncMed := 0.0
	if len(r.fsync) > 0 {
		fsyncMed = median(r.fsync, func(x bench.Result) float64 { return x.OpsPerSec })
	}
	shares := r.syncShares()
	for _, w := range r.wls {
		if r.agg[w] == nil || ownTable(w) {
			continue
		}
		b.WriteString("| " + w + " |")
		for _, e := range r.engs {
			b.WriteString(" " + r.cell(w, e) + " |")
		}
		ratio, ok := r.ratio(w, "mayfly", "pebble")
		rs, tgt, met := "—", "—", "—"
		if ok {
			rs = fmt.Sprintf("%.2fx", ratio)
		}
		if t, has := targets[w]; has && ok {
			tgt = fmt.Sprintf("≥ %.1fx", t)
			met = yesNo(ratio >= t)
			if w == "fillsync" && fsyncMed > 0 {
				// Older results files have one reference per repetition:
				// the share is then the median run's over the median
				// reference.
				fr, adj := medianShare(shares, "mayfly")
				how := "of the adjacent fdatasync, median of reps"
				if !adj {
					fr, how = r.agg[w]["mayfly"].med/fsyncMed, "of fdatasync"
				}
				tgt += fmt.Sprintf(" and ≥ %.0f%% of fdatasync", 100*minSyncShare)
				rs += fmt.Sprintf("; %.0f%% %s", 100*fr, how)
				met = yesNo(ratio >= t && fr >= minSyncShare)
			}
		}
		if w == "ttlchurn" {
			if rb, ok := r.ratio(w, "mayfly", "badger"); ok {
				m, bd := r.agg[w]["mayfly"], r.agg[w]["badger"]
				sa := median(m.runs, func(x bench.Result) float64 { return x.SpaceAmp })
				rs = fmt.Sprintf("vs badger %.2fx; space amp %.2f (badger %.2f)", rb, sa,
					median(bd.runs, func(x bench.Result) float64 { return x.SpaceAmp }))
				tgt = "≥ 2x badger, space amp ≤ 1.2"
				met = yesNo(rb >= 2 && sa <= 1.2)
			}
		}
		b.WriteString(fmt.Sprintf(" %s | %s | %s |\n", rs, tgt, met))
	}
	if len(r.fsync) > 0 {
		lo, med, hi := spread(r.fsync, func(x bench.Result) float64 { return x.OpsPerSec })
		var grows []bench.Result // the runs that measured a growing file too
		for _, x := range r.fsync {
			if _, ok := x.Extra["growing_file_ops_per_sec"]; ok {
				grows = append(grows, x)
			}
		}
		g := median(grows, func(x bench.Result) float64 { return x.Extra["growing_file_ops_per_sec"] })
		b.WriteString(fmt.Sprintf("\nDisk reference (4 KiB write + fdatasync, preallocated file): **%s** (%s..%s) ops/s over %d runs; into a growing file: %s ops/s.\n",
			human(med), human(lo), human(hi), len(r.fsync), human(g)))
	}
	b.WriteString(r.syncShareTable())
	return b.String()
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func (r *report) detailTable() string {
	var b strings.Builder
	b.WriteString("| workload | engine | ops/s | MB/s | p50 µs | p99 µs | disk MB | write amp (engine) | write amp (io) | peak RSS MB | RSS vs pebble |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range r.wls {
		for _, e := range r.engs {
			a := r.agg[w][e]
			if a == nil {
				continue
			}
			m := a.medRun
			wa, iowa, rssRatio := "—", "—", "—"
			if m.WriteAmp > 0 {
				wa = fmt.Sprintf("%.2f", m.WriteAmp)
			}
			if m.IOWriteAmp > 0 {
				iowa = fmt.Sprintf("%.2f", m.IOWriteAmp)
			}
			rss := median(a.runs, func(x bench.Result) float64 { return float64(x.PeakRSS) })
			if pb := r.agg[w]["pebble"]; pb != nil {
				prss := median(pb.runs, func(x bench.Result) float64 { return float64(x.PeakRSS) })
				rssRatio = fmt.Sprintf("%.2fx", rss/prss)
			}
			p50, p99 := "—", "—"
			if m.P50us > 0 {
				p50, p99 = fmt.Sprintf("%.1f", m.P50us), fmt.Sprintf("%.1f", m.P99us)
			}
			b.WriteString(fmt.Sprintf("| %s | %s | %s | %.1f | %s | %s | %.1f | %s | %s | %.0f | %s |\n",
				w, e, human(a.med), m.MBPerSec, p50, p99, float64(m.DiskBytes)/1e6, wa, iowa, rss/1e6, rssRatio))
		}
	}
	return b.String()
}

func (r *report) churnTable() string {
	ws := r.agg["ttlchurn"]
	if ws == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("| engine | puts/s | space amp | steady disk MB | steady live MB | p50 µs | p99 µs | peak RSS MB |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, e := range r.engs {
		a := ws[e]
		if a == nil {
			continue
		}
		lo, sa, hi := spread(a.runs, func(x bench.Result) float64 { return x.SpaceAmp })
		m := a.medRun
		b.WriteString(fmt.Sprintf("| %s | %s | **%.2f** (%.2f..%.2f) | %.1f | %.1f | %.1f | %.1f | %.0f |\n",
			e, r.cell("ttlchurn", e), sa, lo, hi, m.Extra["steady_disk_bytes"]/1e6, m.Extra["steady_live_bytes"]/1e6,
			m.P50us, m.P99us, float64(m.PeakRSS)/1e6))
	}
	return b.String()
}

func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				var kb int64
				fmt.Sscanf(strings.TrimPrefix(l, "MemTotal:"), "%d", &kb)
				mem = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	return fmt.Sprintf("%d cores (%s), %s memory, Linux %s, %s", runtime.NumCPU(), model, mem,
		strings.TrimSpace(string(kernel)), runtime.Version())
}

func versions() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var parts []string
	for _, d := range bi.Deps {
		switch d.Path {
		case "github.com/cockroachdb/pebble/v2", "github.com/dgraph-io/badger/v4", "github.com/syndtr/goleveldb":
			parts = append(parts, d.Path+" "+d.Version)
		case "github.com/mayflydb/mayfly":
			parts = append(parts, d.Path+" (this repository, via replace)")
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// rebuildFlags are the flags of -from, which are not part of the command of
// the run that produced the results.
var rebuildFlags = map[string]bool{"from": true, "total": true, "machine": true, "commit": true}

// command is the command line that produced the results: this one, less the
// flags of a rebuild.
func command() string { return commandOf(os.Args[1:]) }

func commandOf(argv []string) string {
	args := []string{"go run ./cmd/compare"}
	skip := false
	for _, a := range argv {
		if skip {
			skip = false
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && rebuildFlags[name] {
			skip = !hasValue
			continue
		}
		args = append(args, a)
	}
	return "cd bench && " + strings.Join(args, " ")
}

func (r *report) markdown(charts []string, docPath, imgDir string) string {
	var b strings.Builder
	p := r.p
	fmt.Fprintf(&b, "# Mayfly vs Pebble, Badger and goleveldb\n\n")
	fmt.Fprintf(&b, "_Generated by `bench/cmd/compare` from the results of the run described here; every figure below "+
		"comes from that run. How to run it and how to read it: [benchmarks.md](benchmarks.md)._\n\n")
	fmt.Fprintf(&b, "- **Command:** `%s`\n", command())
	fmt.Fprintf(&b, "- **Results file:** `bench/%s`\n", filepath.ToSlash(r.jsonPath))
	fmt.Fprintf(&b, "- **Run:** %s\n", runTime(r.jsonPath))
	fmt.Fprintf(&b, "- **Machine:** %s\n", r.machine())
	fmt.Fprintf(&b, "- **Engines:** %s\n", versions())
	fmt.Fprintf(&b, "- **Mayfly source:** %s\n", r.source())
	fmt.Fprintf(&b, "- **Shared settings:** block cache %d MiB and bloom filters at %d bits/key for every engine "+
		"(Badger: false-positive rate %.4f, the same as %d bits/key); everything else at each engine's defaults "+
		"(memtables: Mayfly %d MiB, Pebble 4 MiB, Badger 64 MiB ×5, goleveldb 4 MiB; compression: Snappy for all).\n",
		p.CacheBytes>>20, p.Bloom, bloomFPRDoc(p.Bloom), p.Bloom, mayfly.DefaultMemtableSize>>20)
	fmt.Fprintf(&b, "- **Shape:** %d keys of %d bytes, values of %d bytes (half-compressible, same generator for all), "+
		"%d reads, %d seeks, %d synced writes, batches of %d, ttlchurn TTL %s for %s of real time.\n",
		p.Num, bench.KeySize, p.ValueSize, p.Reads, p.Seeks, p.SyncOps, p.BatchSize, p.TTL, p.Churn)
	done := 0
	for _, ws := range r.agg {
		for _, a := range ws {
			for _, x := range a.runs {
				done = max(done, x.Rep)
			}
		}
	}
	note := ""
	if done < *reps {
		note = fmt.Sprintf(" (the run was started with -reps %d and stopped after repetition %d)", *reps, done)
	}
	wall := ""
	if r.total > 0 {
		wall = fmt.Sprintf(" Total wall time %s.", r.total.Round(time.Second))
	}
	fmt.Fprintf(&b, "- **Repetitions:** %d per engine+workload%s, each in its own process; cells show the **median** and (min..max).%s\n\n",
		done, note, wall)
	b.WriteString("## Throughput (ops/s)\n\n")
	b.WriteString(r.table)
	b.WriteString("\n")
	for _, c := range charts {
		rel, _ := filepath.Rel(filepath.Dir(docPath), c)
		fmt.Fprintf(&b, "![%s](%s)\n\n", strings.TrimSuffix(filepath.Base(c), ".png"), filepath.ToSlash(rel))
	}
	if t := r.churnTable(); t != "" {
		b.WriteString("## TTL churn (write-once keys, native TTL)\n\n")
		b.WriteString("Space amplification = mean bytes allocated by the database directory / mean logical bytes " +
			"(key + value) of rows not yet expired, over the samples from three TTL periods on.\n\n")
		b.WriteString(t + "\n")
	}
	b.WriteString("## Details (median repetition)\n\n")
	b.WriteString("Latency is per operation (per batch for fillbatch); readseq has none (one scan). " +
		"Disk MB is what the directory allocates after Close. Write amp (engine) = SSTable bytes written by flushes " +
		"and compactions per byte flushed, where the engine reports it (Mayfly, Pebble), measured at the end of the timed phase; " +
		"write amp (io) = `/proc/self/io` write_bytes of the whole process (WAL, tables, value log, after Close) per user byte written. " +
		"Peak RSS is VmHWM of the worker process.\n\n")
	b.WriteString(r.detailTable())
	b.WriteString("\n## Method\n\n" + methodText)
	return b.String()
}

// runTime reads the run's start from the results file name the harness
// gives it (results-<UTC time>.jsonl).
func runTime(jsonPath string) string {
	name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(jsonPath), "results-"), ".jsonl")
	t, err := time.Parse("20060102T150405Z", name)
	if err != nil {
		return "start time unknown (" + filepath.Base(jsonPath) + ")"
	}
	return "started " + t.UTC().Format("2006-01-02 15:04 MST")
}

// machine names the machine the results came from: this one for a run,
// -machine (or this one, said to be the rebuilding one) for -from.
func (r *report) machine() string {
	switch {
	case *from == "":
		return machine()
	case *fromHost != "":
		return *fromHost
	}
	return "not recorded in the results file; the report was rebuilt on " + machine()
}

// source names the Mayfly code the results came from.
func (r *report) source() string {
	switch {
	case *from == "":
		return gitState()
	case *fromRev != "":
		return "commit " + *fromRev
	}
	return "not recorded in the results file (" + filepath.Base(r.jsonPath) + "); report rebuilt at " + gitState()
}

func bloomFPRDoc(bits int) float64 {
	p := 1.0
	for range bits {
		p *= 0.6185
	}
	return p
}

const methodText = `- Keys are 15 decimal digits plus a suffix byte ('k' for written keys). readmissing looks up keys with
  suffix 'm', which sort between written keys, so they fall inside every table's key range and only a bloom
  filter (or a block search) can reject them.
- fillseq writes keys in order; fillrandom writes every key once in a pseudo-random order; fillbatch writes
  ordered keys in atomic batches; fillsync writes random keys, each durable before the next (Mayfly
  WriteOptions.Sync, Pebble Sync, goleveldb Sync, Badger Update+Sync). All start from an empty directory.
- The read workloads open a fixture built once per engine (fillrandom of all keys, then the engine's own way
  to wait for background work: Mayfly Flush+WaitForCompactions, Pebble Flush and polling until no
  compaction debt; Badger and goleveldb have none and are just closed). readrandom_cold starts right after
  Open (empty block cache; the OS page cache is whatever the earlier runs left: this container cannot drop
  it); readrandom_warm first does one untimed pass of the same number of random reads. overwrite and
  readwhilewriting run on a copy of the fixture; readwhilewriting times one reader while one writer
  overwrites random keys flat out (its rate is in the JSON as writer_ops_per_sec).
- seekrandom reuses one iterator: SeekGE to a random key and read the entry.
- ttlchurn writes write-once keys (16 hex digits of a hash of a counter, so random order) with a TTL,
  flat out on one goroutine, for the whole duration, and samples the directory's allocated bytes every
  second. Badger's value-log GC is called every 10 s, as a Badger application must.
- The fdatasync reference writes 4 KiB at successive offsets of a preallocated, initialised file and
  fdatasyncs after each write, as many times as fillsync writes; the growing-file figure is the same without
  preallocation. It runs right before and right after every engine's fillsync run, in a sibling directory on
  the same file system, and each run's share is its rate over the mean of those two (older results files
  have one reference per repetition, and the share is the median run's over the median reference).
- The machine is shared: other sessions may build or test at the same time, so treat differences under
  ±10% as noise and compare engines within this one run only.
`

// gitState names the commit the library was built from, and whether the
// working tree had uncommitted changes (other work in progress) at the time.
func gitState() string {
	head, err := exec.Command("git", "-C", "..", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	st, _ := exec.Command("git", "-C", "..", "status", "--porcelain", "--untracked-files=no").Output()
	s := "commit " + strings.TrimSpace(string(head))
	if len(strings.TrimSpace(string(st))) > 0 {
		s += " plus uncommitted changes in the working tree at run time"
	}
	return s
}
