package mayfly

import (
	"context"
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/clock"
)

func putString(t *testing.T, db *DB, k, v string) {
	t.Helper()
	if err := db.Put([]byte(k), []byte(v)); err != nil {
		t.Fatal(err)
	}
}

// TestGetProbesFiltersTogether checks point reads across more level-0
// tables than find lists on its stack (maxProbedTables), with filters not
// yet loaded (probed one table at a time, loading them) and loaded (probed
// together up front): both give the newest version, skip tables by their
// filters and count those skips, and the same holds after the tables are
// compacted under a newer level-0 table and for a snapshot older than it.
func TestGetProbesFiltersTogether(t *testing.T) {
	const tables = maxProbedTables + 4
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	opts := func(o *Options) {
		o.DisableAutoCompaction = true
		o.L0CompactionThreshold = 100
		o.L0SlowdownWritesThreshold = 200
		o.L0StopWritesThreshold = 200
	}
	db := openTestDB(t, dir, clk, opts)
	for i := range tables {
		putString(t, db, "common", fmt.Sprintf("v%02d", i))
		putString(t, db, fmt.Sprintf("only-%02d", i), fmt.Sprintf("o%02d", i))
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if got := db.Metrics().Levels[0].Files; got != tables {
		t.Fatalf("level 0 holds %d tables, want %d", got, tables)
	}
	check := func(db *DB, pass string) {
		t.Helper()
		before := db.Metrics().BloomNegatives
		mustGet(t, db, "only-00", "o00") // in the oldest table: passes all the others
		// A 1% filter may let one or two of the newer tables through.
		if got := db.Metrics().BloomNegatives - before; got < tables-4 || got > tables-1 {
			t.Fatalf("%s: Get of a key in the oldest of %d tables counted %d filter skips", pass, tables, got)
		}
		mustGet(t, db, "common", fmt.Sprintf("v%02d", tables-1))
		mustGet(t, db, fmt.Sprintf("only-%02d", tables-1), fmt.Sprintf("o%02d", tables-1))
		mustGet(t, db, "absent", "")
	}
	check(db, "filters not loaded")
	check(db, "filters loaded")

	// Reopen (filters unloaded again), compact everything to the bottom,
	// then shadow one key in a new level-0 table.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, opts)
	defer db.Close()
	check(db, "reopened")
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	putString(t, db, "common", "newest")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		mustGet(t, db, "common", "newest")
		mustGet(t, db, "only-00", "o00")
		mustGet(t, snap, "common", fmt.Sprintf("v%02d", tables-1))
	}
}
