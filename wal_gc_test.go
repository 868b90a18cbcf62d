package mayfly

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
)

// TestWALGCGracePeriod: a segment left below the writer's first one (as a
// fenced writer leaves one) is deleted once ObsoleteFileGracePeriod has
// passed by the DB's clock, never before; the writer's own segment, whose
// rows are not flushed, stays.
func TestWALGCGracePeriod(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	opts := func(o *Options) { o.Storage, o.ObsoleteFileGracePeriod = mem, time.Minute }
	db := openTestDB(t, "", clk, opts)
	if err := db.PutWith([]byte("k"), []byte("v"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "", clk, opts)
	defer db.Close()
	own := logName(db.logNum)
	if db.walGC.first != db.logNum || db.logNum < 2 {
		t.Fatalf("writer's first segment %d, collection floor %d", db.logNum, db.walGC.first)
	}
	leftover := logName(db.walGC.first - 1)
	lw, err := mem.CreateLog(leftover)
	if err != nil {
		t.Fatal(err)
	}
	lw.Write(wal.AppendHeader(nil, db.walGC.first-1))
	lw.Close()
	if err := db.PutWith([]byte("k2"), []byte("v2"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}

	walNames := func() []string {
		t.Helper()
		names, err := mem.List("wal")
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	db.collectWAL() // first sight: the grace period starts
	if !slices.Contains(walNames(), leftover) {
		t.Fatalf("leftover segment deleted before its grace period: %v", walNames())
	}
	clk.Advance(59 * time.Second)
	if db.walGC.due(db.clock.NowMillis()) {
		t.Fatalf("collection due before the grace period passed")
	}
	db.sweepGraceDeletes()
	if !slices.Contains(walNames(), leftover) {
		t.Fatalf("leftover segment deleted before its grace period: %v", walNames())
	}
	clk.Advance(time.Second)
	if !db.walGC.due(db.clock.NowMillis()) {
		t.Fatalf("collection not due once the grace period passed")
	}
	db.sweepGraceDeletes()
	if names := withoutSpare(walNames(), db.logNum); !slices.Equal(names, []string{own}) {
		t.Fatalf("WAL after the grace period = %v, want only the writer's own %s", names, own)
	}
	if db.walGC.due(db.clock.NowMillis()) {
		t.Fatalf("collection still due with nothing left to collect")
	}
	mustGet(t, db, "k", "v")
	mustGet(t, db, "k2", "v2")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, "", clk, opts)
	defer db.Close()
	mustGet(t, db, "k2", "v2")
}

// blockingRemoveStore holds every Remove of a WAL segment until release is
// closed, announcing each on removing.
type blockingRemoveStore struct {
	storage.Storage
	removing chan string
	release  chan struct{}
}

func (s *blockingRemoveStore) Remove(name string) error {
	if strings.HasPrefix(name, "wal/") {
		s.removing <- name
		<-s.release
	}
	return s.Storage.Remove(name)
}

func (s *blockingRemoveStore) Unwrap() storage.Storage { return s.Storage }

// TestFlushedSegmentDeletionOffFlushPath checks that deleting a flushed
// memtable's WAL segment does not hold up the next flush, that Flush still
// returns only once the segment is gone (after FlushEnd), and that no
// segment is deleted before its table is recorded.
func TestFlushedSegmentDeletionOffFlushPath(t *testing.T) {
	store := &blockingRemoveStore{Storage: storage.NewMem(), removing: make(chan string, 8), release: make(chan struct{})}
	flushEnds := make(chan FlushInfo, 4)
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = store
		o.DisableAutoCompaction = true
		o.EventListener = &EventListener{FlushEnd: func(i FlushInfo) { flushEnds <- i }}
	})
	defer db.Close()
	var released sync.Once
	release := func() { released.Do(func() { close(store.release) }) }
	defer release()                    // before Close, which waits for a stuck deletion
	timeout := time.After(time.Minute) // only a hang fails here; nothing waits on it otherwise

	flushEnded := func(hang string) {
		t.Helper()
		select {
		case i := <-flushEnds:
			if i.Err != nil || i.Rows != 1 {
				t.Fatalf("FlushEnd %+v; want one row, no error", i)
			}
		case <-timeout:
			t.Fatal(hang)
		}
	}
	flush := func() chan error {
		done := make(chan error, 1)
		go func() { done <- db.Flush() }()
		return done
	}
	if err := db.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	first := flush()
	var seg string
	select {
	case seg = <-store.removing: // the first segment's deletion is now stuck
	case <-timeout:
		t.Fatal("the flushed segment was never deleted")
	}
	flushEnded("no FlushEnd for the first flush")
	// The table of the segment being deleted is already recorded.
	db.mu.Lock()
	n := len(db.current.levels[0])
	db.mu.Unlock()
	if n != 1 {
		t.Fatalf("%s deleted with %d level-0 tables recorded; want 1", seg, n)
	}

	// A second memtable flushes while that deletion is stuck.
	if err := db.Put([]byte("b"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	second := flush()
	flushEnded("the second flush waited for the first segment's deletion")
	select {
	case err := <-first:
		t.Fatalf("Flush returned (%v) before its WAL segment was deleted", err)
	case err := <-second:
		t.Fatalf("Flush returned (%v) before the WAL segments were deleted", err)
	default:
	}

	release()
	for _, done := range []chan error{first, second} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	logs, err := store.List("wal")
	if err != nil {
		t.Fatal(err)
	}
	logs = withoutSpare(logs, db.mem.LogNum())
	if len(logs) != 1 || logs[0] != logName(db.mem.LogNum()) {
		t.Fatalf("WAL after both flushes = %v; want only %s", logs, logName(db.mem.LogNum()))
	}
	mustGet(t, db, "a", "1")
	mustGet(t, db, "b", "2")
}

// withoutSpare returns the WAL segment names up to the active segment
// active: the segment after it may exist already, created ahead of need.
func withoutSpare(names []string, active uint64) []string {
	return slices.DeleteFunc(names, func(name string) bool {
		n, _ := parseNum(name, "wal", ".wal")
		return n > active
	})
}
