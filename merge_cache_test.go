package mayfly

import (
	"context"
	"fmt"
	"hash/maphash"
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
