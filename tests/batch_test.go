package tests

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// TestBatchAtomicVisibility: readers using iterators and snapshots never see
// a batch half applied, while batches commit and memtables are flushed.
func TestBatchAtomicVisibility(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *mayfly.Options) { o.MemtableSize = 64 << 10 })
	const nkeys, rounds = 16, 300
	write := func(round int) {
		b := e.db.NewBatch()
		for i := range nkeys {
			v := fmt.Sprintf("round-%04d", round)
			if i%4 == 3 {
				must(t, b.PutTTL([]byte(key(i)), []byte(v), mayfly.ExpireAfter(time.Hour)))
			} else {
				must(t, b.Put([]byte(key(i)), []byte(v)))
			}
		}
		must(t, b.Write(nil))
	}
	write(0)

	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	// Readers: one by iterator, one by snapshot.
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			it, err := e.db.NewIter(nil)
			if err != nil {
				report(err)
				return
			}
			var first string
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				if n == 0 {
					first = string(it.Value())
				} else if string(it.Value()) != first {
					report(fmt.Errorf("iterator saw %s=%q beside %q: half a batch", it.Key(), it.Value(), first))
				}
				n++
			}
			if err := it.Close(); err != nil {
				report(err)
			}
			if n != nkeys {
				report(fmt.Errorf("iterator saw %d keys; want %d", n, nkeys))
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			s, err := e.db.NewSnapshot()
			if err != nil {
				report(err)
				return
			}
			var first string
			for i := range nkeys {
				v, err := s.Get([]byte(key(i)))
				if err != nil {
					report(fmt.Errorf("snapshot Get(%s): %v", key(i), err))
					break
				}
				if i == 0 {
					first = string(v)
				} else if string(v) != first {
					report(fmt.Errorf("snapshot saw %s=%q beside %q: half a batch", key(i), v, first))
				}
			}
			s.Close()
		}
	}()
	for round := 1; round <= rounds; round++ {
		write(round)
		if round%50 == 0 {
			e.flush()
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range nkeys {
		wantValue(t, e.db, key(i), fmt.Sprintf("round-%04d", rounds))
	}
}

func TestBatchPerEntryTTL(t *testing.T) {
	e := newEnv(t, func(o *mayfly.Options) { o.DefaultTTL = 10 * time.Second })
	b := e.db.NewBatch()
	must(t, b.PutTTL([]byte("one"), []byte("1"), mayfly.ExpireAfter(time.Second)))
	must(t, b.PutTTL([]byte("two"), []byte("2"), mayfly.ExpireAfter(2*time.Second)))
	must(t, b.PutTTL([]byte("never"), []byte("n"), mayfly.NoExpiry()))
	must(t, b.PutTTL([]byte("at"), []byte("a"), mayfly.ExpireAt(epoch.Add(3*time.Second))))
	must(t, b.Put([]byte("default"), []byte("d")))
	must(t, b.Delete([]byte("missing")))
	if b.Len() != 6 {
		t.Fatalf("Len = %d; want 6", b.Len())
	}
	// The relative deadlines are computed at commit, not when added.
	e.clk.Advance(500 * time.Millisecond)
	must(t, b.Write(mayfly.Sync))
	e.flush()
	wantTTL(t, e.db, "one", time.Second)
	wantTTL(t, e.db, "two", 2*time.Second)
	wantNoExpiry(t, e.db, "never")
	wantTTL(t, e.db, "at", 2500*time.Millisecond)
	wantTTL(t, e.db, "default", 10*time.Second)

	e.clk.Advance(time.Second + time.Millisecond)
	wantAbsent(t, e.db, "one")
	wantValue(t, e.db, "two", "2")
	e.clk.Advance(time.Second)
	wantAbsent(t, e.db, "two")
	wantValue(t, e.db, "at", "a")
	e.clk.Advance(500 * time.Millisecond)
	wantAbsent(t, e.db, "at")
	wantValue(t, e.db, "default", "d")
	e.clk.Advance(10 * time.Second)
	wantAbsent(t, e.db, "default")
	wantValue(t, e.db, "never", "n")
}

func TestBatchSameKeyTwice(t *testing.T) {
	e := newEnv(t, nil)
	put(t, e.db, "pd", "old")
	b := e.db.NewBatch()
	b.Put([]byte("pp"), []byte("first"))
	b.Put([]byte("pp"), []byte("second"))
	b.Put([]byte("pd"), []byte("x"))
	b.Delete([]byte("pd"))
	b.Delete([]byte("dp"))
	b.Put([]byte("dp"), []byte("back"))
	b.PutTTL([]byte("tn"), []byte("short"), mayfly.ExpireAfter(time.Millisecond))
	b.PutTTL([]byte("tn"), []byte("long"), mayfly.NoExpiry())
	must(t, b.Write(nil))
	check := func() {
		t.Helper()
		wantValue(t, e.db, "pp", "second")
		wantAbsent(t, e.db, "pd")
		wantValue(t, e.db, "dp", "back")
		wantValue(t, e.db, "tn", "long")
	}
	e.clk.Advance(time.Second)
	check()
	e.flush()
	check()
	e.compact()
	check()
	e.reopen()
	check()
}

func TestBatchReuse(t *testing.T) {
	e := newEnv(t, nil)
	b := e.db.NewBatch()
	must(t, b.Put([]byte("a"), []byte("1")))
	must(t, b.Write(nil))
	rows := e.db.Metrics().RowsWritten

	if err := b.Write(nil); !isErr(err, mayfly.ErrBatchCommitted) {
		t.Fatalf("second Write = %v; want ErrBatchCommitted", err)
	}
	if err := b.Put([]byte("b"), []byte("2")); !isErr(err, mayfly.ErrBatchCommitted) {
		t.Fatalf("Put after Write = %v; want ErrBatchCommitted", err)
	}
	if err := b.Delete([]byte("a")); !isErr(err, mayfly.ErrBatchCommitted) {
		t.Fatalf("Delete after Write = %v; want ErrBatchCommitted", err)
	}
	if got := e.db.Metrics().RowsWritten; got != rows {
		t.Fatalf("RowsWritten %d -> %d after rejected reuse", rows, got)
	}
	wantAbsent(t, e.db, "b")
	wantValue(t, e.db, "a", "1")

	b.Reset()
	if b.Len() != 0 {
		t.Fatalf("Len after Reset = %d", b.Len())
	}
	must(t, b.Put([]byte("b"), []byte("2")))
	must(t, b.Delete([]byte("a")))
	must(t, b.Write(nil))
	wantValue(t, e.db, "b", "2")
	wantAbsent(t, e.db, "a")

	// A batch rejected for an invalid entry can be reset and reused.
	b.Reset()
	b.Put([]byte("c"), []byte("3"))
	if err := b.PutTTL([]byte("d"), []byte("4"), mayfly.ExpireAfter(0)); !isErr(err, mayfly.ErrInvalidTTL) {
		t.Fatalf("PutTTL(ExpireAfter(0)) = %v", err)
	}
	if err := b.Write(nil); !isErr(err, mayfly.ErrInvalidTTL) {
		t.Fatalf("Write of invalid batch = %v; want ErrInvalidTTL", err)
	}
	wantAbsent(t, e.db, "c")
	b.Reset()
	must(t, b.Put([]byte("c"), []byte("3")))
	must(t, b.Write(nil))
	wantValue(t, e.db, "c", "3")

	// An empty batch commits nothing.
	b.Reset()
	rows = e.db.Metrics().RowsWritten
	must(t, b.Write(nil))
	if got := e.db.Metrics().RowsWritten; got != rows {
		t.Fatalf("empty batch wrote %d rows", got-rows)
	}
}
