package mayfly

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

// blockingFilter holds the compaction that meets key inside its filter
// until resume is closed, after closing entered.
type blockingFilter struct {
	key             string
	entered, resume chan struct{}
	once            sync.Once
}

func (*blockingFilter) Name() string { return "blocking" }

func (f *blockingFilter) Filter(_ FilterContext, row FilterRow) (FilterDecision, []byte) {
	if string(row.Key) == f.key {
		f.once.Do(func() {
			close(f.entered)
			<-f.resume
		})
	}
	return FilterKeep, nil
}

// TestCompactionHoldsOnlyWhatItReads holds a compaction inside a
// compaction filter. Meanwhile the memtable that was active when it began
// is flushed, and a level-0 table of another key range, present when it
// began, is compacted by a second compaction. The first compaction reads
// neither (no deadline rows, no merge operator): the memtable must be
// released and the replaced table's file removed before it ends, not when
// it ends.
func TestCompactionHoldsOnlyWhatItReads(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMem()
	block := &blockingFilter{key: "a-block", entered: make(chan struct{}), resume: make(chan struct{})}
	db, err := Open("", &Options{Storage: store, Clock: clock.NewManual(epoch), DisableAutoCompaction: true,
		CompactionFilters: []CompactionFilter{block}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	must(t, db.Put([]byte("a-block"), []byte("1")))
	must(t, db.Flush())
	must(t, db.Put([]byte("x-1"), []byte("1")))
	must(t, db.Flush())
	db.mu.Lock()
	other := db.current.levels[0][0] // the newest: x-1's table
	began := db.mem                  // active (and empty) as the compaction begins
	db.mu.Unlock()
	otherName := tableName(other.Meta.Num)

	first := make(chan error, 1)
	go func() { first <- db.Compact(ctx, []byte("a"), []byte("b")) }()
	<-block.entered
	defer func() {
		select {
		case <-block.resume:
		default:
			close(block.resume)
		}
	}()

	must(t, db.Put([]byte("m-1"), []byte("1")))
	must(t, db.Flush())
	if !began.Released() {
		t.Error("a memtable flushed while a compaction that does not read it runs is still held")
	}
	must(t, db.Compact(ctx, []byte("x"), []byte("y")))
	names, err := store.List("sst")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, otherName) {
		t.Errorf("table %s, replaced while a compaction that does not read it runs, is still in storage: %v", otherName, names)
	}

	close(block.resume)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a-block", "x-1", "m-1"} {
		mustGet(t, db, k, "1")
	}
}
