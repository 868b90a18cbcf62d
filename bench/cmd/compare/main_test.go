package main

import (
	"strings"
	"testing"
)

// A results file is read line by line; blank lines are skipped, and a
// damaged line is refused with its number rather than dropped.
func TestParseResults(t *testing.T) {
	good := `{"engine":"mayfly","workload":"fillseq","rep":1,"ops_per_sec":10}

{"engine":"pebble","workload":"fillseq","rep":1,"ops_per_sec":8}
`
	all, err := parseResults([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Engine != "mayfly" || all[1].OpsPerSec != 8 {
		t.Fatalf("parsed %+v", all)
	}
	if _, err := parseResults([]byte(good + `{"engine":`)); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("damaged line 4: err = %v", err)
	}
	if _, err := parseResults([]byte("\n \n")); err == nil {
		t.Fatal("a file without results was accepted")
	}
}
