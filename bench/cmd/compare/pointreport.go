package main

import (
	"fmt"
	"strings"

	"github.com/mayflydb/mayfly/bench"
)

// pointReadTable is the like-for-like point-read table: Mayfly's random
// reads of present keys against default Pebble and against pebble-bloom
// (10-bit filters on every level, read on every level), each with the
// ratio of the medians, the range of the per-repetition ratios (repetition
// i of Mayfly over repetition i of the baseline: the two ran minutes
// apart), each side's spread, (max - min) / median, and the median CPU
// per read of each side (process CPU of the timed loop, which moves less
// with the machine's load than ops/s). It is empty unless the run included
// pebble-bloom.
func (r *report) pointReadTable() string {
	var b strings.Builder
	for _, w := range []string{"readrandom_cold", "readrandom_warm"} {
		m := r.agg[w]["mayfly"]
		if m == nil || r.agg[w]["pebble-bloom"] == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n| point reads | baseline | Mayfly ops/s | baseline ops/s | ratio of medians | per-rep ratios | spread Mayfly / baseline | CPU µs/read Mayfly / baseline |\n")
			b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
		}
		for _, base := range []string{"pebble", "pebble-bloom"} {
			a := r.agg[w][base]
			if a == nil {
				continue
			}
			lo, hi := repRatios(m.runs, a.runs)
			cpu := func(x bench.Result) float64 { return x.Extra["cpu_us_per_op"] }
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f× | %.2f..%.2f | %.1f%% / %.1f%% | %.2f / %.2f |\n", w, base,
				r.cell(w, "mayfly"), r.cell(w, base), m.med/a.med, lo, hi, 100*relSpread(m), 100*relSpread(a),
				median(m.runs, cpu), median(a.runs, cpu))
		}
	}
	return b.String()
}

// repRatios returns the lowest and highest ops/s ratio a/b over the
// repetitions both have.
func repRatios(a, b []bench.Result) (lo, hi float64) {
	byRep := map[int]float64{}
	for _, x := range b {
		byRep[x.Rep] = x.OpsPerSec
	}
	first := true
	for _, x := range a {
		d, ok := byRep[x.Rep]
		if !ok || d == 0 {
			continue
		}
		v := x.OpsPerSec / d
		if first {
			lo, hi, first = v, v, false
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// relSpread is (max - min) / median of an engine's repetitions.
func relSpread(a *agg) float64 {
	if a.med == 0 {
		return 0
	}
	return (a.max - a.min) / a.med
}
