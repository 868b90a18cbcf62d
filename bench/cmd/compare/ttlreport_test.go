package main

import (
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/bench"
)

// The TTL table holds Mayfly to both ratios of a target, and the main table
// leaves the TTL workloads out.
func TestTTLTablesTargets(t *testing.T) {
	all := []bench.Result{
		{Engine: "mayfly", Workload: "session", OpsPerSec: 300},
		{Engine: "pebble", Workload: "session", OpsPerSec: 150},
		{Engine: "badger", Workload: "session", OpsPerSec: 60},
		{Engine: "mayfly", Workload: "onetime", OpsPerSec: 300},
		{Engine: "pebble", Workload: "onetime", OpsPerSec: 350},
		{Engine: "badger", Workload: "onetime", OpsPerSec: 50},
		{Engine: "mayfly", Workload: "touchwal", OpsPerSec: 1e6, Ops: 1000,
			Extra: map[string]float64{"touch_put_wal_ratio": 0.2, "wal_bytes_per_put": 150, "wal_bytes_per_touch": 30, "touches_coalesced": 400}},
	}
	r := buildReport(all, []string{"mayfly", "pebble", "badger"}, []string{"session", "onetime", "touchwal"}, bench.Params{}, 0, "x.jsonl")
	for _, want := range []string{
		"| 5.00x | 2.00x | ≥ 3x badger, ≥ 1.5x pebble | yes |",
		"| 6.00x | 0.86x | ≥ 4x badger, ≥ 1.2x pebble | **no** |",
		"touch WAL bytes ≤ 0.1 of a put | **no** |",
		"| mayfly | 150.0 | 30.000 | 0.2000 | 600 of 1000 | 50.0 |",
	} {
		if !strings.Contains(r.table, want) {
			t.Errorf("table lacks %q:\n%s", want, r.table)
		}
	}
	if strings.Contains(r.table, "mayfly / pebble | target | met |\n|---|---:|---:|---:|---:|---|---|") {
		t.Errorf("main table printed for TTL workloads only:\n%s", r.table)
	}
}
