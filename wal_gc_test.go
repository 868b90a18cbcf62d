package mayfly

import (
	"slices"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
)

// TestWALGCGracePeriod: a segment left below the writer's first one (as a
// fenced writer leaves one) is deleted once ObsoleteFileGracePeriod has
// passed by the DB's clock, never before; the writer's own segment, whose
// rows are not flushed, stays.
func TestWALGCGracePeriod(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	opts := func(o *Options) { o.Storage, o.ObsoleteFileGracePeriod = mem, time.Minute }
	db := openTestDB(t, "", clk, opts)
	if err := db.PutWith([]byte("k"), []byte("v"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "", clk, opts)
	defer db.Close()
	own := logName(db.logNum)
	if db.walGC.first != db.logNum || db.logNum < 2 {
		t.Fatalf("writer's first segment %d, collection floor %d", db.logNum, db.walGC.first)
	}
	leftover := logName(db.walGC.first - 1)
	lw, err := mem.CreateLog(leftover)
	if err != nil {
		t.Fatal(err)
	}
	lw.Write(wal.AppendHeader(nil, db.walGC.first-1))
	lw.Close()
	if err := db.PutWith([]byte("k2"), []byte("v2"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}

	walNames := func() []string {
		t.Helper()
		names, err := mem.List("wal")
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	db.collectWAL() // first sight: the grace period starts
	if !slices.Contains(walNames(), leftover) {
		t.Fatalf("leftover segment deleted before its grace period: %v", walNames())
	}
	clk.Advance(59 * time.Second)
	if db.walGC.due(db.clock.NowMillis()) {
		t.Fatalf("collection due before the grace period passed")
	}
	db.sweepGraceDeletes()
	if !slices.Contains(walNames(), leftover) {
		t.Fatalf("leftover segment deleted before its grace period: %v", walNames())
	}
	clk.Advance(time.Second)
	if !db.walGC.due(db.clock.NowMillis()) {
		t.Fatalf("collection not due once the grace period passed")
	}
	db.sweepGraceDeletes()
	if names := walNames(); !slices.Equal(names, []string{own}) {
		t.Fatalf("WAL after the grace period = %v, want only the writer's own %s", names, own)
	}
	if db.walGC.due(db.clock.NowMillis()) {
		t.Fatalf("collection still due with nothing left to collect")
	}
	mustGet(t, db, "k", "v")
	mustGet(t, db, "k2", "v2")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "", clk, opts)
	defer db.Close()
	mustGet(t, db, "k2", "v2")
}
