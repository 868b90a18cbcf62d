package mayfly

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// countingClock counts the readings of a manual clock.
type countingClock struct {
	*clock.Manual
	reads atomic.Int64
}

func (c *countingClock) NowMillis() int64 {
	c.reads.Add(1)
	return c.Manual.NowMillis()
}

// TestGetReadsClockOnlyForExpiringRows: Get reads the clock only when the
// row it found has an expiry, and still judges that row at the clock's
// time: visible at its deadline, gone a millisecond later, from the
// memtable and from a table alike.
func TestGetReadsClockOnlyForExpiringRows(t *testing.T) {
	for _, flush := range []bool{false, true} {
		clk := &countingClock{Manual: clock.NewManual(epoch)}
		db, err := Open(t.TempDir(), &Options{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Put([]byte("plain"), []byte("p")); err != nil {
			t.Fatal(err)
		}
		if err := db.PutTTL([]byte("ttl"), []byte("t"), ExpireAfter(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if flush {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		// The count includes the background goroutines' reads (the
		// scheduler wakes after a write), so each check takes the least
		// of a few measurements: the Get's own reads show in every one.
		n := leastReads(clk, func() {
			for range 3 {
				mustGet(t, db, "plain", "p")
			}
		})
		if n != 0 {
			t.Fatalf("flush=%v: 3 Gets of a row without expiry read the clock %d times", flush, n)
		}
		clk.Advance(10 * time.Second)
		n = leastReads(clk, func() { mustGet(t, db, "ttl", "t") }) // at its deadline: still visible
		if n != 1 {
			t.Fatalf("flush=%v: a Get of an expiring row read the clock %d times, want 1", flush, n)
		}
		clk.Advance(time.Millisecond)
		mustGet(t, db, "ttl", "")
		mustGet(t, db, "plain", "p")
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// leastReads returns the fewest clock reads counted across five runs of f.
func leastReads(clk *countingClock, f func()) int64 {
	least := int64(-1)
	for range 5 {
		before := clk.reads.Load()
		f()
		if n := clk.reads.Load() - before; least < 0 || n < least {
			least = n
		}
	}
	return least
}
