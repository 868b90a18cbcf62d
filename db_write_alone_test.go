package mayfly

import (
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
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("an unsynced Put waits for a group leader")
	}
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
