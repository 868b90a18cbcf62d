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

func TestCachedAtStart(t *testing.T) {
	if got := cachedAtStart([]bench.Result{{}}); got != "not recorded by this run" {
		t.Errorf("without the figure: %q", got)
	}
	all := []bench.Result{{Extra: map[string]float64{"page_cache_bytes_at_start": 0}},
		{Extra: map[string]float64{"page_cache_bytes_at_start": 2e6}}, {}}
	if got := cachedAtStart(all); got != "at most 2.0 MB" {
		t.Errorf("with it: %q", got)
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
