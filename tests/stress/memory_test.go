package stress

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/storage"
)

var (
	flagDuration = flag.Duration("stress.duration", 0, "repeat rounds for this much wall time; 0 runs the bounded pass")
	flagSeed     = flag.Uint64("stress.seed", 1, "seed of the goroutines' random choices (round r uses seed+r)")
)

// epoch is the manual clock's starting time.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	writers       = 4
	readers       = 4
	keysPerWriter = 300
	// operations per writer and maintenance operations per round, and the
	// rounds of the bounded pass.
	boundedWrites = 1200
	boundedMaint  = 40
	boundedRounds = 2
)

// stressKey is key i of writer w.
func stressKey(w, i int) []byte { return fmt.Appendf(nil, "w%d/k%04d", w, i) }

// stressValue returns a value for key k that readers can check on its own:
// k#gen#padding, the padding one letter chosen by gen. One in 400 is above
// the slab size classes and the arena chunk, so it gets a mapping (slab)
// and a chunk (arena) of its own, unmapped at once when freed.
func stressValue(k []byte, gen int, rng *rand.Rand) []byte {
	n := rng.IntN(200)
	if rng.IntN(400) == 0 {
		n = 300 << 10
	}
	v := fmt.Appendf(nil, "%s#%d#", k, gen)
	return append(v, bytes.Repeat([]byte{padByte(gen)}, n)...)
}

func padByte(gen int) byte { return byte('a' + gen%26) }

// valueMatches reports whether v is a value stressValue made for k.
func valueMatches(k, v []byte) bool {
	if !bytes.HasPrefix(v, k) || len(v) <= len(k) || v[len(k)] != '#' {
		return false
	}
	rest := v[len(k)+1:]
	i := bytes.IndexByte(rest, '#')
	if i < 0 {
		return false
	}
	gen, err := strconv.Atoi(string(rest[:i]))
	if err != nil {
		return false
	}
	return len(bytes.Trim(rest[i+1:], string(padByte(gen)))) == 0
}

// failures collects the failures of many goroutines; the first one stops
// the round.
type failures struct {
	mu   sync.Mutex
	msgs []string
	stop atomic.Bool
}

func (f *failures) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.msgs) < 20 {
		f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
	}
	f.stop.Store(true)
}

// events counts the maintenance operations done, for readers that hold a
// key until some flushes and compactions have passed under it.
type events struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
	done bool
}

func newEvents() *events {
	e := &events{}
	e.cond = sync.NewCond(&e.mu)
	return e
}

func (e *events) bump(done bool) {
	e.mu.Lock()
	e.n++
	e.done = e.done || done
	e.mu.Unlock()
	e.cond.Broadcast()
}

// wait returns once k more operations are done, or maintenance ended.
func (e *events) wait(k int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for target := e.n + k; e.n < target && !e.done; {
		e.cond.Wait()
	}
}

// TestHandManagedMemory runs rounds of writers, long-lived iterators and
// maintenance on a database whose memtables (and so arena chunks), blocks,
// block cache and read-ahead are tiny, closes it under the open iterators
// and checks that all the manual memory comes back. See the package doc.
func TestHandManagedMemory(t *testing.T) {
	deadline := time.Time{}
	if *flagDuration > 0 {
		deadline = time.Now().Add(*flagDuration) // test length only; the database runs on a manual clock
	}
	for r := 0; ; r++ {
		seed := *flagSeed + uint64(r)
		if !runRound(t, seed) {
			t.Fatalf("round %d failed; reproduce (timing-dependent) with -race -run TestHandManagedMemory -stress.seed=%d", r, seed)
		}
		if deadline.IsZero() && r+1 >= boundedRounds || !deadline.IsZero() && time.Now().After(deadline) {
			t.Logf("%d rounds", r+1)
			return
		}
	}
}

// runRound runs one round with seed and reports whether it passed.
func runRound(t *testing.T, seed uint64) bool {
	t.Helper()
	m0, n0 := manual.Allocated()
	clk := clock.NewManual(epoch)
	// storage.Mem: tables are read through the same block decoding, cache
	// and read-ahead as on a local directory, without a flush's fsyncs.
	db, err := mayfly.Open("stress", &mayfly.Options{
		Storage:               storage.NewMem(),
		Clock:                 clk,
		MemtableSize:          32 << 10, // many rotations, arena chunks back to the pool each time
		BlockSize:             256,
		BlockCacheSize:        24 << 10, // a few dozen blocks: eviction never stops
		ReadAheadSize:         8 << 10,
		TargetFileSize:        16 << 10,
		LBaseMaxBytes:         64 << 10,
		LevelSizeRatio:        4,
		L0CompactionThreshold: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	// more reports whether a loop that did i operations of its bound goes
	// on. Every round does the same counts, so that a long run closes the
	// database under open iterators once per round.
	more := func(i, bound int, f *failures) bool { return i < bound && !f.stop.Load() }

	var f failures
	ev := newEvents()
	var work, reading sync.WaitGroup
	for w := range writers {
		work.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; more(i, boundedWrites, &f); i++ {
				if err := write(db, rng, w, i); err != nil {
					f.add("writer %d op %d: %v", w, i, err)
				}
			}
		})
	}
	work.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 100))
		for i := 0; more(i, boundedMaint, &f); i++ {
			if err := maintain(db, clk, rng); err != nil {
				f.add("maintenance op %d: %v", i, err)
			}
			ev.bump(false)
		}
		ev.bump(true)
	})
	var iters atomic.Int64
	for r := range readers {
		reading.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(200+r)))
			for !f.stop.Load() {
				closed, err := readRound(db, rng, ev)
				iters.Add(1)
				if err != nil {
					f.add("reader %d: %v", r, err)
				}
				if closed {
					return
				}
			}
		})
	}
	work.Wait()
	m := db.Metrics()
	t.Logf("seed %d: %d flushes, %d compactions, %d stalls (%v), %d slowdowns (%v)", seed, m.Flushes, m.Compactions, m.WriteStalls, m.WriteStallTime, m.WriteSlowdowns, m.WriteSlowdownTime)
	// Close under the readers: their iterators are open and moving.
	if err := db.Close(); err != nil {
		f.add("Close: %v", err)
	}
	reading.Wait()
	if m, n := manual.Allocated(); len(f.msgs) == 0 && (m != m0 || n != n0) {
		f.add("after Close and every iterator's Close manual memory holds %d bytes in %d buffers, want %d in %d", m, n, m0, n0)
	}
	t.Logf("seed %d: %d iterators", seed, iters.Load())
	if len(f.msgs) > 0 {
		t.Errorf("seed %d: %d failures:\n%s", seed, len(f.msgs), strings.Join(f.msgs, "\n"))
		return false
	}
	return true
}

// write does writer w's operation i: a put, a put with a TTL or a delete of
// one of its keys.
func write(db *mayfly.DB, rng *rand.Rand, w, i int) error {
	k := stressKey(w, rng.IntN(keysPerWriter))
	switch r := rng.IntN(10); {
	case r == 0:
		return db.Delete(k)
	case r < 3:
		ttl := time.Duration(1+rng.IntN(5000)) * time.Millisecond
		return db.PutTTL(k, stressValue(k, i, rng), mayfly.ExpireAfter(ttl))
	default:
		return db.Put(k, stressValue(k, i, rng))
	}
}

// maintain does one maintenance operation: a flush, a compaction of all or
// part of the keys, a reclamation of expired rows or a clock advance.
func maintain(db *mayfly.DB, clk *clock.Manual, rng *rand.Rand) error {
	ctx := context.Background()
	switch rng.IntN(6) {
	case 0, 1:
		return db.Flush()
	case 2:
		return db.Compact(ctx, nil, nil)
	case 3:
		w := rng.IntN(writers)
		return db.Compact(ctx, stressKey(w, rng.IntN(keysPerWriter/2)), stressKey(w, keysPerWriter/2+rng.IntN(keysPerWriter/2)))
	case 4:
		return db.ReclaimExpired(ctx)
	default:
		clk.Advance(time.Duration(1+rng.IntN(2000)) * time.Millisecond)
		return nil
	}
}

// readRound opens an iterator (on the database or a snapshot, with random
// bounds) and walks it, checking each row it holds (see hold). It reports
// whether the database was closed.
func readRound(db *mayfly.DB, rng *rand.Rand, ev *events) (closed bool, err error) {
	var o mayfly.IterOptions
	if rng.IntN(3) == 0 {
		w := rng.IntN(writers)
		o.LowerBound = stressKey(w, rng.IntN(keysPerWriter/2))
		o.UpperBound = stressKey(w, keysPerWriter/2+rng.IntN(keysPerWriter/2))
	}
	var it *mayfly.Iterator
	if rng.IntN(3) == 0 {
		snap, err := db.NewSnapshot()
		if err != nil {
			return errors.Is(err, mayfly.ErrClosed), ignoreClosed(err)
		}
		defer snap.Close()
		it, err = snap.NewIter(&o)
		if err != nil {
			return errors.Is(err, mayfly.ErrClosed), ignoreClosed(err)
		}
	} else if it, err = db.NewIter(&o); err != nil {
		return errors.Is(err, mayfly.ErrClosed), ignoreClosed(err)
	}
	closed, err = walk(db, it, rng, ev, &o)
	if cerr := it.Close(); cerr != nil && err == nil {
		closed = closed || errors.Is(cerr, mayfly.ErrClosed)
		err = ignoreClosed(cerr)
	}
	return closed, err
}

func ignoreClosed(err error) error {
	if errors.Is(err, mayfly.ErrClosed) {
		return nil
	}
	return err
}

// walk moves it up to a random number of steps, in one direction with an
// occasional turn, and holds every row it lands on.
func walk(db *mayfly.DB, it *mayfly.Iterator, rng *rand.Rand, ev *events, o *mayfly.IterOptions) (closed bool, err error) {
	forward := rng.IntN(2) == 0
	var ok bool
	switch rng.IntN(4) {
	case 0:
		ok = it.First()
	case 1:
		ok = it.Last()
		forward = false
	case 2:
		ok = it.SeekGE(stressKey(rng.IntN(writers), rng.IntN(keysPerWriter)))
		forward = true
	default:
		ok = it.SeekLT(stressKey(rng.IntN(writers), rng.IntN(keysPerWriter)))
		forward = false
	}
	var prev []byte
	long := rng.IntN(8) == 0 // hold rows across maintenance operations
	for steps := 1 + rng.IntN(150); ; steps-- {
		if !ok || steps == 0 {
			if it.Valid() != ok {
				if ok && errors.Is(it.Error(), mayfly.ErrClosed) {
					return true, nil // the database closed since the move
				}
				return false, fmt.Errorf("move returned %v, Valid %v", ok, it.Valid())
			}
			if !ok && (it.Key() != nil || it.Value() != nil) {
				return false, fmt.Errorf("not at a key, but Key %q, Value %.30q", it.Key(), it.Value())
			}
			err := it.Error()
			return errors.Is(err, mayfly.ErrClosed), ignoreClosed(err)
		}
		k, v := it.Key(), it.Value()
		if k == nil { // the database closed since the move
			if err := it.Error(); !errors.Is(err, mayfly.ErrClosed) || v != nil {
				return false, fmt.Errorf("Key nil after a move that returned true: Value %.30q, Error %v", v, err)
			}
			return true, nil
		}
		if err := checkRow(k, v, prev, forward, o); err != nil {
			return false, err
		}
		if err := hold(db, it, k, v, rng, ev, long); err != nil {
			return false, err
		}
		prev = append(prev[:0], k...)
		if rng.IntN(20) == 0 {
			forward = !forward
			prev = prev[:0]
		}
		if forward {
			ok = it.Next()
		} else {
			ok = it.Prev()
		}
	}
}

// checkRow checks a row the iterator landed on: its value is one written
// for its key, it lies within the bounds and after prev in the direction
// of travel.
func checkRow(k, v, prev []byte, forward bool, o *mayfly.IterOptions) error {
	switch {
	case !valueMatches(k, v):
		return fmt.Errorf("key %q has value %.60q (len %d), not one written for it", k, v, len(v))
	case o.LowerBound != nil && bytes.Compare(k, o.LowerBound) < 0,
		o.UpperBound != nil && bytes.Compare(k, o.UpperBound) >= 0:
		return fmt.Errorf("key %q outside [%q, %q)", k, o.LowerBound, o.UpperBound)
	case len(prev) > 0 && (bytes.Compare(k, prev) > 0) != forward:
		return fmt.Errorf("key %q after %q moving forward=%v", k, prev, forward)
	}
	return nil
}

// hold keeps the slices k and v the iterator returned while others run:
// a few Gets (which evict cache blocks), and for a long hold two
// maintenance operations (flushes, compactions, whose freed memtables and
// tables return arena chunks and blocks), then checks the slices still
// hold the bytes copied from them, and that the iterator still returns them.
func hold(db *mayfly.DB, it *mayfly.Iterator, k, v []byte, rng *rand.Rand, ev *events, long bool) error {
	kc, vc := bytes.Clone(k), bytes.Clone(v)
	for range 3 {
		k := stressKey(rng.IntN(writers), rng.IntN(keysPerWriter))
		if got, err := db.Get(k); err == nil && !valueMatches(k, got) {
			return fmt.Errorf("Get(%q) = %.60q, not a value written for it", k, got)
		}
	}
	if long {
		ev.wait(2)
	} else {
		runtime.Gosched()
	}
	if !bytes.Equal(k, kc) || !bytes.Equal(v, vc) {
		return fmt.Errorf("held row changed: key %q -> %q, value %.30q -> %.30q", kc, k, vc, v)
	}
	// After a DB.Close in between, Key and Value are nil; Close runs under
	// the readers, so it may land between the two calls, leaving one nil.
	// Closing is final: a nil from either with the iterator still valid is
	// a fault.
	gk, gv := it.Key(), it.Value()
	if gk == nil || gv == nil {
		if it.Valid() {
			return fmt.Errorf("valid iterator at %q returned key %q, value %.30q", kc, gk, gv)
		}
	} else if !bytes.Equal(gk, kc) || !bytes.Equal(gv, vc) {
		return fmt.Errorf("iterator moved without a move: key %q -> %q, value %.30q -> %.30q", kc, gk, vc, gv)
	}
	return nil
}
