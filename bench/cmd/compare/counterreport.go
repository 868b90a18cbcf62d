package main

import (
	"fmt"

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
	return r.ratioTable("Counters", bench.IsCounterWorkload, func(w string, rb, rp float64, okb, okp bool) (string, string) {
		m := r.agg[w]["mayfly"]
		switch t, has := counterTargets[w]; {
		case has && okb && (okp || t.pebble == 0):
			tgt := fmt.Sprintf("≥ %.0fx badger", t.badger)
			ok := rb >= t.badger
			if t.pebble > 0 {
				tgt += fmt.Sprintf(", ≥ %.1fx pebble", t.pebble)
				ok = ok && rp >= t.pebble
			}
			return tgt, yesNo(ok)
		case w == "counterread" && m != nil:
			v := medianExtra(m, "counter_to_plain_ratio")
			return fmt.Sprintf("counter read ≥ %.1f of a plain Get (mayfly: %.2f)", minCounterReadRatio, v), yesNo(v >= minCounterReadRatio)
		case w == "windowchurn" && m != nil:
			v := median(m.runs, func(x bench.Result) float64 { return x.SpaceAmp })
			return fmt.Sprintf("table bytes ≤ %.1fx live counters (mayfly: %.2fx, %.0f KB tables, %.0f KB dir)",
				maxWindowSpaceAmp, v, medianExtra(m, "steady_table_bytes")/1e3, medianExtra(m, "steady_disk_bytes")/1e3), yesNo(v <= maxWindowSpaceAmp)
		}
		return "—", "—"
	})
}
