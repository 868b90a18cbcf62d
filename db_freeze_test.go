package mayfly

import (
	"bytes"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/storage"
)

// TestFlushFreezesRotatedMemtables: the flush freezes the memtable it
// writes (memtable.Freeze), a reader that still holds it reads every row
// from the frozen array after the flush, and every arena and index chunk is
// back by Close.
func TestFlushFreezesRotatedMemtables(t *testing.T) {
	base := arenaBytes()
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = storage.NewMem()
		o.DisableAutoCompaction = true
	})
	const n = 2000
	for i := range n {
		if err := db.Put(lifeKey(i), lifeVal(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := db.loadReadState()
	if err != nil {
		t.Fatal(err)
	}
	mem := rs.mem
	if mem.Frozen() {
		t.Fatal("the active memtable is frozen")
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if !mem.Frozen() {
		t.Fatal("the flushed memtable was not frozen")
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		if r, ok := mem.Get(lifeKey(i), format.MaxSeq); !ok || !bytes.Equal(r.Value, lifeVal(i, 0)) {
			t.Fatalf("frozen Get(%s) = %.20q, %v", lifeKey(i), r.Value, ok)
		}
	}
	it := mem.NewIter()
	rows := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Row().Key, lifeKey(rows)) {
			t.Fatalf("frozen row %d is %q", rows, it.Row().Key)
		}
		rows++
	}
	it.Close()
	if rows != n {
		t.Fatalf("frozen walk saw %d rows, want %d", rows, n)
	}
	rs.release()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("%d arena bytes left after Close", got-base)
	}
}
