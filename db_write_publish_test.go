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

// TestUnclaimedBefore lists, in queue order, the batches before w that are
// neither applied nor claimed nor no-ops and whose writers were released to
// apply them, up to the buffer's capacity, and nothing from w on.
func TestUnclaimedBefore(t *testing.T) {
	var q publishQueue
	mk := func(last uint64, claimed, applied, noop bool) *commitWaiter {
		w := &commitWaiter{last: last, applied: applied, noop: noop}
		if !claimed && !noop {
			w.claim.Store(last)
		}
		w.state.Store(waiterApply)
		return w
	}
	a := mk(1, false, false, false) // unclaimed: listed
	b := mk(2, true, false, false)  // its writer is applying it
	c := mk(3, false, true, false)  // applied (claim left over): not listed
	d := mk(0, false, false, true)  // a no-op waiter
	e := mk(4, false, false, false) // unclaimed: listed
	r := mk(5, false, false, false) // unclaimed, but not released to apply
	r.state.Store(waiterWaiting)
	w := mk(6, true, true, false)   // the caller
	f := mk(7, false, false, false) // after w: never listed
	q.push([]*commitWaiter{a, b, c, d, e, r, w, f})
	got := q.unclaimedBefore(w, make([]helpRef, 0, 8))
	if len(got) != 2 || got[0] != (helpRef{a, 1}) || got[1] != (helpRef{e, 4}) {
		t.Fatalf("unclaimedBefore = %v, want a and e", got)
	}
	if got := q.unclaimedBefore(w, make([]helpRef, 0, 1)); len(got) != 1 || got[0].w != a {
		t.Fatalf("with room for one: %v, want a", got)
	}
}
