package mayfly

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/storage"
)

// TestCompactionItersOpenSortedLevelLazily: a compaction reads a sorted
// input level through one levelIter that opens a table (and reads its index
// copy) only when the merge reaches it, instead of one iterator per table
// each holding its index copy from the start; the merged rows are the same.
func TestCompactionItersOpenSortedLevelLazily(t *testing.T) {
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = storage.NewMem()
		o.NoCompression = true
		// Blocks of about two rows: a table's index passes the size at
		// which index copies leave the Go heap (sstable.minOffHeapMeta).
		o.BlockSize = 256
		o.MemtableSize = 256 << 10
		o.TargetFileSize = 64 << 10
		o.DisableAutoCompaction = true
		o.BlockCacheSize = -1 // no cache: every table iterator reads its own index
	})
	defer db.Close()
	val := bytes.Repeat([]byte{'v'}, 100)
	const rows = 3000
	for i := range rows {
		if err := db.Put(fmt.Appendf(nil, "k%06d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	var sorted []*tableFile
	level := 0
	for l := 1; l < len(db.current.levels); l++ {
		if len(db.current.levels[l]) > len(sorted) {
			sorted, level = db.current.levels[l], l
		}
	}
	db.mu.Unlock()
	if len(sorted) < 4 {
		t.Fatalf("compaction left %d tables in its largest level, want several", len(sorted))
	}
	in := compaction.Input{Level: level}
	for _, tf := range sorted {
		in.Tables = append(in.Tables, &compaction.Table{Meta: tf.Meta, Handle: tf})
	}
	p := &compaction.Pick{Inputs: []compaction.Input{in}, OutputLevel: level}

	before := manual.PurposeBytes()[manual.PurposeIndexBlock]
	iters := compactionIters(p)
	if len(iters) != 1 {
		t.Fatalf("%d iterators for one sorted level, want 1", len(iters))
	}
	if held := manual.PurposeBytes()[manual.PurposeIndexBlock] - before; held != 0 {
		t.Fatalf("unpositioned: %d bytes of index copies held, want none", held)
	}
	it := iters[0]
	n, maxHeld := 0, int64(0)
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Row().Key
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Fatalf("row %d: %q after %q", n, k, prev)
		}
		prev = append(prev[:0], k...)
		n++
		maxHeld = max(maxHeld, manual.PurposeBytes()[manual.PurposeIndexBlock]-before)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != rows {
		t.Fatalf("read %d rows, want %d", n, rows)
	}
	// One iterator per table, as compactions had: every index copy is
	// held from the start.
	var eager []format.Iterator
	for _, tf := range sorted {
		eager = append(eager, tf.reader.NewCompactionIter())
	}
	eagerHeld := manual.PurposeBytes()[manual.PurposeIndexBlock] - before
	for _, e := range eager {
		e.Close()
	}
	// The levelIter holds the copies of at most two tables at once (the
	// open one and the spare not yet reset), not of all of them.
	if maxHeld == 0 || maxHeld*int64(len(sorted)) > 2*eagerHeld+int64(len(sorted)) {
		t.Fatalf("levelIter held up to %d bytes of index copies; one iterator per table holds %d for %d tables", maxHeld, eagerHeld, len(sorted))
	}
	t.Logf("%d tables: index copies held at most %d bytes through a levelIter, %d with one iterator per table", len(sorted), maxHeld, eagerHeld)
	if held := manual.PurposeBytes()[manual.PurposeIndexBlock] - before; held != 0 {
		t.Fatalf("after Close %d bytes of index copies held", held)
	}
}
