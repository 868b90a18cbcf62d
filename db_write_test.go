package mayfly

import (
	"errors"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

// TestFirstFailedWriteWrapsErrBackground checks that the write that meets a
// failure of the WAL reports it as every later write does: wrapping
// ErrBackground and the cause, for a synced and for an unsynced write and
// for the WAL sync of FlushWAL.
func TestFirstFailedWriteWrapsErrBackground(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule faultfs.Rule
		do   func(db *DB) error
	}{
		{"sync write", faultfs.Rule{Op: faultfs.OpSync, Name: "wal/"}, func(db *DB) error {
			return db.PutWith([]byte("k"), []byte("v"), TTL{}, Sync)
		}},
		{"unsynced write", faultfs.Rule{Op: faultfs.OpLogWrite, Name: "wal/", Count: -1}, func(db *DB) error {
			// The flusher's failure surfaces at a later append or flush.
			if err := db.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
			return db.FlushWAL(false)
		}},
		{"FlushWAL sync", faultfs.Rule{Op: faultfs.OpSync, Name: "wal/"}, func(db *DB) error {
			if err := db.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
			return db.FlushWAL(true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := faultfs.New(storage.NewMem())
			db, err := Open("", &Options{Storage: fs})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			fs.Inject(tc.rule)
			first := tc.do(db)
			if !errors.Is(first, ErrBackground) || !errors.Is(first, faultfs.ErrInjected) {
				t.Fatalf("first failing call: %v, want ErrBackground wrapping the injected fault", first)
			}
			later := db.Put([]byte("k2"), []byte("v"))
			if !errors.Is(later, ErrBackground) {
				t.Fatalf("later write: %v, want ErrBackground", later)
			}
		})
	}
}

// TestCloseReportsAFailureOnce checks that Close after a failed WAL write
// does not repeat the WAL's sticky error (its Sync and Close both return it).
func TestCloseReportsAFailureOnce(t *testing.T) {
	fs := faultfs.New(storage.NewMem())
	db, err := Open("", &Options{Storage: fs})
	if err != nil {
		t.Fatal(err)
	}
	fs.Inject(faultfs.Rule{Op: faultfs.OpSync, Name: "wal/"})
	if err := db.PutWith([]byte("k"), []byte("v"), TTL{}, Sync); err == nil {
		t.Fatal("synced write with a failing sync succeeded")
	}
	err = db.Close()
	if err == nil {
		t.Fatal("Close after a failed WAL sync returned nil")
	}
	msg := err.Error()
	if n := strings.Count(msg, faultfs.ErrInjected.Error()); n != 1 {
		t.Fatalf("Close reported the injected fault %d times: %q", n, msg)
	}
}
