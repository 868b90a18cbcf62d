package tests

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// TestInvalidWritesChangeNothing: every rejected write returns the right
// error, commits no row and leaves its keys absent.
func TestInvalidWritesChangeNothing(t *testing.T) {
	bigKey := bytes.Repeat([]byte("k"), mayfly.MaxKeySize+1)
	bigValue := make([]byte, mayfly.MaxValueSize+1)
	ttlCases := []struct {
		name string
		ttl  mayfly.TTL
	}{
		{"ExpireAfter(0)", mayfly.ExpireAfter(0)},
		{"ExpireAfter(-1s)", mayfly.ExpireAfter(-time.Second)},
		{"ExpireAfter(500µs)", mayfly.ExpireAfter(500 * time.Microsecond)},
		{"ExpireAt(zero)", mayfly.ExpireAt(time.Time{})},
		{"ExpireAt(1969)", mayfly.ExpireAt(time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC))},
		{"ExpireAt(1ms before epoch)", mayfly.ExpireAt(time.UnixMilli(-1))},
		{"ExpireAt(year 10000)", mayfly.ExpireAt(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))},
		{"ExpireAt(MaxDeadline+1ms)", mayfly.ExpireAt(mayfly.MaxDeadline.Add(time.Millisecond))},
	}
	type tc struct {
		name  string
		want  error
		keys  []string
		write func(t *testing.T, db *mayfly.DB) error
	}
	var cases []tc
	for _, c := range ttlCases {
		cases = append(cases,
			tc{"PutTTL " + c.name, mayfly.ErrInvalidTTL, []string{"k"}, func(t *testing.T, db *mayfly.DB) error {
				return db.PutTTL([]byte("k"), []byte("v"), c.ttl)
			}},
			tc{"PutWith Sync " + c.name, mayfly.ErrInvalidTTL, []string{"k"}, func(t *testing.T, db *mayfly.DB) error {
				return db.PutWith([]byte("k"), []byte("v"), c.ttl, mayfly.Sync)
			}},
			tc{"batch with " + c.name, mayfly.ErrInvalidTTL, []string{"b1", "b2", "b3"}, func(t *testing.T, db *mayfly.DB) error {
				b := db.NewBatch()
				b.Put([]byte("b1"), []byte("v"))
				if err := b.PutTTL([]byte("b2"), []byte("v"), c.ttl); !isErr(err, mayfly.ErrInvalidTTL) {
					t.Errorf("Batch.PutTTL(%v) = %v; want ErrInvalidTTL", c.ttl, err)
				}
				b.Put([]byte("b3"), []byte("v"))
				return b.Write(mayfly.Sync)
			}},
		)
	}
	cases = append(cases,
		tc{"Put empty key", mayfly.ErrEmptyKey, nil, func(t *testing.T, db *mayfly.DB) error { return db.Put(nil, []byte("v")) }},
		tc{"Delete empty key", mayfly.ErrEmptyKey, nil, func(t *testing.T, db *mayfly.DB) error { return db.Delete([]byte{}) }},
		tc{"Put key too large", mayfly.ErrKeyTooLarge, nil, func(t *testing.T, db *mayfly.DB) error { return db.Put(bigKey, []byte("v")) }},
		tc{"Delete key too large", mayfly.ErrKeyTooLarge, nil, func(t *testing.T, db *mayfly.DB) error { return db.Delete(bigKey) }},
		tc{"Put value too large", mayfly.ErrValueTooLarge, []string{"k"}, func(t *testing.T, db *mayfly.DB) error { return db.Put([]byte("k"), bigValue) }},
		tc{"batch with empty key", mayfly.ErrEmptyKey, []string{"b1", "b3"}, func(t *testing.T, db *mayfly.DB) error {
			b := db.NewBatch()
			b.Put([]byte("b1"), []byte("v"))
			b.Delete(nil)
			b.Put([]byte("b3"), []byte("v"))
			return b.Write(nil)
		}},
		tc{"batch with key too large", mayfly.ErrKeyTooLarge, []string{"b1", "b3"}, func(t *testing.T, db *mayfly.DB) error {
			b := db.NewBatch()
			b.Put([]byte("b1"), []byte("v"))
			b.Put(bigKey, []byte("v"))
			b.Put([]byte("b3"), []byte("v"))
			return b.Write(nil)
		}},
		tc{"batch with value too large", mayfly.ErrValueTooLarge, []string{"b1", "b2", "b3"}, func(t *testing.T, db *mayfly.DB) error {
			b := db.NewBatch()
			b.Put([]byte("b1"), []byte("v"))
			b.Put([]byte("b2"), bigValue)
			b.Put([]byte("b3"), []byte("v"))
			return b.Write(nil)
		}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own database; on S3 each costs a second of round trips
			e := newEnv(t, nil)
			put(t, e.db, "other", "x")
			before := e.db.Metrics()
			err := c.write(t, e.db)
			if !isErr(err, c.want) {
				t.Fatalf("write = %v; want %v", err, c.want)
			}
			after := e.db.Metrics()
			if after.RowsWritten != before.RowsWritten || after.BatchesCommitted != before.BatchesCommitted {
				t.Fatalf("rejected write committed something: rows %d -> %d, batches %d -> %d",
					before.RowsWritten, after.RowsWritten, before.BatchesCommitted, after.BatchesCommitted)
			}
			for _, k := range c.keys {
				wantAbsent(t, e.db, k)
			}
			e.reopen()
			for _, k := range c.keys {
				wantAbsent(t, e.db, k)
			}
			if got := scanAll(t, e.db.NewIter); len(got) != 1 || got[0].k != "other" {
				t.Fatalf("scan after rejected write = %v; want only other", got)
			}
		})
	}
}

// TestRelativeTTLPastMaxDeadline: near the end of year 9999 a relative TTL
// whose deadline passes MaxDeadline is rejected at commit (never stored as
// "no expiry"), and a whole batch holding one such entry writes nothing.
func TestRelativeTTLPastMaxDeadline(t *testing.T) {
	e := newEnv(t, nil)
	e.clk.Set(mayfly.MaxDeadline.Add(-time.Hour))
	put(t, e.db, "other", "x")
	before := e.db.Metrics().RowsWritten

	for _, d := range []time.Duration{time.Hour + time.Millisecond, 2 * time.Hour, time.Duration(math.MaxInt64)} {
		if err := e.db.PutTTL([]byte("k"), []byte("v"), mayfly.ExpireAfter(d)); !isErr(err, mayfly.ErrInvalidTTL) {
			t.Fatalf("PutTTL(ExpireAfter(%v)) at MaxDeadline-1h = %v; want ErrInvalidTTL", d, err)
		}
		wantAbsent(t, e.db, "k")
	}
	b := e.db.NewBatch()
	must(t, b.Put([]byte("b1"), []byte("v")))
	must(t, b.PutTTL([]byte("b2"), []byte("v"), mayfly.ExpireAfter(2*time.Hour))) // valid until commit
	must(t, b.Put([]byte("b3"), []byte("v")))
	if err := b.Write(mayfly.Sync); !isErr(err, mayfly.ErrInvalidTTL) {
		t.Fatalf("batch Write = %v; want ErrInvalidTTL", err)
	}
	if got := e.db.Metrics().RowsWritten; got != before {
		t.Fatalf("RowsWritten %d -> %d after rejected writes", before, got)
	}
	for _, k := range []string{"b1", "b2", "b3"} {
		wantAbsent(t, e.db, k)
	}

	// Exactly MaxDeadline is allowed.
	putTTL(t, e.db, "edge", "v", mayfly.ExpireAfter(time.Hour))
	wantTTL(t, e.db, "edge", time.Hour)
	e.reopen()
	wantTTL(t, e.db, "edge", time.Hour)
	for _, k := range []string{"k", "b1", "b2", "b3"} {
		wantAbsent(t, e.db, k)
	}
}

func TestReadKeyValidation(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.db.Get(nil); !isErr(err, mayfly.ErrEmptyKey) {
		t.Errorf("Get(nil) = %v; want ErrEmptyKey", err)
	}
	if _, _, err := e.db.TTL(nil); !isErr(err, mayfly.ErrEmptyKey) {
		t.Errorf("TTL(nil) = %v; want ErrEmptyKey", err)
	}
	big := bytes.Repeat([]byte("k"), mayfly.MaxKeySize+1)
	if _, err := e.db.Get(big); !isErr(err, mayfly.ErrKeyTooLarge) {
		t.Errorf("Get(big) = %v; want ErrKeyTooLarge", err)
	}
	// The largest allowed key round-trips through every layer.
	maxKey := bytes.Repeat([]byte("m"), mayfly.MaxKeySize)
	must(t, e.db.Put(maxKey, []byte("v")))
	e.compact()
	wantValue(t, e.db, string(maxKey), "v")
}

func TestClosedDB(t *testing.T) {
	e := newEnv(t, nil)
	put(t, e.db, "k", "v")
	snap, err := e.db.NewSnapshot()
	must(t, err)
	must(t, snap.Close())
	if err := snap.Close(); !isErr(err, mayfly.ErrClosed) {
		t.Errorf("second Snapshot.Close = %v; want ErrClosed", err)
	}
	if _, err := snap.Get([]byte("k")); !isErr(err, mayfly.ErrClosed) {
		t.Errorf("Get on closed snapshot = %v; want ErrClosed", err)
	}
	it, err := e.db.NewIter(nil)
	must(t, err)
	must(t, it.Close())
	if err := it.Close(); !isErr(err, mayfly.ErrClosed) {
		t.Errorf("second Iterator.Close = %v; want ErrClosed", err)
	}
	if it.First() {
		t.Errorf("First on a closed iterator returned true")
	}

	b := e.db.NewBatch()
	must(t, b.Put([]byte("b"), []byte("v")))
	must(t, e.db.Close())
	db := e.db
	checks := map[string]error{
		"Put":        db.Put([]byte("k"), []byte("v")),
		"PutWith":    db.PutWith([]byte("k"), []byte("v"), mayfly.NoExpiry(), mayfly.Sync),
		"Delete":     db.Delete([]byte("k")),
		"Batch":      b.Write(nil),
		"Flush":      db.Flush(),
		"FlushWAL":   db.FlushWAL(true),
		"Compact":    db.Compact(context.Background(), nil, nil),
		"Close":      db.Close(),
		"NewIter":    second(db.NewIter(nil)),
		"NewSnap":    second(db.NewSnapshot()),
		"Get":        second(db.Get([]byte("k"))),
		"TTL":        third(db.TTL([]byte("k"))),
		"NewIterErr": second(db.NewIter(&mayfly.IterOptions{LowerBound: []byte("a")})),
	}
	for name, err := range checks {
		if !isErr(err, mayfly.ErrClosed) {
			t.Errorf("%s on closed DB = %v; want ErrClosed", name, err)
		}
	}
	var scanErr error
	for range db.Scan(nil, nil, &scanErr) {
		t.Errorf("Scan on closed DB yielded a row")
	}
	if !isErr(scanErr, mayfly.ErrClosed) {
		t.Errorf("Scan on closed DB reported %v; want ErrClosed", scanErr)
	}
}

func second[T any](_ T, err error) error { return err }

func third[A, B any](_ A, _ B, err error) error { return err }

// TestLockedDirectory is about the local directory's lock file, so it runs
// on a local directory whatever the backend: an object store has no lock
// (a second writer fences the first instead; tests/s3 covers that).
func TestLockedDirectory(t *testing.T) {
	e := newLocalEnv(t, nil)
	// Synced: a reader beside the writer sees what the writer's files hold.
	must(t, e.db.PutWith([]byte("k"), []byte("v"), mayfly.NoExpiry(), mayfly.Sync))
	db, err := mayfly.Open(e.dir, &mayfly.Options{Clock: e.clk})
	if !isErr(err, mayfly.ErrLocked) {
		if db != nil {
			db.Close()
		}
		t.Fatalf("second writable Open while open = %v; want ErrLocked", err)
	}
	// A read-only handle takes no lock: it opens beside the writer.
	ro, err := mayfly.Open(e.dir, &mayfly.Options{Clock: e.clk, ReadOnly: true})
	must(t, err)
	wantValue(t, ro, "k", "v")
	must(t, ro.Close())
	// The failed opens must not have disturbed the first handle.
	wantValue(t, e.db, "k", "v")
	put(t, e.db, "k2", "v2")
	must(t, e.db.Close())

	db, err = mayfly.Open(e.dir, &mayfly.Options{Clock: e.clk})
	must(t, err)
	defer db.Close()
	wantValue(t, db, "k", "v")
	wantValue(t, db, "k2", "v2")
}

func TestReadOnly(t *testing.T) {
	e := newEnv(t, nil)
	put(t, e.db, "flushed", "1")
	e.flush()
	putTTL(t, e.db, "walonly", "2", mayfly.ExpireAfter(time.Hour))
	put(t, e.db, "gone", "x")
	del(t, e.db, "gone")
	must(t, e.db.Close()) // Close does not flush: walonly lives only in the WAL

	open := func() *mayfly.DB {
		db, err := mayfly.Open(e.dir, &mayfly.Options{Clock: e.clk, ReadOnly: true})
		must(t, err)
		return db
	}
	ro1, ro2 := open(), open() // read-only handles share the directory
	for _, db := range []*mayfly.DB{ro1, ro2} {
		wantValue(t, db, "flushed", "1")
		wantValue(t, db, "walonly", "2")
		wantTTL(t, db, "walonly", time.Hour)
		wantAbsent(t, db, "gone")
		if got := scanAll(t, db.NewIter); len(got) != 2 {
			t.Fatalf("read-only scan = %v; want 2 rows", got)
		}
		snap, err := db.NewSnapshot()
		must(t, err)
		wantValue(t, snap, "walonly", "2")
		snap.Close()
	}
	b := ro1.NewBatch()
	must(t, b.Put([]byte("b"), []byte("v")))
	writes := map[string]error{
		"Put":     ro1.Put([]byte("n"), []byte("v")),
		"PutTTL":  ro1.PutTTL([]byte("n"), []byte("v"), mayfly.ExpireAfter(time.Second)),
		"Delete":  ro1.Delete([]byte("flushed")),
		"Batch":   b.Write(mayfly.Sync),
		"Flush":   ro1.Flush(),
		"Compact": ro1.Compact(context.Background(), nil, nil),
	}
	for name, err := range writes {
		if !isErr(err, mayfly.ErrReadOnly) {
			t.Errorf("%s on read-only DB = %v; want ErrReadOnly", name, err)
		}
	}
	wantAbsent(t, ro1, "n")
	wantValue(t, ro1, "flushed", "1")

	// Read-only handles take no lock: a writer opens beside them, and
	// read-only opens persisted nothing, so it still recovers the WAL.
	e.open()
	wantValue(t, ro1, "walonly", "2")
	must(t, ro1.Close())
	must(t, ro2.Close())
	wantValue(t, e.db, "walonly", "2")
	wantValue(t, e.db, "flushed", "1")
	wantAbsent(t, e.db, "gone")
}

func TestCompactInvertedRange(t *testing.T) {
	e := newEnv(t, nil)
	err := e.db.Compact(context.Background(), []byte("z"), []byte("a"))
	if !isErr(err, mayfly.ErrInvalidOptions) {
		t.Fatalf("Compact(z, a) = %v; want ErrInvalidOptions", err)
	}
}

// TestCloseDuringManualCompaction: Close while Compact runs must leave
// Compact returning nil or ErrClosed, never a panic or a read of a closed
// file.
func TestCloseDuringManualCompaction(t *testing.T) {
	e := newEnv(t, func(o *mayfly.Options) { o.DisableAutoCompaction = true })
	const n = 10000
	for r := range 4 {
		b := e.db.NewBatch()
		for i := range n {
			b.Put([]byte(key(i)), []byte(fmt.Sprintf("v%d-%d", r, i)))
		}
		must(t, b.Write(nil))
		e.flush()
	}
	if got := len(scanAll(t, e.db.NewIter)); got != n { // also warms the block cache
		t.Fatalf("scan = %d rows; want %d", got, n)
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("Compact panicked: %v", r)
			}
		}()
		done <- e.db.Compact(context.Background(), nil, nil)
	}()
	for e.db.Metrics().RunningCompactions == 0 {
		runtime.Gosched()
	}
	closeErr := e.db.Close()
	e.db = nil // a panicking Compact may leave the old handle's mutex locked
	if err := <-done; err != nil && !isErr(err, mayfly.ErrClosed) {
		t.Fatalf("Compact concurrent with Close = %v; want nil or ErrClosed", err)
	}
	must(t, closeErr)
	e.open()
	for i := 0; i < n; i += 999 {
		wantValue(t, e.db, key(i), fmt.Sprintf("v3-%d", i))
	}
}
