package tests

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// Crash tests of the conditional writes (RFC 0009) and deadline changes
// (RFC 0008): what a synced conditional write acknowledged survives a power
// loss; unsynced ones are
// all-or-nothing per batch; a batch refused by its condition never appears.

func TestCrashConditionalWrites(t *testing.T) {
	e := newMemEnv(t, nil)
	db := e.db
	put(t, db, "cas", "v1")
	put(t, db, "cad", "x")
	put(t, db, "taken", "t")
	b := db.NewBatch()
	must(t, b.PutIfAbsent([]byte("idem"), []byte("r1"), mayfly.ExpireAfter(time.Hour)))
	must(t, b.CompareAndSwap([]byte("cas"), []byte("v1"), []byte("v2"), mayfly.NoExpiry()))
	must(t, b.CompareAndDelete([]byte("cad"), []byte("x")))
	must(t, b.PutIfPresent([]byte("taken"), []byte("t2"), mayfly.NoExpiry()))
	must(t, b.Write(mayfly.Sync))
	// Deadline changes (RFC 0008), synced in a batch.
	put(t, db, "slide", "s")
	putTTL(t, db, "keep", "k", mayfly.ExpireAfter(time.Minute))
	b = db.NewBatch()
	must(t, b.Expire([]byte("slide"), mayfly.ExpireAfter(2*time.Hour), mayfly.ExpireAlways))
	must(t, b.Persist([]byte("keep")))
	must(t, b.Write(mayfly.Sync))
	// Refused: its first entry must not appear, before or after the crash.
	b = db.NewBatch()
	must(t, b.Put([]byte("refused"), []byte("r")))
	must(t, b.PutIfAbsent([]byte("taken"), []byte("t3"), mayfly.NoExpiry()))
	if err := b.Write(mayfly.Sync); !isErr(err, mayfly.ErrConditionFailed) {
		t.Fatalf("Write of a refused batch: %v", err)
	}
	// A GetDel made durable by a later synced write.
	put(t, db, "token", "once")
	if v, err := db.GetDel([]byte("token")); err != nil || string(v) != "once" {
		t.Fatalf("GetDel = %q, %v", v, err)
	}
	lease, ok, err := db.AcquireLease([]byte("lock"), []byte("A"), time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}

	// Unsynced conditional batches of 5 rows, each row conditional; the
	// crash may keep a prefix of them, never part of one.
	for i := range 5 {
		e.clk.Advance(time.Second)
		b := db.NewBatch()
		for j := range 5 {
			must(t, b.PutIfAbsent([]byte(fmt.Sprintf("u%d-%d", i, j)), []byte("u"), mayfly.ExpireAfter(time.Hour)))
		}
		must(t, b.Write(mayfly.NoSync))
	}
	e.crashReopen()

	wantValue(t, e.db, "idem", "r1")
	wantTTL(t, e.db, "idem", time.Hour-5*time.Second)
	wantTTL(t, e.db, "slide", 2*time.Hour-5*time.Second)
	wantValue(t, e.db, "keep", "k")
	if _, expires, err := e.db.TTL([]byte("keep")); expires || err != nil {
		t.Fatalf("TTL of a persisted key after the crash: expires %v, %v", expires, err)
	}
	wantValue(t, e.db, "cas", "v2")
	wantAbsent(t, e.db, "cad")
	wantValue(t, e.db, "taken", "t2")
	wantAbsent(t, e.db, "refused")
	wantAbsent(t, e.db, "token")
	checkBatchesAtomic(t, e.db, 5, 5)

	// The grant survived: nobody else gets the lock, the holder renews it,
	// and a new grant's token is above every token handed out before.
	if _, ok, err := e.db.AcquireLease([]byte("lock"), []byte("B"), time.Minute); ok || err != nil {
		t.Fatalf("AcquireLease of a lock granted before the crash = %v, %v; want false", ok, err)
	}
	if _, ok, err := e.db.RenewLease(lease, time.Minute); !ok || err != nil {
		t.Fatalf("RenewLease after the crash = %v, %v; want true", ok, err)
	}
	other, ok, err := e.db.AcquireLease([]byte("other"), []byte("B"), time.Minute)
	if err != nil || !ok || other.Token <= lease.Token {
		t.Fatalf("AcquireLease after the crash = %+v, %v, %v; want a token above %d", other, ok, err, lease.Token)
	}
}

// An unsynced batch refused by its condition leaves nothing in the WAL: a
// crash after a later sync brings back the batches around it, not it.
func TestCrashRefusedBatchNotLogged(t *testing.T) {
	e := newMemEnv(t, nil)
	put(t, e.db, "k", "v")
	b := e.db.NewBatch()
	must(t, b.Put([]byte("a"), []byte("1")))
	must(t, b.PutIfAbsent([]byte("k"), []byte("w"), mayfly.NoExpiry()))
	if err := b.Write(mayfly.NoSync); !isErr(err, mayfly.ErrConditionFailed) {
		t.Fatalf("Write of a refused batch: %v", err)
	}
	if ok, err := e.db.CompareAndSwap([]byte("k"), []byte("v"), []byte("w"), mayfly.NoExpiry()); !ok || err != nil {
		t.Fatalf("CompareAndSwap = %v, %v", ok, err)
	}
	must(t, e.db.FlushWAL(true))
	e.crashReopen()
	wantAbsent(t, e.db, "a")
	wantValue(t, e.db, "k", "w")
}

// crashRow is a row of TestCrashRandomPrefix's model: a value and a
// deadline (0: none).
type crashRow = struct {
	v        string
	deadline int64
}

// addConditional adds to b a random conditional write of key k (value v),
// applies it to the model next as of clock time now, and reports whether
// its condition holds there.
func addConditional(t *testing.T, rng *rand.Rand, b *mayfly.Batch, next map[string]crashRow, k string, now int64, v string) bool {
	t.Helper()
	cur, live := next[k]
	live = live && (cur.deadline == 0 || cur.deadline >= now)
	old := cur.v
	if rng.IntN(4) == 0 {
		old += "!" // a value the key does not hold
	}
	switch rng.IntN(3) {
	case 0:
		ttl := time.Duration(1+rng.IntN(3000)) * time.Millisecond
		must(t, b.PutIfAbsent([]byte(k), []byte(v), mayfly.ExpireAfter(ttl)))
		next[k] = crashRow{v, now + ttl.Milliseconds()}
		return !live
	case 1:
		must(t, b.CompareAndSwap([]byte(k), []byte(old), []byte(v), mayfly.NoExpiry()))
		next[k] = crashRow{v, 0}
	default:
		must(t, b.CompareAndDelete([]byte(k), []byte(old)))
		delete(next, k)
	}
	return live && old == cur.v
}
