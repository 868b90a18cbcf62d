package mayfly

import (
	"context"
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

// TestWritePathManualMemoryReturned: the write path's buffers outside the
// Go heap (WAL pending buffers, table writers' filter hashes, local object
// write buffers) are all given back: after flushes, compactions, a flush
// that fails part-way through writing its table (the table writer is
// abandoned), Close, and the close of the storage that holds the idle
// object write buffers, manual memory is where it started.
func TestWritePathManualMemoryReturned(t *testing.T) {
	m0, n0 := manual.Allocated()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fs := faultfs.New(local)
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = fs
		o.MemtableSize = 256 << 10
		o.BloomBitsPerKey = 10
	})
	put := func(gen, n int) {
		t.Helper()
		for i := range n {
			if err := db.Put(fmt.Appendf(nil, "k%06d", i), fmt.Appendf(nil, "v%d-%06d-%0100d", gen, i, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 6000) // several memtables: flushes and a compaction or two
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	put(1, 6000)
	// The next table write fails at its third block: the flush abandons
	// its table writer and aborts the object.
	fs.Inject(faultfs.Rule{Op: faultfs.OpWrite, Name: "sst/", N: 3})
	for i := range 2000 { // the failure may stop the writes (a background error)
		if db.Put(fmt.Appendf(nil, "k%06d", i), []byte("after")) != nil {
			break
		}
	}
	err = db.Flush()
	if len(fs.Injected()) == 0 {
		t.Fatalf("no table write failed (Flush: %v)", err)
	}
	fs.Clear()
	db.Close()
	if err := local.Close(); err != nil {
		t.Fatal(err)
	}
	if m, n := manual.Allocated(); m != m0 || n != n0 {
		t.Fatalf("manual.Allocated = %d bytes in %d buffers after Close, want %d in %d", m, n, m0, n0)
	}
}
