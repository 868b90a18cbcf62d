package mayfly

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/memtable"
)

// writeDeadline commits a deadline row for key, unconditionally (the
// public operations add the condition that the key is live).
func writeDeadline(t *testing.T, db *DB, key string, ttl TTL) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	if err := b.appendDeadline([]byte(key), ttl); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(nil); err != nil {
		t.Fatal(err)
	}
}

// TestDeadlineRowKeepsValueBelowCompaction: a value whose own deadline has
// passed survives every compaction and whole-file drop while a deadline row
// in newer data (the memtable, then level 0) extends it; it leaves once the
// extended deadline passes.
func TestDeadlineRowKeepsValueBelowCompaction(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.DisableAutoCompaction = true })
	defer db.Close()
	ctx := context.Background()
	if err := db.PutTTL([]byte("k"), []byte("v"), ExpireAfter(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(ctx, nil, nil); err != nil { // the value reaches the bottom
		t.Fatal(err)
	}
	writeDeadline(t, db, "k", ExpireAfter(time.Minute))
	clk.Advance(30 * time.Second) // past the value's own deadline
	mustGet(t, db, "k", "v")

	// The table below holds only expired rows by their own deadlines: a
	// drop or rewrite that ignored the deadline row would lose the key.
	if err := db.ReclaimExpired(ctx); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k", "v")
	if err := db.CompactWith(ctx, nil, nil, &CompactOptions{OutputLevel: 6}); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k", "v")

	// Flushed to level 0 above the value: still extended.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.ReclaimExpired(ctx); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k", "v")
	if left, expires, err := db.TTL([]byte("k")); err != nil || !expires || left != 30*time.Second {
		t.Fatalf("TTL = %v, %v, %v; want 30s left", left, expires, err)
	}

	// Past the extended deadline the key goes, and compaction removes it.
	clk.Advance(30*time.Second + time.Millisecond)
	mustGet(t, db, "k", "")
	if err := db.Compact(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k", "")
	if m := db.Metrics(); m.Levels[6].Rows+m.Levels[0].Rows != 0 {
		t.Fatalf("expired key still on disk: %+v", m.Levels)
	}
}

// TestDeadlineAboveNoCompactionLoop: a table whose expired rows a deadline
// row above keeps (compaction rule 5) is not picked for its expired bytes
// again and again: background compaction goes idle, and the value stays.
func TestDeadlineAboveNoCompactionLoop(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	ctx := context.Background()
	value := bytes.Repeat([]byte("v"), 200)
	for i := range 50 {
		if err := db.PutTTL(fmt.Appendf(nil, "k%02d", i), value, ExpireAfter(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		// A row without expiry in the same table: it is no candidate for
		// a whole-file drop, only for a rewrite of its expired bytes.
		if err := db.PutTTL(fmt.Appendf(nil, "n%02d", i), []byte("n"), NoExpiry()); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if ok, err := db.Expire(fmt.Appendf(nil, "k%02d", i), ExpireAfter(time.Hour), ExpireAlways); !ok || err != nil {
			t.Fatalf("Expire = %v, %v", ok, err)
		}
	}
	clk.Advance(20 * time.Second) // every row below expired by its own deadline
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.WaitForCompactions(wctx); err != nil {
		t.Fatalf("WaitForCompactions: %v (compactions so far: %d)", err, db.Metrics().Compactions)
	}
	mustGet(t, db, "k07", string(value))
}

// TestDeadlineRowInSiblingTableKeepsValue: a compaction of a level-5 table
// into level 6 also rewrites the level-6 table beneath it, whose key range
// reaches past the level-5 input into the range of another level-5 table.
// That other table is not an input, yet it is newer than the level-6 rows
// it covers: its deadline row (a Persist) keeps the value beneath it, whose
// own deadline has passed.
func TestDeadlineRowInSiblingTableKeepsValue(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.DisableAutoCompaction = true })
	defer db.Close()
	ctx := context.Background()
	put := func(key string, ttl TTL) {
		t.Helper()
		if err := db.PutTTL([]byte(key), []byte("v"+key), ttl); err != nil {
			t.Fatal(err)
		}
	}
	// Level 6: one table spanning a..z.
	put("a", NoExpiry())
	put("m", ExpireAfter(10*time.Second))
	put("z", NoExpiry())
	if err := db.Compact(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Level 5: the deadline row of m, alone in its table.
	if ok, err := db.Persist([]byte("m")); !ok || err != nil {
		t.Fatalf("Persist = %v, %v", ok, err)
	}
	if err := db.CompactWith(ctx, []byte("m"), []byte("m"), &CompactOptions{OutputLevel: 5}); err != nil {
		t.Fatal(err)
	}
	// Level 5: a table of b, left of m's, which expires first.
	put("b", ExpireAfter(time.Second))
	if err := db.CompactWith(ctx, []byte("b"), []byte("b"), &CompactOptions{OutputLevel: 5}); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.Levels[5].Files != 2 || m.Levels[6].Files != 1 {
		t.Fatalf("setup: L5 has %d tables, L6 %d; want 2 and 1", m.Levels[5].Files, m.Levels[6].Files)
	}
	clk.Advance(20 * time.Second) // b and m's own deadline have passed
	mustGet(t, db, "m", "vm")
	// ReclaimExpired compacts the table of b to the bottom, with the
	// level-6 table beneath it: m's row is an input, its deadline row not.
	if err := db.ReclaimExpired(ctx); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "m", "vm")
	mustGet(t, db, "b", "")
	if _, expires, err := db.TTL([]byte("m")); err != nil || expires {
		t.Fatalf("TTL(m) = _, %v, %v; want no expiry", expires, err)
	}
}

// TestL0MergeDeadlineSourcesAreNewer: the deadline sources above a merge
// of level-0 tables (compaction.KindL0Merge) are the level-0 tables newer
// than its inputs, not the older ones left beneath its output, while a
// compaction of all of level 0 still sees every other level-0 table.
func TestL0MergeDeadlineSourcesAreNewer(t *testing.T) {
	tbl := func(num, seq uint64, features uint8) *tableFile {
		return &tableFile{Meta: &manifest.FileMeta{Num: num, TableStats: format.TableStats{
			Smallest:    format.AppendInternalKey(nil, &format.Row{Key: []byte("a"), Seq: seq}),
			Largest:     format.AppendInternalKey(nil, &format.Row{Key: []byte("z"), Seq: seq}),
			SmallestSeq: seq, LargestSeq: seq, NumRows: 1, RowFeatures: features,
		}}}
	}
	newer, older := tbl(4, 40, format.FlagDeadline), tbl(1, 10, format.FlagDeadline)
	in1, in2 := tbl(3, 30, format.FlagMerge), tbl(2, 20, format.FlagMerge)
	var levels [manifest.NumLevels][]*tableFile
	levels[0] = []*tableFile{newer, in1, in2, older}
	rs := &readState{mem: memtable.New(1), v: &version{levels: levels}}
	merge := &compactionJob{
		Pick:   &compaction.Pick{Kind: compaction.KindL0Merge, Inputs: []compaction.Input{{Level: 0}}, Lo: []byte("a"), Hi: []byte("z")},
		inputs: [][]*tableFile{{in1, in2}},
	}
	if got := compactionDeadlineSources(rs, merge).tables; len(got) != 1 || got[0] != newer {
		t.Fatalf("sources above the merge: %d tables, want only the newer one", len(got))
	}
	down := &compactionJob{
		Pick:   &compaction.Pick{Kind: compaction.KindL0, Inputs: []compaction.Input{{Level: 0}}, OutputLevel: 6, Lo: []byte("a"), Hi: []byte("z")},
		inputs: [][]*tableFile{{in1, in2, older}},
	}
	if got := compactionDeadlineSources(rs, down).tables; len(got) != 1 || got[0] != newer {
		t.Fatalf("sources above level 0 going down: %d tables, want the newer one", len(got))
	}
}
