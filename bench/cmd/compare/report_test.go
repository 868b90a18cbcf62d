package main

import (
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/bench"
)

// The command of record leaves out the flags of a rebuild, in either form.
func TestCommandOfDropsRebuildFlags(t *testing.T) {
	got := commandOf([]string{"-from", "results/r.jsonl", "-num", "1000000", "-total=10m21s",
		"-machine", "2 cores", "--commit=fe31a54", "-reps", "3"})
	want := "cd bench && go run ./cmd/compare -num 1000000 -reps 3"
	if got != want {
		t.Fatalf("commandOf = %q, want %q", got, want)
	}
}

func TestRunTimeFromResultsName(t *testing.T) {
	if got, want := runTime("results/results-20261126T234704Z.jsonl"), "started 2026-11-26 23:47 UTC"; got != want {
		t.Fatalf("runTime = %q, want %q", got, want)
	}
	if got := runTime("mine.jsonl"); !strings.Contains(got, "unknown") {
		t.Fatalf("runTime of a name without a time = %q", got)
	}
}

// A rebuilt page names the results file, and the machine and commit given
// for the run rather than the rebuilding machine's.
func TestMarkdownRebuiltNamesItsRun(t *testing.T) {
	defer func(f, h, c string) { *from, *fromHost, *fromRev = f, h, c }(*from, *fromHost, *fromRev)
	*from, *fromHost, *fromRev = "results/results-20261126T234704Z.jsonl", "2 cores (test machine)", "fe31a54"
	all := []bench.Result{
		{Engine: "mayfly", Workload: "fillseq", Rep: 1, OpsPerSec: 20},
		{Engine: "pebble", Workload: "fillseq", Rep: 1, OpsPerSec: 10},
	}
	r := buildReport(all, []string{"mayfly", "pebble"}, []string{"fillseq"}, bench.Params{}, 0, *from)
	md := r.markdown(nil, "../docs/benchmarks-comparison.md", "../docs/img")
	for _, want := range []string{
		"**Results file:** `bench/results/results-20261126T234704Z.jsonl`",
		"**Machine:** 2 cores (test machine)",
		"**Mayfly source:** commit fe31a54",
		"started 2026-11-26 23:47 UTC",
		"| fillseq | 20 | 10 | 2.00x |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q:\n%s", want, md)
		}
	}
}
