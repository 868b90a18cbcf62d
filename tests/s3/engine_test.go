package s3test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// TestBasicOps covers put/get/delete and overwrite, through the memtable, a
// flush and a reopen.
func TestBasicOps(t *testing.T) {
	loc := location(t)
	clk := manual()
	opts := &mayfly.Options{Clock: clk}
	db := open(t, loc, opts)
	defer func() { db.Close() }()

	for i := range 20 {
		if err := db.Put(key("k", i), val("k", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Put(key("k", 3), []byte("overwritten")); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(key("k", 4)); err != nil {
		t.Fatal(err)
	}
	verify := func(stage string) {
		t.Helper()
		mustGet(t, db, key("k", 0), string(val("k", 0)))
		mustGet(t, db, key("k", 3), "overwritten")
		mustMiss(t, db, key("k", 4))
		mustMiss(t, db, []byte("never-written"))
		if n := len(contents(t, db)); n != 19 {
			t.Fatalf("%s: %d live keys, want 19", stage, n)
		}
	}
	verify("memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	verify("after flush")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, loc, opts)
	verify("after reopen")
	check(t, db)
}

// TestTTLAcrossFlushCompactReopen: a row with deadline D is visible at D and
// gone at D+1ms, whether it is in the memtable, an L0 table, the bottom level
// after Compact, or read back after Close and reopen.
func TestTTLAcrossFlushCompactReopen(t *testing.T) {
	loc := location(t)
	clk := manual()
	opts := &mayfly.Options{Clock: clk}
	db := open(t, loc, opts)
	defer func() { db.Close() }()
	ctx := context.Background()

	const ttl = 10 * time.Second
	stages := []struct {
		name  string
		after func()
	}{
		{"memtable", func() {}},
		{"flush", func() {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}},
		{"compact", func() {
			if err := db.Compact(ctx, nil, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"reopen", func() {
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = open(t, loc, opts)
		}},
	}
	for i, st := range stages {
		k := fmt.Appendf(nil, "ttl-%d-%s", i, st.name)
		// A neighbour without expiry, to show that only the TTL row goes.
		keep := fmt.Appendf(nil, "keep-%d-%s", i, st.name)
		if err := db.PutTTL(k, []byte("v"), mayfly.ExpireAfter(ttl)); err != nil {
			t.Fatal(err)
		}
		if err := db.Put(keep, []byte("k")); err != nil {
			t.Fatal(err)
		}
		deadline := clk.Now().Add(ttl)
		st.after()
		// Every stage before this one applied again cannot hurt; run the
		// stage's transformation and then move the clock to the deadline.
		clk.Set(deadline)
		mustGet(t, db, k, "v")
		rem, expires, err := db.TTL(k)
		if err != nil || !expires || rem != 0 {
			t.Fatalf("%s: TTL at deadline = %v, %v, %v; want 0, true, nil", st.name, rem, expires, err)
		}
		st.after() // again at the deadline: the row must survive it
		mustGet(t, db, k, "v")
		clk.Advance(time.Millisecond)
		mustMiss(t, db, k)
		st.after()
		mustMiss(t, db, k)
		mustGet(t, db, keep, "k")
	}
	check(t, db)
}

// TestBatchAllOrNothing: a batch with an invalid entry writes nothing; a
// valid one is visible entirely, also after reopen.
func TestBatchAllOrNothing(t *testing.T) {
	loc := location(t)
	clk := manual()
	opts := &mayfly.Options{Clock: clk}
	db := open(t, loc, opts)
	defer func() { db.Close() }()

	b := db.NewBatch()
	for i := range 50 {
		if err := b.Put(key("good", i), val("good", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Write(mayfly.Sync); err != nil {
		t.Fatal(err)
	}

	bad := db.NewBatch()
	for i := range 10 {
		bad.Put(key("bad", i), val("bad", i))
	}
	err := bad.PutTTL([]byte("bad-ttl"), []byte("v"), mayfly.ExpireAfter(0))
	if !errors.Is(err, mayfly.ErrInvalidTTL) {
		t.Fatalf("PutTTL(ExpireAfter(0)) = %v, want ErrInvalidTTL", err)
	}
	if err := bad.Write(mayfly.Sync); err == nil {
		t.Fatal("Write of a batch holding an invalid entry succeeded")
	}

	verify := func(stage string) {
		t.Helper()
		got := contents(t, db)
		want := map[string]string{}
		for i := range 50 {
			want[string(key("good", i))] = string(val("good", i))
		}
		if d := diff(got, want); d != "" {
			t.Fatalf("%s: %s", stage, d)
		}
	}
	verify("memtable")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, loc, opts)
	verify("after reopen")
}

// TestSnapshotAndIterators: a snapshot reads the same thing before and after
// later writes, a flush, a compaction and the clock passing a deadline;
// iterators walk both directions and honour bounds.
func TestSnapshotAndIterators(t *testing.T) {
	loc := location(t)
	clk := manual()
	db := open(t, loc, &mayfly.Options{Clock: clk})
	defer db.Close()
	ctx := context.Background()

	for i := range 100 {
		ttl := mayfly.NoExpiry()
		if i%2 == 0 {
			ttl = mayfly.ExpireAfter(time.Minute)
		}
		if err := db.PutTTL(key("s", i), val("s", i), ttl); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	read := func() map[string]string {
		it, err := snap.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		m := map[string]string{}
		for ok := it.First(); ok; ok = it.Next() {
			m[string(it.Key())] = string(it.Value())
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	first := read()
	if len(first) != 100 {
		t.Fatalf("snapshot sees %d keys, want 100", len(first))
	}
	for i := range 100 {
		if i%3 == 0 {
			db.Delete(key("s", i))
		} else {
			db.Put(key("s", i), []byte("new"))
		}
	}
	db.Put([]byte("s-zzz"), []byte("new key"))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if err := db.Compact(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if d := diff(read(), first); d != "" {
		t.Fatalf("snapshot changed: %s", d)
	}
	if v, err := snap.Get(key("s", 0)); err != nil || string(v) != string(val("s", 0)) {
		t.Fatalf("snapshot Get = %q, %v", v, err)
	}

	// Live view: deleted every third key, the rest are "new".
	it, err := db.NewIter(&mayfly.IterOptions{LowerBound: key("s", 10), UpperBound: key("s", 20)})
	if err != nil {
		t.Fatal(err)
	}
	var fwd, back []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Key()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		back = append(back, string(it.Key()))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	it.Close()
	var want []string
	for i := 10; i < 20; i++ {
		if i%3 != 0 {
			want = append(want, string(key("s", i)))
		}
	}
	if fmt.Sprint(fwd) != fmt.Sprint(want) {
		t.Fatalf("forward = %v, want %v", fwd, want)
	}
	for i, j := 0, len(back)-1; i < j; i, j = i+1, j-1 {
		back[i], back[j] = back[j], back[i]
	}
	if fmt.Sprint(back) != fmt.Sprint(want) {
		t.Fatalf("backward (reversed) = %v, want %v", back, want)
	}
	check(t, db)
}

// TestTTLReclaimedByCompaction: 5000 rows with a TTL are flushed to S3; once
// expired, a compaction removes them from the tables (Metrics.Levels).
func TestTTLReclaimedByCompaction(t *testing.T) {
	loc := location(t)
	clk := manual()
	opts := &mayfly.Options{Clock: clk, DisableAutoCompaction: true}
	db := open(t, loc, opts)
	defer func() { db.Close() }()
	ctx := context.Background()

	const n = 5000
	b := db.NewBatch()
	for i := range n {
		if err := b.PutTTL(key("e", i), val("e", i), mayfly.ExpireAfter(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if b.Len() == 500 {
			if err := b.Write(mayfly.NoSync); err != nil {
				t.Fatal(err)
			}
			b = db.NewBatch()
		}
	}
	for i := range 10 {
		db.Put(key("forever", i), val("forever", i))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	rows := func() (rows, ttlRows uint64) {
		m := db.Metrics()
		for _, l := range m.Levels {
			rows += l.Rows
			ttlRows += l.TTLRows
		}
		return
	}
	if r, tr := rows(); r != n+10 || tr != n {
		t.Fatalf("after flush: %d rows (%d with TTL), want %d (%d)", r, tr, n+10, n)
	}
	if m := db.Metrics(); m.Storage == nil || m.Storage["put"] == 0 {
		t.Fatalf("Metrics.Storage = %v, want S3 request counters", m.Storage)
	}
	clk.Advance(time.Hour)
	if got := len(contents(t, db)); got != n+10 {
		t.Fatalf("at the deadline %d keys are live, want %d", got, n+10)
	}
	clk.Advance(time.Millisecond)
	if got := len(contents(t, db)); got != 10 {
		t.Fatalf("after the deadline %d keys are live, want 10", got)
	}
	if err := db.Compact(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if r, tr := rows(); r != 10 || tr != 0 {
		t.Fatalf("after compaction: %d rows (%d with TTL) on S3, want 10 (0)", r, tr)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, loc, opts)
	if r, _ := rows(); r != 10 {
		t.Fatalf("after reopen: %d rows, want 10", r)
	}
	if got := len(contents(t, db)); got != 10 {
		t.Fatalf("after reopen %d keys are live, want 10", got)
	}
	check(t, db)
}
