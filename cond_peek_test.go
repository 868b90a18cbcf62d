package mayfly

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// peekThenWrite builds a PutIfAbsent of key, peeks at key, runs between,
// then writes the batch: the commit must judge the state after between.
func peekThenWrite(t *testing.T, db *DB, key string, between func()) error {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	must(t, b.PutIfAbsent([]byte(key), []byte("new"), NoExpiry()))
	must(t, db.peekKey([]byte(key), false, &b.cond.peek))
	between()
	return b.Write(nil)
}

// TestPeekedStateRechecked: a read taken before the pipeline stands for the
// key's state only while nothing can have changed it: a write after the
// read (in the same memtable, or moved on by a flush) and an expiry in
// between are seen by the commit.
func TestPeekedStateRechecked(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()

	// A write after the read, in the active memtable.
	err := peekThenWrite(t, db, "a", func() { must(t, db.Put([]byte("a"), []byte("v"))) })
	if !errors.Is(err, ErrConditionFailed) {
		t.Fatalf("PutIfAbsent after a concurrent put: %v, want ErrConditionFailed", err)
	}
	mustGet(t, db, "a", "v")

	// A write after the read, then a rotation and flush.
	err = peekThenWrite(t, db, "b", func() {
		must(t, db.Put([]byte("b"), []byte("v")))
		must(t, db.Flush())
	})
	if !errors.Is(err, ErrConditionFailed) {
		t.Fatalf("PutIfAbsent after a concurrent put and a flush: %v, want ErrConditionFailed", err)
	}
	mustGet(t, db, "b", "v")

	// A key live at the read that expires before the commit.
	must(t, db.PutTTL([]byte("c"), []byte("old"), ExpireAfter(time.Second)))
	err = peekThenWrite(t, db, "c", func() { clk.Advance(time.Second + time.Millisecond) })
	if err != nil {
		t.Fatalf("PutIfAbsent of a key that expired after the read: %v", err)
	}
	mustGet(t, db, "c", "new")
}

// TestConditionFailedOnRead: a single-key call whose condition a read
// already finds false returns without writing anything.
func TestConditionFailedOnRead(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	must(t, db.Put([]byte("k"), []byte("v")))
	m0 := db.Metrics()
	if ok, err := db.PutIfAbsent([]byte("k"), []byte("x"), NoExpiry()); ok || err != nil {
		t.Fatalf("PutIfAbsent of a live key = %v, %v", ok, err)
	}
	if _, err := db.GetDel([]byte("missing")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetDel of a missing key: %v", err)
	}
	if ok, err := db.Expire([]byte("missing"), ExpireAfter(time.Second), ExpireAlways); ok || err != nil {
		t.Fatalf("Expire of a missing key = %v, %v", ok, err)
	}
	m1 := db.Metrics()
	if n := m1.ConditionsFailedOnRead - m0.ConditionsFailedOnRead; n != 3 {
		t.Fatalf("%d calls failed on the read, want 3", n)
	}
	if m1.WALBytes != m0.WALBytes || m1.BatchesCommitted != m0.BatchesCommitted {
		t.Fatalf("failed conditions wrote %d WAL bytes, %d batches", m1.WALBytes-m0.WALBytes, m1.BatchesCommitted-m0.BatchesCommitted)
	}
	mustGet(t, db, "k", "v")
}

// singleKeyCall builds the batch of a single-key call on key with build and
// peeks at key as the DB-level call does (writeCondOn); a blind batch is
// not peeked.
func singleKeyCall(t *testing.T, db *DB, key []byte, build func(b *Batch, key []byte) error) *Batch {
	t.Helper()
	b := db.NewBatch()
	must(t, build(b, key))
	if len(b.cond.list) == 0 {
		return b
	}
	bc := &b.cond.list[0]
	must(t, db.peekKey(key, bc.kind.needsValue() || bc.capture, &b.cond.peek))
	b.cond.quiet = true
	return b
}

// racingGetDels opens a database holding token "tok" = "t1" and builds two
// GetDel calls of it, both peeked while it is live; the database and the
// batches are closed when the test ends.
func racingGetDels(t *testing.T) (db *DB, first, second *Batch) {
	t.Helper()
	db = openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	t.Cleanup(func() { db.Close() })
	must(t, db.Put([]byte("tok"), []byte("t1")))
	getDel := func(b *Batch, key []byte) error { return b.deleteIfPresent(key) }
	first = singleKeyCall(t, db, []byte("tok"), getDel)
	second = singleKeyCall(t, db, []byte("tok"), getDel)
	t.Cleanup(func() { first.Close(); second.Close() })
	return db, first, second
}

// TestProvenGroupRacingGetDel: two GetDel calls of one token, both peeked
// while it was live, commit in one group without draining: the first takes
// it, the second fails on the state the first left, and returns only once
// the first's deletion is published.
func TestProvenGroupRacingGetDel(t *testing.T) {
	db, first, second := racingGetDels(t)
	m0 := db.Metrics()
	returned := false
	group := commitAsGroup(t, db, []*Batch{first, second}, map[int]func(){1: func() {
		returned = true
		if _, err := db.Get([]byte("tok")); !errors.Is(err, ErrNotFound) {
			t.Errorf("the losing GetDel returned before the winner's deletion was visible: Get = %v", err)
		}
	}})
	if !returned {
		t.Fatal("the losing GetDel, decided on its group's unpublished deletion, returned at once")
	}
	if group[0].err != nil || string(first.cond.got) != "t1" {
		t.Fatalf("first GetDel: %v, %q", group[0].err, first.cond.got)
	}
	if !errors.Is(group[1].err, ErrConditionFailed) {
		t.Fatalf("second GetDel: %v, want ErrConditionFailed", group[1].err)
	}
	if m := db.Metrics(); m.CondGroupsProven != m0.CondGroupsProven+1 || m.CondGroupsDrained != m0.CondGroupsDrained {
		t.Fatalf("proven %d, drained %d groups; want 1, 0", m.CondGroupsProven-m0.CondGroupsProven, m.CondGroupsDrained-m0.CondGroupsDrained)
	}
}

// TestProvenGroupMatchesSeparateCommits: for every pair of single-key calls
// (and blind writes) on one key, from each starting state, committing both
// in one group after peeking both gives each call the outcome, and the key
// the state, that committing them one after the other gives.
func TestProvenGroupMatchesSeparateCommits(t *testing.T) {
	counters := func(o *Options) { o.MergeOperator = Int64Add }
	grouped := openTestDB(t, t.TempDir(), clock.NewManual(epoch), counters)
	defer grouped.Close()
	apart := openTestDB(t, t.TempDir(), clock.NewManual(epoch), counters)
	defer apart.Close()
	m0 := grouped.Metrics()
	n := checkCallPairs(t, grouped, apart, nil, func(k []byte, a, b provenGroupOp) []*commitWaiter {
		ga, gb := singleKeyCall(t, grouped, k, a.build), singleKeyCall(t, grouped, k, b.build)
		return commitAsGroup(t, grouped, []*Batch{ga, gb}, nil)
	})
	// The calls on a key an earlier call of the group wrote were proven,
	// not drained: the groups drained are those with a blind write or a
	// deadline row read without the value before the second call.
	if m := grouped.Metrics(); m.CondGroupsProven-m0.CondGroupsProven < uint64(n)/2 {
		t.Errorf("%d of %d groups proven", m.CondGroupsProven-m0.CondGroupsProven, n)
	}
}

// TestProvenGroupBlindWriteBetween: a blind write of the key between two
// calls of one group hides the state the first call left: the second call
// is not proven on it, and the group drains and sees the blind write.
func TestProvenGroupBlindWriteBetween(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	key := []byte("tok")
	first := singleKeyCall(t, db, key, func(b *Batch, k []byte) error { return b.PutIfAbsent(k, []byte("t1"), NoExpiry()) })
	blind := singleKeyCall(t, db, key, func(b *Batch, k []byte) error { return b.Put(k, []byte("t2")) })
	take := singleKeyCall(t, db, key, func(b *Batch, k []byte) error { return b.deleteIfPresent(k) })
	for _, b := range []*Batch{first, blind, take} {
		defer b.Close()
	}
	m0 := db.Metrics()
	group := commitAsGroup(t, db, []*Batch{first, blind, take}, nil)
	for i, g := range group {
		must(t, g.err)
		if i == 2 && string(take.cond.got) != "t2" {
			t.Fatalf("GetDel after a blind put in its group took %q, want t2", take.cond.got)
		}
	}
	if m := db.Metrics(); m.CondGroupsDrained != m0.CondGroupsDrained+1 {
		t.Fatalf("drained %d groups, want 1", m.CondGroupsDrained-m0.CondGroupsDrained)
	}
}

// TestProvenGroupFailureAfterPoison: when the write a failed call's outcome
// rests on fails to apply (the database is poisoned), the call returns that
// failure, not its condition's.
func TestProvenGroupFailureAfterPoison(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	key := []byte("k")
	putNX := func(b *Batch, k []byte) error { return b.PutIfAbsent(k, []byte("v"), NoExpiry()) }
	first, second := singleKeyCall(t, db, key, putNX), singleKeyCall(t, db, key, putNX)
	defer first.Close()
	defer second.Close()
	db.pub.beforeApply = func(b *Batch) {
		if b == first {
			b.data = b.data[:len(b.data)-1] // a malformed batch: its apply fails
		}
	}
	group := commitAsGroup(t, db, []*Batch{first, second}, nil)
	if group[0].err == nil || errors.Is(group[0].err, ErrConditionFailed) {
		t.Fatalf("first call's apply failed with %v", group[0].err)
	}
	if errors.Is(group[1].err, ErrConditionFailed) || !errors.Is(group[1].err, group[0].err) {
		t.Fatalf("second call, refused on the first's failed write: %v, want %v", group[1].err, group[0].err)
	}
}

// provenGroupOp is a single-key call (or blind write) on a key, and
// provenGroupInit a starting state of the key, for the tests that compare
// proven commits with fresh ones.
type provenGroupOp struct {
	name  string
	build func(b *Batch, k []byte) error
}

type provenGroupInit struct {
	name string
	put  func(db *DB, k []byte) error
}

// provenGroupOps returns every kind of single-key call and two blind writes.
func provenGroupOps() []provenGroupOp {
	ttl, long := ExpireAfter(5*time.Second), ExpireAfter(50*time.Second)
	return []provenGroupOp{
		{"PutIfAbsent", func(b *Batch, k []byte) error { return b.PutIfAbsent(k, []byte("n1"), ttl) }},
		{"PutIfPresent", func(b *Batch, k []byte) error { return b.PutIfPresent(k, []byte("n2"), NoExpiry()) }},
		{"CompareAndSwap", func(b *Batch, k []byte) error { return b.CompareAndSwap(k, []byte("v1"), []byte("n3"), ttl) }},
		{"CompareAndSwapN1", func(b *Batch, k []byte) error { return b.CompareAndSwap(k, []byte("n1"), []byte("n4"), ttl) }},
		{"CompareAndDelete", func(b *Batch, k []byte) error { return b.CompareAndDelete(k, []byte("v1")) }},
		{"GetDel", func(b *Batch, k []byte) error { return b.deleteIfPresent(k) }},
		{"ExpireXX", func(b *Batch, k []byte) error { return b.Expire(k, long, ExpireXX) }},
		{"ExpireNX", func(b *Batch, k []byte) error { return b.Expire(k, long, ExpireNX) }},
		{"ExpireGT", func(b *Batch, k []byte) error { return b.Expire(k, long, ExpireGT) }},
		{"ExpireLT", func(b *Batch, k []byte) error { return b.Expire(k, ttl, ExpireLT) }},
		{"Persist", func(b *Batch, k []byte) error { return b.Persist(k) }},
		{"GetEx", func(b *Batch, k []byte) error { return b.deadlineIf(k, long, ExpireAlways, true) }},
		{"Touch", func(b *Batch, k []byte) error { return b.deadlineIf(k, ttl, ExpireAlways, false) }},
		{"Add", func(b *Batch, k []byte) error {
			if err := b.AddBlind(k, 3, ttl); err != nil {
				return err
			}
			b.cond.add(b.count-1, condCounter, nil, true)
			return nil
		}},
		{"Put", func(b *Batch, k []byte) error { return b.PutTTL(k, []byte("p"), ttl) }},
		{"Delete", func(b *Batch, k []byte) error { return b.Delete(k) }},
	}
}

// provenGroupInits returns the starting states of the key.
func provenGroupInits() []provenGroupInit {
	return []provenGroupInit{
		{"absent", func(*DB, []byte) error { return nil }},
		{"live", func(db *DB, k []byte) error { return db.Put(k, []byte("v1")) }},
		{"expiring", func(db *DB, k []byte) error { return db.PutTTL(k, []byte("v1"), ExpireAfter(10*time.Second)) }},
		{"counter", func(db *DB, k []byte) error {
			return db.PutTTL(k, []byte{1, 0, 0, 0, 0, 0, 0, 0}, ExpireAfter(10*time.Second))
		}},
	}
}

// checkCallPairs runs, for every starting state of a fresh key and every
// ordered pair of provenGroupOps, run on db (which commits the pair the way
// under test and returns the two calls' waiters) and, on ref, the two calls
// committed one after the other, each peeked right before its commit, with
// gap run between them. Each call's outcome and the key's final state must
// be the same on both. It returns the number of pairs.
func checkCallPairs(t *testing.T, db, ref *DB, gap func(), run func(k []byte, a, b provenGroupOp) []*commitWaiter) int {
	t.Helper()
	outcome := func(g *commitWaiter) string { return fmt.Sprintf("%v got %q", g.err, g.batch.cond.got) }
	state := func(db *DB, k []byte) string {
		v, err := db.Get(k)
		d, expires, _ := db.ExpireTime(k)
		return fmt.Sprintf("%q %v expires %v %d", v, err, expires, d.UnixMilli())
	}
	n := 0
	for _, in := range provenGroupInits() {
		for _, a := range provenGroupOps() {
			for _, b := range provenGroupOps() {
				n++
				k := fmt.Appendf(nil, "k%d", n)
				must(t, in.put(db, k))
				must(t, in.put(ref, k))
				got := run(k, a, b)
				sa := singleKeyCall(t, ref, k, a.build)
				ra := commitAsGroup(t, ref, []*Batch{sa}, nil)
				if gap != nil {
					gap()
				}
				sb := singleKeyCall(t, ref, k, b.build)
				rb := commitAsGroup(t, ref, []*Batch{sb}, nil)
				if outcome(got[0]) != outcome(ra[0]) || outcome(got[1]) != outcome(rb[0]) || state(db, k) != state(ref, k) {
					t.Errorf("%s key, %s then %s: %s, %s, %s; committed apart %s, %s, %s", in.name, a.name, b.name,
						outcome(got[0]), outcome(got[1]), state(db, k), outcome(ra[0]), outcome(rb[0]), state(ref, k))
				}
				for _, w := range []*commitWaiter{got[0], got[1], ra[0], rb[0]} {
					w.batch.Close()
				}
			}
		}
	}
	return n
}
