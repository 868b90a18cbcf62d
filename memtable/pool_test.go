package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// poolVal is the value of row i of memtable generation gen: distinct per
// generation, so a reused chunk that leaked old bytes into a row shows. Its
// record takes exactly a 1024th of a chunk, so n rows take n/1024 record
// chunks (rounded up), and their nodes (about 35 bytes each) one more
// chunk for up to 7000 rows.
func poolVal(i, gen int) []byte {
	v := fmt.Appendf(nil, "gen%d-row%06d-", gen, i)
	return append(v, bytes.Repeat([]byte{byte('a' + gen%26)}, arenaChunk/1024-recordHeader-7-len(v))...)
}

// fillPooled makes a memtable of pool holding rows 0..rows-1 of generation
// gen (1024 rows fill a record chunk).
func fillPooled(pool *Pool, rows, gen int) *Memtable {
	m := NewPooled(uint64(gen), pool)
	for i := range rows {
		m.Add(&format.Row{Key: fmt.Appendf(nil, "k%06d", i), Seq: uint64(i + 1), Value: poolVal(i, gen)})
	}
	return m
}

// checkPooled checks that m holds exactly rows 0..rows-1 of generation gen.
func checkPooled(t *testing.T, m *Memtable, rows, gen int) {
	t.Helper()
	it := m.NewIter()
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		r := it.Row()
		if i >= rows || !bytes.Equal(r.Key, fmt.Appendf(nil, "k%06d", i)) || !bytes.Equal(r.Value, poolVal(i, gen)) {
			t.Fatalf("row %d: %q = %.24q, want generation %d", i, r.Key, r.Value, gen)
		}
		i++
	}
	if i != rows {
		t.Fatalf("memtable holds %d rows, want %d", i, rows)
	}
}

// TestPoolReusesReleasedChunks: a memtable released into a pool gives
// its chunks to the next one, which maps nothing new, keeps the arena byte
// count unchanged and reads back only its own rows.
func TestPoolReusesReleasedChunks(t *testing.T) {
	base := ArenaBytes()
	pool := NewPool(4*arenaChunk, -1)
	const rows = 2000 // 3 chunks: 2 of records, 1 of nodes
	m0 := fillPooled(pool, rows, 0)
	s := pool.Stats()
	if s.Fresh != 3 || s.Reused != 0 || s.Pooled != 0 {
		t.Fatalf("first memtable: %+v, want 3 fresh chunks", s)
	}
	held := ArenaBytes() - base
	if held != 3*arenaChunk {
		t.Fatalf("first memtable holds %d arena bytes, want %d", held, 3*arenaChunk)
	}
	m0.Unref()
	if s := pool.Stats(); s.Pooled != 3 || s.Freed != 0 {
		t.Fatalf("after the first Unref: %+v, want 3 pooled", s)
	}
	if got := ArenaBytes() - base; got != held {
		t.Fatalf("pooled chunks count %d arena bytes, want %d (still mapped)", got, held)
	}
	for gen := 1; gen <= 3; gen++ {
		m := fillPooled(pool, rows, gen)
		checkPooled(t, m, rows, gen)
		if got := ArenaBytes() - base; got != held {
			t.Fatalf("generation %d: %d arena bytes, want %d (nothing mapped)", gen, got, held)
		}
		m.Unref()
	}
	if s := pool.Stats(); s.Fresh != 3 || s.Reused != 9 || s.Pooled != 3 {
		t.Fatalf("after four generations: %+v, want 3 fresh, 9 reused, 3 pooled", s)
	}
	pool.Close()
	if got := ArenaBytes(); got != base {
		t.Fatalf("Close left %d arena bytes", got-base)
	}
}

// TestPoolBound: a pool keeps at most its limit, frees the rest and
// never keeps an oversized record's chunk; a zero-size pool keeps nothing.
func TestPoolBound(t *testing.T) {
	base := ArenaBytes()
	pool := NewPool(2*arenaChunk+1, -1) // rounds up to 3 chunks
	m := fillPooled(pool, 5000, 0)      // 6 chunks: 5 of records, 1 of nodes
	big := bytes.Repeat([]byte("B"), arenaChunk/2)
	m.Add(&format.Row{Key: []byte("big"), Seq: 9999, Value: big}) // a chunk of its own
	if got := ArenaBytes() - base; got != 6*arenaChunk+int64(len(big))+int64(recordHeader+3) {
		t.Fatalf("memtable holds %d arena bytes", got)
	}
	m.Unref()
	if s := pool.Stats(); s.Pooled != 3 || s.Freed != 4 {
		t.Fatalf("after Unref: %+v, want 3 pooled, 4 freed", s)
	}
	if got := ArenaBytes() - base; got != 3*arenaChunk {
		t.Fatalf("pool holds %d arena bytes, want %d", got, 3*arenaChunk)
	}
	pool.Close()

	none := NewPool(0, -1)
	m = fillPooled(none, 1000, 1)
	m.Unref()
	if s := none.Stats(); s.Pooled != 0 || s.Fresh != 2 || s.Freed != 2 {
		t.Fatalf("zero-size pool: %+v, want 2 fresh and 2 freed", s)
	}
	if got := ArenaBytes(); got != base {
		t.Fatalf("%d arena bytes left", got-base)
	}
}

// TestPoolChunkLimit: a pool with an explicit chunk limit keeps that many
// chunks of a released memtable, frees the rest, and still recycles the
// released memtable's chunks for the next one.
func TestPoolChunkLimit(t *testing.T) {
	base := ArenaBytes()
	pool := NewPool(8*arenaChunk, 1)
	m := fillPooled(pool, 5000, 0) // 6 chunks
	m.Unref()
	if s := pool.Stats(); s.Pooled != 1 || s.Freed != 5 {
		t.Fatalf("after Unref: %+v, want 1 pooled, 5 freed", s)
	}
	if got := ArenaBytes() - base; got != arenaChunk {
		t.Fatalf("pool holds %d arena bytes, want %d", got, arenaChunk)
	}
	m = fillPooled(pool, 5000, 1)
	if s := pool.Stats(); s.Reused != 1 || s.Fresh != 11 {
		t.Fatalf("second memtable: %+v, want 1 reused and 11 fresh chunks in all", s)
	}
	m.Unref()
	pool.Close()
	if got := ArenaBytes(); got != base {
		t.Fatalf("%d arena bytes left", got-base)
	}
}

// TestPoolLateReleaseAfterClose: a memtable still referenced when its
// pool closes (an iterator that outlived the database) stays readable, and
// its chunks are freed, not pooled, at its last Unref.
func TestPoolLateReleaseAfterClose(t *testing.T) {
	base := ArenaBytes()
	pool := NewPool(8*arenaChunk, -1)
	fillPooled(pool, 1000, 0).Unref() // 2 chunks pooled
	m := fillPooled(pool, 2000, 1)    // reuses them and maps 1 more
	pool.Close()
	if got := ArenaBytes() - base; got != 3*arenaChunk {
		t.Fatalf("after Close %d arena bytes, want the live memtable's %d", got, 3*arenaChunk)
	}
	checkPooled(t, m, 2000, 1)
	m.Unref()
	if s := pool.Stats(); s.Pooled != 0 || s.Freed != 3 {
		t.Fatalf("late Unref: %+v, want nothing pooled and 3 freed", s)
	}
	if got := ArenaBytes(); got != base {
		t.Fatalf("late Unref left %d arena bytes", got-base)
	}
	pool.Close() // idempotent
}

// TestPoolConcurrentRotation mimics a database: one writer fills
// memtables and rotates them, readers hold references to recent memtables
// and check every row they read, and whichever goroutine drops the last
// reference returns the chunks that the writer's next memtable takes. A
// chunk handed out while a reader could still see its old memtable shows
// as a wrong row (or, under -race, a data race).
func TestPoolConcurrentRotation(t *testing.T) {
	base := ArenaBytes()
	pool := NewPool(3*arenaChunk, -1)
	const gens, rows, readers = 24, 1000, 3
	type held struct {
		m   *Memtable
		gen int
	}
	ch := make(chan held, readers)
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range ch {
				for i := 0; i < rows; i += 37 {
					r, ok := h.m.Get(fmt.Appendf(nil, "k%06d", i), format.MaxSeq)
					if !ok || !bytes.Equal(r.Value, poolVal(i, h.gen)) {
						select {
						case errs <- fmt.Errorf("generation %d row %d: %.24q", h.gen, i, r.Value):
						default:
						}
						break
					}
				}
				h.m.Unref()
			}
		}()
	}
	for gen := range gens {
		m := fillPooled(pool, rows, gen)
		m.Ref() // the reader's reference
		ch <- held{m, gen}
		m.Unref() // the writer's: rotation and flush are done with it
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s := pool.Stats()
	if s.Reused == 0 || s.Fresh+s.Reused != gens*2 {
		t.Fatalf("%+v: want %d chunk uses, some of them reused", s, gens*2)
	}
	pool.Close()
	if got := ArenaBytes(); got != base {
		t.Fatalf("%d arena bytes left", got-base)
	}
}

// TestInsertAllocatesNothing: rows go into the arena, index included, so
// filling a memtable makes next to no Go heap allocations (a few per arena
// chunk, for the chunk table), with or without a pool.
func TestInsertAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	rows := make([]format.Row, 5000)
	for i := range rows {
		rows[i] = format.Row{Key: fmt.Appendf(nil, "k%08d", rng.Intn(1e8)), Seq: uint64(i + 1), Value: []byte("v")}
	}
	pool := NewPool(8<<20, -1)
	defer pool.Close()
	for _, p := range []*Pool{nil, pool, pool} {
		mallocs, m := fillCountingMallocs(p, rows)
		chunks := len(m.chunks())
		m.Unref()
		t.Logf("%d rows in %d chunks: %d allocations", len(rows), chunks, mallocs)
		if mallocs > uint64(4*chunks+10) {
			t.Fatalf("filling %d rows (%d chunks) made %d heap allocations", len(rows), chunks, mallocs)
		}
	}
}

// fillCountingMallocs fills a new memtable of pool with rows and returns
// the heap allocations that took, and the memtable.
func fillCountingMallocs(pool *Pool, rows []format.Row) (uint64, *Memtable) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m := NewPooled(1, pool)
	for i := range rows {
		m.Add(&rows[i])
	}
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, m
}

// TestPoolKeepsTwoMemtablesWithLive: a memtable released while others are
// live is kept only up to two memtables' worth of chunks, counting the live
// ones (memtableReleased): with two live memtables of 3 chunks beside it,
// the released one's 3 chunks are freed, not pooled; once only one of 3
// chunks is live, the next release of 3 is pooled whole.
func TestPoolKeepsTwoMemtablesWithLive(t *testing.T) {
	base := ArenaBytes()
	pool := NewPool(8*arenaChunk, -1) // limit 8 chunks: not what binds here
	const rows = 2000                 // 3 chunks
	a := fillPooled(pool, rows, 0)
	b := fillPooled(pool, rows, 1)
	c := fillPooled(pool, rows, 2)
	a.Unref() // b and c (6 chunks) live: two memtables already
	if s := pool.Stats(); s.Pooled != 0 || s.Freed != 3 {
		t.Fatalf("released beside two live memtables: %+v, want 0 pooled, 3 freed", s)
	}
	if want := int64(6 * arenaChunk); ArenaBytes()-base != want {
		t.Fatalf("%d arena bytes, want %d (b and c only)", ArenaBytes()-base, want)
	}
	b.Unref() // c (3 chunks) live: b's 3 complete two memtables
	if s := pool.Stats(); s.Pooled != 3 || s.Freed != 3 {
		t.Fatalf("released beside one live memtable: %+v, want 3 pooled, 3 freed", s)
	}
	d := fillPooled(pool, rows, 3) // takes b's chunks, maps nothing
	checkPooled(t, d, rows, 3)
	if s := pool.Stats(); s.Fresh != 9 || s.Reused != 3 {
		t.Fatalf("d: %+v, want 9 fresh and 3 reused in all", s)
	}
	c.Unref()
	d.Unref()
	if s := pool.Stats(); s.Pooled != 6 {
		t.Fatalf("nothing live: %+v, want 6 pooled (two memtables)", s)
	}
	pool.Close()
	if got := ArenaBytes(); got != base {
		t.Fatalf("Close left %d arena bytes", got-base)
	}
}
