package mayfly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func openTestDB(t *testing.T, dir string, clk *clock.Manual, mutate func(*Options)) *DB {
	t.Helper()
	o := &Options{Clock: clk}
	if mutate != nil {
		mutate(o)
	}
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func mustGet(t *testing.T, db interface{ Get([]byte) ([]byte, error) }, key, want string) {
	t.Helper()
	v, err := db.Get([]byte(key))
	if want == "" {
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
		}
		return
	}
	if err != nil || string(v) != want {
		t.Fatalf("Get(%q) = %q, %v; want %q", key, v, err, want)
	}
}

func TestPutGetDeleteAcrossFlushCompactReopen(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, nil)
	for i := 0; i < 1000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Delete([]byte("k0005")); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTTL([]byte("ttl"), []byte("x"), ExpireAfter(time.Second)); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		t.Helper()
		mustGet(t, db, "k0001", "v1")
		mustGet(t, db, "k0999", "v999")
		mustGet(t, db, "k0005", "")
		mustGet(t, db, "nope", "")
	}
	check("memtable")
	mustGet(t, db, "ttl", "x")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	mustGet(t, db, "ttl", "x")
	clk.Advance(time.Second)
	mustGet(t, db, "ttl", "x") // now == expire_ts: still visible
	clk.Advance(time.Millisecond)
	mustGet(t, db, "ttl", "")
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	mustGet(t, db, "ttl", "")
	m := db.Metrics()
	if m.Levels[bottomLevel].Files == 0 || m.Levels[0].Files != 0 {
		t.Fatalf("after compaction: %+v", m.Levels)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, nil)
	defer db.Close()
	check("reopened")
	n := 0
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for range it.All() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != 999 {
		t.Fatalf("scan saw %d keys, want 999", n)
	}
}

func TestReopenWithoutCloseReplaysWAL(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, nil)
	b := db.NewBatch()
	b.Put([]byte("a"), []byte("1"))
	b.PutTTL([]byte("b"), []byte("2"), ExpireAfter(time.Minute))
	if err := b.Write(Sync); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash: drop the handle without Close, release the lock.
	db.lock.Close()
	db2 := openTestDB(t, dir, clk, nil)
	defer db2.Close()
	mustGet(t, db2, "a", "1")
	mustGet(t, db2, "b", "2")
	rem, exp, err := db2.TTL([]byte("b"))
	if err != nil || !exp || rem != time.Minute {
		t.Fatalf("TTL = %v %v %v", rem, exp, err)
	}
}

func TestEventListener(t *testing.T) {
	var mu sync.Mutex
	var events []string
	rec := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
	// Flush returns once the flushed table is installed; the flush goroutine
	// deletes the WAL segment and reports FlushEnd right after.
	flushEnded := make(chan struct{})
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) {
		o.EventListener = &EventListener{
			FlushBegin: func(FlushInfo) { rec("flush-begin") },
			FlushEnd: func(i FlushInfo) {
				rec(fmt.Sprintf("flush-end rows=%d", i.Rows))
				close(flushEnded)
			},
			CompactionBegin: func(i CompactionInfo) { rec("compaction-begin " + i.Kind) },
			CompactionEnd: func(i CompactionInfo) {
				rec(fmt.Sprintf("compaction-end %s dropped=%d", i.Kind, i.ExpiredDropped))
			},
			WALCreated: func(WALInfo) { rec("wal-created") },
			WALDeleted: func(WALInfo) { rec("wal-deleted") },
		}
	})
	defer db.Close()
	db.PutTTL([]byte("a"), []byte("1"), ExpireAfter(time.Second))
	db.Put([]byte("b"), []byte("2"))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	<-flushEnded
	mu.Lock()
	defer mu.Unlock()
	// The flush goroutine and the compaction interleave; each one's own
	// events are ordered.
	want := []string{"compaction-begin manual", "compaction-end manual dropped=1", "flush-begin", "flush-end rows=2", "wal-created", "wal-created", "wal-deleted"}
	got := slices.Sorted(slices.Values(events))
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events:\n got %s\nwant %s", strings.Join(got, "|"), strings.Join(want, "|"))
	}
	before := func(a, b string) {
		if slices.Index(events, a) > slices.Index(events, b) {
			t.Errorf("%q after %q in %v", a, b, events)
		}
	}
	before("flush-begin", "flush-end rows=2")
	before("compaction-begin manual", "compaction-end manual dropped=1")
}

func TestObjectCache(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	cacheDir := t.TempDir()
	opts := func(o *Options) {
		o.Storage = mem
		o.ObjectCacheDir = cacheDir
		o.BlockCacheSize = -1 // every read goes to the table file
	}
	db := openTestDB(t, "", clk, opts)
	for i := 0; i < 500; i++ {
		db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte("value"))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k0007", "value")
	db.Close()
	db = openTestDB(t, "", clk, opts)
	defer db.Close()
	mustGet(t, db, "k0123", "value")
	m := db.Metrics()
	if m.ObjectCacheHits == 0 || m.ObjectCacheBytes == 0 {
		t.Fatalf("object cache unused: hits %d misses %d bytes %d", m.ObjectCacheHits, m.ObjectCacheMisses, m.ObjectCacheBytes)
	}
	if m.ObjectCacheMisses != 0 {
		t.Fatalf("tables written through the cache were fetched again: %d misses", m.ObjectCacheMisses)
	}
}

// TestReadOnlyRefreshKeepsWAL: a read-only handle (not a FollowWAL-less
// follower) sees unflushed writes at Open and still sees them after Refresh.
func TestReadOnlyRefreshKeepsWAL(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	db := openTestDB(t, "", clk, func(o *Options) { o.Storage = mem })
	db.Put([]byte("flushed"), []byte("1"))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.PutWith([]byte("wal-only"), []byte("2"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro := openTestDB(t, "", clk, func(o *Options) { o.Storage = mem; o.ReadOnly = true })
	defer ro.Close()
	mustGet(t, ro, "wal-only", "2")
	if _, err := ro.Refresh(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ro, "wal-only", "2")
	mustGet(t, ro, "flushed", "1")
}
