package main

import (
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/bench"
)

func TestYCSBTablesGoals(t *testing.T) {
	x := func(e, w string, ops, writeP99, writeMax float64) bench.Result {
		return bench.Result{Engine: e, Workload: w, Rep: 1, OpsPerSec: ops, MBPerSec: ops / 1e3,
			Extra: map[string]float64{"update_ops": 1, "update_p50_us": 5, "update_p99_us": writeP99,
				"update_max_us": writeMax, "write_max_us": writeMax}}
	}
	all := []bench.Result{
		x("mayfly", "ycsb_a", 300, 90, 60_000), x("pebble", "ycsb_a", 100, 30, 900),
		x("mayfly", "fillrandom_v4096", 50, 0, 0), x("pebble", "fillrandom_v4096", 100, 0, 0),
	}
	wls := []string{"ycsb_a", "fillrandom_v4096"}
	r := buildReport(all, []string{"mayfly", "pebble"}, wls, bench.Params{}, 0, "results/r.jsonl")
	for _, want := range []string{
		"| ycsb_a | mayfly | 300 | 3.00x | — | 5 / 90 / 60000 |",
		"write p99 3.0x pebble (≤ 2x): **no**; max write 60.0 ms (≤ 50 ms): **no**",
		"| 4096 | 0 | 50, 0.1 MB/s | 100, 0.1 MB/s | 0.50x | **no** |",
	} {
		if !strings.Contains(r.table, want) {
			t.Errorf("report lacks %q:\n%s", want, r.table)
		}
	}
}

func TestWorkloadListAddsSweep(t *testing.T) {
	defer func(w, v string) { *workloads, *valSizes = w, v }(*workloads, *valSizes)
	*workloads, *valSizes = "ycsb_load", "100, 65536"
	got, err := workloadList()
	if err != nil || strings.Join(got, ",") != "ycsb_load,fillrandom_v100,fillrandom_v65536" {
		t.Fatalf("workloadList = %v, %v", got, err)
	}
	*valSizes = "100,0"
	if _, err := workloadList(); err == nil {
		t.Fatal("-valuesizes 100,0 accepted")
	}
}
