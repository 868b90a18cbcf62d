package mayfly

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

// iterKey and iterVal name row i of the iterator tests.
func iterKey(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }

func iterVal(i int) []byte { return fmt.Appendf(nil, "v%04d-%s", i, strings.Repeat("x", 100)) }

// openIterDB opens an in-memory database with small blocks and puts rows
// 0..n-1 into one flushed table, so that a scan crosses many blocks.
func openIterDB(t *testing.T, n int, mutate func(*Options)) *DB {
	t.Helper()
	db := openTestDB(t, "iterdb", clock.NewManual(epoch), func(o *Options) {
		o.Storage = storage.NewMem()
		o.BlockSize = 512
		o.DisableAutoCompaction = true
		if mutate != nil {
			mutate(o)
		}
	})
	for i := range n {
		if err := db.Put(iterKey(i), iterVal(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	return db
}

// checkNoKey fails unless it is at no key: Valid false, Key and Value nil.
func checkNoKey(t *testing.T, it *Iterator, when string) {
	t.Helper()
	if it.Valid() || it.Key() != nil || it.Value() != nil {
		t.Fatalf("%s: Valid %v, Key %q, Value %.20q; want false, nil, nil", when, it.Valid(), it.Key(), it.Value())
	}
}

// TestIteratorNoKeyWhenNotValid: Key and Value are nil whenever the
// iterator is not at a key. The keys past the last live one are deleted, so
// a move that runs off the end passes over them and over the blocks that
// held the last value: before the fix Key returned the deleted key skipped
// last and Value the released previous value.
func TestIteratorNoKeyWhenNotValid(t *testing.T) {
	const n = 200
	db := openIterDB(t, n, nil)
	defer db.Close()
	for _, i := range []int{0, 1, 2, n - 3, n - 2, n - 1} {
		if err := db.Delete(iterKey(i)); err != nil {
			t.Fatal(err)
		}
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	checkNoKey(t, it, "before the first positioning")
	if it.Next() || it.Prev() {
		t.Fatal("Next or Prev on an unpositioned iterator moved")
	}
	checkNoKey(t, it, "after Next and Prev on an unpositioned iterator")

	if !it.SeekGE(iterKey(n-5)) || !bytes.Equal(it.Key(), iterKey(n-5)) {
		t.Fatalf("SeekGE(%q) at %q", iterKey(n-5), it.Key())
	}
	for it.Next() {
	}
	checkNoKey(t, it, "after Next ran off the end")
	if it.Next() {
		t.Fatal("Next after the end moved")
	}
	checkNoKey(t, it, "after a second Next past the end")

	if !it.SeekLT(iterKey(5)) || !bytes.Equal(it.Key(), iterKey(4)) {
		t.Fatalf("SeekLT(%q) at %q", iterKey(5), it.Key())
	}
	for it.Prev() {
	}
	checkNoKey(t, it, "after Prev ran off the front")

	if it.SeekGE(iterKey(n - 2)) {
		t.Fatalf("SeekGE past the last live key found %q", it.Key())
	}
	checkNoKey(t, it, "after SeekGE found nothing")
	if it.SeekLT(iterKey(2)) {
		t.Fatalf("SeekLT before the first live key found %q", it.Key())
	}
	checkNoKey(t, it, "after SeekLT found nothing")

	if !it.First() || !bytes.Equal(it.Key(), iterKey(3)) || !bytes.Equal(it.Value(), iterVal(3)) {
		t.Fatalf("First at %q = %.20q", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoKey(t, it, "after Close")
}

// TestIteratorSeekToOwnValue seeks to a key held in the value the iterator
// returned, which aliases a block. With a cache too small to keep any
// block, the block is the iterator's alone and the seek releases it; a seek
// that went on reading the key from it would see poisoned bytes under
// -race (internal/slab) and miss the key.
func TestIteratorSeekToOwnValue(t *testing.T) {
	db := openTestDB(t, "seekdb", clock.NewManual(epoch), func(o *Options) {
		o.Storage = storage.NewMem()
		o.BlockSize = 256
		o.BlockCacheSize = 1 // smaller than any block: nothing stays cached
		o.DisableAutoCompaction = true
	})
	defer db.Close()
	// Two level-0 tables: keys k*, then pointers p* whose values name them.
	// The merge seeks the newer table first, so a seek to a pointer's value
	// moves the pointers' table off the block the key lies in before the
	// keys' table reads it.
	for i := range 50 {
		if err := db.Put(iterKey(i), iterVal(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := db.Put(fmt.Appendf(nil, "p%04d", i), iterKey(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for i := range 50 {
		if !it.SeekGE(fmt.Appendf(nil, "p%04d", i)) {
			t.Fatalf("SeekGE(p%04d) found nothing: %v", i, it.Error())
		}
		if !it.SeekGE(it.Value()) || !bytes.Equal(it.Key(), iterKey(i)) {
			t.Fatalf("SeekGE to the value of p%04d at %q, want %q", i, it.Key(), iterKey(i))
		}
		if !it.SeekGE(fmt.Appendf(nil, "p%04d", i)) {
			t.Fatalf("SeekGE(p%04d) found nothing: %v", i, it.Error())
		}
		if ok := it.SeekLT(it.Value()); ok != (i > 0) || (ok && !bytes.Equal(it.Key(), iterKey(i-1))) {
			t.Fatalf("SeekLT to the value of p%04d = %v at %q, want %q", i, ok, it.Key(), iterKey(i-1))
		}
	}
}

// TestIteratorAfterDBClose: an iterator left open across DB.Close stops at
// once: no key, every move false, Error and Close wrapping ErrClosed, and
// its Close still releases the memtable and blocks it pinned.
func TestIteratorAfterDBClose(t *testing.T) {
	base := arenaBytes()
	db := openIterDB(t, 300, nil)
	for i := 300; i < 400; i++ { // unflushed rows: the iterator pins a memtable
		if err := db.Put(iterKey(i), iterVal(i)); err != nil {
			t.Fatal(err)
		}
	}
	cache := db.cache
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.SeekGE(iterKey(100)) || !it.Next() || !bytes.Equal(it.Key(), iterKey(101)) {
		t.Fatalf("before Close: at %q, %v", it.Key(), it.Error())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoKey(t, it, "after DB.Close")
	if err := it.Error(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Error after DB.Close = %v, want ErrClosed", err)
	}
	moves := map[string]func() bool{
		"Next": it.Next, "Prev": it.Prev, "First": it.First, "Last": it.Last,
		"SeekGE": func() bool { return it.SeekGE(iterKey(5)) },
		"SeekLT": func() bool { return it.SeekLT(iterKey(350)) },
	}
	for name, move := range moves {
		if move() {
			t.Fatalf("%s after DB.Close moved to %q", name, it.Key())
		}
		checkNoKey(t, it, name+" after DB.Close")
		if err := it.Error(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Error after %s = %v, want ErrClosed", name, err)
		}
	}
	if arenaBytes() == base {
		t.Fatal("DB.Close freed the memtable the open iterator pinned")
	}
	if err := it.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close of the iterator after DB.Close = %v, want ErrClosed", err)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("after the iterator's Close %d arena bytes remain", got-base)
	}
	if s := cache.AllocStats(); !s.Empty() {
		t.Fatalf("after the iterator's Close the block cache still holds %+v", s)
	}
	if err := it.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
}

// crashChildEnv makes the test binary run the child half of
// TestIteratorValueAfterDBCloseNoCrash.
const crashChildEnv = "MAYFLY_ITER_AFTER_CLOSE_CHILD"

// TestIteratorValueAfterDBCloseNoCrash reads Value after a move that
// returned false, once the DB is closed. The last value returned lies in a
// block above the slab size classes, which has a mapping of its own, and
// the move passed it for a deleted key in the next block: the block cache
// held the only other reference, so DB.Close unmapped it. Before the fix
// Value still returned it and reading it was a SIGSEGV no recover catches,
// so the reads run in a child process whose exit status is checked.
func TestIteratorValueAfterDBCloseNoCrash(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		iterAfterCloseChild(t, dir)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestIteratorValueAfterDBCloseNoCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("child done")) {
		t.Fatalf("child did not run its checks:\n%s", out)
	}
}

func iterAfterCloseChild(t *testing.T, dir string) {
	db := openTestDB(t, dir, clock.NewManual(epoch), func(o *Options) {
		o.DisableAutoCompaction = true
		o.BlockCacheSize = 64 << 20
	})
	big := bytes.Repeat([]byte{'v'}, 300<<10)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.Put([]byte("a"), big))
	must(db.Put([]byte("b"), []byte("small")))
	must(db.Flush())
	must(db.Delete([]byte("b")))
	it, err := db.NewIter(nil)
	must(err)
	if !it.First() || !bytes.Equal(it.Key(), []byte("a")) || len(it.Value()) != len(big) {
		t.Fatalf("First at %q (%d bytes), %v", it.Key(), len(it.Value()), it.Error())
	}
	if it.Next() {
		t.Fatalf("Next found %q", it.Key())
	}
	must(db.Close())
	k, v := it.Key(), it.Value()
	sum := 0
	for _, c := range v {
		sum += int(c)
	}
	if k != nil || v != nil {
		t.Fatalf("after Next returned false and DB.Close: Key %q, Value of %d bytes (sum %d); want nil", k, len(v), sum)
	}
	if it.First() || !errors.Is(it.Error(), ErrClosed) {
		t.Fatalf("First after DB.Close = true or error %v", it.Error())
	}
	if err := it.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("iterator Close after DB.Close = %v", err)
	}
	fmt.Println("child done")
}

// TestIterBounds: empty bounds are open like nil ones, equal bounds are
// an empty range, inverted bounds are refused. Before the fix an empty
// upper bound made every scan empty and inverted bounds scanned nothing
// without an error.
func TestIterBounds(t *testing.T) {
	const n = 20
	db := openIterDB(t, n, nil)
	defer db.Close()
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	keys := func(t *testing.T, newIter func(*IterOptions) (*Iterator, error), o *IterOptions) (got []string) {
		t.Helper()
		it, err := newIter(o)
		if err != nil {
			t.Fatal(err)
		}
		for k := range it.All() {
			got = append(got, string(k))
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	span := func(lo, hi int) (want []string) {
		for i := lo; i < hi; i++ {
			want = append(want, string(iterKey(i)))
		}
		return want
	}
	cases := []struct {
		name         string
		lower, upper []byte
		want         []string
	}{
		{"nil", nil, nil, span(0, n)},
		{"empty upper", nil, []byte{}, span(0, n)},
		{"empty lower", []byte{}, nil, span(0, n)},
		{"both empty", []byte(""), []byte(""), span(0, n)},
		{"lower and empty upper", iterKey(15), []byte{}, span(15, n)},
		{"empty lower and upper", []byte{}, iterKey(4), span(0, 4)},
		{"equal", iterKey(7), iterKey(7), nil},
		{"range", iterKey(3), iterKey(9), span(3, 9)},
	}
	for _, src := range []struct {
		name    string
		newIter func(*IterOptions) (*Iterator, error)
	}{{"db", db.NewIter}, {"snapshot", snap.NewIter}} {
		for _, c := range cases {
			t.Run(src.name+"/"+c.name, func(t *testing.T) {
				o := &IterOptions{LowerBound: c.lower, UpperBound: c.upper}
				if got := keys(t, src.newIter, o); strings.Join(got, ",") != strings.Join(c.want, ",") {
					t.Fatalf("got %q, want %q", got, c.want)
				}
				// Last and SeekLT honour the same bounds backwards.
				it, err := src.newIter(o)
				if err != nil {
					t.Fatal(err)
				}
				defer it.Close()
				if ok := it.Last(); ok != (len(c.want) > 0) || (ok && string(it.Key()) != c.want[len(c.want)-1]) {
					t.Fatalf("Last = %v at %q, want the last of %q", ok, it.Key(), c.want)
				}
			})
		}
		t.Run(src.name+"/inverted", func(t *testing.T) {
			it, err := src.newIter(&IterOptions{LowerBound: iterKey(9), UpperBound: iterKey(3)})
			if !errors.Is(err, ErrInvalidOptions) || it != nil {
				t.Fatalf("inverted bounds: %v, %v; want ErrInvalidOptions", it, err)
			}
		})
	}
	var scanErr error
	for k := range db.Scan(iterKey(9), iterKey(3), &scanErr) {
		t.Fatalf("Scan with inverted bounds returned %q", k)
	}
	if !errors.Is(scanErr, ErrInvalidOptions) {
		t.Fatalf("Scan with inverted bounds: error %v, want ErrInvalidOptions", scanErr)
	}
	scanErr = nil
	var got []string
	for k := range db.Scan(nil, []byte{}, &scanErr) {
		got = append(got, string(k))
	}
	if scanErr != nil || len(got) != n {
		t.Fatalf("Scan(nil, empty) = %d keys, %v; want %d", len(got), scanErr, n)
	}
}

// TestIteratorRowsReadMetric checks that an iterator's rows reach the
// RowsRead metric: in batches while it is open (never more than it
// returned, never more than a batch behind) and all of them by Close.
func TestIteratorRowsReadMetric(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(time.UnixMilli(1_000_000)), nil)
	defer db.Close()
	const n = 3*rowsReadBatch + 17
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	before := db.Metrics().RowsRead
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := uint64(0)
	for ok := it.First(); ok; ok = it.Next() {
		seen++
		got := db.Metrics().RowsRead - before
		if got > seen || seen-got >= rowsReadBatch {
			t.Fatalf("after %d rows the metric counts %d", seen, got)
		}
	}
	// Moving backwards counts too.
	for ok := it.Last(); ok; ok = it.Prev() {
		seen++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if seen != 2*n {
		t.Fatalf("iterated %d rows, want %d", seen, 2*n)
	}
	if got := db.Metrics().RowsRead - before; got != seen {
		t.Fatalf("after Close the metric counts %d rows, want %d", got, seen)
	}
}

// BenchmarkScan measures a full forward scan of 100k flushed rows; one op is
// one whole scan, SetBytes counts every key and value it returns, and ns/key
// is the per-row cost.
func BenchmarkScan(b *testing.B) {
	db := openBenchDB(b, nil)
	loadBench(b, db, benchPreload)
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchPreload * benchRowBytes)
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		var err error
		n := 0
		for k, v := range db.Scan(nil, nil, &err) {
			if len(k) != benchKeySize || len(v) != benchValueSize {
				b.Fatalf("row %d: %d-byte key, %d-byte value", n, len(k), len(v))
			}
			n++
		}
		if err != nil {
			b.Fatal(err)
		}
		if n != benchPreload {
			b.Fatalf("scanned %d rows, want %d", n, benchPreload)
		}
	}
	cpu.report(b)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPreload, "ns/key")
}

// openMultiLevelDB loads benchPreload rows into a database with small
// memtables, tables and level targets, then waits for compaction, so that
// the rows spread over many tables in several levels (the shape of a real
// database, scaled down). It reports the number of tables as a metric.
func openMultiLevelDB(b *testing.B) *DB {
	b.Helper()
	db := openBenchDB(b, func(o *Options) {
		o.MemtableSize = 1 << 20
		o.TargetFileSize = 128 << 10
		o.LBaseMaxBytes = 256 << 10
		o.LevelSizeRatio = 4
	})
	loadBench(b, db, benchPreload)
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.WaitForCompactions(context.Background()); err != nil {
		b.Fatal(err)
	}
	return db
}

// reportShape adds the number of tables and of non-empty levels as metrics.
func reportShape(b *testing.B, db *DB) {
	files, levels := 0, 0
	var perLevel []int
	for _, l := range db.Metrics().Levels {
		perLevel = append(perLevel, l.Files)
		files += l.Files
		if l.Files > 0 {
			levels++
		}
	}
	b.ReportMetric(float64(files), "tables")
	b.ReportMetric(float64(levels), "levels")
	b.Logf("files per level: %v", perLevel)
}

// BenchmarkScanMultiLevel is BenchmarkScan over a database whose rows are
// spread over many tables in several levels: one op is one whole scan.
func BenchmarkScanMultiLevel(b *testing.B) {
	db := openMultiLevelDB(b)
	// One untimed scan fills the block cache, so that the first (and with
	// small b.N dominant) iteration does not time decompression.
	for range db.Scan(nil, nil, nil) {
	}
	b.SetBytes(benchPreload * benchRowBytes)
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		var err error
		n := 0
		for range db.Scan(nil, nil, &err) {
			n++
		}
		if err != nil {
			b.Fatal(err)
		}
		if n != benchPreload {
			b.Fatalf("scanned %d rows, want %d", n, benchPreload)
		}
	}
	cpu.report(b)
	reportShape(b, db)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPreload, "ns/key")
}

// BenchmarkSeekGEMultiLevel measures one SeekGE to a random existing key
// (and reading the row it lands on) through a reused iterator, over the
// database of BenchmarkScanMultiLevel. "bounded" gives the iterator an
// upper bound just past a short key range, as a prefix scan would.
func BenchmarkSeekGEMultiLevel(b *testing.B) {
	db := openMultiLevelDB(b)
	seek := func(b *testing.B, opts *IterOptions) {
		it, err := db.NewIter(opts)
		if err != nil {
			b.Fatal(err)
		}
		defer it.Close()
		r := rand.New(rand.NewPCG(20, 21))
		k := make([]byte, benchKeySize)
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			benchKey(k, r.Uint64N(benchPreload))
			if !it.SeekGE(k) {
				b.Fatalf("SeekGE(%x) found nothing: %v", k, it.Error())
			}
			if len(it.Value()) != benchValueSize {
				b.Fatalf("value of %d bytes", len(it.Value()))
			}
		}
		b.StopTimer()
		cpu.report(b)
		reportShape(b, db)
	}
	b.Run("unbounded", func(b *testing.B) { seek(b, nil) })
	// prefix opens a bounded iterator per op over the 8-byte prefix of a
	// random existing key, as a prefix lookup would, and reads its first row.
	b.Run("prefix", func(b *testing.B) {
		r := rand.New(rand.NewPCG(22, 23))
		k := make([]byte, benchKeySize)
		upper := make([]byte, 8)
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			benchKey(k, r.Uint64N(benchPreload))
			binary.BigEndian.PutUint64(upper, binary.BigEndian.Uint64(k)+1)
			it, err := db.NewIter(&IterOptions{LowerBound: k[:8], UpperBound: upper})
			if err != nil {
				b.Fatal(err)
			}
			if !it.First() || len(it.Value()) != benchValueSize {
				b.Fatalf("prefix %x: no row (%v)", k[:8], it.Error())
			}
			if err := it.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cpu.report(b)
		reportShape(b, db)
	})
}

// TestDeadlineRowsReadAlike: with deadline rows over values in every
// layer (memtable, level 0, lower levels, across snapshots), Get, TTL, a
// forward and a backward iterator all see what a model of the key's value
// and deadline says, at every step of random writes, deadline changes,
// flushes, compactions and clock moves. Deadline rows are written only over
// live keys, as the public operations do.
func TestDeadlineRowsReadAlike(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 19))
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.DisableAutoCompaction = true })
	defer db.Close()
	type state struct {
		val      string
		live     bool
		expires  bool
		deadline int64
	}
	const nkeys = 12
	model := map[string]*state{}
	key := func(i int) string { return fmt.Sprintf("k%02d", i) }
	liveAt := func(s *state, now int64) bool { return s != nil && s.live && !(s.expires && s.deadline < now) }
	randTTL := func() (TTL, bool, int64) {
		switch rng.IntN(3) {
		case 0:
			return NoExpiry(), false, 0
		default:
			d := time.Duration(1+rng.IntN(40)) * time.Second
			return ExpireAfter(d), true, clk.NowMillis() + d.Milliseconds()
		}
	}
	ctx := context.Background()
	var snaps []*Snapshot
	for step := range 600 {
		k := key(rng.IntN(nkeys))
		now := clk.NowMillis()
		switch op := rng.IntN(20); {
		case op < 6:
			ttl, exp, dl := randTTL()
			v := fmt.Sprintf("v%d", step)
			if err := db.PutTTL([]byte(k), []byte(v), ttl); err != nil {
				t.Fatal(err)
			}
			model[k] = &state{val: v, live: true, expires: exp, deadline: dl}
		case op < 7:
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			model[k] = &state{}
		case op < 13:
			if s := model[k]; liveAt(s, now) {
				ttl, exp, dl := randTTL()
				writeDeadline(t, db, k, ttl)
				s.expires, s.deadline = exp, dl
			}
		case op < 15:
			clk.Advance(time.Duration(rng.IntN(8000)) * time.Millisecond)
		case op < 16:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case op < 17:
			lo, hi := key(rng.IntN(nkeys)), key(rng.IntN(nkeys))
			if lo > hi {
				lo, hi = hi, lo
			}
			if err := db.CompactWith(ctx, []byte(lo), []byte(hi), &CompactOptions{OutputLevel: 1 + rng.IntN(6)}); err != nil {
				t.Fatal(err)
			}
		case op < 18:
			if err := db.ReclaimExpired(ctx); err != nil {
				t.Fatal(err)
			}
		case op < 19:
			sn, err := db.NewSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, sn)
		default:
			if len(snaps) > 0 {
				snaps[0].Close()
				snaps = snaps[1:]
			}
		}
		checkDeadlineModel(t, db, clk.NowMillis(), nkeys, key, func(k string) (string, bool, bool, int64) {
			s := model[k]
			if !liveAt(s, clk.NowMillis()) {
				return "", false, false, 0
			}
			return s.val, true, s.expires, s.deadline
		})
		if t.Failed() {
			t.Fatalf("step %d (seed %d)", step, seed)
		}
	}
	for _, s := range snaps {
		s.Close()
	}
}

// checkDeadlineModel compares Get, TTL and both iterator directions with
// want for every key.
func checkDeadlineModel(t *testing.T, db *DB, now int64, nkeys int, key func(int) string,
	want func(string) (val string, live, expires bool, deadline int64)) {
	t.Helper()
	var fwd, bwd []string
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	entry := func() string {
		e := string(it.Key()) + "=" + string(it.Value())
		if at, ok := it.ExpireTime(); ok {
			e += fmt.Sprintf("@%d", at.UnixMilli())
		}
		return e
	}
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, entry())
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		bwd = append([]string{entry()}, bwd...)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	var model []string
	for i := range nkeys {
		k := key(i)
		val, live, expires, deadline := want(k)
		got, err := db.Get([]byte(k))
		switch {
		case !live && !errors.Is(err, ErrNotFound):
			t.Errorf("Get(%s) = %q, %v; want not found", k, got, err)
		case live && (err != nil || string(got) != val):
			t.Errorf("Get(%s) = %q, %v; want %q", k, got, err, val)
		}
		if !live {
			continue
		}
		e := k + "=" + val
		if expires {
			e += fmt.Sprintf("@%d", deadline)
		}
		model = append(model, e)
		left, exp, err := db.TTL([]byte(k))
		if err != nil || exp != expires || expires && left != time.Duration(deadline-now)*time.Millisecond {
			t.Errorf("TTL(%s) = %v, %v, %v; want expires %v, deadline in %dms", k, left, exp, err, expires, deadline-now)
		}
	}
	if fmt.Sprint(fwd) != fmt.Sprint(model) || fmt.Sprint(bwd) != fmt.Sprint(model) {
		t.Errorf("scans disagree with the model\nforward  %v\nbackward %v\nmodel    %v", fwd, bwd, model)
	}
}
