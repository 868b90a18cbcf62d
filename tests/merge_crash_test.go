package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// Crash tests of merge operands in the WAL (RFC 0010): what a synced merge
// or Add acknowledged survives a power loss, with its window's deadline,
// also on top of operands already in tables; unsynced batches of operands
// are all-or-nothing and a prefix of the commit order.

func counter(n int64) string { return string(mayfly.EncodeInt64(n)) }

func TestCrashMerges(t *testing.T) {
	e := newMemEnv(t, func(o *mayfly.Options) { o.MergeOperator = mayfly.Int64Add })
	db := e.db
	hour := mayfly.ExpireAfter(time.Hour)
	// Operands in a table, then more in the WAL on top of them.
	must(t, db.Merge([]byte("hits"), mayfly.EncodeInt64(2), hour))
	must(t, db.Flush())
	e.clk.Advance(time.Second)
	b := db.NewBatch()
	must(t, b.AddBlind([]byte("hits"), 3, hour))
	must(t, b.Put([]byte("other"), []byte("o")))
	must(t, b.AddBlind([]byte("fresh"), 7, mayfly.NoExpiry()))
	must(t, b.Write(mayfly.Sync))
	if n, err := db.Add([]byte("hits"), 10, hour); err != nil || n != 15 {
		t.Fatalf("Add = %d, %v; want 15", n, err)
	}
	must(t, db.FlushWAL(true))

	// Unsynced batches of 5 operands each: a prefix survives, whole.
	for i := range 5 {
		e.clk.Advance(time.Second)
		b := db.NewBatch()
		for j := range 5 {
			must(t, b.AddBlind([]byte(fmt.Sprintf("u%d-%d", i, j)), int64(j+1), hour))
		}
		must(t, b.Write(mayfly.NoSync))
	}
	e.crashReopen()

	wantValue(t, e.db, "hits", counter(15))
	wantTTL(t, e.db, "hits", time.Hour-6*time.Second) // the window of the first operand
	wantValue(t, e.db, "fresh", counter(7))
	wantValue(t, e.db, "other", "o")
	checkBatchesAtomic(t, e.db, 5, 5)
	for i := range 5 {
		if v, err := e.db.Get([]byte(fmt.Sprintf("u%d-4", i))); err == nil && string(v) != counter(5) {
			t.Fatalf("u%d-4 = %x after the crash, want 5", i, v)
		}
	}
	// The counters go on from their recovered state.
	if n, err := e.db.Add([]byte("hits"), 1, hour); err != nil || n != 16 {
		t.Fatalf("Add after the crash = %d, %v; want 16", n, err)
	}
}
