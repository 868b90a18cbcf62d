package mayfly

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

// TestBatchOwnership checks the ownership rule of Batch: Write keeps nothing
// of the batch, so refilling it after Write cannot change committed data
// (in the memtable or in the WAL), and a closed batch refuses use.
func TestBatchOwnership(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, nil)

	b := db.NewBatchWithSize(64 << 10)
	if cap(b.data) < 64<<10 {
		t.Fatalf("NewBatchWithSize(64 KiB) buffer has capacity %d", cap(b.data))
	}
	for round := range 3 {
		b.Reset()
		for i := range 50 {
			key := fmt.Sprintf("k%02d", i)
			if err := b.Put([]byte(key), []byte(fmt.Sprintf("round%d", round))); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Write(Sync); err != nil {
			t.Fatal(err)
		}
		// Overwrite the batch's buffer in place with other rows; the
		// committed round must be unaffected.
		b.Reset()
		for i := range 50 {
			b.Put([]byte(fmt.Sprintf("k%02d", i)), []byte("never-written"))
		}
		mustGet(t, db, "k00", fmt.Sprintf("round%d", round))
		mustGet(t, db, "k49", fmt.Sprintf("round%d", round))
	}
	b.Close()
	b.Close() // a second Close does nothing
	if err := b.Put([]byte("x"), []byte("y")); !errors.Is(err, ErrBatchClosed) {
		t.Fatalf("Put after Close = %v; want ErrBatchClosed", err)
	}
	if err := b.Write(nil); !errors.Is(err, ErrBatchClosed) {
		t.Fatalf("Write after Close = %v; want ErrBatchClosed", err)
	}

	// A batch from the pool starts empty.
	b2 := db.NewBatch()
	if b2.Len() != 0 || b2.Size() != len(b2.data) || len(b2.data) != 20 {
		t.Fatalf("pooled batch not empty: len %d size %d", b2.Len(), b2.Size())
	}
	b2.Close()

	// Crash: drop the handle without Close. The preallocated WAL segment
	// ends in zeros, which replay must read as a clean end, not a torn tail.
	fi, err := os.Stat(filepath.Join(dir, logName(db.logNum)))
	if err != nil || fi.Size() == 0 || fi.Size()%storage.LogPreallocSize != 0 {
		t.Fatalf("WAL segment is not preallocated: %v, %v", fi, err)
	}
	db.lock.Close()
	db2 := openTestDB(t, dir, clk, nil)
	defer db2.Close()
	for i := range 50 {
		mustGet(t, db2, fmt.Sprintf("k%02d", i), "round2")
	}
	if n := db2.Metrics().WALTornTails; n != 0 {
		t.Fatalf("replay of a preallocated segment reported %d torn tails", n)
	}
}
