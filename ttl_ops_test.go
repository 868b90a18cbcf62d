package mayfly

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// expireTimeOf returns key's deadline (ok false: no deadline), failing the
// test if the key is not live.
func expireTimeOf(t *testing.T, db *DB, key string) (time.Time, bool) {
	t.Helper()
	at, ok, err := db.ExpireTime([]byte(key))
	if err != nil {
		t.Fatalf("ExpireTime(%s): %v", key, err)
	}
	return at, ok
}

// TestExpireConditions: each ExpireCond applies exactly when Redis's option
// would, on a key with a deadline and on one without; a missing or expired
// key is never changed.
func TestExpireConditions(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	cur := epoch.Add(time.Minute)
	later, earlier := ExpireAt(epoch.Add(time.Hour)), ExpireAt(epoch.Add(time.Second))
	for _, tc := range []struct {
		cond               ExpireCond
		ttl                TTL
		hasDeadline, apply bool
	}{
		{ExpireAlways, later, true, true},
		{ExpireAlways, later, false, true},
		{ExpireNX, later, true, false},
		{ExpireNX, later, false, true},
		{ExpireXX, later, true, true},
		{ExpireXX, later, false, false},
		{ExpireGT, later, true, true},
		{ExpireGT, earlier, true, false},
		{ExpireGT, later, false, false},
		{ExpireGT, NoExpiry(), true, true},
		{ExpireLT, earlier, true, true},
		{ExpireLT, later, true, false},
		{ExpireLT, earlier, false, true},
		{ExpireLT, NoExpiry(), true, false},
	} {
		name := fmt.Sprintf("%v/%v/deadline=%v", tc.cond, tc.ttl, tc.hasDeadline)
		initial := NoExpiry()
		if tc.hasDeadline {
			initial = ExpireAt(cur)
		}
		if err := db.PutTTL([]byte("k"), []byte("v"), initial); err != nil {
			t.Fatal(err)
		}
		applied, err := db.Expire([]byte("k"), tc.ttl, tc.cond)
		if err != nil || applied != tc.apply {
			t.Fatalf("%s: Expire = %v, %v; want %v", name, applied, err, tc.apply)
		}
		at, ok := expireTimeOf(t, db, "k")
		wantTTL := initial
		if tc.apply {
			wantTTL = tc.ttl
		}
		switch {
		case wantTTL.kind == ttlNone && ok:
			t.Fatalf("%s: deadline %v, want none", name, at)
		case wantTTL.kind == ttlAt && (!ok || at.UnixMilli() != wantTTL.deadline):
			t.Fatalf("%s: deadline %v (%v), want %v", name, at, ok, time.UnixMilli(wantTTL.deadline))
		}
		mustGet(t, db, "k", "v")
	}
	if ok, err := db.Expire([]byte("missing"), ExpireAfter(time.Hour), ExpireAlways); ok || err != nil {
		t.Fatalf("Expire of a missing key = %v, %v", ok, err)
	}
	if _, err := db.Get([]byte("missing")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Expire created a key: %v", err)
	}
	if err := db.PutTTL([]byte("e"), []byte("v"), ExpireAfter(time.Second)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second + time.Millisecond)
	if ok, err := db.Expire([]byte("e"), ExpireAfter(time.Hour), ExpireAlways); ok || err != nil {
		t.Fatalf("Expire of an expired key = %v, %v", ok, err)
	}
	mustGet(t, db, "e", "")
	if _, err := db.Expire([]byte("k"), ExpireAfter(time.Hour), ExpireCond(9)); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("unknown ExpireCond: %v", err)
	}
	if _, err := db.Expire([]byte("k"), ExpireAfter(0), ExpireAlways); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("invalid TTL: %v", err)
	}
}

// TestExpireSurvivesEveryLayer: a deadline set by Expire, a shortened one,
// and one removed by Persist read the same from the memtable, after a
// flush, after compaction and after reopening, and the visibility boundary
// is the deadline's own millisecond.
func TestExpireSurvivesEveryLayer(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, nil)
	for _, k := range []string{"extend", "shorten", "persist"} {
		if err := db.PutTTL([]byte(k), []byte(k+"-value"), ExpireAfter(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	mustApply := func(ok bool, err error) {
		t.Helper()
		if !ok || err != nil {
			t.Fatalf("not applied: %v", err)
		}
	}
	mustApply(db.Expire([]byte("extend"), ExpireAfter(time.Minute), ExpireGT))
	mustApply(db.Expire([]byte("shorten"), ExpireAfter(5*time.Second), ExpireLT))
	mustApply(db.Persist([]byte("persist")))
	if ok, err := db.Persist([]byte("persist")); ok || err != nil {
		t.Fatalf("second Persist = %v, %v; want false (no deadline left)", ok, err)
	}
	check := func(stage string) {
		t.Helper()
		if at, ok := expireTimeOf(t, db, "extend"); !ok || !at.Equal(epoch.Add(time.Minute)) {
			t.Fatalf("%s: extend deadline %v, %v", stage, at, ok)
		}
		if at, ok := expireTimeOf(t, db, "shorten"); !ok || !at.Equal(epoch.Add(5*time.Second)) {
			t.Fatalf("%s: shorten deadline %v, %v", stage, at, ok)
		}
		if at, ok := expireTimeOf(t, db, "persist"); ok {
			t.Fatalf("%s: persisted key expires at %v", stage, at)
		}
	}
	check("memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, nil)
	defer db.Close()
	check("reopened")
	clk.Advance(5 * time.Second)
	mustGet(t, db, "shorten", "shorten-value")
	clk.Advance(time.Millisecond)
	mustGet(t, db, "shorten", "")
	clk.Advance(10 * time.Second) // past the original deadline
	mustGet(t, db, "extend", "extend-value")
	mustGet(t, db, "persist", "persist-value")
	clk.Advance(time.Minute)
	mustGet(t, db, "extend", "")
	mustGet(t, db, "persist", "persist-value")
}

// TestExpireWritesNoValue: changing the deadline of a 1 KiB value logs a
// record the size of the key, not of the value.
func TestExpireWritesNoValue(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	value := bytes.Repeat([]byte("x"), 1024)
	if err := db.PutTTL([]byte("session:42"), value, ExpireAfter(time.Minute)); err != nil {
		t.Fatal(err)
	}
	putBytes := db.Metrics().WALBytes
	const n = 100
	for i := range n {
		clk.Advance(time.Second)
		if ok, err := db.Expire([]byte("session:42"), ExpireAfter(time.Minute+time.Duration(i)*time.Second), ExpireAlways); !ok || err != nil {
			t.Fatalf("Expire %d = %v, %v", i, ok, err)
		}
	}
	perExpire := (db.Metrics().WALBytes - putBytes) / n
	t.Logf("WAL bytes: put of a 1 KiB value %d, Expire %d", putBytes, perExpire)
	if perExpire > 64 {
		t.Fatalf("an Expire logged %d bytes: it rewrote more than the key", perExpire)
	}
	if got, err := db.Get([]byte("session:42")); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("value after %d Expires: %d bytes, %v", n, len(got), err)
	}
}

// TestTouchCoalesces: touches that would move the deadline by less than the
// window write nothing, and the deadline then stays within the window of
// the one asked; a touch past the window writes. The window is capped at a
// tenth of the TTL.
func TestTouchCoalesces(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil) // TouchWindow: 1 s
	defer db.Close()
	const ttl = 30 * time.Minute
	if err := db.PutTTL([]byte("s"), bytes.Repeat([]byte("v"), 200), ExpireAfter(ttl)); err != nil {
		t.Fatal(err)
	}
	m0 := db.Metrics()
	for range 100 {
		clk.Advance(9 * time.Millisecond) // 100 touches within 0.9 s
		if ok, err := db.Touch([]byte("s"), ExpireAfter(ttl)); !ok || err != nil {
			t.Fatalf("Touch = %v, %v", ok, err)
		}
		at, _ := expireTimeOf(t, db, "s")
		if asked := clk.Now().Add(ttl); at.After(asked) || asked.Sub(at) > time.Second {
			t.Fatalf("deadline %v, asked %v: off by more than the window", at, asked)
		}
	}
	m1 := db.Metrics()
	if m1.TouchesCoalesced-m0.TouchesCoalesced != 100 || m1.WALBytes != m0.WALBytes {
		t.Fatalf("within the window: %d coalesced, %d WAL bytes; want 100 and 0",
			m1.TouchesCoalesced-m0.TouchesCoalesced, m1.WALBytes-m0.WALBytes)
	}
	clk.Advance(200 * time.Millisecond) // the deadline is now 1.1 s short
	v, err := db.GetEx([]byte("s"), ExpireAfter(ttl))
	if err != nil || len(v) != 200 {
		t.Fatalf("GetEx = %d bytes, %v", len(v), err)
	}
	if at, _ := expireTimeOf(t, db, "s"); !at.Equal(clk.Now().Add(ttl)) {
		t.Fatalf("GetEx past the window left the deadline at %v, want %v", at, clk.Now().Add(ttl))
	}
	if db.Metrics().WALBytes == m1.WALBytes {
		t.Fatal("a touch past the window wrote nothing")
	}
	// A short TTL: the window is a tenth of it (50 ms), not 1 s.
	if err := db.PutTTL([]byte("short"), []byte("v"), ExpireAfter(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(60 * time.Millisecond)
	before := db.Metrics().WALBytes
	if ok, err := db.Touch([]byte("short"), ExpireAfter(500*time.Millisecond)); !ok || err != nil {
		t.Fatalf("Touch = %v, %v", ok, err)
	}
	if db.Metrics().WALBytes == before {
		t.Fatal("a touch 60 ms short of a 500 ms TTL was coalesced")
	}
	// Missing keys.
	if ok, err := db.Touch([]byte("none"), ExpireAfter(ttl)); ok || err != nil {
		t.Fatalf("Touch of a missing key = %v, %v", ok, err)
	}
	if _, err := db.GetEx([]byte("none"), ExpireAfter(ttl)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetEx of a missing key: %v", err)
	}
}

// TestBatchExpire: deadline changes in a batch see the batch's earlier
// entries, and a failed one writes nothing of the batch.
func TestBatchExpire(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	b := db.NewBatch()
	defer b.Close()
	if err := b.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Expire([]byte("a"), ExpireAfter(time.Second), ExpireNX); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(nil); err != nil {
		t.Fatalf("Put then Expire of the same key: %v", err)
	}
	if at, ok := expireTimeOf(t, db, "a"); !ok || !at.Equal(epoch.Add(time.Second)) {
		t.Fatalf("deadline %v, %v", at, ok)
	}
	b.Reset()
	if err := b.Put([]byte("b"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := b.Persist([]byte("absent")); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(nil); !errors.Is(err, ErrConditionFailed) {
		t.Fatalf("batch with a failing Persist: %v", err)
	}
	mustGet(t, db, "b", "")
}

// TestTTLOpsReadOnly: every TTL operation of a read-only database fails
// with ErrReadOnly.
func TestTTLOpsReadOnly(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, nil)
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro := openTestDB(t, dir, clk, func(o *Options) { o.ReadOnly = true })
	defer ro.Close()
	if _, err := ro.Expire([]byte("k"), ExpireAfter(time.Second), ExpireAlways); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Expire: %v", err)
	}
	if _, err := ro.Persist([]byte("k")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Persist: %v", err)
	}
	if _, err := ro.Touch([]byte("k"), ExpireAfter(time.Second)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Touch: %v", err)
	}
	if _, err := ro.GetEx([]byte("k"), ExpireAfter(time.Second)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("GetEx: %v", err)
	}
	mustGet(t, ro, "k", "v")
}
