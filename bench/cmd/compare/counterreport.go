package main

import (
	"fmt"
	"strings"

	"github.com/mayflydb/mayfly/bench"
)

// counterTargets are issue 20's goals for Mayfly's counters: ops/s at
// least this many times Badger's and Pebble's (0: no goal).
var counterTargets = map[string]struct{ badger, pebble float64 }{
	"counter":    {5, 1.0},
	"counteradd": {3, 0},
}

// Issue 20's goals for reads of a counter with pending operands (at least
// this fraction of a plain Get's rate) and for the disk held by churning
// windows (at most this many times the live counters).
const (
	minCounterReadRatio = 0.5
	maxWindowSpaceAmp   = 1.2
)

// counterTables reports the counter workloads that were run.
func (r *report) counterTables() string {
	var b strings.Builder
	var ran []string
	for _, w := range r.wls {
		if r.agg[w] != nil && bench.IsCounterWorkload(w) {
			ran = append(ran, w)
		}
	}
	if len(ran) == 0 {
		return ""
	}
	b.WriteString("\nCounters, ops/s median (min..max) and p99 latency of the median run:\n\n| workload |")
	for _, e := range r.engs {
		b.WriteString(" " + e + " |")
	}
	b.WriteString(" mayfly / badger | mayfly / pebble | target | met |\n|---|")
	for range r.engs {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|---|---|\n")
	for _, w := range ran {
		b.WriteString("| " + w + " |")
		for _, e := range r.engs {
			c := r.cell(w, e)
			if a := r.agg[w][e]; a != nil {
				c += fmt.Sprintf(", p99 %.0f µs", a.medRun.P99us)
			}
			b.WriteString(" " + c + " |")
		}
		rb, okb := r.ratio(w, "mayfly", "badger")
		rp, okp := r.ratio(w, "mayfly", "pebble")
		b.WriteString(" " + ratioCell(rb, okb) + " | " + ratioCell(rp, okp) + " |")
		tgt, met := "—", "—"
		m := r.agg[w]["mayfly"]
		switch t, has := counterTargets[w]; {
		case has && okb && (okp || t.pebble == 0):
			tgt = fmt.Sprintf("≥ %.0fx badger", t.badger)
			ok := rb >= t.badger
			if t.pebble > 0 {
				tgt += fmt.Sprintf(", ≥ %.1fx pebble", t.pebble)
				ok = ok && rp >= t.pebble
			}
			met = yesNo(ok)
		case w == "counterread" && m != nil:
			v := medianExtra(m, "counter_to_plain_ratio")
			tgt = fmt.Sprintf("counter read ≥ %.1f of a plain Get (mayfly: %.2f)", minCounterReadRatio, v)
			met = yesNo(v >= minCounterReadRatio)
		case w == "windowchurn" && m != nil:
			v := median(m.runs, func(x bench.Result) float64 { return x.SpaceAmp })
			tgt = fmt.Sprintf("table bytes ≤ %.1fx live counters (mayfly: %.2fx, %.0f KB tables, %.0f KB dir)",
				maxWindowSpaceAmp, v, medianExtra(m, "steady_table_bytes")/1e3, medianExtra(m, "steady_disk_bytes")/1e3)
			met = yesNo(v <= maxWindowSpaceAmp)
		}
		b.WriteString(fmt.Sprintf(" %s | %s |\n", tgt, met))
	}
	return b.String()
}
