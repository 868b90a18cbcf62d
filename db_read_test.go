package mayfly

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
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

func putString(t *testing.T, db *DB, k, v string) {
	t.Helper()
	if err := db.Put([]byte(k), []byte(v)); err != nil {
		t.Fatal(err)
	}
}

// TestGetProbesFiltersTogether checks point reads across more level-0
// tables than find lists on its stack (maxProbedTables), with filters not
// yet loaded (probed one table at a time, loading them) and loaded (probed
// together up front): both give the newest version, skip tables by their
// filters and count those skips, and the same holds after the tables are
// compacted under a newer level-0 table and for a snapshot older than it.
func TestGetProbesFiltersTogether(t *testing.T) {
	const tables = maxProbedTables + 4
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	opts := func(o *Options) {
		o.DisableAutoCompaction = true
		o.L0CompactionThreshold = 100
		o.L0SlowdownWritesThreshold = 200
		o.L0StopWritesThreshold = 200
	}
	db := openTestDB(t, dir, clk, opts)
	for i := range tables {
		putString(t, db, "common", fmt.Sprintf("v%02d", i))
		putString(t, db, fmt.Sprintf("only-%02d", i), fmt.Sprintf("o%02d", i))
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if got := db.Metrics().Levels[0].Files; got != tables {
		t.Fatalf("level 0 holds %d tables, want %d", got, tables)
	}
	check := func(db *DB, pass string) {
		t.Helper()
		before := db.Metrics().BloomNegatives
		mustGet(t, db, "only-00", "o00") // in the oldest table: passes all the others
		// A 1% filter may let one or two of the newer tables through.
		if got := db.Metrics().BloomNegatives - before; got < tables-4 || got > tables-1 {
			t.Fatalf("%s: Get of a key in the oldest of %d tables counted %d filter skips", pass, tables, got)
		}
		mustGet(t, db, "common", fmt.Sprintf("v%02d", tables-1))
		mustGet(t, db, fmt.Sprintf("only-%02d", tables-1), fmt.Sprintf("o%02d", tables-1))
		mustGet(t, db, "absent", "")
	}
	check(db, "filters not loaded")
	check(db, "filters loaded")

	// Reopen (filters unloaded again), compact everything to the bottom,
	// then shadow one key in a new level-0 table.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, opts)
	defer db.Close()
	check(db, "reopened")
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	putString(t, db, "common", "newest")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		mustGet(t, db, "common", "newest")
		mustGet(t, db, "only-00", "o00")
		mustGet(t, snap, "common", fmt.Sprintf("v%02d", tables-1))
	}
}

// BenchmarkGet measures point lookups against 100k preloaded rows: hit and
// miss on flushed SSTables (a miss is normally answered by the bloom
// filter), hit on rows still in the memtable, and hit through a block cache
// of 1 MiB (hit-coldcache: most lookups miss the cache, so they read,
// check, decompress and cache a block and evict another; its cpu-ns/op is
// the whole process's, background work included).
func BenchmarkGet(b *testing.B) {
	flushed := openBenchDB(b, nil)
	loadBench(b, flushed, benchPreload)
	if err := flushed.Flush(); err != nil {
		b.Fatal(err)
	}
	smallCache := openBenchDB(b, func(o *Options) { o.BlockCacheSize = 1 << 20 })
	loadBench(b, smallCache, benchPreload)
	if err := smallCache.Flush(); err != nil {
		b.Fatal(err)
	}
	inMem := openBenchDB(b, nil)
	loadBench(b, inMem, benchPreload)

	get := func(b *testing.B, db *DB, offset uint64, wantHit bool) {
		r := rand.New(rand.NewPCG(10, 11))
		k := make([]byte, benchKeySize)
		b.SetBytes(benchRowBytes)
		b.ReportAllocs()
		before := db.Metrics()
		cpu := startCPU()
		for b.Loop() {
			benchKey(k, offset+r.Uint64N(benchPreload))
			_, err := db.Get(k)
			if (err == nil) != wantHit {
				b.Fatalf("Get: err = %v, want hit = %v", err, wantHit)
			}
		}
		b.StopTimer()
		cpu.report(b)
		m := db.Metrics()
		if !wantHit {
			b.ReportMetric(float64(m.BloomFalsePositives-before.BloomFalsePositives)/float64(b.N), "bloomFP/op")
		}
		if lookups := (m.BlockCacheHits - before.BlockCacheHits) + (m.BlockCacheMisses - before.BlockCacheMisses); lookups > 0 {
			b.ReportMetric(float64(m.BlockCacheHits-before.BlockCacheHits)/float64(lookups), "cacheHitRatio")
		}
	}
	b.Run("hit", func(b *testing.B) { get(b, flushed, 0, true) })
	b.Run("miss", func(b *testing.B) { get(b, flushed, 1<<40, false) })
	b.Run("memtable", func(b *testing.B) { get(b, inMem, 0, true) })
	b.Run("hit-coldcache", func(b *testing.B) { get(b, smallCache, 0, true) })
}
