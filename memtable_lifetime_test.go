package mayfly

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/storage"
)

// Memtable arenas live outside the Go heap (internal/manual) and are freed
// when the last holder lets go. These tests check the lifetime rule from the
// outside: every arena byte comes back by Close, an arena stays readable for
// as long as an iterator that may read it is open, and concurrent readers
// never touch a freed arena (which on Unix faults).

// lifeKey and lifeVal name row i of the lifetime tests.
func lifeKey(i int) []byte { return fmt.Appendf(nil, "key-%06d", i) }
func lifeVal(i, gen int) []byte {
	return append(fmt.Appendf(nil, "val-%06d-gen%d-", i, gen), bytes.Repeat([]byte{'x'}, 200)...)
}

// arenaBytes returns the arena bytes of the memtables not yet freed (the
// block cache also takes manual memory, so manual.Allocated would mix the two).
func arenaBytes() int64 { return memtable.ArenaBytes() }

// checkScan walks it from First and checks it returns rows lo..hi-1 of
// generation gen, in order.
func checkScan(t *testing.T, it *Iterator, lo, hi, gen int) {
	t.Helper()
	i := lo
	for ok := it.First(); ok; ok = it.Next() {
		if i >= hi || !bytes.Equal(it.Key(), lifeKey(i)) || !bytes.Equal(it.Value(), lifeVal(i, gen)) {
			t.Fatalf("row %d: got %q = %.20q, want %q of generation %d", i, it.Key(), it.Value(), lifeKey(i), gen)
		}
		i++
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if i != hi {
		t.Fatalf("scan stopped at row %d, want %d", i, hi)
	}
}

func TestMemtableArenasFreedAfterFlushesAndClose(t *testing.T) {
	base := arenaBytes()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, "", clk, func(o *Options) {
		o.Storage = storage.NewMem()
		o.MemtableSize = 256 << 10 // several rotations per generation
		o.DisableAutoCompaction = true
	})
	const n = 3000
	put := func(gen int) {
		for i := range n {
			if err := db.Put(lifeKey(i), lifeVal(i, gen)); err != nil {
				t.Fatal(err)
			}
		}
	}

	put(0)
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	it0, err := db.NewIter(nil) // pins generation 0's memtables
	if err != nil {
		t.Fatal(err)
	}
	put(1)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	itSnap, err := snap.NewIter(nil) // generation 0 at the snapshot, now from tables
	if err != nil {
		t.Fatal(err)
	}
	put(2)
	it2, err := db.NewIter(nil) // pins generation 2's memtables
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if arenaBytes() == base {
		t.Fatal("open iterators pin no arena: their memtables were freed under them")
	}

	// Each iterator reads what it pinned, after the flushes took its
	// memtables out of the DB.
	checkScan(t, it0, 0, n, 0)
	checkScan(t, itSnap, 0, n, 0)
	checkScan(t, it2, 0, n, 2)
	if v, err := snap.Get(lifeKey(7)); err != nil || !bytes.Equal(v, lifeVal(7, 0)) {
		t.Fatalf("snapshot Get = %.20q, %v", v, err)
	}
	// Arena bytes memtables hold: the rest is in the DB's chunk pool.
	inMemtables := func() int64 { return arenaBytes() - db.memPool.Stats().PooledBytes }
	pinned := inMemtables()
	if err := it0.Close(); err != nil {
		t.Fatal(err)
	}
	if inMemtables() >= pinned {
		t.Fatalf("closing the oldest iterator released no memtable (%d bytes before and after)", pinned-base)
	}
	if err := it2.Close(); err != nil {
		t.Fatal(err)
	}
	checkScan(t, itSnap, 0, n, 0)
	if err := itSnap.Close(); err != nil { // it pinned the memtable put(2) began in
		t.Fatal(err)
	}
	// What remains is the chunks the DB keeps for its next memtables.
	if got, pooled := arenaBytes()-base, db.memPool.Stats().PooledBytes; got != pooled || pooled == 0 {
		t.Fatalf("after Flush with no iterator open %d arena bytes remain, want the %d pooled", got, pooled)
	}
	if v, err := snap.Get(lifeKey(7)); err != nil || !bytes.Equal(v, lifeVal(7, 0)) {
		t.Fatalf("snapshot Get after the flushes = %.20q, %v", v, err)
	}

	// Unflushed rows with an iterator left open past Close: the iterator
	// keeps its memtable (it reads nothing more: ErrClosed) until its own
	// Close, the DB's close releases the rest.
	put(3)
	it3, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	checkScan(t, it3, 0, n, 3)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if arenaBytes() == base {
		t.Fatal("Close freed the arena of an open iterator")
	}
	if it3.First() || !errors.Is(it3.Error(), ErrClosed) {
		t.Fatalf("iterator after DB.Close: First moved or error %v, want ErrClosed", it3.Error())
	}
	it3.Close()
	snap.Close()
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close %d arena bytes remain", got-base)
	}
}

// TestConcurrentReadsWhileMemtablesRotate runs Gets and scans against a
// writer whose small memtables rotate and flush all the time. Every key is
// written once per generation with a value naming it, so a reader can
// check each value it sees; a read of a freed arena faults or returns
// garbage. Run it with -race.
func TestConcurrentReadsWhileMemtablesRotate(t *testing.T) {
	base := arenaBytes()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, "", clk, func(o *Options) {
		o.Storage = storage.NewMem()
		o.MemtableSize = 64 << 10
	})
	const n, gens, readers = 500, 6, 2
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, readers*2)
	valid := func(i int, v []byte) bool {
		for g := range gens {
			if bytes.Equal(v, lifeVal(i, g)) {
				return true
			}
		}
		return false
	}
	for r := range readers {
		wg.Add(2)
		go func() { // point reads
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				i := (k*7 + r) % n
				v, err := db.Get(lifeKey(i))
				if err != nil && !errors.Is(err, ErrNotFound) {
					errs <- err
					return
				}
				if err == nil && !valid(i, v) {
					errs <- fmt.Errorf("Get(%s) = %.30q", lifeKey(i), v)
					return
				}
			}
		}()
		go func() { // scans, each held across the writer's rotations
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				it, err := db.NewIter(nil)
				if err != nil {
					errs <- err
					return
				}
				prev := -1
				for ok := it.First(); ok; ok = it.Next() {
					var i int
					if _, err := fmt.Sscanf(string(it.Key()), "key-%06d", &i); err != nil || i <= prev || !valid(i, it.Value()) {
						errs <- fmt.Errorf("scan: row %q = %.30q after row %d", it.Key(), it.Value(), prev)
						it.Close()
						return
					}
					prev = i
				}
				if err := it.Close(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for g := range gens {
		for i := range n {
			if err := db.Put(lifeKey(i), lifeVal(i, g)); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Millisecond)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := db.Metrics(); m.Flushes < 5 {
		t.Errorf("only %d flushes: the memtables did not rotate under the readers", m.Flushes)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close %d arena bytes remain", got-base)
	}
}

// TestReadOnlyHandleReleasesTailMemtables: a read-only handle replays the
// WAL into memtables of its own and replaces them on Refresh; an iterator
// opened before a Refresh that drops them keeps reading its rows, and Close
// gives every arena byte back.
func TestReadOnlyHandleReleasesTailMemtables(t *testing.T) {
	base := arenaBytes()
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	w := openTestDB(t, "", clk, func(o *Options) { o.Storage = mem })
	const n = 1000
	for i := range n {
		if err := w.Put(lifeKey(i), lifeVal(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutWith(lifeKey(n), lifeVal(n, 0), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	ro := openTestDB(t, "", clk, func(o *Options) {
		o.Storage = mem
		o.ReadOnly, o.FollowWAL = true, true
		o.FollowInterval = time.Hour // polled by hand with Refresh
	})
	it, err := ro.NewIter(nil) // reads the handle's WAL memtables
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil { // the rows move to a table...
		t.Fatal(err)
	}
	if _, err := ro.Refresh(); err != nil { // ...and leave the handle's tail
		t.Fatal(err)
	}
	checkScan(t, it, 0, n+1, 0)
	it.Close()
	mustGet(t, ro, string(lifeKey(5)), string(lifeVal(5, 0)))
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Refresh(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Refresh after Close = %v, want ErrClosed", err)
	}
	if err := w.PutWith(lifeKey(0), lifeVal(0, 1), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close of both handles %d arena bytes remain", got-base)
	}

	// A plain read-only handle replays the unflushed row at Open.
	ro = openTestDB(t, "", clk, func(o *Options) { o.Storage = mem; o.ReadOnly = true })
	mustGet(t, ro, string(lifeKey(0)), string(lifeVal(0, 1)))
	if _, err := ro.Refresh(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ro, string(lifeKey(0)), string(lifeVal(0, 1)))
	if arenaBytes() == base {
		t.Fatal("the read-only handle's WAL rows use no arena")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close of the read-only handle %d arena bytes remain", got-base)
	}
}
