package mayfly

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

// TestObsoleteTablesRemovedOffTheReleasingPath: the reader that drops the
// last reference to replaced tables does not remove them itself; the
// obsolete-file goroutine does, while reads and writes go on, and
// WaitForCompactions returns once they are gone.
func TestObsoleteTablesRemovedOffTheReleasingPath(t *testing.T) {
	mem := storage.NewMem()
	fs := faultfs.New(mem)
	var onCaller atomic.Int32
	entered := make(chan string, 16)
	release := make(chan struct{})
	fs.SetHook(func(e faultfs.Event) {
		if e.Op != faultfs.OpRemove || e.Phase != faultfs.Before || !strings.HasPrefix(e.Name, "sst/") {
			return
		}
		buf := make([]byte, 64<<10)
		if !bytes.Contains(buf[:runtime.Stack(buf, false)], []byte("obsoleteLoop")) {
			onCaller.Add(1)
			return
		}
		entered <- e.Name
		<-release
	})
	db, err := Open("", &Options{Storage: fs, Clock: clock.NewManual(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b"} {
		must(t, db.Put([]byte(k), []byte("1")))
		must(t, db.Flush())
	}
	before, err := mem.List("sst")
	if err != nil {
		t.Fatal(err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatal("iterator over two rows is empty")
	}
	// The iterator pins the tables the compaction replaces.
	must(t, db.Compact(context.Background(), nil, nil))
	must(t, it.Close()) // drops their last reference
	if n := onCaller.Load(); n > 0 {
		t.Fatalf("%d replaced tables were removed on the goroutine that released them", n)
	}
	first := <-entered // the obsolete-file goroutine is removing one, held
	mustGet(t, db, "a", "1")
	must(t, db.Put([]byte("c"), []byte("1")))
	if names, _ := mem.List("sst"); !slices.Contains(names, first) {
		t.Fatalf("%s is gone while its removal is held", first)
	}
	close(release)
	must(t, db.WaitForCompactions(context.Background()))
	after, err := mem.List("sst")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range before {
		if slices.Contains(after, name) {
			t.Errorf("replaced table %s is still in storage after WaitForCompactions: %v", name, after)
		}
	}
	if onCaller.Load() > 0 {
		t.Errorf("%d tables were removed off the obsolete-file goroutine", onCaller.Load())
	}
}

// TestObsoleteRemovalAfterCloseRunsInline: a table whose last reference
// goes after Close (an iterator closed late) is removed by that release.
func TestObsoleteRemovalAfterCloseRunsInline(t *testing.T) {
	mem := storage.NewMem()
	db, err := Open("", &Options{Storage: mem, Clock: clock.NewManual(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.Put([]byte("a"), []byte("1")))
	must(t, db.Flush())
	pinned, err := mem.List("sst")
	if err != nil || len(pinned) != 1 {
		t.Fatalf("one table expected after a flush: %v %v", pinned, err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.Put([]byte("a"), []byte("2")))
	must(t, db.Compact(context.Background(), nil, nil))
	must(t, db.Close())
	if names, _ := mem.List("sst"); !slices.Contains(names, pinned[0]) {
		t.Fatalf("%s, pinned by an open iterator, is gone at Close", pinned[0])
	}
	it.Close()
	if names, _ := mem.List("sst"); slices.Contains(names, pinned[0]) {
		t.Errorf("%s is still in storage after the iterator pinning it closed: %v", pinned[0], names)
	}
}

// TestObsoleteRemovalRacingClose: iterators that release replaced tables
// while Close stops the obsolete-file goroutine leave none of them behind,
// whichever side of the stop each release lands on.
func TestObsoleteRemovalRacingClose(t *testing.T) {
	mem := storage.NewMem()
	db, err := Open("", &Options{Storage: mem, Clock: clock.NewManual(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	var its []*Iterator
	for i := range 8 {
		must(t, db.Put([]byte{'k', byte(i)}, []byte("1")))
		must(t, db.Flush())
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
		must(t, db.Compact(context.Background(), nil, nil))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, it := range its {
			it.Close()
		}
	}()
	must(t, db.Close())
	<-done
	names, err := mem.List("sst")
	if err != nil {
		t.Fatal(err)
	}
	// Only the last compaction's output is live.
	if len(names) != 1 {
		t.Errorf("tables left after every iterator closed: %v, want the one live table", names)
	}
}

// TestCompactionCallsReturnAfterRemoval: Compact, CompactWith and
// ReclaimExpired return only once the tables they replaced are removed, so
// the directory shows what they did (usage.md, "Reclaiming expired data";
// WaitForCompactions: TestReclamationBound). The removal is held on the
// obsolete-file goroutine: the call must still be waiting when it is.
func TestCompactionCallsReturnAfterRemoval(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func(*DB, *clock.Manual) error
	}{
		{"Compact", func(db *DB, _ *clock.Manual) error { return db.Compact(ctx, nil, nil) }},
		{"CompactWith", func(db *DB, _ *clock.Manual) error {
			return db.CompactWith(ctx, nil, nil, &CompactOptions{OutputLevel: 3})
		}},
		{"ReclaimExpired", func(db *DB, clk *clock.Manual) error {
			clk.Advance(2 * time.Hour)
			return db.ReclaimExpired(ctx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := storage.NewMem()
			fs := faultfs.New(mem)
			entered := make(chan struct{}, 64)
			release := make(chan struct{})
			var releaseOnce sync.Once
			letGo := func() { releaseOnce.Do(func() { close(release) }) }
			var hold atomic.Bool
			fs.SetHook(func(e faultfs.Event) {
				if hold.Load() && e.Op == faultfs.OpRemove && e.Phase == faultfs.Before && strings.HasPrefix(e.Name, "sst/") {
					entered <- struct{}{}
					<-release
				}
			})
			clk := clock.NewManual(epoch)
			db, err := Open("", &Options{Storage: fs, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			defer letGo() // before Close, which waits for the held removal
			for _, k := range []string{"a", "b"} {
				must(t, db.PutTTL([]byte(k), []byte("1"), ExpireAfter(time.Hour)))
				must(t, db.Flush())
			}
			before, err := mem.List("sst")
			if err != nil {
				t.Fatal(err)
			}
			hold.Store(true)
			done := make(chan error, 1)
			go func() { done <- tc.call(db, clk) }()
			select {
			case <-entered:
			case err := <-done:
				t.Fatalf("%s returned (%v) before the removal of any table it replaced began", tc.name, err)
			}
			select {
			case err := <-done:
				t.Fatalf("%s returned (%v) while the removal of a table it replaced was held", tc.name, err)
			default:
			}
			letGo()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			after, err := mem.List("sst")
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range before {
				if slices.Contains(after, name) {
					t.Errorf("%s returned with replaced table %s still in storage: %v", tc.name, name, after)
				}
			}
		})
	}
}
