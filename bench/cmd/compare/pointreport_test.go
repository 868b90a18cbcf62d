package main

import (
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/bench"
)

// The like-for-like table appears only with pebble-bloom in the run, with
// the ratio of medians, the range of the per-repetition ratios and each
// side's spread.
func TestPointReadTable(t *testing.T) {
	res := func(e string, rep int, ops float64) bench.Result {
		return bench.Result{Engine: e, Workload: "readrandom_cold", Rep: rep, OpsPerSec: ops,
			Extra: map[string]float64{"cpu_us_per_op": 600 / ops}}
	}
	all := []bench.Result{
		res("mayfly", 1, 300), res("mayfly", 2, 330), res("mayfly", 3, 270),
		res("pebble", 1, 200), res("pebble", 2, 200), res("pebble", 3, 200),
	}
	engs, wls := []string{"mayfly", "pebble", "pebble-bloom"}, []string{"readrandom_cold"}
	if r := buildReport(all, engs, wls, bench.Params{}, 0, "x.jsonl"); strings.Contains(r.table, "| point reads |") {
		t.Fatalf("point-read table without pebble-bloom:\n%s", r.table)
	}
	all = append(all, res("pebble-bloom", 1, 250), res("pebble-bloom", 2, 200), res("pebble-bloom", 3, 300))
	r := buildReport(all, engs, wls, bench.Params{}, 0, "x.jsonl")
	wantAll(t, r.table,
		"| readrandom_cold | pebble | **300** (270..330) | **200** (200..200) | 1.50× | 1.35..1.65 | 20.0% / 0.0% | 2.00 / 3.00 |",
		"| readrandom_cold | pebble-bloom | **300** (270..330) | **250** (200..300) | 1.20× | 0.90..1.65 | 20.0% / 40.0% | 2.00 / 2.40 |",
	)
}
