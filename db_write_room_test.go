package mayfly

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

// TestRotationUnderConcurrentWritersLosesNothing rotates small memtables
// (and forces rotations with Flush) while writers commit, then reopens: a
// memtable frozen or flushed while a writer was still applying its batch
// would lose that batch's rows once its WAL segment is deleted, or panic
// on a write after Freeze.
func TestRotationUnderConcurrentWritersLosesNothing(t *testing.T) {
	dir, clk := t.TempDir(), clock.NewManual(epoch)
	small := func(o *Options) { o.MemtableSize = 64 << 10 }
	db := openTestDB(t, dir, clk, small)
	const writers, perWriter = 4, 1500
	val := bytes.Repeat([]byte("v"), 100)
	// The last writer forces a rotation now and then.
	runWriters(t, writers+1, perWriter, func(w, i int) error {
		if w == writers {
			if i%75 == 0 {
				return db.Flush()
			}
			return nil
		}
		return db.Put(fmt.Appendf(nil, "w%d-%05d", w, i), val)
	})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, small)
	defer db.Close()
	for w := range writers {
		for i := range perWriter {
			key := fmt.Appendf(nil, "w%d-%05d", w, i)
			if v, err := db.Get(key); err != nil || !bytes.Equal(v, val) {
				t.Fatalf("%s after reopen: %q, %v", key, v, err)
			}
		}
	}
}

// TestRotationWaitsForLoggedBatches logs a batch without applying it and
// rotates the memtable meanwhile, as the next group's leader may: the
// rotation must wait (it becomes the publish queue's drainer) until the
// batch is applied, else the batch would go into a memtable already frozen
// or flushed. The row then survives a flush and a reopen.
func TestRotationWaitsForLoggedBatches(t *testing.T) {
	dir, clk := t.TempDir(), clock.NewManual(epoch)
	// Not closed on failure: Close would wait for the unapplied batch.
	db := openTestDB(t, dir, clk, nil)
	b := db.NewBatch()
	defer b.Close()
	must(t, b.Put([]byte("k"), []byte("v")))
	g := &commitWaiter{batch: b}
	db.commitMu.Lock()
	if err := db.commitGroup([]*commitWaiter{g}); err != nil || g.mem == nil {
		db.commitMu.Unlock()
		t.Fatalf("commitGroup: %v, logged %v", err, g.mem != nil)
	}
	rotated := make(chan error, 1)
	go func() {
		rotated <- db.rotateMemtable()
		db.commitMu.Unlock()
	}()
	for waiting := false; !waiting; {
		select {
		case err := <-rotated:
			t.Fatalf("the memtable rotated (err %v) while a batch logged to it was not applied", err)
		default:
			runtime.Gosched()
		}
		db.pub.mu.Lock()
		waiting = db.pub.drain != nil
		db.pub.mu.Unlock()
	}
	must(t, db.applyLogged(g))
	must(t, <-rotated)
	must(t, db.Flush())
	db = reopen(t, db, dir, clk)
	mustGet(t, db, "k", "v")
}

// TestActiveMemtableBoundedWhileFlushesWait: while MaxImmutableMemtables
// frozen memtables wait for a flush that cannot finish, writes stall once
// the active memtable holds a quarter of MemtableSize (lastMemtableDiv),
// not MemtableSize:
// at most 2 + 1/lastMemtableDiv memtables are alive at the peak of a load
// that outruns its flushes. Every row written reads back once the flushes
// may go on.
func TestActiveMemtableBoundedWhileFlushesWait(t *testing.T) {
	gate := &gatedStorage{Storage: storage.NewMem(), open: make(chan struct{})}
	stalled := make(chan struct{})
	var once sync.Once
	const memSize = 64 << 10
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = gate
		o.MemtableSize = memSize
		o.MaxImmutableMemtables = 2
		o.DisableAutoCompaction = true
		o.EventListener = &EventListener{WriteStallBegin: func(StallInfo) { once.Do(func() { close(stalled) }) }}
	})
	val := bytes.Repeat([]byte{'v'}, 200)
	const rows = 1200 // about 4 memtables: more than the flushes can hold back
	done := make(chan error, 1)
	go func() {
		for i := range rows {
			if err := db.Put(fmt.Appendf(nil, "k%06d", i), val); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	<-stalled
	db.mu.Lock()
	frozen, active := len(db.imm), db.mem.Size()
	db.mu.Unlock()
	if frozen != 2 {
		t.Errorf("stalled with %d frozen memtables, want 2", frozen)
	}
	// The stall comes at the first write that finds the active memtable
	// at or past the bound: it holds the bound plus at most one row.
	// The bound is a quarter of MemtableSize (lastMemtableDiv), written
	// out here so that a change of policy shows.
	row := int64(len(val) + 128) // value, key and per-row overheads of Size
	if bound := int64(memSize / 4); active < bound || active > bound+row {
		t.Errorf("stalled with an active memtable of %d bytes, want %d to %d", active, bound, bound+row)
	}
	close(gate.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		mustGet(t, db, fmt.Sprintf("k%06d", i), string(val))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
