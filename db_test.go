package mayfly

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/storage"
)

func TestPutGetDeleteAcrossFlushCompactReopen(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, nil)
	for i := 0; i < 1000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Delete([]byte("k0005")); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTTL([]byte("ttl"), []byte("x"), ExpireAfter(time.Second)); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		t.Helper()
		mustGet(t, db, "k0001", "v1")
		mustGet(t, db, "k0999", "v999")
		mustGet(t, db, "k0005", "")
		mustGet(t, db, "nope", "")
	}
	check("memtable")
	mustGet(t, db, "ttl", "x")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	mustGet(t, db, "ttl", "x")
	clk.Advance(time.Second)
	mustGet(t, db, "ttl", "x") // now == expire_ts: still visible
	clk.Advance(time.Millisecond)
	mustGet(t, db, "ttl", "")
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	mustGet(t, db, "ttl", "")
	m := db.Metrics()
	if m.Levels[bottomLevel].Files == 0 || m.Levels[0].Files != 0 {
		t.Fatalf("after compaction: %+v", m.Levels)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, nil)
	defer db.Close()
	check("reopened")
	n := 0
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for range it.All() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != 999 {
		t.Fatalf("scan saw %d keys, want 999", n)
	}
}

func TestReopenWithoutCloseReplaysWAL(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, nil)
	b := db.NewBatch()
	b.Put([]byte("a"), []byte("1"))
	b.PutTTL([]byte("b"), []byte("2"), ExpireAfter(time.Minute))
	if err := b.Write(Sync); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash: drop the handle without Close, release the lock.
	db.lock.Close()
	db2 := openTestDB(t, dir, clk, nil)
	defer db2.Close()
	mustGet(t, db2, "a", "1")
	mustGet(t, db2, "b", "2")
	rem, exp, err := db2.TTL([]byte("b"))
	if err != nil || !exp || rem != time.Minute {
		t.Fatalf("TTL = %v %v %v", rem, exp, err)
	}
}

func TestObjectCache(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	cacheDir := t.TempDir()
	opts := func(o *Options) {
		o.Storage = mem
		o.ObjectCacheDir = cacheDir
		o.DisableBlockCache = true // every read goes to the table file
	}
	db := openTestDB(t, "", clk, opts)
	for i := 0; i < 500; i++ {
		db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte("value"))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k0007", "value")
	db.Close()
	db = openTestDB(t, "", clk, opts)
	defer db.Close()
	mustGet(t, db, "k0123", "value")
	m := db.Metrics()
	if m.ObjectCacheHits == 0 || m.ObjectCacheBytes == 0 {
		t.Fatalf("object cache unused: hits %d misses %d bytes %d", m.ObjectCacheHits, m.ObjectCacheMisses, m.ObjectCacheBytes)
	}
	if m.ObjectCacheMisses != 0 {
		t.Fatalf("tables written through the cache were fetched again: %d misses", m.ObjectCacheMisses)
	}
}

func cacheTestValue(i, gen int) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "v%06d.%d|", i, gen), 6)
}

// fillTables writes n keys (generation gen) and flushes them to a table.
func fillTables(t *testing.T, db *DB, n, gen int) {
	t.Helper()
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "k%06d", i), cacheTestValue(i, gen)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestBlockCacheMemoryReturned reads through the block cache with Gets and
// iterators, closes the DB with one iterator still open, and checks that
// the cache's slab memory is all given back once that iterator closes.
func TestBlockCacheMemoryReturned(t *testing.T) {
	m0, n0 := manual.Allocated()
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), func(o *Options) { o.BlockCacheSize = 64 << 10 })
	fillTables(t, db, 3000, 0)
	for i := 0; i < 3000; i += 13 {
		mustGet(t, db, fmt.Sprintf("k%06d", i), string(cacheTestValue(i, 0)))
	}
	if st := db.cache.AllocStats(); st.Bufs == 0 || st.SlabBytes == 0 {
		t.Fatalf("no cached block in slab memory after reads: %+v", st)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatal("First:", it.Error())
	}
	open, err := db.NewIter(nil) // left open across Close
	if err != nil {
		t.Fatal(err)
	}
	if !open.SeekGE([]byte("k001500")) {
		t.Fatal("SeekGE:", open.Error())
	}
	n := 1
	for it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != 3000 {
		t.Fatalf("scan: %d keys, %v", n, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if st := db.cache.AllocStats(); st.Bufs == 0 {
		t.Fatalf("the open iterator's block was freed under it: %+v", st)
	}
	// The iterator reads nothing more (ErrClosed); its Close frees the
	// block it still holds.
	if open.Key() != nil || open.Value() != nil || open.Next() {
		t.Fatalf("open iterator after Close: %q = %q", open.Key(), open.Value())
	}
	if err := open.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close of the iterator left open: %v, want ErrClosed", err)
	}
	if st := db.cache.AllocStats(); !st.Empty() {
		t.Fatalf("after Close and the last iterator closed, the cache's allocator holds %+v", st)
	}
	if m, n := manual.Allocated(); m != m0 || n != n0 {
		t.Fatalf("manual.Allocated = %d bytes in %d buffers, want %d in %d", m, n, m0, n0)
	}
}

// TestBlockCacheConcurrentEviction runs Gets, forward and backward scans and
// compactions at once over a block cache of a few blocks, so blocks are
// evicted while readers hold them. Run with -race, where freed blocks are
// poisoned: a reader using a freed or reused block sees wrong values.
func TestBlockCacheConcurrentEviction(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), func(o *Options) { o.BlockCacheSize = 16 << 10 })
	const n = 2000
	fillTables(t, db, n, 0)
	fillTables(t, db, n/2, 1) // newer versions of the first half
	want := func(i int) []byte {
		if i < n/2 {
			return cacheTestValue(i, 1)
		}
		return cacheTestValue(i, 0)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 3 {
				switch (g + round) % 3 {
				case 0:
					for i := g; i < n; i += 5 {
						v, err := db.Get(fmt.Appendf(nil, "k%06d", i))
						if err != nil || !bytes.Equal(v, want(i)) {
							errc <- fmt.Errorf("Get(k%06d) = %q, %v", i, v, err)
							return
						}
					}
				case 1:
					it, err := db.NewIter(nil)
					if err != nil {
						errc <- err
						return
					}
					i := 0
					for ok := it.First(); ok; ok = it.Next() {
						if string(it.Key()) != fmt.Sprintf("k%06d", i) || !bytes.Equal(it.Value(), want(i)) {
							errc <- fmt.Errorf("scan: %q = %q at %d", it.Key(), it.Value(), i)
							break
						}
						i++
					}
					if err := it.Close(); err != nil || i != n {
						errc <- fmt.Errorf("scan: %d keys, %v", i, err)
					}
				case 2:
					it, err := db.NewIter(nil)
					if err != nil {
						errc <- err
						return
					}
					i := n - 1
					for ok := it.Last(); ok; ok = it.Prev() {
						if string(it.Key()) != fmt.Sprintf("k%06d", i) || !bytes.Equal(it.Value(), want(i)) {
							errc <- fmt.Errorf("reverse scan: %q = %q at %d", it.Key(), it.Value(), i)
							break
						}
						i--
					}
					if err := it.Close(); err != nil || i != -1 {
						errc <- fmt.Errorf("reverse scan: stopped at %d, %v", i, err)
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := db.Compact(context.Background(), nil, nil); err != nil {
			errc <- fmt.Errorf("Compact: %w", err)
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if st := db.cache.AllocStats(); !st.Empty() {
		t.Fatalf("after Close the cache's allocator holds %+v", st)
	}
}

// TestMemtableChunksReusedAcrossRotations: the memtables a DB rotates
// through take the chunk the pool kept from the ones already flushed
// instead of mapping it fresh, the pool never holds more than
// memPoolChunks, and Close gives every chunk back.
func TestMemtableChunksReusedAcrossRotations(t *testing.T) {
	base := arenaBytes()
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = storage.NewMem()
		o.MemtableSize = 2 * memtable.ChunkSize
		o.DisableAutoCompaction = true
	})
	// Each round fills a memtable's arena to 2 chunks (700 rows of about
	// a thousandth of a chunk: one chunk of records, one of skiplist
	// nodes) without reaching MemtableSize, then flushes it.
	const rounds, rows, chunksPerRound = 8, 700, 2
	// The pool keeps memPoolChunks, or with -1 one memtable's 2 chunks.
	poolChunks := uint64(2)
	if c := memPoolChunks; c >= 0 {
		poolChunks = uint64(c)
	}
	val := bytes.Repeat([]byte{'v'}, memtable.ChunkSize/1000-40)
	for r := range rounds {
		for i := range rows {
			if err := db.Put(fmt.Appendf(nil, "r%d-%06d", r, i), val); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if s := db.memPool.Stats(); uint64(s.Pooled) > poolChunks {
			t.Fatalf("round %d: pool holds %d chunks, more than %d", r, s.Pooled, poolChunks)
		}
	}
	s := db.memPool.Stats()
	t.Logf("chunk pool after %d rounds: %+v", rounds, s)
	if s.Fresh+s.Reused != rounds*chunksPerRound {
		t.Fatalf("%+v: want %d chunk uses in all", s, rounds*chunksPerRound)
	}
	// A flush wakes Flush just before it releases its memtable, so a
	// round may find the previous round's chunks not yet back. Round k's
	// memtable is surely released before round k+2 fills, so of any two
	// rounds from the third on, one reuses the pooled chunks; and chunks
	// are mapped only while at most two memtables (flushing and active)
	// and the pool hold any.
	wantReused := uint64((rounds - 2) / 2 * min(poolChunks, chunksPerRound))
	if s.Reused < wantReused || s.Fresh-s.Freed > 2*chunksPerRound+poolChunks {
		t.Fatalf("%+v: want at least %d reused and at most %d mapped", s, wantReused, 2*chunksPerRound+poolChunks)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if s := db.memPool.Stats(); s.Pooled != 0 {
		t.Fatalf("after Close the pool holds %d chunks", s.Pooled)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close %d arena bytes remain", got-base)
	}
}

// Memtable arenas live outside the Go heap (internal/manual) and are freed
// when the last holder lets go. These tests check the lifetime rule from the
// outside: every arena byte comes back by Close, an arena stays readable for
// as long as an iterator that may read it is open, and concurrent readers
// never touch a freed arena (which on Unix faults).

func TestMemtableArenasFreedAfterFlushesAndClose(t *testing.T) {
	base := arenaBytes()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, "", clk, func(o *Options) {
		o.Storage = storage.NewMem()
		o.MemtableSize = 256 << 10 // several rotations per generation
		o.DisableAutoCompaction = true
	})
	const n = 3000
	put := func(gen int) {
		for i := range n {
			if err := db.Put(lifeKey(i), lifeVal(i, gen)); err != nil {
				t.Fatal(err)
			}
		}
	}

	put(0)
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	it0, err := db.NewIter(nil) // pins generation 0's memtables
	if err != nil {
		t.Fatal(err)
	}
	put(1)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	itSnap, err := snap.NewIter(nil) // generation 0 at the snapshot, now from tables
	if err != nil {
		t.Fatal(err)
	}
	put(2)
	it2, err := db.NewIter(nil) // pins generation 2's memtables
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if arenaBytes() == base {
		t.Fatal("open iterators pin no arena: their memtables were freed under them")
	}

	// Each iterator reads what it pinned, after the flushes took its
	// memtables out of the DB.
	checkScan(t, it0, 0, n, 0)
	checkScan(t, itSnap, 0, n, 0)
	checkScan(t, it2, 0, n, 2)
	if v, err := snap.Get(lifeKey(7)); err != nil || !bytes.Equal(v, lifeVal(7, 0)) {
		t.Fatalf("snapshot Get = %.20q, %v", v, err)
	}
	// Arena bytes memtables hold: the rest is in the DB's chunk pool.
	inMemtables := func() int64 { return arenaBytes() - db.memPool.Stats().PooledBytes }
	pinned := inMemtables()
	if err := it0.Close(); err != nil {
		t.Fatal(err)
	}
	if inMemtables() >= pinned {
		t.Fatalf("closing the oldest iterator released no memtable (%d bytes before and after)", pinned-base)
	}
	if err := it2.Close(); err != nil {
		t.Fatal(err)
	}
	checkScan(t, itSnap, 0, n, 0)
	if err := itSnap.Close(); err != nil { // it pinned the memtable put(2) began in
		t.Fatal(err)
	}
	// What remains is the chunks the DB keeps for its next memtables.
	if got, pooled := arenaBytes()-base, db.memPool.Stats().PooledBytes; got != pooled || pooled == 0 {
		t.Fatalf("after Flush with no iterator open %d arena bytes remain, want the %d pooled", got, pooled)
	}
	if v, err := snap.Get(lifeKey(7)); err != nil || !bytes.Equal(v, lifeVal(7, 0)) {
		t.Fatalf("snapshot Get after the flushes = %.20q, %v", v, err)
	}

	// Unflushed rows with an iterator left open past Close: the iterator
	// keeps its memtable (it reads nothing more: ErrClosed) until its own
	// Close, the DB's close releases the rest.
	put(3)
	it3, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	checkScan(t, it3, 0, n, 3)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if arenaBytes() == base {
		t.Fatal("Close freed the arena of an open iterator")
	}
	if it3.First() || !errors.Is(it3.Error(), ErrClosed) {
		t.Fatalf("iterator after DB.Close: First moved or error %v, want ErrClosed", it3.Error())
	}
	it3.Close()
	snap.Close()
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close %d arena bytes remain", got-base)
	}
}

// TestConcurrentReadsWhileMemtablesRotate runs Gets and scans against a
// writer whose small memtables rotate and flush all the time. Every key is
// written once per generation with a value naming it, so a reader can
// check each value it sees; a read of a freed arena faults or returns
// garbage. Run it with -race.
func TestConcurrentReadsWhileMemtablesRotate(t *testing.T) {
	base := arenaBytes()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, "", clk, func(o *Options) {
		o.Storage = storage.NewMem()
		o.MemtableSize = 64 << 10
	})
	const n, gens, readers = 500, 6, 2
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, readers*2)
	valid := func(i int, v []byte) bool {
		for g := range gens {
			if bytes.Equal(v, lifeVal(i, g)) {
				return true
			}
		}
		return false
	}
	for r := range readers {
		wg.Add(2)
		go func() { // point reads
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				i := (k*7 + r) % n
				v, err := db.Get(lifeKey(i))
				if err != nil && !errors.Is(err, ErrNotFound) {
					errs <- err
					return
				}
				if err == nil && !valid(i, v) {
					errs <- fmt.Errorf("Get(%s) = %.30q", lifeKey(i), v)
					return
				}
			}
		}()
		go func() { // scans, each held across the writer's rotations
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				it, err := db.NewIter(nil)
				if err != nil {
					errs <- err
					return
				}
				prev := -1
				for ok := it.First(); ok; ok = it.Next() {
					var i int
					if _, err := fmt.Sscanf(string(it.Key()), "key-%06d", &i); err != nil || i <= prev || !valid(i, it.Value()) {
						errs <- fmt.Errorf("scan: row %q = %.30q after row %d", it.Key(), it.Value(), prev)
						it.Close()
						return
					}
					prev = i
				}
				if err := it.Close(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for g := range gens {
		for i := range n {
			if err := db.Put(lifeKey(i), lifeVal(i, g)); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Millisecond)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := db.Metrics(); m.Flushes < 5 {
		t.Errorf("only %d flushes: the memtables did not rotate under the readers", m.Flushes)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close %d arena bytes remain", got-base)
	}
}
