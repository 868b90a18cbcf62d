package main

import (
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/bench"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("1000000, 10000000")
	if err != nil || len(got) != 2 || got[0] != 1_000_000 || got[1] != 10_000_000 {
		t.Fatalf("parseSizes: %v, %v", got, err)
	}
	for _, bad := range []string{"", "1e6", "0", "10,-1"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) accepted", bad)
		}
	}
}

// The scale tables show ops/s per size with Mayfly's ratio to Pebble, and
// the amplification of each engine: write amp from the load's
// /proc/self/io figure, space amp from its disk bytes, read amp as device
// bytes per op.
func TestScaleTables(t *testing.T) {
	load := func(e string, ops float64, disk int64) bench.Result {
		return bench.Result{Engine: e, Workload: "load", Num: 1000, ValueSize: 100, OpsPerSec: ops,
			IOWriteAmp: 3.5, DiskBytes: disk, PeakRSS: 50e6}
	}
	read := func(e, w string, ops, ioRead float64) bench.Result {
		return bench.Result{Engine: e, Workload: w, Num: 1000, ValueSize: 100, OpsPerSec: ops, Ops: 100,
			Extra: map[string]float64{"io_read_bytes": ioRead}}
	}
	all := []bench.Result{
		load("mayfly", 300e3, 116_000), load("pebble", 200e3, 232_000),
		read("mayfly", "readrandom_cold", 150e3, 409_600), read("pebble", "readrandom_cold", 100e3, 819_200),
		{Engine: "pebble", Workload: "readmissing", Num: 1000, Error: "killed"}, // no figure: a dash
	}
	out := scaleTables(aggregateScale(all), []string{"mayfly", "pebble"}, []int{1000})
	wantAll(t, out,
		"| 1.0k | fillrandom | 300.0k | 200.0k | 1.50 |",
		"| 1.0k | readrandom | 150.0k | 100.0k | 1.50 |",
		"| 1.0k | readmissing | — | — | — |",
		"| 1.0k | mayfly | 3.50 | — | 1.00 | 4096 | — | — | — | 50 |",
		"| 1.0k | pebble | 3.50 | — | 2.00 | 8192 |",
	)
}

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

// The ttlscale table reports an engine within the bound as "none" and one
// without an expired-bytes figure as such, and the main table leaves
// ttlscale out.
func TestTTLScaleTable(t *testing.T) {
	all := []bench.Result{
		{Engine: "mayfly", Workload: "ttlscale", OpsPerSec: 20e3, P99us: 80, Extra: map[string]float64{
			"sim_hours": 30, "space_amp_max": 1.1, "space_amp_final": 0.9, "expired_excess_max_bytes": -2e6,
			"read_p99_window_median_us": 70, "read_p99_window_max_us": 200}},
		{Engine: "pebble", Workload: "ttlscale", OpsPerSec: 20e3, P99us: 80, Extra: map[string]float64{
			"expired_excess_max_bytes": 0}},
		{Engine: "badger", Workload: "ttlscale", OpsPerSec: 20e3, P99us: 300, Extra: map[string]float64{
			"sim_hours": 30, "space_amp_max": 5, "space_amp_final": 4}},
	}
	r := buildReport(all, []string{"mayfly", "pebble", "badger"}, []string{"ttlscale"}, bench.Params{}, 0, "x.jsonl")
	wantAll(t, r.table,
		"| mayfly | 20.0k | 30.0 | 1.10 | 0.90 | none (2.0 MB under) | 80 | 70 / 200 |",
		"| none (0.0 MB under) |",
		"| badger | 20.0k | 30.0 | 5.00 | 4.00 | — (no engine figure) | 300 | 0 / 0 |",
	)
	if strings.Contains(r.table, "| ttlscale | 20.0k") {
		t.Errorf("main table lists ttlscale:\n%s", r.table)
	}
}

// wantAll fails t for every line of want that text lacks.
func wantAll(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q:\n%s", w, text)
		}
	}
}
