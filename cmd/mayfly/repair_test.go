package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepair removes the manifest of a database with rows in tables and in
// the WAL: every command refuses to open it, `mayfly repair` rebuilds it
// with every row, and the database scans as it did before.
func TestRepair(t *testing.T) {
	td := buildTestDB(t)
	dir := copyDB(t, td.dir)
	before := ok(t, "scan", "--dir", dir, "--json")
	if len(scanJSON(t, before)) == 0 {
		t.Fatal("empty scan before the repair")
	}
	if err := os.RemoveAll(filepath.Join(dir, "manifest")); err != nil {
		t.Fatal(err)
	}
	fails(t, exitError, "mayfly repair", "scan", "--dir", dir, "--json")

	var rep repairResult
	if err := json.Unmarshal([]byte(ok(t, "repair", "--json", dir)), &rep); err != nil {
		t.Fatalf("repair --json: %v", err)
	}
	want := uint64(td.tableRows + td.walPuts + td.walDels)
	if rep.RowsKept != want || rep.PreviousManifest != "none" || len(rep.Unreadable) != 0 || rep.WALRecords == 0 {
		t.Fatalf("repair kept %d rows, want %d: %+v", rep.RowsKept, want, rep)
	}
	for _, m := range rep.Moved {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(m.To))); err != nil {
			t.Errorf("%s not moved to %s: %v", m.From, m.To, err)
		}
	}
	if after := ok(t, "scan", "--dir", dir, "--json"); after != before {
		t.Fatalf("scan after repair differs:\nbefore %.300s\nafter  %.300s", before, after)
	}
	for _, l := range manifestJSON(t, dir).Levels[:6] {
		if len(l.Files) != 0 {
			t.Fatalf("repaired tables outside the bottom level: %+v", l)
		}
	}

	// A second repair, in text and with --dir as the other commands take
	// it, keeps every row again.
	out := ok(t, "repair", "--dir", dir)
	if !strings.Contains(out, fmt.Sprintf("holding %d rows", want)) || !strings.Contains(out, "moved") {
		t.Fatalf("repair output: %s", out)
	}
	if after := ok(t, "scan", "--dir", dir, "--json"); after != before {
		t.Fatalf("scan after the second repair differs")
	}
}

func TestRepairUsage(t *testing.T) {
	fails(t, exitUsage, "want the database as --dir DIR or as one DIR argument", "repair")
	fails(t, exitUsage, "want the database as --dir DIR or as one DIR argument", "repair", "--dir", "a", "b")
	fails(t, exitError, "no database at", "repair", "--dir", filepath.Join(t.TempDir(), "missing"))
	fails(t, exitError, "no database at", "repair", filepath.Join(t.TempDir(), "missing"))
}

// TestRepairMergeOperatorFlag: a database whose counters lost their
// manifest is refused by `repair` until --merge-operator names the
// operator; the repaired counters read as before.
func TestRepairMergeOperatorFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ok(t, "add", "--dir", dir, "hits", "5")
	ok(t, "add", "--dir", dir, "hits", "-2")
	if err := os.RemoveAll(filepath.Join(dir, "manifest")); err != nil {
		t.Fatal(err)
	}
	fails(t, exitError, "merge operands", "repair", dir)
	fails(t, exitUsage, "not a built-in operator", "repair", "--merge-operator", "sum", dir)
	ok(t, "repair", "--merge-operator", "mayfly.Int64Add", dir)
	if out := ok(t, "counter", "--dir", dir, "hits"); out != "3\n" {
		t.Fatalf("counter after repair printed %q, want 3", out)
	}
}
