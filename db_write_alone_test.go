package mayfly

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// TestUnsyncedWriteNeedsNoLeader: an unsynced blind write logs itself: it
// completes, visible, while a group leader is marked running that never
// runs (a queued writer would wait for it), and it leaves the queue empty.
// A synced write still queues for a leader.
func TestUnsyncedWriteNeedsNoLeader(t *testing.T) {
	// Not closed on failure: Close would wait for the stuck writer.
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	db.queueMu.Lock()
	db.leading = true // a leader that never comes
	db.queueMu.Unlock()
	done := make(chan error, 1)
	go func() { done <- db.Put([]byte("k"), []byte("v")) }()
	mustReturn(t, done, "an unsynced Put waits for a group leader")
	mustGet(t, db, "k", "v")
	db.queueMu.Lock()
	queued := len(db.queue)
	db.queueMu.Unlock()
	if queued != 0 {
		t.Fatalf("%d writers queued after an unsynced Put, want 0", queued)
	}
	synced := make(chan error, 1)
	go func() { synced <- db.PutWith([]byte("s"), []byte("v"), TTL{}, &WriteOptions{Sync: true}) }()
	for {
		db.queueMu.Lock()
		queued = len(db.queue)
		db.queueMu.Unlock()
		if queued == 1 {
			break
		}
		select {
		case err := <-synced:
			t.Fatalf("a synced Put returned %v without a leader", err)
		default:
			runtime.Gosched()
		}
	}
	// Lead its group as a promoted waiter would.
	db.queueMu.Lock()
	w := db.queue[0]
	db.queueMu.Unlock()
	w.release(waiterLead)
	must(t, <-synced)
	mustGet(t, db, "s", "v")
	must(t, db.Close())
}

// TestWriterAppliesEarlierUnstartedBatch: a writer whose batch is applied
// but waits for publication behind an earlier logged batch whose writer has
// not started it (descheduled right after logging) applies that batch
// itself and returns once both are published; the earlier writer, when it
// runs at last, finds its batch applied and published, and nothing is
// applied twice.
func TestWriterAppliesEarlierUnstartedBatch(t *testing.T) {
	// Not closed on failure: Close would wait for the stuck writer.
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	early, late := logTwoAlone(t, db)
	done := make(chan error, 1)
	go func() { done <- db.applyLogged(late) }()
	mustReturn(t, done, "a writer waits for an earlier logged batch whose writer does not run")
	if got := db.visibleSeq.Load(); got != late.last {
		t.Fatalf("visible sequence %d, want the later batch's last %d", got, late.last)
	}
	mustGet(t, db, "k0", "v")
	mustGet(t, db, "k1", "v")
	m := db.Metrics()
	if m.BatchesAppliedByOthers != 1 {
		t.Fatalf("BatchesAppliedByOthers = %d, want 1", m.BatchesAppliedByOthers)
	}
	must(t, db.applyLogged(early)) // the earlier writer runs at last
	if got := db.Metrics().RowsWritten; got != m.RowsWritten {
		t.Fatalf("rows written %d after the earlier writer ran, want %d", got, m.RowsWritten)
	}
	must(t, db.Close())
}

// TestHelpedWriterWaitsForPublication: when another writer has claimed a
// self-logged batch and is still applying it, the batch's own writer, once
// it runs, waits until that writer publishes the batch; it does not return
// while its batch may still be going into the memtable (its caller could
// then reuse the batch).
func TestHelpedWriterWaitsForPublication(t *testing.T) {
	// Not closed on failure: Close would wait for the stuck writers.
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	early, late := logTwoAlone(t, db)
	earlyDone := make(chan error, 1)
	returnedEarly := false
	db.pub.beforeApply = func(b *Batch) {
		if b != early.batch {
			return
		}
		// The later writer is applying the earlier batch for it: now the
		// earlier writer runs.
		go func() { earlyDone <- db.applyLogged(early) }()
		for early.state.Load() != waiterParked {
			select {
			case err := <-earlyDone:
				must(t, err)
				returnedEarly = true
				return
			default:
				runtime.Gosched()
			}
		}
	}
	lateDone := make(chan error, 1)
	go func() { lateDone <- db.applyLogged(late) }()
	mustReturn(t, lateDone, "the later writer did not return")
	if returnedEarly {
		t.Fatal("the earlier writer returned while another writer was still applying its batch")
	}
	mustReturn(t, earlyDone, "the earlier writer was not released once its batch was published")
	mustGet(t, db, "k0", "v")
	db.pub.beforeApply = nil
	must(t, db.Close())
}

// logTwoAlone logs two one-row batches (keys k0 and k1) as commitAlone
// does, and returns their waiters before either writer applies its batch.
func logTwoAlone(t *testing.T, db *DB) (early, late *commitWaiter) {
	t.Helper()
	ws := make([]*commitWaiter, 2)
	for i := range ws {
		b := db.NewBatch()
		t.Cleanup(func() { b.Close() })
		must(t, b.Put(fmt.Appendf(nil, "k%d", i), []byte("v")))
		ws[i] = &commitWaiter{batch: b, wake: make(chan struct{}, 1)}
		must(t, db.logAlone(ws[i]))
		if ws[i].done || ws[i].mem == nil {
			t.Fatalf("batch %d was not logged: done %v, err %v", i, ws[i].done, ws[i].err)
		}
	}
	return ws[0], ws[1]
}

// mustReturn fails the test with stuck unless a call's error arrives on
// done within 10 s, and fails it if that error is not nil.
func mustReturn(t *testing.T, done <-chan error, stuck string) {
	t.Helper()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal(stuck)
	}
}
