package mayfly

import (
	"errors"
	"testing"

	"github.com/mayflydb/mayfly/clock"
)

// TestRefreshOnWriterIsRefused: a writer has no follower state; Refresh
// on it fails with ErrInvalidOptions and reports no change.
func TestRefreshOnWriterIsRefused(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	if db.follow != nil {
		t.Fatal("a writer has follower state")
	}
	changed, err := db.Refresh()
	if changed || !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Refresh on a writer: %v, %v; want false, ErrInvalidOptions", changed, err)
	}
}

// TestRefreshRefusesAnotherMergeOperator: a read-only handle opened before
// the writer recorded a merge operator refuses a refresh to a manifest
// version recording one it does not have, keeping its view, as Open would;
// a handle with the same operator follows.
func TestRefreshRefusesAnotherMergeOperator(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	w := openTestDB(t, dir, clk, nil)
	if err := w.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro := map[string]*DB{}
	for name, op := range map[string]MergeOperator{"none": nil, "max": Int64Max, "add": Int64Add} {
		ro[name] = openTestDB(t, dir, clk, func(o *Options) { o.ReadOnly, o.MergeOperator = true, op })
		defer ro[name].Close()
	}
	w = openTestDB(t, dir, clk, func(o *Options) { o.MergeOperator = Int64Add })
	defer w.Close()
	if err := w.Merge([]byte("c"), EncodeInt64(3), NoExpiry()); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil { // a manifest version recording Int64Add
		t.Fatal(err)
	}
	for _, name := range []string{"none", "max"} {
		if changed, err := ro[name].Refresh(); changed || !errors.Is(err, ErrMergeOperator) {
			t.Fatalf("Refresh of the handle with operator %s: %v, %v; want false, ErrMergeOperator", name, changed, err)
		}
		mustGet(t, ro[name], "a", "1")
	}
	if changed, err := ro["add"].Refresh(); err != nil || !changed {
		t.Fatalf("Refresh of the handle with Int64Add: %v, %v", changed, err)
	}
	if v, err := ro["add"].Get([]byte("c")); err != nil || string(v) != string(EncodeInt64(3)) {
		t.Fatalf("counter through the follower: %x, %v", v, err)
	}
}
