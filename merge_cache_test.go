package mayfly

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// TestMergeCacheExact: reads of a counter remember its resolved state and
// later reads fold only the newer operands onto it; the answers stay those
// of the rules through new operands, a flush (the remembered version then
// is a folded value row), a compaction, a snapshot older than the
// remembered version, an ended window and a delete.
func TestMergeCacheExact(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	minute := ExpireAfter(time.Minute)
	for range 20 {
		addBlind(t, db, "c", 1, minute)
	}
	wantCounter(t, db, "c", 20, epoch.Add(time.Minute))
	if s := db.mergeCache.get([]byte("c")); s == nil || !s.live || s.seq != db.visibleSeq.Load() {
		t.Fatalf("no state remembered at the newest version: %+v", s)
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	for i := range 5 {
		addBlind(t, db, "c", 1, minute)
		wantCounter(t, db, "c", int64(21+i), epoch.Add(time.Minute))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	addBlind(t, db, "c", 10, minute)
	wantCounter(t, db, "c", 35, epoch.Add(time.Minute))
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	wantCounter(t, db, "c", 35, epoch.Add(time.Minute))
	if v, err := snap.Get([]byte("c")); err != nil || string(v) != string(EncodeInt64(20)) {
		t.Fatalf("snapshot reads %x, %v; want 20", v, err)
	}
	clk.Advance(time.Minute + time.Millisecond)
	if _, _, ok := counterOf(t, db, "c"); ok {
		t.Fatal("counter read after its window ended")
	}
	for range 3 {
		addBlind(t, db, "c", 2, minute)
	}
	wantCounter(t, db, "c", 6, clk.Now().Add(time.Minute))
	if err := db.Delete([]byte("c")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "c", "")
	addBlind(t, db, "c", 4, NoExpiry())
	wantCounter(t, db, "c", 4, time.Time{})
}

// TestMergeCacheBounded: the cache forgets keys beyond its size instead of
// growing, and reads stay exact for forgotten keys.
func TestMergeCacheBounded(t *testing.T) {
	db := openCounterDB(t, t.TempDir(), clock.NewManual(epoch))
	defer db.Close()
	const keys = mergeCacheShards*mergeCacheShardSize + 500
	for i := range keys {
		k := fmt.Sprintf("k%05d", i)
		addBlind(t, db, k, 1, NoExpiry())
		addBlind(t, db, k, 1, NoExpiry())
		wantCounter(t, db, k, 2, time.Time{})
	}
	n := 0
	for i := range db.mergeCache.shards {
		n += len(db.mergeCache.shards[i].m)
	}
	if n > mergeCacheShards*mergeCacheShardSize {
		t.Fatalf("cache holds %d keys", n)
	}
	for i := range keys {
		wantCounter(t, db, fmt.Sprintf("k%05d", i), 2, time.Time{})
	}
}

// TestMergeCacheHashCollision: the cache finds a key's state by the key's
// hash; a state of another key under the same hash is a miss, and
// remembering the key takes its place.
func TestMergeCacheHashCollision(t *testing.T) {
	c := newMergeCache()
	a, b := []byte("a"), []byte("b")
	c.remember(a, newMergeState(5, true, false, 0, EncodeInt64(1)))
	// Move a's state under b's hash, as a collision would place it.
	ha, hb := maphash.Bytes(c.seed, a), maphash.Bytes(c.seed, b)
	s := c.shards[ha%mergeCacheShards].m[ha]
	delete(c.shards[ha%mergeCacheShards].m, ha)
	sh := &c.shards[hb%mergeCacheShards]
	if sh.m == nil {
		sh.m = map[uint64]*mergeState{}
	}
	sh.m[hb] = s
	if s := c.get(b); s != nil {
		t.Fatalf("b reads a's state %+v", s)
	}
	c.remember(b, newMergeState(3, true, false, 0, EncodeInt64(7)))
	if s := c.get(b); s == nil || s.seq != 3 || string(s.value) != string(EncodeInt64(7)) {
		t.Fatalf("b reads %+v after remembering its state", s)
	}
	if s := c.get(a); s != nil {
		t.Fatalf("a reads %+v", s)
	}
	long := []byte("a key longer than the state's own key buffer")
	c.remember(long, newMergeState(9, false, false, 0, nil))
	if s := c.get(long); s == nil || s.seq != 9 || s.live {
		t.Fatalf("long key reads %+v", s)
	}
}

// put writes key's value.
func put(t *testing.T, db *DB, key, value string) {
	t.Helper()
	must(t, db.Put([]byte(key), []byte(value)))
}

// answers reports whether a read of key now is answered from the cache
// without a search (mergeCache.answer).
func answers(t *testing.T, db *DB, key string) bool {
	t.Helper()
	rs, seq, err := db.loadReadStateSeq()
	if err != nil {
		t.Fatal(err)
	}
	defer rs.release()
	return db.mergeCache.answer(rs.mem, []byte(key), seq) != nil
}

// TestMergeCacheAnswersWithoutSearch: the second read that finds a
// counter's remembered state current gives it its memtable position, and
// later reads are answered without a search while nothing is linked before
// it; every kind of write to the key (an operand, a deadline change, a
// value, a delete), a row of a key linked just before it, a rotation and a
// snapshot older than the state each send the read back to the search, and
// every answer is the rules' (RFC 0010).
func TestMergeCacheAnswersWithoutSearch(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	minute := ExpireAfter(time.Minute)
	deadline := epoch.Add(time.Minute)
	put(t, db, "a", "x")
	for range 20 {
		addBlind(t, db, "c", 1, minute)
	}
	put(t, db, "d", "x")
	if answers(t, db, "c") {
		t.Fatal("answered before any read")
	}
	wantCounter(t, db, "c", 20, deadline) // remembers the state
	wantCounter(t, db, "c", 20, deadline) // finds it current: positions it
	if !answers(t, db, "c") {
		t.Fatal("not answered after two reads")
	}
	wantCounter(t, db, "c", 20, deadline)
	if answers(t, db, "a") || answers(t, db, "d") {
		t.Fatal("a key never merged is answered from the cache")
	}

	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	// Each step writes, checks the read is no longer answered, reads the
	// rules' answer twice (positioning it again) and checks it is.
	step := func(what string, write func(), n int64, at time.Time) {
		t.Helper()
		write()
		if answers(t, db, "c") {
			t.Fatalf("after %s: answered from the stale state", what)
		}
		wantCounter(t, db, "c", n, at)
		wantCounter(t, db, "c", n, at)
		if !answers(t, db, "c") {
			t.Fatalf("after %s: not answered again", what)
		}
	}
	step("an operand", func() { addBlind(t, db, "c", 5, minute) }, 25, deadline)
	step("a row of a key before it", func() { put(t, db, "b", "x") }, 25, deadline)
	put(t, db, "e", "x") // after it: the position stays current
	if !answers(t, db, "c") {
		t.Fatal("a row of a key after it made the position stale")
	}
	later := epoch.Add(time.Hour)
	step("a deadline change", func() {
		if ok, err := db.Expire([]byte("c"), ExpireAt(later), ExpireAlways); !ok || err != nil {
			t.Fatalf("Expire = %v, %v", ok, err)
		}
	}, 25, later)
	if v, err := snap.Get([]byte("c")); err != nil || string(v) != string(EncodeInt64(20)) {
		t.Fatalf("snapshot older than the state reads %x, %v; want 20", v, err)
	}
	put(t, db, "c", string(EncodeInt64(100)))
	if answers(t, db, "c") {
		t.Fatal("after a value: answered from the stale state")
	}
	wantCounter(t, db, "c", 100, time.Time{}) // a value row: no merge to remember
	step("an operand on the value", func() { addBlind(t, db, "c", 1, NoExpiry()) }, 101, time.Time{})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if answers(t, db, "c") {
		t.Fatal("answered after the memtable holding its version was flushed")
	}
	wantCounter(t, db, "c", 101, time.Time{})
	step("an operand after the flush", func() { addBlind(t, db, "c", 1, NoExpiry()) }, 102, time.Time{})
	if err := db.Delete([]byte("c")); err != nil {
		t.Fatal(err)
	}
	if answers(t, db, "c") {
		t.Fatal("answered after a delete")
	}
	mustGet(t, db, "c", "")
}

// TestMergeCacheAnswerUnderWrites: readers of a counter that writers
// increment concurrently, with rows of neighbouring keys linked around it,
// never read fewer increments than were acknowledged before the read
// began, nor more than were begun (run with -race).
func TestMergeCacheAnswerUnderWrites(t *testing.T) {
	db := openCounterDB(t, t.TempDir(), clock.NewManual(epoch))
	defer db.Close()
	const perWriter = 3000
	var begun, acked atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if i%4 == 3 {
					// A neighbour's row, before or after the counter.
					k := []byte{byte('b' + 2*(i/4%2)), byte(w), byte(i)}
					if err := db.Put(k, []byte("x")); err != nil {
						errs <- err
						return
					}
					continue
				}
				begun.Add(1)
				if err := db.Merge([]byte("c"), EncodeInt64(1), NoExpiry()); err != nil {
					errs <- err
					return
				}
				acked.Add(1)
			}
		}()
	}
	var answered atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for acked.Load() < 2*perWriter*3/4 {
				lo := acked.Load()
				rs, seq, err := db.loadReadStateSeq()
				if err != nil {
					errs <- err
					return
				}
				if db.mergeCache.answer(rs.mem, []byte("c"), seq) != nil {
					answered.Add(1)
				}
				rs.release()
				v, err := db.Get([]byte("c"))
				hi := begun.Load()
				if errors.Is(err, ErrNotFound) {
					v, err = EncodeInt64(0), nil
				}
				if err != nil {
					errs <- err
					return
				}
				n, _ := DecodeInt64(v)
				if n < lo || n > hi {
					errs <- fmt.Errorf("read %d with %d acknowledged before and %d begun after", n, lo, hi)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantCounter(t, db, "c", 2*perWriter*3/4, time.Time{})
	t.Logf("%d reads answered without a search", answered.Load())
}

// TestMergeCachePositionsBounded: a counter whose position goes stale again
// and again (rows of new keys linked just before its version) is positioned
// at most maxPositions times in one memtable and then read by the search,
// exactly; a rotation starts the count again.
func TestMergeCachePositionsBounded(t *testing.T) {
	db := openCounterDB(t, t.TempDir(), clock.NewManual(epoch))
	defer db.Close()
	for range 3 {
		addBlind(t, db, "m", 1, NoExpiry())
	}
	wantCounter(t, db, "m", 3, time.Time{})
	for i := range maxPositions + 1 {
		wantCounter(t, db, "m", 3, time.Time{})
		if want := i < maxPositions; answers(t, db, "m") != want {
			t.Fatalf("after %d stale positions: answered %v, want %v", i, !want, want)
		}
		put(t, db, fmt.Sprintf("l%02d", i), "x") // just before m: the position goes stale
	}
	wantCounter(t, db, "m", 3, time.Time{})
	if answers(t, db, "m") {
		t.Fatal("positioned again after maxPositions")
	}
	must(t, db.Flush())
	addBlind(t, db, "m", 1, NoExpiry())
	wantCounter(t, db, "m", 4, time.Time{})
	wantCounter(t, db, "m", 4, time.Time{})
	if !answers(t, db, "m") {
		t.Fatal("not positioned in the next memtable")
	}
}
