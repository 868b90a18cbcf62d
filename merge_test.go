package mayfly

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

func openCounterDB(t *testing.T, dir string, clk *clock.Manual) *DB {
	t.Helper()
	return openTestDB(t, dir, clk, func(o *Options) { o.MergeOperator = Int64Add })
}

func addBlind(t *testing.T, db *DB, key string, delta int64, ttl TTL) {
	t.Helper()
	if err := db.Merge([]byte(key), EncodeInt64(delta), ttl); err != nil {
		t.Fatalf("Merge(%s, %d): %v", key, delta, err)
	}
}

// counterOf returns key's count and deadline (zero time: none); ok false
// when the key is absent.
func counterOf(t *testing.T, db *DB, key string) (int64, time.Time, bool) {
	t.Helper()
	v, err := db.Get([]byte(key))
	if errors.Is(err, ErrNotFound) {
		return 0, time.Time{}, false
	}
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	n, ok := DecodeInt64(v)
	if !ok {
		t.Fatalf("Get(%s) = %x, not a counter", key, v)
	}
	at, expires, err := db.ExpireTime([]byte(key))
	if err != nil {
		t.Fatalf("ExpireTime(%s): %v", key, err)
	}
	if !expires {
		at = time.Time{}
	}
	return n, at, true
}

func wantCounter(t *testing.T, db *DB, key string, n int64, deadline time.Time) {
	t.Helper()
	got, at, ok := counterOf(t, db, key)
	if !ok || got != n || !at.Equal(deadline) {
		t.Fatalf("%s = %d (deadline %v, live %v), want %d (deadline %v)", key, got, at, ok, n, deadline)
	}
}

// TestMergeWithoutOperator: without Options.MergeOperator a merge write
// returns ErrNoMergeOperator and writes nothing, alone or in a batch.
func TestMergeWithoutOperator(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	if err := db.Merge([]byte("k"), EncodeInt64(1), NoExpiry()); !errors.Is(err, ErrNoMergeOperator) {
		t.Fatalf("Merge: %v, want ErrNoMergeOperator", err)
	}
	if _, err := db.Add([]byte("k"), 1, NoExpiry()); !errors.Is(err, ErrNoMergeOperator) {
		t.Fatalf("Add: %v, want ErrNoMergeOperator", err)
	}
	b := db.NewBatch()
	defer b.Close()
	if err := b.Put([]byte("p"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := b.AddBlind([]byte("k"), 1, NoExpiry()); !errors.Is(err, ErrNoMergeOperator) {
		t.Fatalf("AddBlind: %v", err)
	}
	if err := b.Write(nil); !errors.Is(err, ErrNoMergeOperator) {
		t.Fatalf("Write: %v", err)
	}
	mustGet(t, db, "p", "")
	mustGet(t, db, "k", "")
}

// TestMergeRefusesMalformedOperand: a built-in operator's operand of the
// wrong length is refused when written, with nothing of its batch written,
// so no read of the key can fail on it later.
func TestMergeRefusesMalformedOperand(t *testing.T) {
	db := openCounterDB(t, t.TempDir(), clock.NewManual(epoch))
	defer db.Close()
	must(t, db.Merge([]byte("k"), EncodeInt64(2), NoExpiry()))
	if err := db.Merge([]byte("k"), []byte("abc"), NoExpiry()); !errors.Is(err, ErrInvalidOperand) {
		t.Fatalf("Merge of a 3-byte operand: %v, want ErrInvalidOperand", err)
	}
	b := db.NewBatch()
	defer b.Close()
	must(t, b.Put([]byte("p"), []byte("v")))
	size := b.Size()
	if err := b.Merge([]byte("k"), nil, ExpireAfter(time.Minute)); !errors.Is(err, ErrInvalidOperand) {
		t.Fatalf("Batch.Merge of an empty operand: %v", err)
	}
	if b.Len() != 1 || b.Size() != size {
		t.Fatalf("after the refused operand the batch holds %d writes, %d bytes; want 1, %d", b.Len(), b.Size(), size)
	}
	if err := b.Write(nil); !errors.Is(err, ErrInvalidOperand) {
		t.Fatalf("Write: %v", err)
	}
	mustGet(t, db, "p", "")
	v, err := db.Get([]byte("k"))
	if n, ok := DecodeInt64(v); err != nil || !ok || n != 2 {
		t.Fatalf("counter after the refused operands: %v, %v", v, err)
	}
}

// TestMergeAllocatesNothing: a Merge of a key and an operand on the
// caller's stack allocates nothing: the operand validator sees the batch's
// copies, so the caller's slices do not escape. Batch.Merge into a reused
// batch is measured always; DB.Merge, whose batch and commit waiter come
// from sync.Pools, not under the race detector, where a pool drops what it
// is given at random.
func TestMergeAllocatesNothing(t *testing.T) {
	db := openCounterDB(t, t.TempDir(), clock.NewManual(epoch))
	defer db.Close()
	b := db.NewBatch()
	defer b.Close()
	if n := leastAllocsPerRun(5, 100, func() {
		key := [...]byte{'c', 'o', 'u', 'n', 't'}
		var op [8]byte
		op[0] = 1
		b.Reset()
		must(t, b.Merge(key[:], op[:], ExpireAfter(time.Minute)))
	}); n != 0 {
		t.Fatalf("Batch.Merge of a stack key and operand: %v allocations, want 0", n)
	}
	if raceEnabled {
		return
	}
	if n := leastAllocsPerRun(5, 100, func() {
		key := [...]byte{'c', 'o', 'u', 'n', 't'}
		var op [8]byte
		op[0] = 1
		must(t, db.Merge(key[:], op[:], ExpireAfter(time.Minute)))
	}); n != 0 {
		t.Fatalf("DB.Merge of a stack key and operand: %v allocations, want 0", n)
	}
}

// TestMergeTTLRules: RFC 0010 rules 1 to 5 through the DB, read from the
// memtable, then again after a flush and after a full compaction.
func TestMergeTTLRules(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	minute := ExpireAfter(time.Minute)
	t0 := epoch
	// Rule 2: the first operand fixes the window; later ones do not move it.
	addBlind(t, db, "w", 1, minute)
	clk.Advance(10 * time.Second)
	addBlind(t, db, "w", 2, minute)
	// Rule 1: onto a live base the base's deadline holds (none here).
	if err := db.Put([]byte("b"), EncodeInt64(10)); err != nil {
		t.Fatal(err)
	}
	addBlind(t, db, "b", 5, minute)
	// Rule 1: onto a deleted base the count starts from nothing.
	if err := db.Put([]byte("d"), EncodeInt64(10)); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("d")); err != nil {
		t.Fatal(err)
	}
	addBlind(t, db, "d", 5, minute)
	// Rule 5: Expire on a counter moves its window's deadline.
	addBlind(t, db, "e", 1, minute)
	if ok, err := db.Expire([]byte("e"), ExpireAfter(time.Hour), ExpireAlways); !ok || err != nil {
		t.Fatalf("Expire: %v, %v", ok, err)
	}
	// Rule 3 and 4: after the window ends, the count is gone and an
	// operand starts the next window.
	addBlind(t, db, "n", 7, ExpireAfter(5*time.Second))

	check := func(stage string) {
		t.Helper()
		t.Logf("stage %s", stage)
		wantCounter(t, db, "w", 3, t0.Add(time.Minute))
		wantCounter(t, db, "b", 15, time.Time{})
		wantCounter(t, db, "d", 5, t0.Add(10*time.Second+time.Minute))
		wantCounter(t, db, "e", 1, t0.Add(10*time.Second+time.Hour))
	}
	check("memtable")
	wantCounter(t, db, "n", 7, t0.Add(15*time.Second))
	clk.Advance(5*time.Second + time.Millisecond)
	if _, _, ok := counterOf(t, db, "n"); ok {
		t.Fatal("rule 4: n counted after its window ended")
	}
	addBlind(t, db, "n", 1, minute)
	wantCounter(t, db, "n", 1, t0.Add(15*time.Second+time.Millisecond+time.Minute))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	// An operand at the window's last millisecond still joins it.
	clk.Set(t0.Add(time.Minute))
	addBlind(t, db, "w", 4, minute)
	wantCounter(t, db, "w", 7, t0.Add(time.Minute))
	clk.Advance(time.Millisecond)
	if _, _, ok := counterOf(t, db, "w"); ok {
		t.Fatal("rule 4: w counted after its window ended")
	}
	addBlind(t, db, "w", 100, minute)
	wantCounter(t, db, "w", 100, t0.Add(2*time.Minute+time.Millisecond))
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	wantCounter(t, db, "w", 100, t0.Add(2*time.Minute+time.Millisecond))
	wantCounter(t, db, "b", 15, time.Time{})
	wantCounter(t, db, "e", 1, t0.Add(10*time.Second+time.Hour))
}

// TestMergeOperatorRecorded: the operator's name is recorded by the first
// Open that sets it; a later Open with another name or none fails naming
// both, read-only or not, and changes nothing.
func TestMergeOperatorRecorded(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, dir, clk)
	addBlind(t, db, "k", 2, NoExpiry())
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		op   MergeOperator
		ro   bool
		want []string
	}{
		{"none", nil, false, []string{`"mayfly.Int64Add"`, "not set"}},
		{"other", Int64Max, false, []string{`"mayfly.Int64Add"`, `"mayfly.Int64Max"`}},
		{"none read-only", nil, true, []string{`"mayfly.Int64Add"`}},
	} {
		_, err := Open(dir, &Options{Clock: clk, MergeOperator: tc.op, ReadOnly: tc.ro})
		if !errors.Is(err, ErrMergeOperator) {
			t.Fatalf("%s: Open: %v, want ErrMergeOperator", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: %v does not name %s", tc.name, err, w)
			}
		}
	}
	db = openCounterDB(t, dir, clk)
	defer db.Close()
	wantCounter(t, db, "k", 2, time.Time{})
}

// TestAddAnswers: Add returns the new count, starts a fresh window after
// the old one ended, sees blind operands, and refuses (writing nothing) a
// key that holds a value other than a counter. Concurrent Adds return each
// count from 1 to n exactly once.
func TestAddAnswers(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	add := func(key string, d int64, ttl TTL) int64 {
		t.Helper()
		n, err := db.Add([]byte(key), d, ttl)
		if err != nil {
			t.Fatalf("Add(%s, %d): %v", key, d, err)
		}
		return n
	}
	sec := ExpireAfter(time.Second)
	if n := add("c", 1, sec); n != 1 {
		t.Fatalf("first Add = %d", n)
	}
	addBlind(t, db, "c", 10, sec)
	if n := add("c", 1, sec); n != 12 {
		t.Fatalf("Add after a blind +10 = %d, want 12", n)
	}
	clk.Advance(time.Second + time.Millisecond)
	if n := add("c", 5, sec); n != 5 {
		t.Fatalf("Add in the next window = %d, want 5", n)
	}
	if err := db.Put([]byte("s"), []byte("text")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Add([]byte("s"), 1, sec); !errors.Is(err, ErrConditionFailed) {
		t.Fatalf("Add on a string: %v, want ErrConditionFailed", err)
	}
	mustGet(t, db, "s", "text")

	const workers, each = 4, 50
	seen := make(chan int64, workers*each)
	errc := make(chan error, workers)
	for range workers {
		go func() {
			for range each {
				n, err := db.Add([]byte("hot"), 1, NoExpiry())
				if err != nil {
					errc <- err
					return
				}
				seen <- n
			}
			errc <- nil
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	close(seen)
	got := map[int64]bool{}
	for n := range seen {
		if got[n] || n < 1 || n > workers*each {
			t.Fatalf("Add returned %d twice or out of range", n)
		}
		got[n] = true
	}
	wantCounter(t, db, "hot", workers*each, time.Time{})
}

// scanBoth returns key -> value as a forward and a backward scan of db
// (or a snapshot) see them, failing if they differ.
func scanBoth(t *testing.T, newIter func() (*Iterator, error)) map[string]string {
	t.Helper()
	fwd, bwd := map[string]string{}, map[string]string{}
	var fk, bk []string
	for _, dir := range []bool{true, false} {
		it, err := newIter()
		if err != nil {
			t.Fatal(err)
		}
		ok := it.First()
		if !dir {
			ok = it.Last()
		}
		for ; ok; ok = map[bool]func() bool{true: it.Next, false: it.Prev}[dir]() {
			if dir {
				fwd[string(it.Key())] = string(it.Value())
				fk = append(fk, string(it.Key()))
			} else {
				bwd[string(it.Key())] = string(it.Value())
				bk = append([]string{string(it.Key())}, bk...)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(fk, ",") != strings.Join(bk, ",") {
		t.Fatalf("forward keys %v, backward %v", fk, bk)
	}
	for k, v := range fwd {
		if bwd[k] != v {
			t.Fatalf("key %q: forward %x, backward %x", k, v, bwd[k])
		}
	}
	return fwd
}

// TestMergeIterator: iterators in both directions resolve counters as Get
// does, with operands in the memtable, in tables, under a deadline row,
// after an ended window, and at a snapshot.
func TestMergeIterator(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	minute := ExpireAfter(time.Minute)
	if err := db.Put([]byte("a"), []byte("plain")); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("b"), EncodeInt64(100)); err != nil {
		t.Fatal(err)
	}
	addBlind(t, db, "b", 1, minute)
	addBlind(t, db, "c", 2, ExpireAfter(time.Second))
	addBlind(t, db, "d", 3, minute)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	addBlind(t, db, "b", 1, minute)
	addBlind(t, db, "d", 4, minute)
	if _, err := db.Expire([]byte("d"), ExpireAfter(time.Hour), ExpireAlways); err != nil {
		t.Fatal(err)
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	addBlind(t, db, "d", 10, minute)
	addBlind(t, db, "e", 5, minute)
	if err := db.Delete([]byte("e")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second) // c's window ends
	want := map[string]string{"a": "plain", "b": string(EncodeInt64(102)), "d": string(EncodeInt64(17))}
	check := func(stage string, got, want map[string]string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: scan %q, want %q", stage, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: %s = %x, want %x", stage, k, got[k], v)
			}
		}
	}
	check("db", scanBoth(t, func() (*Iterator, error) { return db.NewIter(nil) }), want)
	for k, v := range want {
		mustGet(t, db, k, v)
	}
	// The snapshot reads at its own clock, when c's window was open.
	wantSnap := map[string]string{"a": "plain", "b": string(EncodeInt64(102)), "c": string(EncodeInt64(2)), "d": string(EncodeInt64(7))}
	check("snapshot", scanBoth(t, func() (*Iterator, error) { return snap.NewIter(nil) }), wantSnap)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	check("db compacted", scanBoth(t, func() (*Iterator, error) { return db.NewIter(nil) }), want)
	check("snapshot compacted", scanBoth(t, func() (*Iterator, error) { return snap.NewIter(nil) }), wantSnap)
}

// TestAddRemembersState: an Add leaves the counter's state at its own
// version in the resolved-counter cache, so that the next read or Add of
// the key looks up one version; that state is the one the rules give
// without the cache: a new window, a window joined, the next window after
// the deadline, a plain 8-byte value's deadline kept, a deleted counter.
func TestAddRemembersState(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	minute := ExpireAfter(time.Minute)
	step := func(key string, delta, want int64, ttl TTL, deadline time.Time) {
		t.Helper()
		if n, err := db.Add([]byte(key), delta, ttl); err != nil || n != want {
			t.Fatalf("Add(%s, %d) = %d, %v; want %d", key, delta, n, err, want)
		}
		s := db.mergeCache.get([]byte(key))
		if s == nil || s.seq != db.visibleSeq.Load() {
			t.Fatalf("Add(%s) left no state at its version %d: %+v", key, db.visibleSeq.Load(), s)
		}
		wantCounter(t, db, key, want, deadline)
		cache := db.mergeCache
		db.mergeCache = newMergeCache() // the same read resolving every version
		wantCounter(t, db, key, want, deadline)
		db.mergeCache = cache
	}
	step("c", 5, 5, minute, epoch.Add(time.Minute))
	clk.Advance(30 * time.Second)
	step("c", 2, 7, minute, epoch.Add(time.Minute))
	clk.Advance(30*time.Second + time.Millisecond)
	step("c", 1, 1, minute, clk.Now().Add(time.Minute))
	if err := db.PutTTL([]byte("p"), EncodeInt64(10), ExpireAfter(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	step("p", 1, 11, NoExpiry(), clk.Now().Add(10*time.Second))
	if err := db.Delete([]byte("c")); err != nil {
		t.Fatal(err)
	}
	step("c", 3, 3, NoExpiry(), time.Time{})
}

// BenchmarkMergeBlind: blind increments (DB.Merge of Int64Add operands)
// over 10k keys with a 60 s window, one goroutine, NoSync.
func BenchmarkMergeBlind(b *testing.B) {
	db := openBenchDB(b, func(o *Options) { o.MergeOperator = Int64Add })
	k := make([]byte, benchKeySize)
	one, ttl := EncodeInt64(1), ExpireAfter(time.Minute)
	b.ReportAllocs()
	cpu := startCPU()
	i := uint64(0)
	for b.Loop() {
		benchKey(k, i%10_000)
		i++
		if err := db.Merge(k, one, ttl); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu.report(b)
}

// BenchmarkAdd: answering adds from 4 goroutines over 10k keys with a 60 s
// window; each returns the new count, evaluated by the commit leader.
func BenchmarkAdd(b *testing.B) {
	db := openBenchDB(b, func(o *Options) { o.MergeOperator = Int64Add })
	ttl := ExpireAfter(time.Minute)
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	runFour(b, b.N, func(i int) error {
		var k [benchKeySize]byte
		benchKey(k[:], uint64(i%10_000))
		_, err := db.Add(k[:], 1, ttl)
		return err
	})
	b.StopTimer()
	cpu.report(b)
}

// BenchmarkGetCounter100Operands: Get of a counter whose value is 100
// pending operands (each committed in its own millisecond, so no two
// combine unless their window is known), against Get of a plain row, over
// the same 1000 keys; in the memtable and after a flush; and in the
// memtable without the resolved-counter cache.
func BenchmarkGetCounter100Operands(b *testing.B) {
	const keys, ops = 1000, 100
	build := func(b *testing.B, counter, flush bool) *DB {
		clk := clock.NewManual(epoch)
		db := openBenchDB(b, func(o *Options) {
			// Room for every operand: "memtable" reads find them all there.
			o.MergeOperator, o.Clock, o.MemtableSize = Int64Add, clk, 64<<20
		})
		k := make([]byte, benchKeySize)
		for round := range ops {
			clk.Advance(time.Millisecond)
			for i := range keys {
				benchKey(k, uint64(i))
				var err error
				switch {
				case counter:
					err = db.Merge(k, EncodeInt64(1), ExpireAfter(time.Hour))
				case round == ops-1:
					err = db.Put(k, EncodeInt64(ops))
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		if flush {
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
		return db
	}
	get := func(b *testing.B, db *DB) {
		r := rand.New(rand.NewPCG(10, 11))
		k := make([]byte, benchKeySize)
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			benchKey(k, r.Uint64N(keys))
			v, err := db.Get(k)
			if n, _ := DecodeInt64(v); err != nil || n != ops {
				b.Fatalf("Get = %d, %v; want %d", n, err, ops)
			}
		}
		b.StopTimer()
		cpu.report(b)
	}
	for _, flush := range []bool{false, true} {
		where := map[bool]string{false: "memtable", true: "flushed"}[flush]
		b.Run("plain-"+where, func(b *testing.B) { get(b, build(b, false, flush)) })
		b.Run("counter-"+where, func(b *testing.B) { get(b, build(b, true, flush)) })
	}
	// Every read folds the 100 operands (no resolved-counter cache): the
	// cost of a first read, or of one after the cache forgot the key.
	b.Run("counter-memtable-uncached", func(b *testing.B) {
		db := build(b, true, false)
		db.mergeCache = nil
		get(b, db)
	})
}

// TestMergeIteratorNextAfterChain: a forward iterator that resolved a
// counter by reading past its last version (no base beneath its operands)
// does not skip the newest version of the next key.
func TestMergeIteratorNextAfterChain(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	if err := db.Put([]byte("b"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	addBlind(t, db, "a", 1, NoExpiry())
	if err := db.Put([]byte("b"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	got := scanBoth(t, func() (*Iterator, error) { return db.NewIter(nil) })
	if got["b"] != "new" || got["a"] != string(EncodeInt64(1)) {
		t.Fatalf("scan %q, want a=1 and b=new", got)
	}
}

// TestMergeIteratorSkipsEndedWindow: a forward iterator passing over a
// counter whose window ended, with no base beneath its operands, does not
// skip the next key.
func TestMergeIteratorSkipsEndedWindow(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	addBlind(t, db, "a", 1, ExpireAfter(time.Second))
	addBlind(t, db, "a", 1, ExpireAfter(time.Second))
	addBlind(t, db, "b", 5, NoExpiry())
	clk.Advance(2 * time.Second)
	got := scanBoth(t, func() (*Iterator, error) { return db.NewIter(nil) })
	if len(got) != 1 || got["b"] != string(EncodeInt64(5)) {
		t.Fatalf("scan %q, want only b=5", got)
	}
}

// TestMergeNoPeriodicCompactionLoop: a table whose expired value an operand
// above still joins (its window is the value's) is not rewritten by
// periodic compaction again and again: compaction goes idle, and the
// counter reads as its window says.
func TestMergeNoPeriodicCompactionLoop(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) {
		o.MergeOperator = Int64Add
		o.PeriodicCompactionInterval = time.Second
	})
	defer db.Close()
	ctx := context.Background()
	for i := range 20 {
		if err := db.PutTTL(fmt.Appendf(nil, "k%02d", i), EncodeInt64(1), ExpireAfter(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	for i := range 20 {
		addBlind(t, db, fmt.Sprintf("k%02d", i), 1, ExpireAfter(time.Hour))
	}
	wantCounter(t, db, "k07", 2, epoch.Add(10*time.Second))
	clk.Advance(20 * time.Second) // the window (the value's) has ended
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.WaitForCompactions(wctx); err != nil {
		t.Fatalf("WaitForCompactions: %v (compactions so far: %d)", err, db.Metrics().Compactions)
	}
	if _, _, ok := counterOf(t, db, "k07"); ok {
		t.Fatal("a counter whose window ended is read")
	}
}

// TestMergeFoldKeepsValueForDeadlineRowAbove: an operand left unfolded in a
// table (the flush after a crash reads nothing beneath), folded later at
// the bottom into a value whose window ended by the operand's own
// deadline, keeps that value when a deadline row above (in the memtable)
// extended the window: the folded value is what the deadline row applies
// to (compaction rule 5), although no statistic of the input table bounds
// the folded deadline.
func TestMergeFoldKeepsValueForDeadlineRowAbove(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	open := func() *DB {
		db, err := Open("memdb", &Options{Clock: clk, Storage: mem, MergeOperator: Int64Add, PeriodicCompactionInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	addBlind(t, db, "c", 3, ExpireAfter(2*time.Second))
	// A row that makes the table due for periodic compaction.
	if err := db.PutWith([]byte("x"), []byte("x"), ExpireAfter(500*time.Millisecond), Sync); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	db.Close()
	mem = crashed
	db = open() // the replayed operand is flushed as it is
	defer db.Close()
	clk.Advance(time.Second)
	if ok, err := db.Persist([]byte("c")); !ok || err != nil {
		t.Fatalf("Persist = %v, %v", ok, err)
	}
	clk.Advance(5 * time.Second) // past the operand's own window
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.WaitForCompactions(wctx); err != nil {
		t.Fatal(err)
	}
	if db.Metrics().Compactions == 0 {
		t.Fatalf("no periodic compaction ran: %+v", db.Metrics().Levels[0])
	}
	wantCounter(t, db, "c", 3, time.Time{})
}

// TestAddRefusesOverflow: DB.Add refuses a delta that would take the
// counter outside the int64 range, in either direction, writing nothing;
// a blind operand wraps around as documented for Int64Add.
func TestAddRefusesOverflow(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	hour := ExpireAfter(time.Hour)
	counter := func(key string) int64 {
		t.Helper()
		v, err := db.Get([]byte(key))
		n, ok := DecodeInt64(v)
		if err != nil || !ok {
			t.Fatalf("Get(%s) = %x, %v", key, v, err)
		}
		return n
	}
	for _, c := range []struct {
		start, delta int64
	}{{math.MaxInt64 - 1, 2}, {math.MaxInt64, 1}, {math.MinInt64 + 1, -2}, {math.MinInt64, -1}, {-1, math.MinInt64}} {
		key := fmt.Sprintf("c%d%+d", c.start, c.delta)
		if n, err := db.Add([]byte(key), c.start, hour); err != nil || n != c.start {
			t.Fatalf("Add(%s, %d) = %d, %v", key, c.start, n, err)
		}
		seq := db.visibleSeq.Load()
		if _, err := db.Add([]byte(key), c.delta, hour); !errors.Is(err, ErrConditionFailed) || !strings.Contains(err.Error(), "overflow") {
			t.Fatalf("Add(%s, %d) past the int64 range: %v, want ErrConditionFailed naming the overflow", key, c.delta, err)
		}
		if got := db.visibleSeq.Load(); got != seq {
			t.Fatalf("a refused Add wrote: sequence %d -> %d", seq, got)
		}
		if n := counter(key); n != c.start {
			t.Fatalf("%s after a refused Add = %d, want %d", key, n, c.start)
		}
		// One less in size lands on the range's end and is accepted.
		inside := c.delta - 1
		if c.delta < 0 {
			inside = c.delta + 1
		}
		if n, err := db.Add([]byte(key), inside, hour); err != nil || n != c.start+inside {
			t.Fatalf("Add(%s, %d) = %d, %v; want %d", key, inside, n, err, c.start+inside)
		}
	}
	addBlind(t, db, "w", math.MaxInt64, hour)
	addBlind(t, db, "w", 1, hour)
	if n := counter("w"); n != math.MinInt64 {
		t.Fatalf("blind MaxInt64 + 1 = %d, want the wrap-around %d", n, int64(math.MinInt64))
	}
}
