package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mayflydb/mayfly/bench"
)

var (
	writeRates = flag.String("writerate", "", "comma-separated writer rates (rows/s) of readwhilewriting_<rate>, e.g. 10000,50000,200000; "+
		"the only workloads run unless -workloads is given too")
	rwTime = flag.Duration("rwtime", 10*time.Second, "reader run time of each readwhilewriting_<rate>")
)

// Issue 21's goals for reads under a writer held at a fixed rate: Mayfly's
// reads/s at least rateReadTarget times Pebble's, its read p99 at most
// Pebble's, and from stallTargetRate up no single write longer than
// maxStall. heldShare is the share of the asked rate a writer must achieve
// for the comparison to count as one at that rate.
const (
	rateReadTarget  = 1.3
	stallTargetRate = 200_000
	maxStall        = 100 * time.Millisecond
	heldShare       = 0.98
)

// applyWriteRates turns -writerate into workload names: appended to
// -workloads when that flag was given, else the only workloads.
func applyWriteRates() error {
	if *writeRates == "" {
		return nil
	}
	ws, err := bench.ParseWriteRates(*writeRates)
	if err != nil {
		return err
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "workloads" })
	var all []string
	if given {
		all = strings.Split(*workloads, ",")
	}
	for _, w := range ws {
		if !slices.Contains(all, w) {
			all = append(all, w)
		}
	}
	*workloads = strings.Join(all, ",")
	return nil
}

// ownTable reports whether workload w is left out of the main table.
func ownTable(w string) bool {
	return bench.IsTTLWorkload(w) || bench.IsRateWorkload(w) || bench.IsCounterWorkload(w) || w == "ttlscale"
}

// rateLogExtra is the progress-log suffix of a rate-limited run.
func rateLogExtra(r bench.Result) string {
	if !bench.IsRateWorkload(r.Workload) {
		return ""
	}
	x := r.Extra
	return fmt.Sprintf(" writer %.0f of %.0f rows/s, longest write %.1f ms, forgiven %.0f, longest scheduling delay %.1f ms",
		x["writer_ops_per_sec"], x["write_rate_asked"], x["max_write_us"]/1e3, x["writer_rows_forgiven"], x["sched_delay_max_us"]/1e3)
}

// rateTable reports the rate-limited readwhilewriting runs: per rate and
// engine the reader's ops/s and p50/p99 (of the median run), the writer's
// achieved rate (median) and longest single write (the worst over the
// repetitions), and Mayfly's row against the targets.
func (r *report) rateTable() string {
	var ran []string
	for _, w := range r.wls {
		if r.agg[w] != nil && bench.IsRateWorkload(w) {
			ran = append(ran, w)
		}
	}
	if len(ran) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nReads under a writer held at a fixed rate (one reader, one writer; reads/s median (min..max), " +
		"latencies of the median run, longest write over all runs):\n\n")
	b.WriteString("| write rate | engine | reads/s | read p50 µs | read p99 µs | writes/s (held) | write p99 µs | longest write ms | reads ÷ pebble | p99 ÷ pebble | met |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, w := range ran {
		rate, _ := bench.WriteRateOf(w)
		for _, e := range r.engs {
			a := r.agg[w][e]
			if a == nil {
				continue
			}
			m := a.medRun
			wr := medianExtra(a, "writer_ops_per_sec")
			held := wr >= heldShare*float64(rate)
			stall := maxExtra(a, "max_write_us") / 1e3
			ratio, p99r, met := "—", "—", "—"
			if pb := r.agg[w]["pebble"]; e == "mayfly" && pb != nil {
				rr, _ := r.ratio(w, "mayfly", "pebble")
				pr := median(a.runs, p99) / median(pb.runs, p99)
				ratio, p99r = fmt.Sprintf("%.2fx", rr), fmt.Sprintf("%.2f", pr)
				ok := rr >= rateReadTarget && pr <= 1 && held && medianExtra(pb, "writer_ops_per_sec") >= heldShare*float64(rate)
				if rate >= stallTargetRate {
					ok = ok && stall <= float64(maxStall.Milliseconds())
				}
				met = yesNo(ok)
			}
			b.WriteString(fmt.Sprintf("| %s | %s | %s | %.1f | %.1f | %s (%s) | %.1f | %.1f | %s | %s | %s |\n",
				human(float64(rate)), e, r.cell(w, e), m.P50us, m.P99us, human(wr), yesNo(held),
				m.Extra["write_p99_us"], stall, ratio, p99r, met))
		}
	}
	b.WriteString(fmt.Sprintf("\nTarget (Mayfly's row): reads ≥ %.1fx Pebble's and read p99 ≤ Pebble's at each rate, "+
		"both writers holding ≥ %.0f%% of the rate; at %s rows/s and above, no write longer than %d ms.\n",
		rateReadTarget, 100*heldShare, human(stallTargetRate), maxStall.Milliseconds()))
	return b.String()
}

func p99(x bench.Result) float64 { return x.P99us }

// maxExtra is the largest extra figure k over a's runs.
func maxExtra(a *agg, k string) float64 {
	v := 0.0
	for _, x := range a.runs {
		v = max(v, x.Extra[k])
	}
	return v
}
