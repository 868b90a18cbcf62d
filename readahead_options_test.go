package mayfly

import (
	"context"
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/storage"
)

// fencingMem is an in-memory store that looks like an object store.
type fencingMem struct{ *storage.Mem }

func (fencingMem) FenceLog(string) error { return nil }

func TestReadAheadSizeDefault(t *testing.T) {
	for _, c := range []struct {
		name   string
		remote bool
		cache  bool
		set    int
		want   int
	}{
		{"local default", false, false, 0, defaultLocalReadAhead},
		{"local set", false, false, 128 << 10, 128 << 10},
		{"local negative", false, false, -1, 0},
		{"object store default", true, false, 0, defaultObjectReadAhead},
		{"object store set", true, false, 64 << 10, 64 << 10},
		{"object store negative", true, false, -5, 0},
		{"object store with disk cache", true, true, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &Options{ReadAheadSize: c.set}
			if c.remote {
				o.Storage = fencingMem{storage.NewMem()}
			}
			if c.cache {
				o.ObjectCacheDir = t.TempDir()
			}
			db, err := Open(t.TempDir(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got := db.opts.ReadAheadSize; got != c.want {
				t.Fatalf("ReadAheadSize = %d, want %d", got, c.want)
			}
			// Only the local default leaves compactions without read-ahead.
			wantComp := 0
			if !c.remote && c.set == 0 {
				wantComp = -1
			}
			if db.compactionReadAhead != wantComp {
				t.Fatalf("compactionReadAhead = %d, want %d", db.compactionReadAhead, wantComp)
			}
			if o.ReadAheadSize != c.set {
				t.Fatalf("Open changed the caller's Options")
			}
		})
	}
}

// Scans, compactions and reopenings with read-ahead see every row.
func TestReadAheadDBScan(t *testing.T) {
	st := storage.NewMem()
	const n = 5000
	scan := func(readAhead int) {
		t.Helper()
		db, err := Open("", &Options{Storage: st, ReadAheadSize: readAhead, BlockCacheSize: -1, BlockSize: 512})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			if want := fmt.Sprintf("k%06d", i); string(it.Key()) != want || string(it.Value()) != want+"-v" {
				t.Fatalf("read-ahead %d: row %d is %q=%q", readAhead, i, it.Key(), it.Value())
			}
			i++
		}
		if err := it.Close(); err != nil || i != n {
			t.Fatalf("read-ahead %d: %d rows, err %v", readAhead, i, err)
		}
	}
	db, err := Open("", &Options{Storage: st, ReadAheadSize: 8 << 10, BlockSize: 512, MemtableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		k := fmt.Sprintf("k%06d", i)
		if err := db.Put([]byte(k), []byte(k+"-v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil { // reads the flushed tables ahead
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	scan(-1)
	scan(4 << 10)
	scan(1 << 20)
}
