package mayfly

import (
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

// TestSyncedPutStorageOps: once the WAL segment exists, each synced Put
// costs the storage exactly one log write and one log sync, and no other
// operation (no directory sync, no reopen, no extra write).
func TestSyncedPutStorageOps(t *testing.T) {
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fs := faultfs.New(local)
	db, err := Open("", &Options{Storage: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The first synced write may create the segment and sync its header.
	if err := db.PutWith([]byte("warm"), []byte("up"), DefaultTTL(), Sync); err != nil {
		t.Fatal(err)
	}
	const puts = 50
	var before [32]int64
	for op := faultfs.OpAny + 1; op <= faultfs.OpClose; op++ {
		before[op] = fs.Count(op)
	}
	for i := range puts {
		if err := db.PutWith([]byte(fmt.Sprintf("key%03d", i)), []byte("value"), DefaultTTL(), Sync); err != nil {
			t.Fatal(err)
		}
	}
	for op := faultfs.OpAny + 1; op <= faultfs.OpClose; op++ {
		want := int64(0)
		if op == faultfs.OpLogWrite || op == faultfs.OpSync {
			want = puts
		}
		if got := fs.Count(op) - before[op]; got != want {
			t.Errorf("%d synced puts made %d %v operations, want %d", puts, got, op, want)
		}
	}
}
