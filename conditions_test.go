package mayfly

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// condDB opens a test database on a manual clock at epoch in a fresh
// directory and returns it with its directory and clock.
func condDB(t *testing.T) (*DB, string, *clock.Manual) {
	t.Helper()
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, nil)
	t.Cleanup(func() { db.Close() })
	return db, dir, clk
}

// reopen closes db and opens dir again on clk.
func reopen(t *testing.T, db *DB, dir string, clk *clock.Manual) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, nil)
	t.Cleanup(func() { db.Close() })
	return db
}

func wantApplied(t *testing.T, what string, ok bool, err error, want bool) {
	t.Helper()
	if err != nil || ok != want {
		t.Fatalf("%s = %v, %v; want %v, nil", what, ok, err, want)
	}
}

// wantUnchanged checks that nothing was committed since lastSeq was seq.
func wantUnchanged(t *testing.T, db *DB, seq uint64) {
	t.Helper()
	if got := db.visibleSeq.Load(); got != seq {
		t.Fatalf("sequence moved from %d to %d: a refused write committed rows", seq, got)
	}
}

func TestPutIfAbsent(t *testing.T) {
	db, dir, clk := condDB(t)
	ok, err := db.PutIfAbsent([]byte("k"), []byte("v1"), ExpireAfter(10*time.Millisecond))
	wantApplied(t, "PutIfAbsent on a new key", ok, err, true)
	seq := db.visibleSeq.Load()
	ok, err = db.PutIfAbsent([]byte("k"), []byte("v2"), NoExpiry())
	wantApplied(t, "PutIfAbsent on a live key", ok, err, false)
	wantUnchanged(t, db, seq)
	mustGet(t, db, "k", "v1")

	clk.Advance(10 * time.Millisecond) // at the deadline: still present
	ok, err = db.PutIfAbsent([]byte("k"), []byte("v3"), NoExpiry())
	wantApplied(t, "PutIfAbsent at the deadline", ok, err, false)
	clk.Advance(time.Millisecond) // 1ms past it: absent
	ok, err = db.PutIfAbsent([]byte("k"), []byte("v4"), NoExpiry())
	wantApplied(t, "PutIfAbsent 1ms after the deadline", ok, err, true)

	must(t, db.Delete([]byte("k")))
	ok, err = db.PutIfAbsent([]byte("k"), []byte("v5"), NoExpiry())
	wantApplied(t, "PutIfAbsent after Delete", ok, err, true)
	db = reopen(t, db, dir, clk)
	mustGet(t, db, "k", "v5")
	ok, err = db.PutIfAbsent([]byte("k"), []byte("v6"), NoExpiry())
	wantApplied(t, "PutIfAbsent after reopen", ok, err, false)
}

// TestPutIfAbsentCountsNewKeys: a flushed level-0 table knows how many of
// its rows a PutIfAbsent proved to be their key's first version; a key
// with a dead version beneath (a tombstone in an older table) and plain
// puts do not count, and a reopened database knows none.
func TestPutIfAbsentCountsNewKeys(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, func(o *Options) { o.DisableAutoCompaction = true })
	// The tombstone goes to a table above the one holding the value, so
	// that the flush keeps it.
	must(t, db.Put([]byte("gone"), []byte("v")))
	must(t, db.Flush())
	must(t, db.Delete([]byte("gone")))
	for i := range 10 {
		must(t, db.Put(fmt.Appendf(nil, "old%03d", i), []byte("v")))
	}
	must(t, db.Flush())
	for i := range 100 {
		ok, err := db.PutIfAbsent(fmt.Appendf(nil, "new%03d", i), []byte("v"), NoExpiry())
		wantApplied(t, "PutIfAbsent of a new key", ok, err, true)
	}
	for i := range 10 {
		ok, err := db.PutIfAbsent(fmt.Appendf(nil, "old%03d", i), []byte("v"), NoExpiry())
		wantApplied(t, "PutIfAbsent of a live key", ok, err, false)
	}
	ok, err := db.PutIfAbsent([]byte("gone"), []byte("v"), NoExpiry())
	wantApplied(t, "PutIfAbsent over a tombstone", ok, err, true)
	for i := range 50 {
		must(t, db.Put(fmt.Appendf(nil, "put%03d", i), []byte("v")))
	}
	must(t, db.Flush())
	newKeys := func(db *DB) []uint64 {
		db.mu.Lock()
		defer db.mu.Unlock()
		var out []uint64
		for _, tf := range db.current.levels[0] {
			out = append(out, tf.newKeys)
		}
		return out
	}
	if got := newKeys(db); !slices.Equal(got, []uint64{100, 0, 0}) {
		t.Fatalf("level 0's new keys, newest first: %v, want [100 0 0]", got)
	}
	db = reopen(t, db, dir, clk)
	defer db.Close()
	if got := newKeys(db); !slices.Equal(got, []uint64{0, 0, 0}) {
		t.Fatalf("after reopen, level 0's new keys: %v, want [0 0 0]", got)
	}
}

func TestPutIfPresent(t *testing.T) {
	db, dir, clk := condDB(t)
	seq := db.visibleSeq.Load()
	ok, err := db.PutIfPresent([]byte("k"), []byte("v1"), NoExpiry())
	wantApplied(t, "PutIfPresent on a missing key", ok, err, false)
	wantUnchanged(t, db, seq)
	mustGet(t, db, "k", "")

	must(t, db.PutTTL([]byte("k"), []byte("v1"), ExpireAfter(5*time.Millisecond)))
	clk.Advance(5 * time.Millisecond)
	ok, err = db.PutIfPresent([]byte("k"), []byte("v2"), ExpireAfter(5*time.Millisecond))
	wantApplied(t, "PutIfPresent at the deadline", ok, err, true)
	clk.Advance(6 * time.Millisecond)
	ok, err = db.PutIfPresent([]byte("k"), []byte("v3"), NoExpiry())
	wantApplied(t, "PutIfPresent 1ms after the new deadline", ok, err, false)
	mustGet(t, db, "k", "")

	must(t, db.Put([]byte("j"), []byte("a")))
	ok, err = db.PutIfPresent([]byte("j"), []byte("b"), NoExpiry())
	wantApplied(t, "PutIfPresent on a live key", ok, err, true)
	db = reopen(t, db, dir, clk)
	mustGet(t, db, "j", "b")
	mustGet(t, db, "k", "")
}

func TestCompareAndSwap(t *testing.T) {
	db, dir, clk := condDB(t)
	ok, err := db.CompareAndSwap([]byte("k"), []byte(""), []byte("x"), NoExpiry())
	wantApplied(t, "CompareAndSwap on a missing key (old empty)", ok, err, false)
	must(t, db.PutTTL([]byte("k"), []byte("a"), ExpireAfter(time.Second)))
	ok, err = db.CompareAndSwap([]byte("k"), []byte("b"), []byte("x"), NoExpiry())
	wantApplied(t, "CompareAndSwap with a wrong old value", ok, err, false)
	mustGet(t, db, "k", "a")
	ok, err = db.CompareAndSwap([]byte("k"), []byte("a"), []byte("c"), ExpireAfter(time.Minute))
	wantApplied(t, "CompareAndSwap with the live value", ok, err, true)
	mustGet(t, db, "k", "c")
	if left, exp, err := db.TTL([]byte("k")); err != nil || !exp || left != time.Minute {
		t.Fatalf("TTL after CompareAndSwap = %v, %v, %v; want the swap's own 1m", left, exp, err)
	}
	clk.Advance(time.Minute + time.Millisecond)
	ok, err = db.CompareAndSwap([]byte("k"), []byte("c"), []byte("d"), NoExpiry())
	wantApplied(t, "CompareAndSwap on an expired value", ok, err, false)

	must(t, db.Put([]byte("e"), nil))
	ok, err = db.CompareAndSwap([]byte("e"), nil, []byte("full"), NoExpiry())
	wantApplied(t, "CompareAndSwap of an empty live value", ok, err, true)
	db = reopen(t, db, dir, clk)
	mustGet(t, db, "e", "full")
	mustGet(t, db, "k", "")
}

func TestCompareAndDelete(t *testing.T) {
	db, dir, clk := condDB(t)
	must(t, db.Put([]byte("k"), []byte("a")))
	seq := db.visibleSeq.Load()
	ok, err := db.CompareAndDelete([]byte("k"), []byte("b"))
	wantApplied(t, "CompareAndDelete with a wrong value", ok, err, false)
	wantUnchanged(t, db, seq)
	ok, err = db.CompareAndDelete([]byte("missing"), nil)
	wantApplied(t, "CompareAndDelete of a missing key", ok, err, false)
	ok, err = db.CompareAndDelete([]byte("k"), []byte("a"))
	wantApplied(t, "CompareAndDelete with the live value", ok, err, true)
	mustGet(t, db, "k", "")
	ok, err = db.CompareAndDelete([]byte("k"), []byte("a"))
	wantApplied(t, "CompareAndDelete of a deleted key", ok, err, false)
	db = reopen(t, db, dir, clk)
	mustGet(t, db, "k", "")
}

func TestGetDel(t *testing.T) {
	db, dir, clk := condDB(t)
	seq := db.visibleSeq.Load()
	if v, err := db.GetDel([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetDel of a missing key = %q, %v; want ErrNotFound", v, err)
	}
	wantUnchanged(t, db, seq)
	must(t, db.PutTTL([]byte("k"), []byte("token"), ExpireAfter(2*time.Millisecond)))
	must(t, db.PutTTL([]byte("late"), []byte("t2"), ExpireAfter(2*time.Millisecond)))
	clk.Advance(2 * time.Millisecond)
	if v, err := db.GetDel([]byte("k")); err != nil || string(v) != "token" {
		t.Fatalf("GetDel at the deadline = %q, %v; want token", v, err)
	}
	if v, err := db.GetDel([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second GetDel = %q, %v; want ErrNotFound", v, err)
	}
	clk.Advance(time.Millisecond)
	seq = db.visibleSeq.Load()
	if v, err := db.GetDel([]byte("late")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetDel 1ms after the deadline = %q, %v; want ErrNotFound", v, err)
	}
	wantUnchanged(t, db, seq)
	must(t, db.Put([]byte("empty"), nil))
	if v, err := db.GetDel([]byte("empty")); err != nil || v == nil || len(v) != 0 {
		t.Fatalf("GetDel of an empty value = %#v, %v; want an empty non-nil slice", v, err)
	}
	db = reopen(t, db, dir, clk)
	mustGet(t, db, "k", "")
	mustGet(t, db, "empty", "")
}

// A batch is written only if every condition holds; a condition sees the
// batch's earlier entries.
func TestBatchConditionsAllOrNothing(t *testing.T) {
	db, dir, clk := condDB(t)
	must(t, db.Put([]byte("taken"), []byte("x")))
	seq := db.visibleSeq.Load()

	b := db.NewBatch()
	must(t, b.Put([]byte("a"), []byte("1")))
	must(t, b.PutIfAbsent([]byte("new"), []byte("2"), NoExpiry()))
	must(t, b.PutIfAbsent([]byte("taken"), []byte("3"), NoExpiry()))
	err := b.Write(Sync)
	if !errors.Is(err, ErrConditionFailed) || !strings.Contains(err.Error(), "entry 2") || !strings.Contains(err.Error(), `"taken"`) {
		t.Fatalf("Write = %v; want ErrConditionFailed naming entry 2 and key \"taken\"", err)
	}
	wantUnchanged(t, db, seq)
	mustGet(t, db, "a", "")
	mustGet(t, db, "new", "")
	mustGet(t, db, "taken", "x")

	// Entries see earlier entries of their batch.
	b = db.NewBatch()
	must(t, b.Put([]byte("p"), []byte("1")))
	must(t, b.PutIfPresent([]byte("p"), []byte("2"), NoExpiry()))
	must(t, b.CompareAndSwap([]byte("p"), []byte("2"), []byte("3"), NoExpiry()))
	must(t, b.CompareAndDelete([]byte("taken"), []byte("x")))
	must(t, b.PutIfAbsent([]byte("taken"), []byte("y"), NoExpiry()))
	must(t, b.Write(nil))
	mustGet(t, db, "p", "3")
	mustGet(t, db, "taken", "y")

	b = db.NewBatch()
	must(t, b.PutIfAbsent([]byte("twice"), []byte("1"), NoExpiry()))
	must(t, b.PutIfAbsent([]byte("twice"), []byte("2"), NoExpiry()))
	if err := b.Write(nil); !errors.Is(err, ErrConditionFailed) || !strings.Contains(err.Error(), "entry 1") {
		t.Fatalf("two PutIfAbsent of one key in a batch: Write = %v; want ErrConditionFailed at entry 1", err)
	}
	mustGet(t, db, "twice", "")

	// A batch refused by its condition may be written again once it holds.
	b = db.NewBatch()
	must(t, b.PutIfPresent([]byte("later"), []byte("2"), NoExpiry()))
	if err := b.Write(nil); !errors.Is(err, ErrConditionFailed) {
		t.Fatalf("Write = %v; want ErrConditionFailed", err)
	}
	must(t, db.Put([]byte("later"), []byte("1")))
	must(t, b.Write(nil))
	db = reopen(t, db, dir, clk)
	mustGet(t, db, "later", "2")
	mustGet(t, db, "p", "3")
	mustGet(t, db, "a", "")
}

// TestConditionOverlayWithinGroup commits one hand-built group: each batch's
// conditions see the batches before it, and a refused batch leaves no
// trace for those after it.
func TestConditionOverlayWithinGroup(t *testing.T) {
	db, dir, clk := condDB(t)
	must(t, db.Put([]byte("old"), []byte("o")))
	seq := db.visibleSeq.Load()
	var group []*commitWaiter
	add := func(fill func(b *Batch) error) {
		b := db.NewBatch()
		must(t, fill(b))
		group = append(group, &commitWaiter{batch: b})
	}
	add(func(b *Batch) error { return b.Put([]byte("a"), []byte("1")) })                                     // 0
	add(func(b *Batch) error { return b.CompareAndSwap([]byte("a"), []byte("1"), []byte("2"), NoExpiry()) }) // 1 holds
	add(func(b *Batch) error { return b.PutIfAbsent([]byte("a"), []byte("x"), NoExpiry()) })                 // 2 fails
	add(func(b *Batch) error { return b.CompareAndDelete([]byte("old"), []byte("o")) })                      // 3 holds
	add(func(b *Batch) error { return b.PutIfAbsent([]byte("old"), []byte("n"), NoExpiry()) })               // 4 holds
	add(func(b *Batch) error {
		must(t, b.Put([]byte("d"), []byte("1")))
		return b.PutIfPresent([]byte("zz"), nil, NoExpiry())
	}) // 5 fails
	add(func(b *Batch) error { return b.PutIfAbsent([]byte("d"), []byte("2"), NoExpiry()) })                      // 6 holds: 5 left no trace
	add(func(b *Batch) error { return b.PutTTL([]byte("gone"), []byte("g"), ExpireAt(epoch.Add(-time.Second))) }) // 7
	add(func(b *Batch) error { return b.PutIfAbsent([]byte("gone"), []byte("h"), NoExpiry()) })                   // 8 holds: expired
	add(func(b *Batch) error { return b.Put([]byte("plain"), []byte("p")) })                                      // 9 after the last condition

	err := commitGroupInline(db, group)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range group {
		failed := i == 2 || i == 5
		if !g.done || errors.Is(g.err, ErrConditionFailed) != failed || (!failed && g.err != nil) {
			t.Fatalf("batch %d: done %v, err %v; want failed = %v", i, g.done, g.err, failed)
		}
	}
	// 10 batches of 11 entries; the two refused ones (1 + 2 entries) take no numbers.
	if got, want := db.visibleSeq.Load(), seq+11-3; got != want {
		t.Fatalf("sequence after the group = %d, want %d", got, want)
	}
	db = reopen(t, db, dir, clk)
	mustGet(t, db, "a", "2")
	mustGet(t, db, "old", "n")
	mustGet(t, db, "d", "2")
	mustGet(t, db, "gone", "h")
	mustGet(t, db, "plain", "p")
	mustGet(t, db, "zz", "")
}

func TestConditionalWritesRefuseBadInput(t *testing.T) {
	db, dir, clk := condDB(t)
	must(t, db.Put([]byte("k"), []byte("v")))
	seq := db.visibleSeq.Load()
	big := make([]byte, MaxValueSize+1)
	longKey := make([]byte, MaxKeySize+1)
	cases := []struct {
		name string
		err  error
		call func() error
	}{
		{"PutIfAbsent empty key", ErrEmptyKey, func() error { _, err := db.PutIfAbsent(nil, []byte("v"), NoExpiry()); return err }},
		{"PutIfPresent long key", ErrKeyTooLarge, func() error { _, err := db.PutIfPresent(longKey, nil, NoExpiry()); return err }},
		{"PutIfAbsent bad TTL", ErrInvalidTTL, func() error { _, err := db.PutIfAbsent([]byte("n"), nil, ExpireAfter(0)); return err }},
		{"PutIfPresent bad TTL", ErrInvalidTTL, func() error { _, err := db.PutIfPresent([]byte("k"), nil, ExpireAfter(-1)); return err }},
		{"CompareAndSwap big old", ErrValueTooLarge, func() error { _, err := db.CompareAndSwap([]byte("k"), big, nil, NoExpiry()); return err }},
		{"CompareAndSwap big new", ErrValueTooLarge, func() error { _, err := db.CompareAndSwap([]byte("k"), []byte("v"), big, NoExpiry()); return err }},
		{"CompareAndDelete big old", ErrValueTooLarge, func() error { _, err := db.CompareAndDelete([]byte("k"), big); return err }},
		{"CompareAndDelete empty key", ErrEmptyKey, func() error { _, err := db.CompareAndDelete(nil, []byte("v")); return err }},
		{"GetDel empty key", ErrEmptyKey, func() error { _, err := db.GetDel(nil); return err }},
		{"GetDel long key", ErrKeyTooLarge, func() error { _, err := db.GetDel(longKey); return err }},
	}
	for _, c := range cases {
		if err := c.call(); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	// A batch with an invalid conditional entry commits nothing.
	b := db.NewBatch()
	must(t, b.Put([]byte("x"), []byte("1")))
	if err := b.CompareAndSwap([]byte("k"), big, nil, NoExpiry()); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("Batch.CompareAndSwap with a big old value: %v", err)
	}
	if err := b.Write(nil); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("Write of a batch with an invalid entry: %v", err)
	}
	b.Close()
	if err := b.PutIfAbsent([]byte("x"), nil, NoExpiry()); !errors.Is(err, ErrBatchClosed) {
		t.Fatalf("PutIfAbsent on a closed batch: %v", err)
	}
	wantUnchanged(t, db, seq)
	mustGet(t, db, "k", "v")
	mustGet(t, db, "x", "")

	must(t, db.Close())
	ro, err := Open(dir, &Options{Clock: clk, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for name, call := range map[string]func(d *DB) error{
		"PutIfAbsent":      func(d *DB) error { _, err := d.PutIfAbsent([]byte("n"), nil, NoExpiry()); return err },
		"PutIfPresent":     func(d *DB) error { _, err := d.PutIfPresent([]byte("k"), nil, NoExpiry()); return err },
		"CompareAndSwap":   func(d *DB) error { _, err := d.CompareAndSwap([]byte("k"), []byte("v"), nil, NoExpiry()); return err },
		"CompareAndDelete": func(d *DB) error { _, err := d.CompareAndDelete([]byte("k"), []byte("v")); return err },
		"GetDel":           func(d *DB) error { _, err := d.GetDel([]byte("k")); return err },
	} {
		if err := call(ro); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only DB: %v, want ErrReadOnly", name, err)
		}
		if err := call(db); !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a closed DB: %v, want ErrClosed", name, err)
		}
	}
	mustGet(t, ro, "k", "v")
}

// Of racing PutIfAbsent calls exactly one wins; of racing GetDel calls
// exactly one gets the value.
func TestConditionalWritesRace(t *testing.T) {
	db, _, _ := condDB(t)
	const goroutines, rounds = 8, 50
	for r := range rounds {
		key := []byte(fmt.Sprintf("k%d", r))
		var wins, takes sync.WaitGroup
		var mu sync.Mutex
		won, took := 0, 0
		for g := range goroutines {
			wins.Add(1)
			go func() {
				defer wins.Done()
				ok, err := db.PutIfAbsent(key, []byte(fmt.Sprint(g)), NoExpiry())
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won++
					mu.Unlock()
				}
			}()
		}
		wins.Wait()
		for range goroutines {
			takes.Add(1)
			go func() {
				defer takes.Done()
				_, err := db.GetDel(key)
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Error(err)
				}
				if err == nil {
					mu.Lock()
					took++
					mu.Unlock()
				}
			}()
		}
		takes.Wait()
		if won != 1 || took != 1 {
			t.Fatalf("round %d: %d PutIfAbsent won, %d GetDel took the value; want 1 and 1", r, won, took)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runFour runs op(i) for i in [0, n) on 4 goroutines that draw i from a
// shared counter.
func runFour(b *testing.B, n int, op func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkPutIfAbsent is the idempotency-key workload: 4 goroutines store
// request IDs with a TTL, 5% of them a duplicate of a recent one (which
// another goroutine may be storing at the same moment).
func BenchmarkPutIfAbsent(b *testing.B) {
	db := openBenchDB(b, nil)
	val := benchValuePool()[0]
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	runFour(b, b.N, func(i int) error {
		id := uint64(i)
		if i%20 == 19 {
			id = uint64(i - 3) // a retried request
		}
		var k [benchKeySize]byte
		benchKey(k[:], id)
		_, err := db.PutIfAbsent(k[:], val, ExpireAfter(time.Hour))
		return err
	})
	b.StopTimer()
	cpu.report(b)
}

// BenchmarkGetDel is the one-time-token workload: tokens are stored, then 4
// goroutines take them with GetDel, two calls racing for each token (one
// op is one GetDel).
func BenchmarkGetDel(b *testing.B) {
	db := openBenchDB(b, nil)
	val := benchValuePool()[0]
	tokens := (b.N + 1) / 2
	bt := db.NewBatch()
	var k [benchKeySize]byte
	for i := range tokens {
		benchKey(k[:], uint64(i))
		must(b, bt.PutTTL(k[:], val, ExpireAfter(time.Hour)))
		if bt.Len() == 1000 || i == tokens-1 {
			must(b, bt.Write(nil))
			bt.Reset()
		}
	}
	b.ReportAllocs()
	var taken atomic.Int64
	cpu := startCPU()
	b.ResetTimer()
	runFour(b, b.N, func(i int) error {
		var k [benchKeySize]byte
		benchKey(k[:], uint64(i/2))
		_, err := db.GetDel(k[:])
		if err == nil {
			taken.Add(1)
			return nil
		}
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	})
	b.StopTimer()
	cpu.report(b)
	if taken.Load() != int64(tokens) {
		b.Fatalf("%d of %d tokens taken", taken.Load(), tokens)
	}
}
