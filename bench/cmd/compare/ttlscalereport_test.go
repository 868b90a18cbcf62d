package main

import (
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/bench"
)

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
