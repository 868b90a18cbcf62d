package mayfly

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/clock"
)

// TestRecoveryKeepsTombstoneOverEarlierMemtable: recovery flushes several
// memtables before recording any of their tables, so a later one must not
// be treated as the bottom: its tombstone still hides the value an earlier
// one holds.
func TestRecoveryKeepsTombstoneOverEarlierMemtable(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	db := openTestDB(t, dir, clk, func(o *Options) { o.DisableAgeRotation = true })
	if err := db.Put([]byte("k"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if err := db.Put([]byte(fmt.Sprintf("f%04d", i)), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Delete([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Replayed into 4 KiB memtables: the put and the delete land in
	// different ones.
	db = openTestDB(t, dir, clk, func(o *Options) { o.MemtableSize = 4 << 10 })
	defer db.Close()
	if m := db.Metrics(); m.Levels[0].Files < 2 {
		t.Fatalf("recovery wrote %d tables, want several", m.Levels[0].Files)
	}
	if v, err := db.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key after recovery: %q, %v", v, err)
	}
}
