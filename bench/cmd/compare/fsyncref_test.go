package main

import (
	"math"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/bench"
)

func syncRun(rep int, engine string, ops float64) bench.Result {
	return bench.Result{Engine: engine, Workload: "fillsync", Rep: rep, OpsPerSec: ops}
}

func refRun(rep int, forEngine, when string, ops float64) bench.Result {
	return bench.Result{Engine: "disk", Workload: "fdatasync", Rep: rep, OpsPerSec: ops, RefFor: forEngine, RefWhen: when}
}

// Each fillsync run is compared with the references taken next to it, not
// with another engine's or another repetition's.
func TestSyncSharesAdjacent(t *testing.T) {
	all := []bench.Result{
		refRun(1, "mayfly", "before", 4000), syncRun(1, "mayfly", 3000), refRun(1, "mayfly", "after", 2000),
		refRun(1, "pebble", "before", 8000), syncRun(1, "pebble", 2000), refRun(1, "pebble", "after", 8000),
		refRun(2, "mayfly", "before", 6000), syncRun(2, "mayfly", 4800), refRun(2, "mayfly", "after", 6000),
		refRun(2, "pebble", "before", 5000), syncRun(2, "pebble", 1000), refRun(2, "pebble", "after", 5000),
		refRun(3, "mayfly", "before", 5000), syncRun(3, "mayfly", 4500), refRun(3, "mayfly", "after", 5000),
	}
	// CPU per op where recorded: the run's, and its references' mean.
	all[12].Extra, all[12].P50us = map[string]float64{"cpu_us_per_op": 40}, 100
	all[13].Extra, all[13].P50us = map[string]float64{"cpu_us_per_op": 100}, 200
	all[14].Extra, all[14].P50us = map[string]float64{"cpu_us_per_op": 60}, 140
	r := buildReport(all, []string{"mayfly", "pebble"}, []string{"fillsync"}, bench.Params{}, 0, "x.jsonl")
	want := map[[2]any]float64{
		{1, "mayfly"}: 1.0, {2, "mayfly"}: 0.8, {3, "mayfly"}: 0.9,
		{1, "pebble"}: 0.25, {2, "pebble"}: 0.2,
	}
	ss := r.syncShares()
	if len(ss) != len(want) {
		t.Fatalf("got %d shares, want %d: %+v", len(ss), len(want), ss)
	}
	for _, s := range ss {
		w, ok := want[[2]any{s.rep, s.engine}]
		if !ok || math.Abs(s.share-w) > 1e-9 {
			t.Errorf("rep %d %s: share %v, want %v", s.rep, s.engine, s.share, w)
		}
	}
	if m, ok := medianShare(ss, "mayfly"); !ok || math.Abs(m-0.9) > 1e-9 {
		t.Errorf("mayfly median share %v, %v; want 0.9", m, ok)
	}
	if m, ok := medianShare(ss, "pebble"); !ok || math.Abs(m-0.225) > 1e-9 {
		t.Errorf("pebble median share %v, %v; want 0.225", m, ok)
	}
	// Mayfly 4.5k over Pebble 1.5k (medians) = 3x and a 90% median share:
	// both parts of the target are met.
	if !strings.Contains(r.table, "90% of the adjacent fdatasync") || !strings.Contains(r.table, "| yes |") {
		t.Errorf("main table does not report the adjacent share as met:\n%s", r.table)
	}
	for _, s := range []string{"| 1 | mayfly | 3.0k | 4.0k | 2.0k | 100% | 0% | — |", "per rep 100%, 80%, 90%", "| 3 | mayfly | 4.5k | 5.0k | 5.0k | 90% | 60% | 100 (50) |",
		"differ by 0% of their mean at the median, 67% at most"} {
		if !strings.Contains(r.table, s) {
			t.Errorf("report lacks %q:\n%s", s, r.table)
		}
	}
}

// A share under 80% fails the target even when the ratio to Pebble holds.
func TestSyncShareMiss(t *testing.T) {
	all := []bench.Result{
		refRun(1, "mayfly", "before", 5000), syncRun(1, "mayfly", 3000), refRun(1, "mayfly", "after", 5000),
		refRun(1, "pebble", "before", 5000), syncRun(1, "pebble", 2000), refRun(1, "pebble", "after", 5000),
	}
	r := buildReport(all, []string{"mayfly", "pebble"}, []string{"fillsync"}, bench.Params{}, 0, "x.jsonl")
	if !strings.Contains(r.table, "60% of the adjacent fdatasync") || !strings.Contains(r.table, "| **no** |") {
		t.Errorf("main table does not report the 60%% share as a miss:\n%s", r.table)
	}
}

// Results files from before adjacent references (one reference per
// repetition, no ref_for) still give a share: the median run's over the
// median reference, and no per-run table.
func TestSyncShareOldResults(t *testing.T) {
	all := []bench.Result{
		{Engine: "disk", Workload: "fdatasync", Rep: 1, OpsPerSec: 4000, Extra: map[string]float64{"growing_file_ops_per_sec": 3000}},
		syncRun(1, "mayfly", 3600), syncRun(1, "pebble", 3000),
		{Engine: "disk", Workload: "fdatasync", Rep: 2, OpsPerSec: 6000, Extra: map[string]float64{"growing_file_ops_per_sec": 3000}},
		syncRun(2, "mayfly", 4400), syncRun(2, "pebble", 3000),
	}
	r := buildReport(all, []string{"mayfly", "pebble"}, []string{"fillsync"}, bench.Params{}, 0, "x.jsonl")
	if len(r.syncShares()) != 0 {
		t.Errorf("old results paired with adjacent references: %+v", r.syncShares())
	}
	if !strings.Contains(r.table, "80% of fdatasync") || !strings.Contains(r.table, "| yes |") {
		t.Errorf("old-format share not 4000/5000 = 80%%, met:\n%s", r.table)
	}
	if strings.Contains(r.table, "reference before") {
		t.Errorf("old-format report has a per-run share table:\n%s", r.table)
	}
}
