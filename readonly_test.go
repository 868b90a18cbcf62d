package mayfly

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

// dirState is what a test compares of a directory tree before and after a
// read-only open: every entry's path, kind, size and modification time.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		state[p] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

func wantSameDir(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := dirState(t, dir)
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s was removed", p)
		} else if a != b {
			t.Errorf("%s changed: %s -> %s", p, b, a)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
}

// writeNothing returns a storage on dir that fails the test on any call
// that could change it, however the engine wraps it.
func writeNothing(t *testing.T, dir string) *faultfs.FS {
	t.Helper()
	st, err := storage.OpenLocalReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := faultfs.New(st)
	rec.SetHook(func(ev faultfs.Event) {
		if ev.Phase == faultfs.Before && (ev.Op.Mutating() || ev.Op == faultfs.OpLock) {
			t.Errorf("read-only handle called %s %q", ev.Op, ev.Name)
		}
	})
	return rec
}

// TestReadOnlyOpenMissingDirectory: a read-only Open of a missing
// directory fails with fs.ErrNotExist and creates nothing; a path that is a
// file, or a directory holding no database, fails too and is left as it
// was.
func TestReadOnlyOpenMissingDirectory(t *testing.T) {
	clk := clock.NewManual(epoch)
	base := t.TempDir()
	missing := filepath.Join(base, "typo")
	db, err := Open(missing, &Options{Clock: clk, ReadOnly: true})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		if db != nil {
			db.Close()
		}
		t.Fatalf("read-only Open of a missing directory = %v; want an error naming it, wrapping fs.ErrNotExist", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after the failed open, Stat(%s) = %v; want it still missing", missing, err)
	}

	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(base, "etc")
	if err := os.MkdirAll(filepath.Join(notDB, "conf.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notDB, "hosts"), []byte("127.0.0.1 localhost\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, base)
	if db, err := Open(file, &Options{Clock: clk, ReadOnly: true}); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("read-only Open of a file = %v, %v; want ENOTDIR", db, err)
	}
	if db, err := Open(notDB, &Options{Clock: clk, ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) ||
		!strings.Contains(err.Error(), "no Mayfly database") {
		t.Fatalf("read-only Open of a directory holding no database = %v, %v; want fs.ErrNotExist", db, err)
	}
	wantSameDir(t, base, before)

	// A database a writer created and never wrote to is a database.
	empty := filepath.Join(base, "empty")
	openTestDB(t, empty, clk, nil).Close()
	before = dirState(t, empty)
	ro := openTestDB(t, empty, clk, func(o *Options) { o.ReadOnly = true })
	mustGet(t, ro, "k", "")
	ro.Close()
	wantSameDir(t, empty, before)
}

// TestReadOnlyOpenWritesNothing: read-only opens of a database whose WAL
// holds unflushed rows show them, issue no mutating storage call, leave
// every file (and the absence of a lock file) as it was, and a writer
// opening afterwards still recovers the rows.
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	w := openTestDB(t, dir, clk, nil)
	w.Put([]byte("flushed"), []byte("1"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	w.Put([]byte("wal-only"), []byte("2"))
	w.Delete([]byte("flushed-gone"))
	if err := w.Close(); err != nil { // Close does not flush
		t.Fatal(err)
	}
	// A copy of a database, as a backup restores it, has no lock file.
	if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dir)

	for _, how := range []string{"path", "recorded storage", "path again"} {
		ro := openTestDB(t, dir, clk, func(o *Options) {
			o.ReadOnly = true
			if how == "recorded storage" {
				o.Storage = writeNothing(t, dir)
			}
		})
		mustGet(t, ro, "flushed", "1")
		mustGet(t, ro, "wal-only", "2")
		if _, err := ro.Refresh(); err != nil {
			t.Fatal(err)
		}
		mustGet(t, ro, "wal-only", "2")
		if err := ro.Put([]byte("n"), []byte("v")); !errors.Is(err, ErrReadOnly) {
			t.Fatalf("%s: Put on a read-only handle = %v; want ErrReadOnly", how, err)
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		wantSameDir(t, dir, before)
	}

	w = openTestDB(t, dir, clk, nil)
	defer w.Close()
	mustGet(t, w, "flushed", "1")
	mustGet(t, w, "wal-only", "2")
}

// TestReadOnlyBesideWriter: a read-only handle opens beside a live writer
// in the same process, reads its flushed and WAL rows, keeps reading after
// the writer compacted away the tables it had opened, and sees the new
// state after Refresh.
func TestReadOnlyBesideWriter(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	w := openTestDB(t, dir, clk, nil)
	defer w.Close()
	for i := range 2 {
		for _, k := range []string{"a", "b", "c"} {
			w.Put([]byte(k), fmt.Appendf(nil, "%s%d", k, i))
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutWith([]byte("wal"), []byte("w1"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}

	ro := openTestDB(t, dir, clk, func(o *Options) { o.ReadOnly = true })
	defer ro.Close()
	mustGet(t, ro, "a", "a1")
	mustGet(t, ro, "wal", "w1")
	listed := ro.current.files()

	if err := w.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range listed {
		if _, err := os.Stat(filepath.Join(dir, tableName(f.Meta.Num))); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("table %d the reader opened survived the compaction (%v): the test proves nothing", f.Meta.Num, err)
		}
	}
	mustGet(t, ro, "b", "b1") // through the tables it holds open
	if err := w.PutWith([]byte("b"), []byte("b2"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	if changed, err := ro.Refresh(); err != nil || !changed {
		t.Fatalf("Refresh = %v, %v; want a changed view", changed, err)
	}
	mustGet(t, ro, "b", "b2")
	mustGet(t, ro, "c", "c1")
	mustGet(t, ro, "wal", "w1")
}

// raceStorage is a read-only handle's storage on a writer's directory that
// runs act (once) just before the handle's first operation op on a name
// under prefix: it forces a race with the writer at that point.
func raceStorage(t *testing.T, dir string, op faultfs.Op, prefix string, act func()) *faultfs.FS {
	t.Helper()
	st, err := storage.OpenLocalReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := faultfs.New(st)
	var once sync.Once
	rec.SetHook(func(ev faultfs.Event) {
		if ev.Phase == faultfs.Before && ev.Op == op && strings.HasPrefix(ev.Name, prefix) {
			once.Do(act)
		}
	})
	return rec
}

// newTwoTableWriter opens a writer on dir holding two overlapping tables
// (so that a compaction replaces both) and a synced WAL row.
func newTwoTableWriter(t *testing.T, dir string, clk *clock.Manual) *DB {
	t.Helper()
	w := openTestDB(t, dir, clk, nil)
	for i := range 2 {
		for _, k := range []string{"a", "b"} {
			w.Put([]byte(k), fmt.Appendf(nil, "%s%d", k, i))
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutWith([]byte("wal"), []byte("w1"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestReadOnlyOpenTableCompactedAway: the writer compacts away a table
// between the read-only open's manifest load and its opening of that
// table; the open loads the newer version instead of failing.
func TestReadOnlyOpenTableCompactedAway(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	w := newTwoTableWriter(t, dir, clk)
	defer w.Close()
	compacted := false
	st := raceStorage(t, dir, faultfs.OpOpen, "sst/", func() {
		if err := w.Compact(context.Background(), nil, nil); err != nil {
			t.Error(err)
		}
		compacted = true
	})
	ro := openTestDB(t, dir, clk, func(o *Options) { o.ReadOnly = true; o.Storage = st })
	defer ro.Close()
	if !compacted {
		t.Fatal("the race was not forced")
	}
	mustGet(t, ro, "a", "a1")
	mustGet(t, ro, "b", "b1")
	mustGet(t, ro, "wal", "w1")
}

// TestReadOnlyRefreshTableCompactedAway: as above, for Refresh loading a
// version whose new table the writer compacts away before it is opened.
func TestReadOnlyRefreshTableCompactedAway(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	w := newTwoTableWriter(t, dir, clk)
	defer w.Close()
	ro := openTestDB(t, dir, clk, func(o *Options) { o.ReadOnly = true; o.Storage = writeNothing(t, dir) })
	defer ro.Close()
	w.Put([]byte("c"), []byte("c0"))
	if err := w.Flush(); err != nil { // a table the handle has not opened
		t.Fatal(err)
	}
	compacted := false
	ro.store = storage.ReadOnly(raceStorage(t, dir, faultfs.OpOpen, "sst/", func() {
		if err := w.Compact(context.Background(), nil, nil); err != nil {
			t.Error(err)
		}
		compacted = true
	}))
	if _, err := ro.Refresh(); err != nil {
		t.Fatalf("Refresh racing a compaction = %v", err)
	}
	if !compacted {
		t.Fatal("the race was not forced")
	}
	mustGet(t, ro, "a", "a1")
	mustGet(t, ro, "c", "c0")
	mustGet(t, ro, "wal", "w1")
}

// TestReadOnlyOpenWALFlushedAway: the writer flushes the WAL segment the
// loaded manifest version points at, and deletes it, before the read-only
// open lists the WAL; the open must still show the segment's rows (now in
// a table of a newer version).
func TestReadOnlyOpenWALFlushedAway(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	w := newTwoTableWriter(t, dir, clk)
	defer w.Close()
	flushed := false
	st := raceStorage(t, dir, faultfs.OpList, "wal", func() {
		if err := w.Flush(); err != nil {
			t.Error(err)
		}
		flushed = true
	})
	ro := openTestDB(t, dir, clk, func(o *Options) { o.ReadOnly = true; o.Storage = st })
	defer ro.Close()
	if !flushed {
		t.Fatal("the race was not forced")
	}
	mustGet(t, ro, "wal", "w1")
	mustGet(t, ro, "a", "a1")
}

// TestReadOnlyRefreshWALFlushedAway: a row is appended to the WAL segment
// a read-only handle is tailing, then the writer flushes and deletes that
// segment just before Refresh lists the WAL; Refresh must show the row
// (from the newer manifest version's table).
func TestReadOnlyRefreshWALFlushedAway(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	w := newTwoTableWriter(t, dir, clk)
	defer w.Close()
	ro := openTestDB(t, dir, clk, func(o *Options) { o.ReadOnly = true; o.Storage = writeNothing(t, dir) })
	defer ro.Close()
	mustGet(t, ro, "wal", "w1")
	if err := w.PutWith([]byte("wal2"), []byte("w2"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	flushed := false
	ro.store = storage.ReadOnly(raceStorage(t, dir, faultfs.OpList, "wal", func() {
		if err := w.Flush(); err != nil {
			t.Error(err)
		}
		flushed = true
	}))
	if _, err := ro.Refresh(); err != nil {
		t.Fatal(err)
	}
	if !flushed {
		t.Fatal("the race was not forced")
	}
	mustGet(t, ro, "wal", "w1")
	mustGet(t, ro, "wal2", "w2")
}

// TestReadOnlyMissingTableIsReported: without a newer manifest version, a
// table the manifest lists and the directory lacks is an error, not a
// retry.
func TestReadOnlyMissingTableIsReported(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	w := newTwoTableWriter(t, dir, clk)
	num := w.current.files()[0].Meta.Num
	w.Close()
	if err := os.Remove(filepath.Join(dir, tableName(num))); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(dir, &Options{Clock: clk, ReadOnly: true})
	if err == nil || !strings.Contains(err.Error(), tableName(num)) || strings.Contains(err.Error(), "replaced the manifest") {
		if ro != nil {
			ro.Close()
		}
		t.Fatalf("read-only Open with table %d missing = %v; want an error naming it", num, err)
	}
}

// A child process for TestReadOnlyInAnotherProcess and
// TestReadOnlyMount: it opens the directory in envReadOnlyDir read-only
// and prints "GOT <value>" for the key "k" or "ERROR <err>".
const envReadOnlyDir = "MAYFLY_TEST_READONLY_DIR"

func TestReadOnlyChild(t *testing.T) {
	dir := os.Getenv(envReadOnlyDir)
	if dir == "" {
		t.Skip("runs only as the child of TestReadOnlyInAnotherProcess or TestReadOnlyMount")
	}
	db, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		return
	}
	defer db.Close()
	v, err := db.Get([]byte("k"))
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		return
	}
	fmt.Printf("GOT %s\n", v)
}

// runReadOnlyChild runs TestReadOnlyChild on dir, through wrap (a command
// prefix, or none), and returns its output line.
func runReadOnlyChild(t *testing.T, dir string, wrap ...string) (string, error) {
	t.Helper()
	args := append(wrap, os.Args[0], "-test.run=^TestReadOnlyChild$", "-test.count=1")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), envReadOnlyDir+"="+dir)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "GOT ") || strings.HasPrefix(line, "ERROR ") {
			return line, nil
		}
	}
	return "", fmt.Errorf("child: %v: %s", err, out)
}

// TestReadOnlyInAnotherProcess: a read-only handle in another process
// opens beside this process's live writer and reads its WAL rows.
func TestReadOnlyInAnotherProcess(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	w := openTestDB(t, dir, clk, nil)
	defer w.Close()
	if err := w.PutWith([]byte("k"), []byte("from-the-writer"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	line, err := runReadOnlyChild(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if line != "GOT from-the-writer" {
		t.Fatalf("read-only child beside a live writer: %q", line)
	}
}

// TestReadOnlyMount: a read-only open works on a read-only mount (a bind
// mount remounted read-only in a private mount namespace, so that even
// root cannot write there).
func TestReadOnlyMount(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1) for a private read-only bind mount")
	}
	dir := t.TempDir()
	probe := exec.Command("unshare", "-rm", "sh", "-c", `mount -o bind,ro "$0" "$0" && ! touch "$0/probe" 2>/dev/null`, dir)
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("no read-only bind mount in a user namespace here: %v %s", err, out)
	}
	clk := clock.NewManual(epoch)
	w := openTestDB(t, dir, clk, nil)
	w.Put([]byte("k"), []byte("on-a-read-only-mount"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dir)
	line, err := runReadOnlyChild(t, dir, "unshare", "-rm", "sh", "-c", `mount -o bind,ro "$0" "$0" && exec "$@"`, dir)
	if err != nil {
		t.Fatal(err)
	}
	if line != "GOT on-a-read-only-mount" {
		t.Fatalf("read-only open on a read-only mount: %q", line)
	}
	wantSameDir(t, dir, before)
}

// TestReadOnlyRefreshKeepsWAL: a read-only handle (not a FollowWAL-less
// follower) sees unflushed writes at Open and still sees them after Refresh.
func TestReadOnlyRefreshKeepsWAL(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	db := openTestDB(t, "", clk, func(o *Options) { o.Storage = mem })
	db.Put([]byte("flushed"), []byte("1"))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.PutWith([]byte("wal-only"), []byte("2"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro := openTestDB(t, "", clk, func(o *Options) { o.Storage = mem; o.ReadOnly = true })
	defer ro.Close()
	mustGet(t, ro, "wal-only", "2")
	if _, err := ro.Refresh(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ro, "wal-only", "2")
	mustGet(t, ro, "flushed", "1")
}

// TestReadOnlyHandleReleasesTailMemtables: a read-only handle replays the
// WAL into memtables of its own and replaces them on Refresh; an iterator
// opened before a Refresh that drops them keeps reading its rows, and Close
// gives every arena byte back.
func TestReadOnlyHandleReleasesTailMemtables(t *testing.T) {
	base := arenaBytes()
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	w := openTestDB(t, "", clk, func(o *Options) { o.Storage = mem })
	const n = 1000
	for i := range n {
		if err := w.Put(lifeKey(i), lifeVal(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutWith(lifeKey(n), lifeVal(n, 0), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	ro := openTestDB(t, "", clk, func(o *Options) {
		o.Storage = mem
		o.ReadOnly, o.FollowWAL = true, true
		o.FollowInterval = time.Hour // polled by hand with Refresh
	})
	it, err := ro.NewIter(nil) // reads the handle's WAL memtables
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil { // the rows move to a table...
		t.Fatal(err)
	}
	if _, err := ro.Refresh(); err != nil { // ...and leave the handle's tail
		t.Fatal(err)
	}
	checkScan(t, it, 0, n+1, 0)
	it.Close()
	mustGet(t, ro, string(lifeKey(5)), string(lifeVal(5, 0)))
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Refresh(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Refresh after Close = %v, want ErrClosed", err)
	}
	if err := w.PutWith(lifeKey(0), lifeVal(0, 1), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close of both handles %d arena bytes remain", got-base)
	}

	// A plain read-only handle replays the unflushed row at Open.
	ro = openTestDB(t, "", clk, func(o *Options) { o.Storage = mem; o.ReadOnly = true })
	mustGet(t, ro, string(lifeKey(0)), string(lifeVal(0, 1)))
	if _, err := ro.Refresh(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ro, string(lifeKey(0)), string(lifeVal(0, 1)))
	if arenaBytes() == base {
		t.Fatal("the read-only handle's WAL rows use no arena")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close of the read-only handle %d arena bytes remain", got-base)
	}
}
