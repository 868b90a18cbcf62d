package mayfly

import (
	"errors"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// peekThenWrite builds a PutIfAbsent of key, peeks at key, runs between,
// then writes the batch: the commit must judge the state after between.
func peekThenWrite(t *testing.T, db *DB, key string, between func()) error {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	must(t, b.PutIfAbsent([]byte(key), []byte("new"), NoExpiry()))
	must(t, db.peekKey([]byte(key), false, &b.cond.peek))
	between()
	return b.Write(nil)
}

// TestPeekedStateRechecked: a read taken before the pipeline stands for the
// key's state only while nothing can have changed it: a write after the
// read (in the same memtable, or moved on by a flush) and an expiry in
// between are seen by the commit.
func TestPeekedStateRechecked(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()

	// A write after the read, in the active memtable.
	err := peekThenWrite(t, db, "a", func() { must(t, db.Put([]byte("a"), []byte("v"))) })
	if !errors.Is(err, ErrConditionFailed) {
		t.Fatalf("PutIfAbsent after a concurrent put: %v, want ErrConditionFailed", err)
	}
	mustGet(t, db, "a", "v")

	// A write after the read, then a rotation and flush.
	err = peekThenWrite(t, db, "b", func() {
		must(t, db.Put([]byte("b"), []byte("v")))
		must(t, db.Flush())
	})
	if !errors.Is(err, ErrConditionFailed) {
		t.Fatalf("PutIfAbsent after a concurrent put and a flush: %v, want ErrConditionFailed", err)
	}
	mustGet(t, db, "b", "v")

	// A key live at the read that expires before the commit.
	must(t, db.PutTTL([]byte("c"), []byte("old"), ExpireAfter(time.Second)))
	err = peekThenWrite(t, db, "c", func() { clk.Advance(time.Second + time.Millisecond) })
	if err != nil {
		t.Fatalf("PutIfAbsent of a key that expired after the read: %v", err)
	}
	mustGet(t, db, "c", "new")
}

// TestConditionFailedOnRead: a single-key call whose condition a read
// already finds false returns without writing anything.
func TestConditionFailedOnRead(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	must(t, db.Put([]byte("k"), []byte("v")))
	m0 := db.Metrics()
	if ok, err := db.PutIfAbsent([]byte("k"), []byte("x"), NoExpiry()); ok || err != nil {
		t.Fatalf("PutIfAbsent of a live key = %v, %v", ok, err)
	}
	if _, err := db.GetDel([]byte("missing")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetDel of a missing key: %v", err)
	}
	if ok, err := db.Expire([]byte("missing"), ExpireAfter(time.Second), ExpireAlways); ok || err != nil {
		t.Fatalf("Expire of a missing key = %v, %v", ok, err)
	}
	m1 := db.Metrics()
	if n := m1.ConditionsFailedOnRead - m0.ConditionsFailedOnRead; n != 3 {
		t.Fatalf("%d calls failed on the read, want 3", n)
	}
	if m1.WALBytes != m0.WALBytes || m1.BatchesCommitted != m0.BatchesCommitted {
		t.Fatalf("failed conditions wrote %d WAL bytes, %d batches", m1.WALBytes-m0.WALBytes, m1.BatchesCommitted-m0.BatchesCommitted)
	}
	mustGet(t, db, "k", "v")
}
