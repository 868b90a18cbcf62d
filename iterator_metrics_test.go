package mayfly

import (
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// TestIteratorRowsReadMetric checks that an iterator's rows reach the
// RowsRead metric: in batches while it is open (never more than it
// returned, never more than a batch behind) and all of them by Close.
func TestIteratorRowsReadMetric(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(time.UnixMilli(1_000_000)), nil)
	defer db.Close()
	const n = 3*rowsReadBatch + 17
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	before := db.Metrics().RowsRead
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := uint64(0)
	for ok := it.First(); ok; ok = it.Next() {
		seen++
		got := db.Metrics().RowsRead - before
		if got > seen || seen-got >= rowsReadBatch {
			t.Fatalf("after %d rows the metric counts %d", seen, got)
		}
	}
	// Moving backwards counts too.
	for ok := it.Last(); ok; ok = it.Prev() {
		seen++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if seen != 2*n {
		t.Fatalf("iterated %d rows, want %d", seen, 2*n)
	}
	if got := db.Metrics().RowsRead - before; got != seen {
		t.Fatalf("after Close the metric counts %d rows, want %d", got, seen)
	}
}
