package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mayflydb/mayfly/bench"
)

// Issue 21's goals for the YCSB workloads and the value-size sweep: load
// and every sweep fill at least Pebble's ops/s, the read workloads
// ycsbReadTarget times Pebble's, write p99 at most ycsbWriteP99Ratio times
// Pebble's and no single write over ycsbMaxWriteUs.
const (
	ycsbReadTarget    = 1.3
	ycsbWriteP99Ratio = 2.0
	ycsbMaxWriteUs    = 50_000
)

// ycsbReadWorkloads are the YCSB workloads whose operations are mostly
// reads or scans.
var ycsbReadWorkloads = map[string]bool{"ycsb_b": true, "ycsb_c": true, "ycsb_d": true, "ycsb_e": true}

// workloadList is -workloads plus the sweep fills of -valuesizes.
func workloadList() ([]string, error) {
	wls := strings.Split(*workloads, ",")
	if *valSizes == "" {
		return wls, nil
	}
	var sizes []int
	for _, f := range strings.Split(*valSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-valuesizes: %q is not a positive byte count", f)
		}
		sizes = append(sizes, n)
	}
	return append(wls, bench.SweepWorkloads(sizes)...), nil
}

// ycsbTables reports the YCSB workloads and the value-size sweep that were
// run.
func (r *report) ycsbTables() string {
	return r.ycsbTable() + r.sweepTable()
}

// ycsbTable: per workload and engine, transactions/s (median of reps) and
// the median run's latency per operation type, with the write goals.
func (r *report) ycsbTable() string {
	var b strings.Builder
	for _, w := range r.wls {
		if !bench.IsYCSB(w) || r.agg[w] == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nYCSB core workloads: ops/s median (min..max), then the median run's latency per operation " +
				"(engine call; rmw = read + update) as p50 / p99 / max in µs:\n\n" +
				"| workload | engine | ops/s | vs pebble | read | update | insert | scan | rmw | goals |\n" +
				"|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
		}
		for _, e := range r.engs {
			a := r.agg[w][e]
			if a == nil {
				continue
			}
			ratio, ok := r.ratio(w, e, "pebble")
			fmt.Fprintf(&b, "| %s | %s | %s | %s |", w, e, r.cell(w, e), ratioCell(ratio, ok && e != "pebble"))
			for _, op := range []string{"read", "update", "insert", "scan", "rmw"} {
				b.WriteString(" " + opCell(a.medRun, op) + " |")
			}
			goals := "—"
			if e == "mayfly" {
				goals = r.ycsbGoals(w)
			}
			b.WriteString(" " + goals + " |\n")
		}
	}
	return b.String()
}

func opCell(x bench.Result, op string) string {
	if x.Extra[op+"_ops"] == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f", x.Extra[op+"_p50_us"], x.Extra[op+"_p99_us"], x.Extra[op+"_max_us"])
}

// writeP99 is the p99 of a run's writes: its updates' or inserts', the
// larger where it has both.
func writeP99(x bench.Result) float64 { return max(x.Extra["update_p99_us"], x.Extra["insert_p99_us"]) }

// ycsbGoals states Mayfly's standing on workload w against the goals.
func (r *report) ycsbGoals(w string) string {
	m, p := r.agg[w]["mayfly"], r.agg[w]["pebble"]
	var goals []string
	if ratio, ok := r.ratio(w, "mayfly", "pebble"); ok {
		switch {
		case w == "ycsb_load":
			goals = append(goals, fmt.Sprintf("ops ≥ 1.0x pebble: %s", yesNo(ratio >= 1)))
		case ycsbReadWorkloads[w]:
			goals = append(goals, fmt.Sprintf("ops ≥ %.1fx pebble: %s", ycsbReadTarget, yesNo(ratio >= ycsbReadTarget)))
		}
	}
	if mp := writeP99(m.medRun); mp > 0 {
		if p != nil && writeP99(p.medRun) > 0 {
			pr := mp / writeP99(p.medRun)
			goals = append(goals, fmt.Sprintf("write p99 %.1fx pebble (≤ %.0fx): %s", pr, ycsbWriteP99Ratio, yesNo(pr <= ycsbWriteP99Ratio)))
		}
		worst := 0.0
		for _, x := range m.runs {
			worst = max(worst, x.Extra["write_max_us"])
		}
		goals = append(goals, fmt.Sprintf("max write %.1f ms (≤ %d ms): %s", worst/1e3, ycsbMaxWriteUs/1000, yesNo(worst <= ycsbMaxWriteUs)))
	}
	return strings.Join(goals, "; ")
}

// sweepTable: the value-size sweep fills, ops/s and MB/s (medians) per
// engine and Mayfly's ratio to Pebble against the goal (≥ 1.0x).
func (r *report) sweepTable() string {
	var b strings.Builder
	for _, w := range r.wls {
		size, ok := bench.SweepSize(w)
		if !ok || r.agg[w] == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nfillrandom value-size sweep, ops/s median (min..max) and MB/s (key + value) median:\n\n| value bytes | keys |")
			for _, e := range r.engs {
				b.WriteString(" " + e + " |")
			}
			b.WriteString(" mayfly / pebble | ≥ 1.0x |\n|---:|---:|")
			for range r.engs {
				b.WriteString("---:|")
			}
			b.WriteString("---:|---|\n")
		}
		keys := 0
		for _, a := range r.agg[w] {
			keys = a.medRun.Num
		}
		fmt.Fprintf(&b, "| %d | %d |", size, keys)
		for _, e := range r.engs {
			c := r.cell(w, e)
			if a := r.agg[w][e]; a != nil {
				c += fmt.Sprintf(", %.1f MB/s", median(a.runs, func(x bench.Result) float64 { return x.MBPerSec }))
			}
			b.WriteString(" " + c + " |")
		}
		ratio, ok := r.ratio(w, "mayfly", "pebble")
		met := "—"
		if ok {
			met = yesNo(ratio >= 1)
		}
		fmt.Fprintf(&b, " %s | %s |\n", ratioCell(ratio, ok), met)
	}
	return b.String()
}
