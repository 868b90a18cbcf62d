package mayfly

import (
	"errors"
	"fmt"
	"testing"
)

// TestApplyFailureFailsLaterBatches logs two batches in one group and
// makes the first fail to apply (its encoding cut short after logging, as a
// malformed batch would): both writers get the background error, the
// visible sequence number does not move past the first batch's part that
// did go in, nothing is counted as committed, and later writes fail.
func TestApplyFailureFailsLaterBatches(t *testing.T) {
	db, _, _ := condDB(t)
	group := make([]*commitWaiter, 2)
	for i := range group {
		b := db.NewBatch()
		defer b.Close()
		must(t, b.Put(fmt.Appendf(nil, "a%d", i), []byte("v")))
		must(t, b.Put(fmt.Appendf(nil, "b%d", i), []byte("v")))
		group[i] = &commitWaiter{batch: b}
	}
	seq, batches := db.visibleSeq.Load(), db.Metrics().BatchesCommitted
	db.commitMu.Lock()
	err := db.commitGroup(group)
	db.commitMu.Unlock()
	must(t, err)
	group[0].batch.data = group[0].batch.data[:len(group[0].batch.data)-2]
	for i, g := range group {
		if err := db.applyLogged(g); !errors.Is(err, ErrBackground) {
			t.Fatalf("batch %d: %v, want ErrBackground", i, err)
		}
	}
	if got := db.visibleSeq.Load(); got != seq {
		t.Fatalf("visible sequence %d after the failed apply, want %d", got, seq)
	}
	if got := db.Metrics().BatchesCommitted; got != batches {
		t.Fatalf("batches committed %d, want %d", got, batches)
	}
	if _, err := db.Get([]byte("a0")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a row of the failed batch: %v, want ErrNotFound", err)
	}
	if err := db.Put([]byte("c"), nil); !errors.Is(err, ErrBackground) {
		t.Fatalf("a later write: %v, want ErrBackground", err)
	}
}
