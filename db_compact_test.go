package mayfly

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
)

// diskContains reports which files under dir hold needle.
func diskContains(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, needle) {
			rel, _ := filepath.Rel(dir, path)
			hits = append(hits, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func smallTreeOptions(clk *clock.Manual) func(*Options) {
	return func(o *Options) {
		o.Clock = clk
		o.Compression = sstable.NoCompression
		o.MemtableSize = 64 << 10
		o.TargetFileSize = 32 << 10
		o.LBaseMaxBytes = 128 << 10
		o.PeriodicCompactionInterval = 10 * time.Minute
	}
}

// TestReclamationBound checks RFC 0004's promise: with no writes after t, every
// byte of a row that expired at t is gone from the SSTables and the WAL by
// t + PeriodicCompactionInterval (compactions take no engine time here).
func TestReclamationBound(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	o := smallTreeOptions(clk)
	db := openTestDB(t, dir, clk, func(opt *Options) {
		o(opt)
		// Only periodic compaction may reclaim: no expiry-ratio rewrites.
		opt.ExpiredBytesRatio = 1
	})
	defer db.Close()
	for i := 0; i < 3000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("keep%05d", i)), []byte(fmt.Sprintf("KEEPVALUE%05d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// Older versions, later shadowed by expiring ones: they must not come
	// back, and must leave the disk with them.
	for i := 0; i < 3000; i += 3 {
		if err := db.Put([]byte(fmt.Sprintf("gone%05d", i)), []byte(fmt.Sprintf("OLDVALUE%05d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	for i := 0; i < 3000; i++ {
		// Mixed keys so expiring rows share tables with live ones.
		if err := db.PutTTL([]byte(fmt.Sprintf("gone%05d", i)), []byte(fmt.Sprintf("GONEVALUE%05d", i)), ExpireAfter(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := db.Put([]byte(fmt.Sprintf("keep%05d", i)), []byte(fmt.Sprintf("KEEPVALUE%05d", i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	expireAt := clk.Now().Add(time.Minute) // t
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	if len(diskContains(t, filepath.Join(dir, "sst"), []byte("GONEVALUE"))) == 0 {
		t.Fatal("test setup: expiring rows are not on disk before they expire")
	}

	// Just after t: expired, but not yet due.
	clk.Set(expireAt.Add(time.Millisecond))
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "gone00000", "")
	mustGet(t, db, "gone00003", "") // no resurrection of OLDVALUE
	// At t + interval: every byte of the expired rows must be gone.
	clk.Set(expireAt.Add(10 * time.Minute))
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	for _, needle := range []string{"GONEVALUE", "OLDVALUE", "gone0"} {
		if hits := diskContains(t, filepath.Join(dir, "sst"), []byte(needle)); len(hits) > 0 {
			t.Errorf("%q still on disk at t+interval in %v", needle, hits)
		}
		if hits := diskContains(t, filepath.Join(dir, "wal"), []byte(needle)); len(hits) > 0 {
			t.Errorf("%q still in the WAL at t+interval in %v", needle, hits)
		}
	}
	for i := 0; i < 3000; i += 7 {
		mustGet(t, db, fmt.Sprintf("keep%05d", i), fmt.Sprintf("KEEPVALUE%05d", i))
	}
	m := db.Metrics()
	if m.CompactionsByKind["periodic"] == 0 && m.WholeFileDrops == 0 {
		t.Errorf("no periodic compaction or whole-file drop ran: %+v", m.CompactionsByKind)
	}
	var rows uint64
	for _, l := range m.Levels {
		rows += l.Rows
	}
	if rows != 3000 {
		t.Errorf("rows on disk = %d, want exactly the 3000 live keys", rows)
	}
}

// TestNoResurrectionShapes puts an older version of a key at the bottom and a
// newer, expiring version at various heights, then lets it expire and
// compacts in different ways: the older value must never be read again.
func TestNoResurrectionShapes(t *testing.T) {
	ctx := context.Background()
	shapes := []struct {
		name string
		// after writing the newer version
		place func(db *DB) error
		// after expiry
		reclaim  func(db *DB) error
		snapshot bool
	}{
		{"newer in memtable, full compact", func(db *DB) error { return nil }, func(db *DB) error { return db.Compact(ctx, nil, nil) }, false},
		{"newer in L0, background", func(db *DB) error { return db.Flush() }, func(db *DB) error { return db.WaitForCompactions(ctx) }, false},
		{"newer in L0, reclaim", func(db *DB) error { return db.Flush() }, func(db *DB) error { return db.ReclaimExpired(ctx) }, false},
		{"newer at bottom too, compact twice", func(db *DB) error { return db.Compact(ctx, nil, nil) }, func(db *DB) error {
			if err := db.Compact(ctx, []byte("k"), []byte("k")); err != nil {
				return err
			}
			return db.Compact(ctx, nil, nil)
		}, false},
		{"snapshot held across compaction", func(db *DB) error { return db.Flush() }, func(db *DB) error { return db.Compact(ctx, nil, nil) }, true},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			clk := clock.NewManual(epoch)
			dir := t.TempDir()
			db := openTestDB(t, dir, clk, smallTreeOptions(clk))
			defer func() { db.Close() }()
			// Filler so that compactions above the bottom happen.
			for i := 0; i < 2000; i++ {
				db.Put([]byte(fmt.Sprintf("f%05d", i)), bytes.Repeat([]byte("x"), 40))
			}
			db.Put([]byte("k"), []byte("old"))
			if err := db.Compact(ctx, nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := db.PutTTL([]byte("k"), []byte("new"), ExpireAfter(time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := sh.place(db); err != nil {
				t.Fatal(err)
			}
			var snap *Snapshot
			if sh.snapshot {
				snap, _ = db.NewSnapshot()
			}
			clk.Advance(time.Second + time.Millisecond)
			mustGet(t, db, "k", "")
			if err := sh.reclaim(db); err != nil {
				t.Fatal(err)
			}
			mustGet(t, db, "k", "")
			if snap != nil {
				mustGet(t, snap, "k", "new") // the snapshot's time is before expiry
				snap.Close()
				if err := db.Compact(ctx, nil, nil); err != nil {
					t.Fatal(err)
				}
				mustGet(t, db, "k", "")
			}
			db.Close()
			db = openTestDB(t, dir, clk, smallTreeOptions(clk))
			mustGet(t, db, "k", "")
			if hits := diskContains(t, filepath.Join(dir, "sst"), []byte("old")); len(hits) > 0 && !sh.snapshot {
				t.Logf("note: older version still on disk in %v (not yet at the bottom)", hits)
			}
		})
	}
}

// upperCaseFilter rewrites values of keys starting with "u" and removes keys
// starting with "r".
type upperCaseFilter struct{}

func (upperCaseFilter) Name() string { return "upper" }

func (upperCaseFilter) Filter(ctx FilterContext, row FilterRow) (FilterDecision, []byte) {
	switch row.Key[0] {
	case 'u':
		return FilterChangeValue, bytes.ToUpper(row.Value)
	case 'r':
		return FilterRemove, nil
	}
	return FilterKeep, nil
}

func TestCompactionFilter(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) {
		o.CompactionFilters = []CompactionFilter{upperCaseFilter{}}
	})
	defer db.Close()
	db.Put([]byte("r1"), []byte("old"))
	db.Compact(ctx, nil, nil)
	db.Put([]byte("u1"), []byte("hello"))
	db.Put([]byte("r1"), []byte("newer")) // removed by the filter: must not uncover "old"
	db.Put([]byte("k1"), []byte("kept"))
	snap, _ := db.NewSnapshot()
	db.Put([]byte("u2"), []byte("after snapshot"))
	if err := db.Compact(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Rows the snapshot can read are not filtered.
	mustGet(t, snap, "u1", "hello")
	mustGet(t, snap, "r1", "newer")
	mustGet(t, db, "u2", "AFTER SNAPSHOT")
	mustGet(t, db, "k1", "kept")
	snap.Close()
	if err := db.Compact(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "u1", "HELLO")
	mustGet(t, db, "r1", "")
	mustGet(t, db, "k1", "kept")
	m := db.Metrics()
	if m.FilterChanged < 2 || m.FilterRemoved < 1 {
		t.Fatalf("filter metrics: changed %d removed %d", m.FilterChanged, m.FilterRemoved)
	}
}

func TestWholeFileDropAndLevels(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, smallTreeOptions(clk))
	defer db.Close()
	// Enough data to build several levels.
	for i := 0; i < 30000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("live%06d", i)), bytes.Repeat([]byte("v"), 50)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	populated := 0
	for l := 1; l < len(m.Levels); l++ {
		if m.Levels[l].Files > 0 {
			populated++
		}
	}
	if populated < 2 {
		t.Fatalf("expected a multi-level tree, got %+v", m.Levels)
	}
	for l := 1; l < bottomLevel; l++ {
		if m.Levels[l].Score >= 1.5 {
			t.Errorf("level %d left with score %.2f after compactions settled", l, m.Levels[l].Score)
		}
	}
	// Keys that sort after everything and all expire: whole-file drops.
	for i := 0; i < 5000; i++ {
		db.PutTTL([]byte(fmt.Sprintf("zz%06d", i)), bytes.Repeat([]byte("t"), 50), ExpireAfter(time.Minute))
	}
	if err := db.Compact(ctx, []byte("zz"), nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute + time.Millisecond)
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	m = db.Metrics()
	if m.WholeFileDrops == 0 {
		t.Fatalf("no whole-file drop: %+v", m)
	}
	_, err := db.Get([]byte("zz000001"))
	if !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	mustGet(t, db, "live000001", string(bytes.Repeat([]byte("v"), 50)))
}

// TestShortLivedL0KeepsDrops: a stream of 5 s TTL rows whose memtables
// rotate every 1.25 s (MemtableExpiryFraction 0.25) keeps four to five
// level-0 tables alive. Counted as ordinary files they would reach the
// level-0 trigger (4) and be merged into the base level before they expire;
// as short-lived tables they wait for their whole-file drops, and level 0
// stays below ShortLivedL0Limit.
func TestShortLivedL0KeepsDrops(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.MemtableExpiryFraction = 0.25 })
	defer db.Close()
	maxL0 := 0
	churnSteps(t, db, clk, 300, 20, 5*time.Second, func(int) { // 30 s of clock
		maxL0 = max(maxL0, db.Metrics().Levels[0].Files)
	})
	m := db.Metrics()
	if c := m.CompactionsByKind["l0"]; c != 0 {
		t.Errorf("%d level-0 compactions merged short-lived tables (max %d level-0 files)", c, maxL0)
	}
	// 30 s at one table per 1.25 s, the first dropped after ~6 s.
	if m.WholeFileDrops < 15 {
		t.Errorf("%d whole-file drops, want at least 15", m.WholeFileDrops)
	}
	if maxL0 < 4 || maxL0 >= 6 {
		t.Errorf("level 0 held up to %d files, want 4 or 5", maxL0)
	}
	t.Logf("flushes %d, drops %d, compactions %v, max level-0 files %d", m.Flushes, m.WholeFileDrops, m.CompactionsByKind, maxL0)
}

// TestL0TrivialMoveSequential: sequential ingest through small memtables
// leaves level-0 tables that overlap nothing, and they go down by trivial
// moves, not rewrites; random overwrites afterwards make overlapping
// level-0 tables that are compacted as before. Every key reads its newest
// value throughout, also after a reopen (the moves are in the manifest).
func TestL0TrivialMoveSequential(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, smallTreeOptions(clk))
	const n = 12000
	want := make(map[int]string, n)
	put := func(i int, v string) {
		t.Helper()
		if err := db.Put([]byte(fmt.Sprintf("seq%06d", i)), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[i] = v
	}
	for i := range n {
		put(i, fmt.Sprintf("v1-%d-%s", i, bytes.Repeat([]byte("x"), 40)))
	}
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.TrivialMoves == 0 || m.CompactionsByKind["l0"] != 0 {
		t.Fatalf("sequential ingest: %d trivial moves, %d L0 compactions; want moves only (kinds %v)",
			m.TrivialMoves, m.CompactionsByKind["l0"], m.CompactionsByKind)
	}
	if m.Flushes < 8 {
		t.Fatalf("only %d flushes: the test does not exercise level 0", m.Flushes)
	}
	check := func(db *DB) {
		t.Helper()
		for i := 0; i < n; i += 97 {
			mustGet(t, db, fmt.Sprintf("seq%06d", i), want[i])
		}
	}
	check(db)
	// Overwrites spread over the whole key space: each flush overlaps the
	// others and the moved tables, so level 0 is compacted by rewriting
	// once it holds more than a fifth of the base level's bytes
	// (compaction.L0BottomRatio): every key is overwritten once.
	for r := range 7 {
		for i := r; i < n; i += 7 {
			put(i, fmt.Sprintf("v%d-%d", r+2, i))
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.CompactionsByKind["l0"] == 0 {
		t.Fatalf("overlapping level-0 tables were not compacted: kinds %v", m.CompactionsByKind)
	}
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, smallTreeOptions(clk))
	defer db.Close()
	check(db)
}

// TestCompactionItersOpenSortedLevelLazily: a compaction reads a sorted
// input level through one levelIter that opens a table (and reads its index
// copy) only when the merge reaches it, instead of one iterator per table
// each holding its index copy from the start; the merged rows are the same.
func TestCompactionItersOpenSortedLevelLazily(t *testing.T) {
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = storage.NewMem()
		o.Compression = sstable.NoCompression
		// Blocks of about two rows: a table's index passes the size at
		// which index copies leave the Go heap (sstable.minOffHeapMeta).
		o.BlockSize = 256
		o.MemtableSize = 256 << 10
		o.TargetFileSize = 64 << 10
		o.DisableAutoCompaction = true
		o.DisableBlockCache = true // no cache: every table iterator reads its own index
	})
	defer db.Close()
	val := bytes.Repeat([]byte{'v'}, 100)
	const rows = 3000
	for i := range rows {
		if err := db.Put(fmt.Appendf(nil, "k%06d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	var sorted []*tableFile
	level := 0
	for l := 1; l < len(db.current.levels); l++ {
		if len(db.current.levels[l]) > len(sorted) {
			sorted, level = db.current.levels[l], l
		}
	}
	db.mu.Unlock()
	if len(sorted) < 4 {
		t.Fatalf("compaction left %d tables in its largest level, want several", len(sorted))
	}
	in := compaction.Input{Level: level}
	for _, tf := range sorted {
		in.Tables = append(in.Tables, &compaction.Table{Meta: tf.Meta})
	}
	p := &compactionJob{Pick: &compaction.Pick{Inputs: []compaction.Input{in}, OutputLevel: level}, inputs: [][]*tableFile{sorted}}

	before := manual.PurposeBytes()[manual.PurposeIndexBlock]
	iters := compactionIters(p)
	if len(iters) != 1 {
		t.Fatalf("%d iterators for one sorted level, want 1", len(iters))
	}
	if held := manual.PurposeBytes()[manual.PurposeIndexBlock] - before; held != 0 {
		t.Fatalf("unpositioned: %d bytes of index copies held, want none", held)
	}
	it := iters[0]
	n, maxHeld := 0, int64(0)
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Row().Key
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Fatalf("row %d: %q after %q", n, k, prev)
		}
		prev = append(prev[:0], k...)
		n++
		maxHeld = max(maxHeld, manual.PurposeBytes()[manual.PurposeIndexBlock]-before)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != rows {
		t.Fatalf("read %d rows, want %d", n, rows)
	}
	// One iterator per table, as compactions had: every index copy is
	// held from the start.
	var eager []format.Iterator
	for _, tf := range sorted {
		eager = append(eager, tf.reader.NewCompactionIter())
	}
	eagerHeld := manual.PurposeBytes()[manual.PurposeIndexBlock] - before
	for _, e := range eager {
		e.Close()
	}
	// The levelIter holds the copies of at most two tables at once (the
	// open one and the spare not yet reset), not of all of them.
	if maxHeld == 0 || maxHeld*int64(len(sorted)) > 2*eagerHeld+int64(len(sorted)) {
		t.Fatalf("levelIter held up to %d bytes of index copies; one iterator per table holds %d for %d tables", maxHeld, eagerHeld, len(sorted))
	}
	t.Logf("%d tables: index copies held at most %d bytes through a levelIter, %d with one iterator per table", len(sorted), maxHeld, eagerHeld)
	if held := manual.PurposeBytes()[manual.PurposeIndexBlock] - before; held != 0 {
		t.Fatalf("after Close %d bytes of index copies held", held)
	}
}

// TestShortLivedL0SmallMemtable: a stream of 5 s TTL rows through a memtable
// so small that it fills about twice a second keeps ten or more level-0
// tables alive, more than the reference ShortLivedL0Limit (6) and the
// reference slowdown threshold (8). With the limit scaled by the memtable
// size they wait for their whole-file drops: no level-0 compaction merges
// them into the base level (after which no level-0 table could be dropped
// whole), and no write is slowed down. Live rows read back throughout. At
// twice the rate level 0 holds over 30 tables, past the allowance of 24 the
// 8-file slowdown threshold gave (ShortLivedL0Limit 6 times 4; then every
// table was compacted and none dropped) and within the 40 of the doubled
// default (l0StallScale).
func TestShortLivedL0SmallMemtable(t *testing.T) {
	for _, c := range []struct{ perStep, minL0 int }{{100, 9}, {200, 30}} { // 1000 and 2000 rows/s in 100 ms steps
		t.Run(fmt.Sprintf("%d rows per step", c.perStep), func(t *testing.T) {
			clk := clock.NewManual(epoch)
			db := openSmallMemtableDB(t, clk)
			defer db.Close()
			maxL0, n := 0, 0
			churnSteps(t, db, clk, 300, c.perStep, 5*time.Second, func(step int) { // 30 s of clock
				n += c.perStep
				maxL0 = max(maxL0, db.Metrics().Levels[0].Files)
				if step%50 == 49 {
					for i := n - 4000; i < n; i += 7 { // written within the last 2-4 s
						mustGet(t, db, string(churnKey(i)), string(churnValue(i)))
					}
				}
			})
			m := db.Metrics()
			t.Logf("flushes %d, drops %d, compactions %v, max level-0 files %d, slowdowns %d, stalls %d",
				m.Flushes, m.WholeFileDrops, m.CompactionsByKind, maxL0, m.WriteSlowdowns, m.WriteStalls)
			if maxL0 < c.minL0 {
				t.Errorf("level 0 held at most %d files: the test does not reach %d", maxL0, c.minL0)
			}
			if n := m.CompactionsByKind["l0"]; n != 0 {
				t.Errorf("%d level-0 compactions merged short-lived tables (max %d level-0 files)", n, maxL0)
			}
			if m.WholeFileDrops < m.Flushes/2 {
				t.Errorf("%d whole-file drops of %d flushed tables", m.WholeFileDrops, m.Flushes)
			}
			if m.WriteSlowdowns != 0 || m.WriteStalls != 0 {
				t.Errorf("%d write slowdowns, %d stalls with short-lived level-0 tables only", m.WriteSlowdowns, m.WriteStalls)
			}
		})
	}
}

// TestHourTTLStreamSmallMemtable: with a memtable below 16 MiB the default
// slowdown threshold is 16 (l0StallScale), so ShortLivedL0Limit is 10; a
// stream of 1 h TTL rows has no drop forecast (its tables cannot leave
// within the scaled allowance), and level 0 is compacted when its tenth
// file arrives: after each step it holds at most 9 (5 with the 8-file
// threshold), and no write is slowed down. Every row reads back at the end.
func TestHourTTLStreamSmallMemtable(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openSmallMemtableDB(t, clk)
	defer db.Close()
	if o := db.pickerOptsValue(); o.L0SlowdownWritesThreshold != 16 {
		t.Fatalf("slowdown threshold %d with a 54 KiB memtable, want 16", o.L0SlowdownWritesThreshold)
	}
	const steps, perStep = 300, 100 // 30 s of clock, 1000 rows/s
	maxL0 := 0
	churnSteps(t, db, clk, steps, perStep, time.Hour, func(int) {
		maxL0 = max(maxL0, db.Metrics().Levels[0].Files)
	})
	m := db.Metrics()
	t.Logf("flushes %d, compactions %v, max level-0 files %d, slowdowns %d, stalls %d",
		m.Flushes, m.CompactionsByKind, maxL0, m.WriteSlowdowns, m.WriteStalls)
	if m.Flushes < 30 {
		t.Fatalf("only %d flushes: the stream does not pass the level-0 limit", m.Flushes)
	}
	if maxL0 != 9 {
		t.Errorf("level 0 peaked at %d files between steps, want 9 (ShortLivedL0Limit 10 compacts at the tenth)", maxL0)
	}
	if m.CompactionsByKind["l0"] == 0 {
		t.Errorf("no level-0 compaction in %d flushes", m.Flushes)
	}
	if m.WriteSlowdowns != 0 || m.WriteStalls != 0 {
		t.Errorf("%d write slowdowns, %d stalls", m.WriteSlowdowns, m.WriteStalls)
	}
	for i := 0; i < steps*perStep; i += 97 {
		mustGet(t, db, string(churnKey(i)), string(churnValue(i)))
	}
}

// openSmallMemtableDB opens a DB in a fresh directory with a 54 KiB
// memtable and no compression, on clk: it holds about 300 churn rows
// (about 184 arena bytes each: record and skiplist node).
func openSmallMemtableDB(t *testing.T, clk *clock.Manual) *DB {
	t.Helper()
	return openTestDB(t, t.TempDir(), clk, func(o *Options) {
		o.MemtableSize = 54 << 10
		o.Compression = sstable.NoCompression
	})
}

// churnSteps writes perStep rows of the given TTL (churnKey order,
// continuing across steps), advances the clock by 100 ms and waits for the
// background, steps times, calling after with the step's index after each.
func churnSteps(t *testing.T, db *DB, clk *clock.Manual, steps, perStep int, ttl time.Duration, after func(step int)) {
	t.Helper()
	ctx := context.Background()
	n := 0
	for step := range steps {
		for range perStep {
			if err := db.PutTTL(churnKey(n), churnValue(n), ExpireAfter(ttl)); err != nil {
				t.Fatal(err)
			}
			n++
		}
		clk.Advance(100 * time.Millisecond)
		if err := db.WaitForCompactions(ctx); err != nil {
			t.Fatal(err)
		}
		after(step)
	}
}

// BenchmarkCompaction measures compaction throughput: bytes of input tables
// read, merged and rewritten per second by a manual full compaction. Each
// iteration builds, untimed, a fresh in-memory database whose L0 holds
// tables of overlapping random keys (some rows overwritten, some deleted,
// some with a TTL), then times Compact over the whole key space. The
// reported MB/s is bytes rewritten (Metrics.CompactionBytesWritten) per
// second; read/op is the input the compaction read. The storage is
// in-memory, so the figure is the engine's CPU cost, not the disk's.
func BenchmarkCompaction(b *testing.B) {
	for _, shape := range []struct {
		name          string
		tables, rows  int
		overlapEvery  int // every n-th key of a table rewrites one of the previous table
		deleteEvery   int
		ttlEvery      int
		compressionOn bool
	}{
		{name: "L0x4/64k-rows", tables: 4, rows: 64 << 10, overlapEvery: 4, deleteEvery: 16, ttlEvery: 3, compressionOn: true},
		{name: "L0x4/64k-rows/nocompress", tables: 4, rows: 64 << 10, overlapEvery: 4, deleteEvery: 16, ttlEvery: 3},
	} {
		b.Run(shape.name, func(b *testing.B) {
			vals := benchValuePool()
			key := make([]byte, benchKeySize)
			var read, written uint64
			for b.Loop() {
				b.StopTimer()
				opts := &Options{
					Storage:               storage.NewMem(),
					DisableAutoCompaction: true,
					MemtableSize:          256 << 20,
				}
				if !shape.compressionOn {
					opts.Compression = sstable.NoCompression
				}
				db, err := Open("bench", opts)
				if err != nil {
					b.Fatal(err)
				}
				next := uint64(0)
				for t := range shape.tables {
					batch := db.NewBatch()
					for i := range shape.rows {
						k := next
						if t > 0 && i%shape.overlapEvery == 0 {
							k = next - uint64(shape.rows) // a key of the previous table
						}
						next++
						benchKey(key, k)
						switch {
						case i%shape.deleteEvery == 0:
							err = batch.Delete(key)
						case i%shape.ttlEvery == 0:
							err = batch.PutTTL(key, vals[i%benchValues], ExpireAfter(24*time.Hour))
						default:
							err = batch.Put(key, vals[i%benchValues])
						}
						if err != nil {
							b.Fatal(err)
						}
						if batch.Len() == 1000 {
							if err := batch.Write(nil); err != nil {
								b.Fatal(err)
							}
							batch = db.NewBatch()
						}
					}
					if err := batch.Write(nil); err != nil {
						b.Fatal(err)
					}
					if err := db.Flush(); err != nil {
						b.Fatal(err)
					}
				}
				before := db.Metrics()
				b.StartTimer()
				if err := db.Compact(context.Background(), nil, nil); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				after := db.Metrics()
				read += after.CompactionBytesRead - before.CompactionBytesRead
				written += after.CompactionBytesWritten - before.CompactionBytesWritten
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			if b.N > 0 && (read == 0 || written == 0) {
				b.Fatalf("compaction read nothing (metrics %d/%d)", read, written)
			}
			b.SetBytes(int64(written / uint64(b.N)))
			b.ReportMetric(float64(read)/float64(b.N), "read/op")
		})
	}
}

// tableNums returns the table numbers of each level, under db.mu.
func tableNums(db *DB) [compaction.NumLevels][]uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out [compaction.NumLevels][]uint64
	for l, lvl := range db.current.levels {
		for _, t := range lvl {
			out[l] = append(out[l], t.Meta.Num)
		}
	}
	return out
}

// TestCompactWithOutputLevel compacts a range into level 2 above data in
// the bottom level: the range's rows from levels 0 to 2 end up in level 2,
// the bottom table stays as it was, a tombstone over a bottom row keeps
// hiding it, and every read is unchanged.
func TestCompactWithOutputLevel(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.DisableAutoCompaction = true })
	defer db.Close()
	want := map[string]string{}
	put := func(k, v string) {
		t.Helper()
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	for i := range 20 {
		put(fmt.Sprintf("k%02d", i), "old")
	}
	if err := db.Compact(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	bottom := tableNums(db)[compaction.Bottom]
	if len(bottom) == 0 {
		t.Fatal("Compact left nothing in the bottom level")
	}
	// Two level-0 tables over the bottom: new values and a tombstone.
	for i := 0; i < 20; i += 2 {
		put(fmt.Sprintf("k%02d", i), "new")
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("k05")); err != nil {
		t.Fatal(err)
	}
	delete(want, "k05")
	put("k99", "new")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(tableNums(db)[0]); n != 2 {
		t.Fatalf("level 0 holds %d tables, want 2", n)
	}
	if err := db.CompactWith(ctx, nil, nil, &CompactOptions{OutputLevel: 2}); err != nil {
		t.Fatal(err)
	}
	lv := tableNums(db)
	for l, files := range lv {
		switch {
		case l == 2 && len(files) == 0:
			t.Fatal("level 2 is empty after CompactWith(OutputLevel: 2)")
		case l == compaction.Bottom && !slices.Equal(files, bottom):
			t.Fatalf("bottom level changed: %v, was %v", files, bottom)
		case l != 2 && l != compaction.Bottom && len(files) > 0:
			t.Fatalf("level %d holds tables %v after CompactWith(OutputLevel: 2)", l, files)
		}
	}
	// k05 reads as deleted only if level 2 kept the tombstone over the
	// bottom's row.
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		mustGet(t, db, k, want[k])
	}
	mustGet(t, db, "k99", "new")
}

// TestCompactWithInvalidLevel checks that levels outside 1 to
// MaxOutputLevel are refused with ErrInvalidOptions before anything
// happens (the memtable is not even flushed).
func TestCompactWithInvalidLevel(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), func(o *Options) { o.DisableAutoCompaction = true })
	defer db.Close()
	if err := db.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	for _, level := range []int{-1, MaxOutputLevel + 1, 100} {
		err := db.CompactWith(ctx, nil, nil, &CompactOptions{OutputLevel: level})
		if !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("OutputLevel %d: got %v, want ErrInvalidOptions", level, err)
		}
	}
	for l, files := range tableNums(db) {
		if len(files) > 0 {
			t.Fatalf("a refused CompactWith wrote level %d: %v", l, files)
		}
	}
	mustGet(t, db, "a", "1")
}

// TestShadowedCounterTablesFold: counters added to in every memtable make
// level-0 tables that hold the same keys, each newer table superseding the
// rows of the older ones (the flush folds a counter onto its state beneath,
// RFC 0010 rule 8). With nothing expired yet, no file-count, drop or
// expiry pick takes them; the flushes count what they supersede, and the
// shadowed pick (Options.L0ShadowedRatio) compacts them into one table
// of one row per counter. Once the windows end, the next fold drops them,
// and every count reads exactly what was added in its window.
func TestShadowedCounterTablesFold(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) {
		o.MergeOperator = Int64Add
		o.DisableAgeRotation = true
	})
	defer db.Close()
	const n, window = 100, 10 * time.Second
	key := func(i int) string { return fmt.Sprintf("counter-%03d", i) }
	addAll := func(keys int, delta int64) {
		t.Helper()
		for i := range keys {
			addBlind(t, db, key(i), delta, ExpireAfter(window))
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.WaitForCompactions(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	tables := func() (count int, rows uint64) {
		db.mu.Lock()
		defer db.mu.Unlock()
		for _, lvl := range db.current.levels {
			for _, tf := range lvl {
				count++
				rows += tf.Meta.NumRows
			}
		}
		return count, rows
	}
	start := clk.Now()
	addAll(n, 1)
	clk.Advance(3 * time.Second)
	addAll(n, 2)
	clk.Advance(3 * time.Second)
	addAll(n/2, 4)
	if c, rows := tables(); c != 1 || rows != n {
		t.Fatalf("after three flushes of the same counters: %d tables of %d rows, want 1 of %d", c, rows, n)
	}
	if got := db.Metrics().CompactionsByKind["shadowed"]; got == 0 {
		t.Fatal("no shadowed compaction ran")
	}
	deadline := start.Add(window)
	for i := range n {
		want := int64(3)
		if i < n/2 {
			want = 7
		}
		wantCounter(t, db, key(i), want, deadline)
	}
	// Past the windows: new ones start for a tenth of the counters, and
	// the expired windows leave the disk.
	clk.Advance(5 * time.Second)
	addAll(n/10, 5)
	if c, rows := tables(); c != 1 || rows != n/10 {
		t.Fatalf("after the windows ended: %d tables of %d rows, want 1 of %d", c, rows, n/10)
	}
	for i := range n {
		if i < n/10 {
			wantCounter(t, db, key(i), 5, clk.Now().Add(window))
		} else if _, _, ok := counterOf(t, db, key(i)); ok {
			t.Fatalf("%s is live after its window ended", key(i))
		}
	}
}

// TestWaitForCompactionsSeesAgeRotation: after the clock passes the point
// where the active memtable is due for rotation by age, WaitForCompactions
// returns only once it is rotated and flushed, also when a scheduler pass
// that checked the memtable's age before the clock moved is still running
// when the wait begins (each round's writes fill small memtables, whose
// flushes end, and start passes, around the wait).
func TestWaitForCompactionsSeesAgeRotation(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.MemtableSize = 64 << 10 })
	defer db.Close()
	value := make([]byte, 1000)
	for round := range 200 {
		for i := range 100 {
			must(t, db.PutTTL(fmt.Appendf(nil, "k%03d-%03d", round, i), value, ExpireAfter(time.Minute)))
		}
		clk.Advance(time.Minute) // due: a quarter of the rows' TTL is past
		must(t, db.WaitForCompactions(t.Context()))
		if m := db.Metrics(); m.MemtableBytes != 0 || m.ImmutableMemtables != 0 {
			t.Fatalf("round %d: %d bytes in the active memtable, %d frozen, after the wait; want every row flushed", round, m.MemtableBytes, m.ImmutableMemtables)
		}
	}
}

// l0MergeRig is a database and a reference fed the same operations: the
// reference holds everything in its memtable and never compacts, so every
// read of the database must equal the reference's.
type l0MergeRig struct {
	t        *testing.T
	clk      *clock.Manual
	db, ref  *DB
	rng      *rand.Rand
	keys     int
	counters int
}

func newL0MergeRig(t *testing.T, keys int, mutate func(*Options)) *l0MergeRig {
	clk := clock.NewManual(epoch)
	opts := func(ref bool) func(*Options) {
		return func(o *Options) {
			o.Clock = clk
			o.MergeOperator = Int64Add
			o.DisableAgeRotation = true
			o.Compression = sstable.NoCompression
			o.MemtableSize = 1 << 20 // flushes are the test's
			o.LBaseMaxBytes = 4 << 20
			if mutate != nil {
				mutate(o)
			}
			if ref {
				o.MemtableSize = 64 << 20 // holds everything: no table at all
				o.DisableAutoCompaction = true
				o.EventListener = nil
			}
		}
	}
	r := &l0MergeRig{t: t, clk: clk, rng: rand.New(rand.NewPCG(1, 2)), keys: keys, counters: 50}
	r.db = openTestDB(t, t.TempDir(), clk, opts(false))
	t.Cleanup(func() { r.db.Close() })
	r.ref = openTestDB(t, t.TempDir(), clk, opts(true))
	t.Cleanup(func() { r.ref.Close() })
	return r
}

func (r *l0MergeRig) key(i int) []byte { return fmt.Appendf(nil, "key-%05d", i) }
func (r *l0MergeRig) ctr(i int) []byte { return fmt.Appendf(nil, "ctr-%03d", i) }

func (r *l0MergeRig) val(i, gen int) []byte {
	return append(fmt.Appendf(nil, "%05d-%03d-", i, gen), bytes.Repeat([]byte{'v'}, 190)...)
}

// both applies f to the database and the reference.
func (r *l0MergeRig) both(what string, f func(d *DB) error) {
	r.t.Helper()
	for _, d := range []*DB{r.db, r.ref} {
		if err := f(d); err != nil {
			r.t.Fatalf("%s: %v", what, err)
		}
	}
}

// load puts every key once.
func (r *l0MergeRig) load() {
	for i := range r.keys {
		r.both("load", func(d *DB) error { return d.Put(r.key(i), r.val(i, 0)) })
	}
}

// round applies n random operations (puts, deletes, TTLs, deadline
// changes, counter adds), flushes the database and advances the clock.
func (r *l0MergeRig) round(gen, n int) {
	t := r.t
	t.Helper()
	for range n {
		i := r.rng.IntN(r.keys)
		ttl := ExpireAfter(time.Duration(1+r.rng.IntN(60)) * time.Second)
		switch r.rng.IntN(6) {
		case 0:
			r.both("put", func(d *DB) error { return d.Put(r.key(i), r.val(i, gen)) })
		case 1:
			r.both("delete", func(d *DB) error { return d.Delete(r.key(i)) })
		case 2:
			r.both("put with TTL", func(d *DB) error { return d.PutTTL(r.key(i), r.val(i, gen), ttl) })
		case 3:
			r.both("expire", func(d *DB) error { _, err := d.Expire(r.key(i), ttl, ExpireAlways); return err })
		default:
			c, delta := r.ctr(r.rng.IntN(r.counters)), int64(1+r.rng.IntN(9))
			got, err := r.db.Add(c, delta, ExpireAfter(30*time.Second))
			want, rerr := r.ref.Add(c, delta, ExpireAfter(30*time.Second))
			if err != nil || rerr != nil || got != want {
				t.Fatalf("Add(%s) = %d, %v; reference %d, %v", c, got, err, want, rerr)
			}
		}
	}
	if err := r.db.Flush(); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(5 * time.Second)
}

// loadAndChurn loads every key, compacts it into the base level, then runs
// gens rounds of n operations, waiting for the compactions after each, and
// returns snapshots of both databases taken after the middle round.
func (r *l0MergeRig) loadAndChurn(gens, n int) (snap, refSnap *Snapshot) {
	r.t.Helper()
	r.load()
	if err := r.db.Compact(context.Background(), nil, nil); err != nil {
		r.t.Fatal(err)
	}
	for gen := 1; gen <= gens; gen++ {
		r.round(gen, n)
		if err := r.db.WaitForCompactions(context.Background()); err != nil {
			r.t.Fatal(err)
		}
		if gen == gens/2 {
			snap, refSnap = r.snapshots()
		}
	}
	return snap, refSnap
}

// sameAll fails unless the database reads as the reference does, now and
// through the snapshots, TTLs included.
func (r *l0MergeRig) sameAll(snap, refSnap *Snapshot) {
	r.t.Helper()
	r.same("now", r.db, r.ref)
	r.same("snapshot", snap, refSnap)
	r.sameTTLs()
}

// snapshots opens a snapshot of each.
func (r *l0MergeRig) snapshots() (*Snapshot, *Snapshot) {
	r.t.Helper()
	snap, err := r.db.NewSnapshot()
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { snap.Close() })
	refSnap, err := r.ref.NewSnapshot()
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { refSnap.Close() })
	return snap, refSnap
}

type kvReader interface {
	Get([]byte) ([]byte, error)
	Scan(lower, upper []byte, errp *error) iter.Seq2[[]byte, []byte]
}

// same fails unless a and b read alike: every key's value or error and a
// full scan.
func (r *l0MergeRig) same(what string, a, b kvReader) {
	t := r.t
	t.Helper()
	for i := range r.keys + r.counters {
		k := r.key(i)
		if i >= r.keys {
			k = r.ctr(i - r.keys)
		}
		got, err := a.Get(k)
		want, rerr := b.Get(k)
		if !bytes.Equal(got, want) || fmt.Sprint(err) != fmt.Sprint(rerr) {
			t.Fatalf("%s: Get(%s) = %q, %v; reference %q, %v", what, k, got, err, want, rerr)
		}
	}
	scan := func(d kvReader) (out []string) {
		var err error
		for k, v := range d.Scan(nil, nil, &err) {
			out = append(out, string(k)+"="+string(v))
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := scan(a), scan(b); !slices.Equal(got, want) {
		t.Fatalf("%s: scan of %d rows, reference %d", what, len(got), len(want))
	}
}

// sameTTLs fails unless every key's TTL reads alike in both.
func (r *l0MergeRig) sameTTLs() {
	for i := range r.keys {
		got, gotExp, err := r.db.TTL(r.key(i))
		want, wantExp, rerr := r.ref.TTL(r.key(i))
		if got != want || gotExp != wantExp || fmt.Sprint(err) != fmt.Sprint(rerr) {
			r.t.Fatalf("TTL(%s) = %v, %v, %v; reference %v, %v, %v", r.key(i), got, gotExp, err, want, wantExp, rerr)
		}
	}
}

// TestL0MergeMatchesReference: level-0 merges (compaction.KindL0Merge) of
// small flushes over a base level more than ten times their size leave
// every read as it is in a database that never compacts: puts, deletes,
// TTLs, deadline changes and counter operands, read now (values, TTLs, a
// scan) and through a snapshot taken midway. Both kinds of level-0
// compaction run: merges while level 0 is small, then into the base level.
func TestL0MergeMatchesReference(t *testing.T) {
	r := newL0MergeRig(t, 8000, nil)
	snap, refSnap := r.loadAndChurn(32, 600) // level 0 reaches a fifth of the base level (compaction.L0BottomRatio) and goes down
	if m := r.db.Metrics(); m.CompactionsByKind["l0merge"] == 0 || m.CompactionsByKind["l0"] == 0 {
		t.Fatalf("compactions by kind %v: want level-0 merges and level-0 compactions into the base level", m.CompactionsByKind)
	}
	r.sameAll(snap, refSnap)
}

// TestL0SliceMatchesReference: over a base level of many tables worth
// more than two level-0 slices, level 0 is split into key-disjoint slices
// (compaction.KindL0Split) that go down one at a time; reads stay those of
// a database that never compacts, now and through a snapshot taken midway,
// with the same mix of puts, deletes, TTLs, deadline changes and counter
// operands as TestL0MergeMatchesReference.
func TestL0SliceMatchesReference(t *testing.T) {
	r := newL0MergeRig(t, 8000, func(o *Options) {
		o.LBaseMaxBytes = 1 << 20   // slices of an eighth of it
		o.TargetFileSize = 64 << 10 // a base level of many small tables to cut at
	})
	snap, refSnap := r.loadAndChurn(24, 1200) // level 0 reaches a fifth of the base level (compaction.L0BottomRatio)
	m := r.db.Metrics()
	if m.CompactionsByKind["l0split"] == 0 || m.CompactionsByKind["l0"] < 2*m.CompactionsByKind["l0split"] {
		t.Fatalf("compactions by kind %v: want level-0 splits, each followed by its slices going down", m.CompactionsByKind)
	}
	r.sameAll(snap, refSnap)
}

// TestL0MergeWhileL0GoesDown: while level 0 is being compacted into the
// base level (held in its CompactionBegin), the newer flushes merge among
// themselves once ShortLivedL0Limit of them (10) have gathered, and once
// both compactions finish every read is the reference's.
func TestL0MergeWhileL0GoesDown(t *testing.T) {
	release, merged := make(chan struct{}), make(chan struct{}, 1)
	var held atomic.Bool
	r := newL0MergeRig(t, 2000, func(o *Options) {
		o.L0CompactionThreshold, o.L0SlowdownWritesThreshold = 4, 16 // merges above a busy level 0 from 10 tables
		o.EventListener = &EventListener{
			CompactionBegin: func(info CompactionInfo) {
				if info.Kind == "l0" && held.CompareAndSwap(false, true) {
					<-release
				}
			},
			CompactionEnd: func(info CompactionInfo) {
				if info.Kind == "l0merge" && info.Err == nil {
					select {
					case merged <- struct{}{}:
					default:
					}
				}
			},
		}
	})
	r.load()
	for gen := 1; gen <= 14; gen++ {
		r.round(gen, 150) // the first four start the held compaction
	}
	select {
	case <-merged:
	case <-time.After(time.Minute): // a guard against a hang, not a measurement
		t.Fatal("no level-0 merge while level 0 was being compacted into the base level")
	}
	if !held.Load() {
		t.Fatal("no level-0 compaction into the base level was held")
	}
	r.db.mu.Lock()
	var l0Compacting, l0 int
	for _, tf := range r.db.current.levels[0] {
		l0++
		if tf.compacting {
			l0Compacting++
		}
	}
	r.db.mu.Unlock()
	close(release)
	if err := r.db.WaitForCompactions(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l0Compacting == 0 || l0-l0Compacting > 2 {
		t.Fatalf("after the merge: %d level-0 tables, %d being compacted into the base level; want the newer ten merged", l0, l0Compacting)
	}
	r.same("now", r.db, r.ref)
	r.sameTTLs()
}

// TestL0StallFilesCountsSlicesOnce: for the write stalls, the oldest run of
// pairwise key-disjoint level-0 tables (compaction.SliceRun) counts as one
// file, as a read probes one of them; a table overlapping them counts on
// its own.
func TestL0StallFilesCountsSlicesOnce(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), func(o *Options) { o.L0CompactionThreshold = 100 })
	defer db.Close()
	flush := func(keys ...string) {
		for _, k := range keys {
			if err := db.Put([]byte(k), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	stallFiles := func() (files, l0 int) {
		db.mu.Lock()
		defer db.mu.Unlock()
		files, _, _ = db.l0StallFiles()
		return files, len(db.current.levels[0])
	}
	flush("a", "b")
	flush("c", "d")
	flush("e", "f")
	if files, l0 := stallFiles(); files != 1 || l0 != 3 {
		t.Fatalf("three key-disjoint tables count as %d files (level 0 holds %d), want 1", files, l0)
	}
	flush("a", "f")
	flush("b", "e")
	if files, l0 := stallFiles(); files != 3 || l0 != 5 {
		t.Fatalf("two overlapping tables over three disjoint ones count as %d files (level 0 holds %d), want 3", files, l0)
	}
}
