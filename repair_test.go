package mayfly

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
)

// repairModel is what a database must read as at the clock's time.
type repairModel struct {
	clk  *clock.Manual
	vals map[string]string
	exp  map[string]int64 // deadline (Unix ms) of a TTL row, absent without one
	dead map[string]bool  // deleted keys
}

func newRepairModel() *repairModel {
	return &repairModel{clk: clock.NewManual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		vals: map[string]string{}, exp: map[string]int64{}, dead: map[string]bool{}}
}

func (m *repairModel) options() *Options {
	return &Options{Clock: m.clk, MemtableSize: 64 << 10, BlockSize: 1024, TargetFileSize: 48 << 10,
		LBaseMaxBytes: 128 << 10, L0CompactionThreshold: 3}
}

func (m *repairModel) put(t *testing.T, db *DB, k, v string, ttl time.Duration) {
	t.Helper()
	var err error
	if ttl > 0 {
		err = db.PutTTL([]byte(k), []byte(v), ExpireAfter(ttl))
		m.exp[k] = m.clk.NowMillis() + ttl.Milliseconds()
	} else {
		err = db.Put([]byte(k), []byte(v))
		delete(m.exp, k)
	}
	if err != nil {
		t.Fatal(err)
	}
	m.vals[k] = v
	delete(m.dead, k)
}

func (m *repairModel) del(t *testing.T, db *DB, k string) {
	t.Helper()
	if err := db.Delete([]byte(k)); err != nil {
		t.Fatal(err)
	}
	delete(m.vals, k)
	delete(m.exp, k)
	m.dead[k] = true
}

// verify reads every key the model knows from a fresh Open of dir. Keys
// in lost may read as anything.
func (m *repairModel) verify(t *testing.T, what, dir string, lost map[string]bool) {
	t.Helper()
	db, err := Open(dir, m.options())
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	defer db.Close()
	if err := db.Check(context.Background()); err != nil {
		t.Fatalf("%s: Check: %v", what, err)
	}
	now := m.clk.NowMillis()
	bad := 0
	check := func(k string) {
		if lost[k] {
			return
		}
		v, err := db.Get([]byte(k))
		want, live := m.vals[k]
		if d, ok := m.exp[k]; ok && d < now {
			live = false
		}
		switch {
		case live && (err != nil || string(v) != want):
			t.Errorf("%s: Get(%s) = %q, %v; want %q", what, k, v, err, want)
			bad++
		case !live && !errors.Is(err, ErrNotFound):
			t.Errorf("%s: Get(%s) = %q, %v; want ErrNotFound", what, k, v, err)
			bad++
		}
		if bad > 10 {
			t.FailNow()
		}
	}
	for k := range m.vals {
		check(k)
	}
	for k := range m.dead {
		check(k)
	}
}

// buildRepairDB writes 20,000 operations (puts, overwrites, puts with a
// TTL, some of which expire, deletes) over 4,000 keys, with flushes and a
// compaction in between so that the tables lie on several levels, and
// leaves the last writes in the WAL.
func buildRepairDB(t *testing.T, dir string) *repairModel {
	t.Helper()
	m := newRepairModel()
	// Compactions run only when asked, so that the layout is the same on
	// every run.
	o := m.options()
	o.DisableAutoCompaction, o.MemtableSize = true, 256<<10
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(17, 5))
	for i := range 20000 {
		k := fmt.Sprintf("key%05d", rng.IntN(4000))
		switch op := rng.IntN(10); {
		case op < 6:
			m.put(t, db, k, fmt.Sprintf("v%d-%s", i, strings.Repeat("p", rng.IntN(60))), 0)
		case op < 8:
			m.put(t, db, k, fmt.Sprintf("ttl%d", i), time.Duration(1+rng.IntN(3600))*time.Second)
		default:
			m.del(t, db, k)
		}
		m.clk.Advance(50 * time.Millisecond)
		if i == 8000 {
			if err := db.Compact(context.Background(), nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		if i == 14000 {
			if err := db.Compact(context.Background(), []byte("key01000"), []byte("key02000")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The clock's last advance may have made the memtable due for rotation
	// by age, which the scheduler would do at some point before Close or
	// not: let it happen now. The puts after it carry no deadline, so no
	// rotation follows, and they are the WAL's last writes on every run.
	if err := db.WaitForCompactions(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		m.put(t, db, fmt.Sprintf("key%05d", i*100), fmt.Sprintf("tail%d", i), 0)
	}
	met := db.Metrics()
	levels := 0
	for _, l := range met.Levels {
		if l.Files > 0 {
			levels++
		}
	}
	if levels < 2 {
		t.Fatalf("tables on %d levels, want several: %+v", levels, met.Levels)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return m
}

// listDir lists the files under dir (relative, slash-separated), except the
// lock file.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LOCK" {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func repairOK(t *testing.T, dir string, o *Options) *RepairReport {
	t.Helper()
	rep, err := Repair(dir, o)
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	t.Logf("repair report:\n%s", rep)
	return rep
}

// TestRepairLostManifest removes the manifest of a database with rows on
// several levels and in the WAL: Open refuses, Repair restores every row,
// and a second Repair keeps them all.
func TestRepairLostManifest(t *testing.T) {
	dir := t.TempDir()
	m := buildRepairDB(t, dir)
	if err := os.RemoveAll(filepath.Join(dir, "manifest")); err != nil {
		t.Fatal(err)
	}
	inputs := listDir(t, dir)
	if _, err := Open(dir, m.options()); !errors.Is(err, ErrCorruption) {
		t.Fatalf("Open without a manifest: %v, want ErrCorruption", err)
	}
	rep := repairOK(t, dir, m.options())
	if rep.PreviousManifest != "none" || rep.WALSegmentsRead == 0 || rep.TablesRead == 0 || len(rep.Unreadable) != 0 {
		t.Fatalf("report: %+v", rep)
	}
	// Every input is kept, byte for byte, under the lost directory.
	for _, name := range inputs {
		orig, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			t.Errorf("input %s is still in place", name)
		}
		moved, merr := os.ReadFile(filepath.Join(dir, rep.LostDir, name))
		if merr != nil || (err == nil && !bytes.Equal(orig, moved)) {
			t.Errorf("input %s not under %s: %v", name, rep.LostDir, merr)
		}
	}
	m.verify(t, "after repair", dir, nil)

	rep2 := repairOK(t, dir, m.options())
	if rep2.RowsKept != rep.RowsKept || rep2.Duplicates != 0 || rep2.LastSeq != rep.LastSeq || len(rep2.Unreadable) != 0 {
		t.Fatalf("second repair kept %d rows (%d duplicates, last seq %d), first kept %d (last seq %d)",
			rep2.RowsKept, rep2.Duplicates, rep2.LastSeq, rep.RowsKept, rep.LastSeq)
	}
	m.verify(t, "after the second repair", dir, nil)

	// Lost again: manifest versions restart at 1, the lost directory of
	// this repair must not be the first one's.
	if err := os.RemoveAll(filepath.Join(dir, "manifest")); err != nil {
		t.Fatal(err)
	}
	rep3 := repairOK(t, dir, m.options())
	if rep3.LostDir == rep.LostDir || rep3.LostDir == rep2.LostDir || rep3.RowsKept != rep.RowsKept {
		t.Fatalf("third repair: lost dir %s (earlier %s, %s), %d rows kept", rep3.LostDir, rep.LostDir, rep2.LostDir, rep3.RowsKept)
	}
	m.verify(t, "after the third repair", dir, nil)

	// The repaired database takes writes, and its sequence numbers go on
	// above every repaired row.
	db, err := Open(dir, m.options())
	if err != nil {
		t.Fatal(err)
	}
	m.put(t, db, "key00001", "after", 0)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	m.verify(t, "after a write", dir, nil)
}

// tableRows returns the rows of a table file, copied.
func tableRows(t *testing.T, data []byte, salvage bool) []format.Row {
	t.Helper()
	mem := storage.NewMem()
	if err := mem.PutIfAbsent("t", data); err != nil {
		t.Fatal(err)
	}
	f, err := mem.Open("t")
	if err != nil {
		t.Fatal(err)
	}
	r, err := sstable.Open(f, sstable.ReaderOptions{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []format.Row
	add := func(row *format.Row) {
		c := *row
		c.Key, c.Value = bytes.Clone(c.Key), bytes.Clone(c.Value)
		rows = append(rows, c)
	}
	if salvage {
		s, err := r.NewSalvageIter()
		if err != nil {
			t.Fatal(err)
		}
		for s.Next() {
			add(s.Row())
		}
		return rows
	}
	it := r.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		add(it.Row())
	}
	return rows
}

// TestRepairDamagedBlock damages the first data block of a table: Repair
// keeps the rows of its other blocks and of every other table, reports the
// block and moves the table aside unchanged.
func TestRepairDamagedBlock(t *testing.T) {
	dir := t.TempDir()
	m := newRepairModel()
	db, err := Open(dir, m.options())
	if err != nil {
		t.Fatal(err)
	}
	// Every key once, so that a lost row uncovers nothing older.
	for i := range 3000 {
		k := fmt.Sprintf("key%05d", i)
		switch i % 5 {
		case 1:
			m.put(t, db, k, "ttl-"+k, time.Hour)
		case 3:
			m.del(t, db, k)
		default:
			m.put(t, db, k, "value-"+k+strings.Repeat("x", i%40), 0)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "sst", "*.sst"))
	slices.Sort(names)
	victim := names[len(names)/2]
	orig, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	damaged := bytes.Clone(orig)
	damaged[10] ^= 0xff // inside the first data block
	if err := os.WriteFile(victim, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	kept := tableRows(t, damaged, true)
	all := tableRows(t, orig, false)
	if len(kept) == 0 || len(kept) >= len(all) {
		t.Fatalf("salvage keeps %d of %d rows; want some but not all", len(kept), len(all))
	}
	lost := map[string]bool{}
	for _, r := range all[:len(all)-len(kept)] {
		lost[string(r.Key)] = true
	}
	var before uint64
	for _, n := range names {
		b, _ := os.ReadFile(n)
		before += uint64(len(tableRows(t, b, n == victim)))
	}

	rep := repairOK(t, dir, m.options())
	name := "sst/" + filepath.Base(victim)
	if len(rep.Unreadable) != 1 || rep.Unreadable[0].File != name || rep.Unreadable[0].Offset != 0 {
		t.Fatalf("Unreadable = %+v, want the first block of %s", rep.Unreadable, name)
	}
	if moved, err := os.ReadFile(filepath.Join(dir, rep.Unreadable[0].MovedTo)); err != nil || !bytes.Equal(moved, damaged) {
		t.Fatalf("damaged table not moved aside unchanged: %v", err)
	}
	if rep.RowsKept != before {
		t.Fatalf("kept %d rows, the readable blocks hold %d", rep.RowsKept, before)
	}
	m.verify(t, "after repair", dir, lost)
}

// TestRepairHealthy repairs an intact database twice: every row (every
// version and tombstone in the tables) is kept each time.
func TestRepairHealthy(t *testing.T) {
	dir := t.TempDir()
	m := buildRepairDB(t, dir)
	rep := repairOK(t, dir, m.options())
	if !strings.HasPrefix(rep.PreviousManifest, "version ") || len(rep.Unreadable) != 0 || len(rep.MissingTables) != 0 {
		t.Fatalf("report: %+v", rep)
	}
	m.verify(t, "after repair", dir, nil)
	rep2 := repairOK(t, dir, m.options())
	if rep2.RowsKept != rep.RowsKept || rep2.Duplicates != 0 {
		t.Fatalf("second repair kept %d rows (%d duplicates), first %d", rep2.RowsKept, rep2.Duplicates, rep.RowsKept)
	}
	m.verify(t, "after the second repair", dir, nil)
}

// TestRepairMissingTable removes a table the manifest lists: Open fails
// with ErrCorruption, Repair reports the table as missing and rebuilds from
// the rest.
func TestRepairMissingTable(t *testing.T) {
	dir := t.TempDir()
	m := buildRepairDB(t, dir)
	names, _ := filepath.Glob(filepath.Join(dir, "sst", "*.sst"))
	if err := os.Remove(names[0]); err != nil {
		t.Fatal(err)
	}
	name := "sst/" + filepath.Base(names[0])
	_, err := Open(dir, m.options())
	if !errors.Is(err, ErrCorruption) || !errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Open without %s: %v", name, err)
	}
	rep := repairOK(t, dir, m.options())
	if !slices.Equal(rep.MissingTables, []string{name}) {
		t.Fatalf("MissingTables = %v, want [%s]", rep.MissingTables, name)
	}
	db, err := Open(dir, m.options())
	if err != nil {
		t.Fatalf("Open after repair: %v", err)
	}
	db.Close()
}

func TestRepairReadOnly(t *testing.T) {
	dir := t.TempDir()
	if _, err := Repair(dir, &Options{ReadOnly: true}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Repair with ReadOnly: %v, want ErrReadOnly", err)
	}
	if files := listDir(t, dir); len(files) != 0 {
		t.Fatalf("Repair with ReadOnly wrote %v", files)
	}
}

// TestRepairThroughStorage repairs a database held in a storage.Storage
// other than a local directory (Options.Storage), as on an object store.
func TestRepairThroughStorage(t *testing.T) {
	m := newRepairModel()
	mem := storage.NewMem()
	o := m.options()
	o.Storage = mem
	db, err := Open("mem", o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		k := fmt.Sprintf("key%05d", i%1000)
		if i%7 == 3 {
			m.del(t, db, k)
		} else {
			m.put(t, db, k, fmt.Sprintf("v%d", i), 0)
		}
		if i == 1500 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := mem.List("manifest")
	if err != nil || len(names) == 0 {
		t.Fatalf("manifest versions %v, %v", names, err)
	}
	for _, n := range names {
		if err := mem.Remove(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open("mem", o); !errors.Is(err, ErrCorruption) {
		t.Fatalf("Open without a manifest: %v, want ErrCorruption", err)
	}
	rep := repairOK(t, "mem", o)
	lost, err := mem.List("lost")
	if err != nil || len(lost) != len(rep.Moved) || len(lost) == 0 {
		t.Fatalf("lost/ holds %v (%v); moved %v", lost, err, rep.Moved)
	}
	db, err = Open("mem", o)
	if err != nil {
		t.Fatalf("Open after repair: %v", err)
	}
	defer db.Close()
	for k, v := range m.vals {
		if got, err := db.Get([]byte(k)); err != nil || string(got) != v {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, got, err, v)
		}
	}
	for k := range m.dead {
		if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%s): %v, want ErrNotFound", k, err)
		}
	}
}

// TestRepairSkipsFlushedWAL keeps an already flushed WAL segment beside a
// lost manifest (as an object store keeps fenced segments): its rows were
// flushed, then deleted and compacted away, so Repair must not convert them
// again and bring the deleted key back.
func TestRepairSkipsFlushedWAL(t *testing.T) {
	dir := t.TempDir()
	m := newRepairModel()
	db, err := Open(dir, m.options())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutWith([]byte("gone"), []byte("old"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	segs := []string{filepath.Join(dir, logName(db.logNum))}
	flushed, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("gone")); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("kept"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "manifest")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segs[0], flushed, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := repairOK(t, dir, m.options())
	if rep.WALRecordsFlushed == 0 {
		t.Fatalf("repair converted the flushed segment again: %+v", rep)
	}
	db, err = Open(dir, m.options())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("gone")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key after repair: %q, %v (want ErrNotFound)", v, err)
	}
	if v, err := db.Get([]byte("kept")); err != nil || string(v) != "v" {
		t.Fatalf("kept key after repair: %q, %v", v, err)
	}
}

// TestRepairMergeOperator: a repaired manifest records the merge operator
// its operands need. Without a readable manifest Repair takes the name from
// Options.MergeOperator, refuses (changing nothing) when operands are kept
// and no name is known, and refuses an operator other than the recorded one.
func TestRepairMergeOperator(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	opts := func(op MergeOperator) *Options {
		return &Options{Clock: clk, MemtableSize: 64 << 10, MergeOperator: op}
	}
	db, err := Open(dir, opts(Int64Add))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := db.Merge([]byte(fmt.Sprintf("c%02d", i%20)), EncodeInt64(int64(i)), ExpireAfter(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if i == 100 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// The manifest records the operator: another one is refused.
	if _, err := Repair(dir, opts(Int64Max)); !errors.Is(err, ErrMergeOperator) {
		t.Fatalf("Repair with Int64Max over a manifest recording Int64Add: %v, want ErrMergeOperator", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "manifest")); err != nil {
		t.Fatal(err)
	}
	before := listDir(t, dir)
	_, err = Repair(dir, opts(nil))
	if !errors.Is(err, ErrMergeOperator) || !strings.Contains(err.Error(), "merge operands") {
		t.Fatalf("Repair without an operator of a database with operands: %v, want ErrMergeOperator", err)
	}
	if after := listDir(t, dir); !slices.Equal(before, after) {
		t.Fatalf("a refused repair changed the directory:\nbefore %v\nafter  %v", before, after)
	}

	repairOK(t, dir, opts(Int64Add))
	if _, err := Open(dir, opts(nil)); !errors.Is(err, ErrMergeOperator) {
		t.Fatalf("Open without an operator after repair: %v, want ErrMergeOperator (the name must be recorded)", err)
	}
	db, err = Open(dir, opts(Int64Add))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for c := range 20 {
		want := int64(0)
		for i := c; i < 200; i += 20 {
			want += int64(i)
		}
		v, err := db.Get([]byte(fmt.Sprintf("c%02d", c)))
		if n, _ := DecodeInt64(v); err != nil || n != want {
			t.Fatalf("counter c%02d after repair: %d, %v; want %d", c, n, err, want)
		}
	}
}
