package mayfly

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
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
		o.NoCompression = true
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
	// others and the moved tables, so level 0 is compacted by rewriting.
	for r := range 3 {
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
