package mayfly

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func acquire(t *testing.T, db *DB, key, holder string, ttl time.Duration, want bool) Lease {
	t.Helper()
	l, ok, err := db.AcquireLease([]byte(key), []byte(holder), ttl)
	if err != nil || ok != want {
		t.Fatalf("AcquireLease(%s, %s) = %v, %v; want %v", key, holder, ok, err, want)
	}
	return l
}

func TestLeaseLifecycle(t *testing.T) {
	db, dir, clk := condDB(t)
	syncs := db.Metrics().WALSyncs
	a := acquire(t, db, "lock", "A", 10*time.Second, true)
	if !bytes.Equal(a.Key, []byte("lock")) || !bytes.Equal(a.Holder, []byte("A")) || !a.Deadline.Equal(epoch.Add(10*time.Second)) {
		t.Fatalf("lease = %+v; want lock held by A until epoch+10s", a)
	}
	if a.Token != db.visibleSeq.Load() {
		t.Fatalf("token %d, want the grant's sequence number %d", a.Token, db.visibleSeq.Load())
	}
	if got := db.Metrics().WALSyncs; got != syncs+1 {
		t.Fatalf("WAL syncs %d -> %d: the grant was not synced", syncs, got)
	}
	acquire(t, db, "lock", "B", 10*time.Second, false)
	acquire(t, db, "lock", "A", 10*time.Second, false) // held: renew, not acquire

	clk.Advance(7 * time.Second)
	r, ok, err := db.RenewLease(a, 10*time.Second)
	if err != nil || !ok || r.Token != a.Token || !r.Deadline.Equal(epoch.Add(17*time.Second)) {
		t.Fatalf("RenewLease = %+v, %v, %v; want the same token until epoch+17s", r, ok, err)
	}
	forged := r
	forged.Token++
	if _, ok, err := db.RenewLease(forged, time.Second); ok || err != nil {
		t.Fatalf("RenewLease with another token = %v, %v; want false", ok, err)
	}
	forged = r
	forged.Holder = []byte("B")
	if ok, err := db.ReleaseLease(forged); ok || err != nil {
		t.Fatalf("ReleaseLease by another holder = %v, %v; want false", ok, err)
	}

	clk.Advance(10 * time.Second) // at the renewed deadline: still held
	acquire(t, db, "lock", "B", time.Second, false)
	clk.Advance(time.Millisecond)
	b := acquire(t, db, "lock", "B", 10*time.Second, true)
	if b.Token <= a.Token {
		t.Fatalf("token of a later grant %d <= %d", b.Token, a.Token)
	}
	if _, ok, err := db.RenewLease(r, 10*time.Second); ok || err != nil {
		t.Fatalf("RenewLease of an expired, regranted lease = %v, %v; want false", ok, err)
	}
	if ok, err := db.ReleaseLease(r); ok || err != nil {
		t.Fatalf("ReleaseLease of an expired, regranted lease = %v, %v; want false", ok, err)
	}

	// Tokens increase across keys and restarts.
	other := acquire(t, db, "other", "C", time.Minute, true)
	if other.Token <= b.Token {
		t.Fatalf("token on another key %d <= %d", other.Token, b.Token)
	}
	db = reopen(t, db, dir, clk)
	if ok, err := db.ReleaseLease(b); !ok || err != nil {
		t.Fatalf("ReleaseLease by the holder after reopen = %v, %v; want true", ok, err)
	}
	if ok, err := db.ReleaseLease(b); ok || err != nil {
		t.Fatalf("second ReleaseLease = %v, %v; want false", ok, err)
	}
	c := acquire(t, db, "lock", "C", time.Second, true)
	if c.Token <= other.Token {
		t.Fatalf("token after reopen %d <= %d", c.Token, other.Token)
	}
	// An expired lease, never regranted, is not renewed either.
	clk.Advance(time.Second + time.Millisecond)
	if _, ok, err := db.RenewLease(c, time.Second); ok || err != nil {
		t.Fatalf("RenewLease of an expired lease = %v, %v; want false", ok, err)
	}
}

func TestLeaseRefusesBadInput(t *testing.T) {
	db, dir, clk := condDB(t)
	seq := db.visibleSeq.Load()
	if _, _, err := db.AcquireLease([]byte("k"), []byte("A"), 0); !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("AcquireLease with ttl 0: %v", err)
	}
	if _, _, err := db.AcquireLease(nil, []byte("A"), time.Second); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("AcquireLease of an empty key: %v", err)
	}
	if _, _, err := db.AcquireLease([]byte("k"), make([]byte, MaxValueSize), time.Second); !errors.Is(err, ErrValueTooLarge) {
		t.Errorf("AcquireLease with a huge holder: %v", err)
	}
	wantUnchanged(t, db, seq)
	l := acquire(t, db, "k", "A", time.Second, true)
	seq = db.visibleSeq.Load()
	if _, _, err := db.RenewLease(l, time.Microsecond); !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("RenewLease with ttl 1µs: %v", err)
	}
	if _, err := db.ReleaseLease(Lease{Holder: l.Holder, Token: l.Token}); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("ReleaseLease of a lease without a key: %v", err)
	}
	wantUnchanged(t, db, seq)

	must(t, db.Close())
	if _, _, err := db.AcquireLease([]byte("k2"), []byte("A"), time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("AcquireLease on a closed DB: %v", err)
	}
	ro, err := Open(dir, &Options{Clock: clk, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, _, err := ro.AcquireLease([]byte("k2"), []byte("A"), time.Second); !errors.Is(err, ErrReadOnly) {
		t.Errorf("AcquireLease on a read-only DB: %v", err)
	}
	if _, _, err := ro.RenewLease(l, time.Second); !errors.Is(err, ErrReadOnly) {
		t.Errorf("RenewLease on a read-only DB: %v", err)
	}
	if _, err := ro.ReleaseLease(l); !errors.Is(err, ErrReadOnly) {
		t.Errorf("ReleaseLease on a read-only DB: %v", err)
	}
}

// Grants in one commit group get distinct, increasing tokens: each is
// stamped with its own row's sequence number.
func TestLeaseTokensInOneGroup(t *testing.T) {
	db, _, _ := condDB(t)
	var group []*commitWaiter
	for _, k := range []string{"a", "b", "c"} {
		b := db.NewBatch()
		value := leaseValue(0, []byte("h"))
		must(t, b.Put([]byte("pad-"+k), nil))
		must(t, b.PutIfAbsent([]byte(k), value, ExpireAfter(time.Second)))
		b.cond.tokens = append(b.cond.tokens, tokenSlot{offset: len(b.data) - len(value), entry: b.count - 1})
		group = append(group, &commitWaiter{batch: b})
	}
	seq := db.visibleSeq.Load()
	err := commitGroupInline(db, group)
	must(t, err)
	for i, k := range []string{"a", "b", "c"} {
		v, err := db.Get([]byte(k))
		must(t, err)
		want := leaseValue(seq+uint64(2*i+2), []byte("h"))
		if !bytes.Equal(v, want) {
			t.Errorf("lease %s = %x, want token %d: %x", k, v, seq+uint64(2*i+2), want)
		}
	}
}
