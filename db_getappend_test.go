package mayfly

import (
	"errors"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// TestGetAppend checks GetAppend on rows in the memtable and in a table:
// it appends the value after what dst holds, allocates nothing when dst
// has room, returns dst untouched with ErrNotFound for a missing, deleted
// or expired key, never aliases the database's memory, and works on a
// snapshot and not on a closed DB.
func TestGetAppend(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	putString(t, db, "flushed", "value-in-a-table")
	putString(t, db, "deleted", "x")
	if err := db.PutTTL([]byte("expiring"), []byte("soon"), ExpireAfter(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	putString(t, db, "mem", "value-in-the-memtable")
	if err := db.Delete([]byte("deleted")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 64)
	for _, c := range []struct{ key, want string }{{"flushed", "value-in-a-table"}, {"mem", "value-in-the-memtable"}} {
		got, err := db.GetAppend(append(buf[:0], "prefix:"...), []byte(c.key))
		if err != nil || string(got) != "prefix:"+c.want {
			t.Fatalf("GetAppend(%q) = %q, %v; want %q", c.key, got, err, "prefix:"+c.want)
		}
		if &got[0] != &buf[:1][0] {
			t.Fatalf("GetAppend(%q) did not append into dst's array", c.key)
		}
		key := []byte(c.key)
		if n := leastAllocsPerRun(5, 100, func() { _, _ = db.GetAppend(buf[:0], key) }); n != 0 {
			t.Fatalf("GetAppend(%q) into a buffer with room: %v allocations, want 0", c.key, n)
		}
		got[len(got)-1] = '!' // the caller's bytes: the stored value is unchanged
		mustGet(t, db, c.key, c.want)
	}
	clk.Advance(2 * time.Second)
	for _, key := range []string{"absent", "deleted", "expiring"} {
		dst := append(buf[:0], "keep"...)
		got, err := db.GetAppend(dst, []byte(key))
		if !errors.Is(err, ErrNotFound) || string(got) != "keep" {
			t.Fatalf("GetAppend(%q) = %q, %v; want \"keep\", ErrNotFound", key, got, err)
		}
	}

	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	putString(t, db, "mem", "newer")
	if got, err := snap.GetAppend(nil, []byte("mem")); err != nil || string(got) != "value-in-the-memtable" {
		t.Fatalf("snapshot GetAppend = %q, %v; want the value before the overwrite", got, err)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := snap.GetAppend(buf[:0], []byte("mem")); !errors.Is(err, ErrClosed) || len(got) != 0 {
		t.Fatalf("GetAppend on a closed snapshot = %q, %v; want ErrClosed", got, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetAppend(buf[:0], []byte("mem")); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetAppend on a closed DB: %v, want ErrClosed", err)
	}
}

// leastAllocsPerRun is the least of tries testing.AllocsPerRun(runs, f)
// measurements. AllocsPerRun counts every goroutine's allocations, so a
// background flush or compaction timer can add one to a measurement; an
// allocation f makes shows in every one.
func leastAllocsPerRun(tries, runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for range tries - 1 {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}
