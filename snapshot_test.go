package mayfly

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// TestSnapshotScanAndExpireTime: a snapshot's Scan and ExpireTime read the
// keys and deadlines as they were when it was taken, whatever deadline
// changes, deletes and clock moves follow; after Close both report
// ErrClosed.
func TestSnapshotScanAndExpireTime(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	for i, ttl := range []TTL{ExpireAfter(time.Second), ExpireAfter(time.Minute), NoExpiry()} {
		if err := db.PutTTL(fmt.Appendf(nil, "k%d", i), []byte("v"), ttl); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := db.Expire([]byte("k0"), ExpireAfter(time.Hour), ExpireAlways); !ok || err != nil {
		t.Fatalf("Expire = %v, %v", ok, err)
	}
	if ok, err := db.Persist([]byte("k1")); !ok || err != nil {
		t.Fatalf("Persist = %v, %v", ok, err)
	}
	if err := db.Delete([]byte("k2")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second) // past k0's deadline as the snapshot knows it

	scanned := func(scan func(lo, hi []byte, errp *error) func(func([]byte, []byte) bool)) string {
		var out string
		var err error
		for k, v := range scan(nil, nil, &err) {
			out += string(k) + "=" + string(v) + " "
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	snapScan := func(lo, hi []byte, errp *error) func(func([]byte, []byte) bool) { return snap.Scan(lo, hi, errp) }
	dbScan := func(lo, hi []byte, errp *error) func(func([]byte, []byte) bool) { return db.Scan(lo, hi, errp) }
	if got, want := scanned(snapScan), "k0=v k1=v k2=v "; got != want {
		t.Fatalf("snapshot scan %q, want %q", got, want)
	}
	if got, want := scanned(dbScan), "k0=v k1=v "; got != want {
		t.Fatalf("db scan %q, want %q", got, want)
	}
	for k, want := range map[string]time.Duration{"k0": time.Second, "k1": time.Minute} {
		at, ok, err := snap.ExpireTime([]byte(k))
		if err != nil || !ok || !at.Equal(epoch.Add(want)) {
			t.Fatalf("snapshot ExpireTime(%s) = %v, %v, %v; want %v", k, at, ok, err, epoch.Add(want))
		}
	}
	if _, ok, err := snap.ExpireTime([]byte("k2")); ok || err != nil {
		t.Fatalf("snapshot ExpireTime(k2) = %v, %v; want no deadline", ok, err)
	}
	if at, ok, err := db.ExpireTime([]byte("k0")); err != nil || !ok || !at.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("db ExpireTime(k0) = %v, %v, %v", at, ok, err)
	}
	if _, ok, err := db.ExpireTime([]byte("k1")); ok || err != nil {
		t.Fatalf("db ExpireTime(k1) = %v, %v; want no deadline", ok, err)
	}
	if _, _, err := db.ExpireTime([]byte("k2")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("db ExpireTime(k2): %v", err)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	var serr error
	for range snap.Scan(nil, nil, &serr) {
		t.Fatal("a closed snapshot's scan yielded a key")
	}
	if !errors.Is(serr, ErrClosed) {
		t.Fatalf("closed snapshot scan: %v", serr)
	}
	if _, _, err := snap.ExpireTime([]byte("k0")); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed snapshot ExpireTime: %v", err)
	}
}
