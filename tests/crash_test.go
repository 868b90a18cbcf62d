package tests

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
)

// Crash tests. Power loss is simulated with storage.Mem.CrashClone, taken
// while the database is still open: only synced WAL bytes and committed
// objects survive. The local-directory backend cannot be reopened without
// Close (the flock is held by the open handle and the public API has no way
// to drop it), so power loss is tested on Mem only; a process crash on a
// local directory is simulated by copying the directory (page-cache state:
// every written byte, synced or not) while the database is open.

func TestCrashSyncedWritesSurvive(t *testing.T) {
	e := newMemEnv(t, nil)
	db := e.db
	must(t, db.PutWith([]byte("s-perm"), []byte("p"), mayfly.NoExpiry(), mayfly.Sync))
	must(t, db.PutWith([]byte("s-ttl"), []byte("t"), mayfly.ExpireAfter(time.Hour), mayfly.Sync))
	must(t, db.PutWith([]byte("s-at"), []byte("a"), mayfly.ExpireAt(epoch.Add(2*time.Hour)), mayfly.Sync))
	must(t, db.PutWith([]byte("s-del"), []byte("x"), mayfly.NoExpiry(), mayfly.Sync))
	must(t, db.DeleteWith([]byte("s-del"), mayfly.Sync))
	b := db.NewBatch()
	for i := range 10 {
		must(t, b.PutTTL([]byte(fmt.Sprintf("s-batch-%d", i)), []byte("b"), mayfly.ExpireAfter(time.Duration(i+1)*2*time.Minute)))
	}
	must(t, b.Write(mayfly.Sync))

	// Unsynced batches, each of 5 rows; time passes so their deadlines differ.
	for i := range 5 {
		e.clk.Advance(time.Second)
		b := db.NewBatch()
		for j := range 5 {
			must(t, b.PutTTL([]byte(fmt.Sprintf("u%d-%d", i, j)), []byte("u"), mayfly.ExpireAfter(time.Hour)))
		}
		must(t, b.Write(mayfly.NoSync))
	}
	e.clk.Advance(10 * time.Minute) // 10m05s after the synced writes
	e.crashReopen()

	wantValue(t, e.db, "s-perm", "p")
	wantNoExpiry(t, e.db, "s-perm")
	// Deadlines were fixed at commit and survive recovery unchanged.
	wantTTL(t, e.db, "s-ttl", time.Hour-10*time.Minute-5*time.Second)
	wantTTL(t, e.db, "s-at", 2*time.Hour-10*time.Minute-5*time.Second)
	wantAbsent(t, e.db, "s-del")
	for i := range 10 {
		k := fmt.Sprintf("s-batch-%d", i)
		if left := time.Duration(i+1)*2*time.Minute - 10*time.Minute - 5*time.Second; left < 0 {
			wantAbsent(t, e.db, k)
		} else {
			wantTTL(t, e.db, k, left)
		}
	}
	checkBatchesAtomic(t, e.db, 5, 5)

	// The recovered database is durable in its own right: crash again.
	must(t, e.db.PutWith([]byte("after"), []byte("1"), mayfly.NoExpiry(), mayfly.Sync))
	e.crashReopen()
	wantValue(t, e.db, "after", "1")
	wantValue(t, e.db, "s-perm", "p")
	checkBatchesAtomic(t, e.db, 5, 5)
}

// checkBatchesAtomic asserts that for each batch i (keys u<i>-<j>) either all
// or none of its rows are present, and that present batches form a prefix.
func checkBatchesAtomic(t testing.TB, db *mayfly.DB, batches, rows int) {
	t.Helper()
	prevPresent := true
	for i := range batches {
		n := 0
		for j := range rows {
			if _, err := db.Get([]byte(fmt.Sprintf("u%d-%d", i, j))); err == nil {
				n++
			} else if !isErr(err, mayfly.ErrNotFound) {
				t.Fatal(err)
			}
		}
		if n != 0 && n != rows {
			t.Fatalf("batch %d: %d of %d rows survived the crash", i, n, rows)
		}
		if n == rows && !prevPresent {
			t.Fatalf("batch %d survived but an earlier batch did not", i)
		}
		prevPresent = n == rows
	}
}

func TestCrashUnsyncedMadeDurableByLaterSync(t *testing.T) {
	e := newMemEnv(t, nil)
	put(t, e.db, "unsynced-1", "a")
	must(t, e.db.PutWith([]byte("synced"), []byte("b"), mayfly.NoExpiry(), mayfly.Sync))
	put(t, e.db, "unsynced-2", "c") // after the last sync: lost in a power cut
	e.crashReopen()
	wantValue(t, e.db, "unsynced-1", "a")
	wantValue(t, e.db, "synced", "b")
	wantAbsent(t, e.db, "unsynced-2")
}

// TestCrashFlushWALSync: FlushWAL(true) makes the unsynced writes before it
// survive a power cut, and not those after it.
func TestCrashFlushWALSync(t *testing.T) {
	e := newMemEnv(t, nil)
	put(t, e.db, "before-1", "a")
	putTTL(t, e.db, "before-2", "b", mayfly.ExpireAfter(time.Hour))
	must(t, e.db.FlushWAL(true))
	put(t, e.db, "after", "c")
	e.crashReopen()
	wantValue(t, e.db, "before-1", "a")
	wantValue(t, e.db, "before-2", "b")
	wantTTL(t, e.db, "before-2", time.Hour)
	wantAbsent(t, e.db, "after")
}

func TestCrashAfterFlushAndCompact(t *testing.T) {
	e := newMemEnv(t, nil)
	putTTL(t, e.db, "flushed", "1", mayfly.ExpireAfter(time.Minute)) // not synced
	e.flush()
	put(t, e.db, "compacted", "2")
	e.compact()
	put(t, e.db, "lost", "3")
	e.crashReopen()
	wantValue(t, e.db, "flushed", "1")
	wantTTL(t, e.db, "flushed", time.Minute)
	wantValue(t, e.db, "compacted", "2")
	wantAbsent(t, e.db, "lost")
	e.clk.Advance(time.Minute + time.Millisecond)
	wantAbsent(t, e.db, "flushed")
}

// TestCrashRandomPrefix: random writes (synced or not, with TTLs, deletes
// and conditional entries; a batch whose condition fails writes nothing), flushes and compactions, with a small memtable so that WAL
// segments rotate; after each simulated power cut the database must equal
// the model as of some batch boundary at or after the last synced write.
func TestCrashRandomPrefix(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	e := newMemEnv(t, func(o *mayfly.Options) { o.MemtableSize = 16 << 10 })
	type row = crashRow // value and deadline (0: none)
	cur := map[string]row{}
	const nkeys = 40
	for round := range 8 {
		history := []map[string]row{clone(cur)}
		durable := 0
		for op := range 150 {
			sync := rng.IntN(8) == 0
			opts := mayfly.NoSync
			if sync {
				opts = mayfly.Sync
			}
			b := e.db.NewBatch()
			next := clone(cur)
			holds := true // every condition of the batch holds
			for range 1 + rng.IntN(3) {
				k := key(rng.IntN(nkeys))
				switch rng.IntN(9) {
				case 6, 7, 8:
					holds = addConditional(t, rng, b, next, k, e.clk.NowMillis(), fmt.Sprintf("r%d-op%d-c", round, op)) && holds
					continue
				}
				switch rng.IntN(6) {
				case 0:
					must(t, b.Delete([]byte(k)))
					delete(next, k)
				case 1, 2:
					ttl := time.Duration(1+rng.IntN(3000)) * time.Millisecond
					v := fmt.Sprintf("r%d-op%d-%s", round, op, strings.Repeat("x", rng.IntN(200)))
					must(t, b.PutTTL([]byte(k), []byte(v), mayfly.ExpireAfter(ttl)))
					next[k] = row{v, e.clk.NowMillis() + ttl.Milliseconds()}
				default:
					v := fmt.Sprintf("r%d-op%d-%s", round, op, strings.Repeat("y", rng.IntN(200)))
					must(t, b.PutTTL([]byte(k), []byte(v), mayfly.NoExpiry()))
					next[k] = row{v, 0}
				}
			}
			if err := b.Write(opts); !holds {
				if !isErr(err, mayfly.ErrConditionFailed) {
					t.Fatalf("round %d op %d: Write of a batch whose condition fails: %v", round, op, err)
				}
			} else {
				must(t, err)
				cur = next
				history = append(history, clone(cur))
				if sync {
					durable = len(history) - 1
				}
			}
			switch rng.IntN(40) {
			case 0:
				e.flush()
				durable = len(history) - 1
			case 1:
				e.compact()
				durable = len(history) - 1
			}
			if rng.IntN(10) == 0 {
				e.clk.Advance(time.Duration(rng.IntN(500)) * time.Millisecond)
			}
		}
		e.crashReopen()
		now := e.clk.NowMillis()
		// Find the newest history state matching the recovered database.
		got := map[string]string{}
		for _, p := range scanAll(t, e.db.NewIter) {
			got[p.k] = p.v
		}
		match := -1
		for i := len(history) - 1; i >= durable && match < 0; i-- {
			if equalLive(history[i], got, now, func(r row) (string, int64) { return r.v, r.deadline }) {
				match = i
			}
		}
		if match < 0 {
			t.Fatalf("round %d: recovered state matches no batch boundary at or after the last durable point %d of %d", round, durable, len(history)-1)
		}
		cur = history[match]
		// Spot-check point reads and TTLs against the scan.
		for i := range nkeys {
			k := key(i)
			r, ok := cur[k]
			if !ok || (r.deadline != 0 && r.deadline < now) {
				wantAbsent(t, e.db, k)
				continue
			}
			wantValue(t, e.db, k, r.v)
			if r.deadline == 0 {
				wantNoExpiry(t, e.db, k)
			} else {
				wantTTL(t, e.db, k, time.Duration(r.deadline-now)*time.Millisecond)
			}
		}
	}
}

func clone[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// equalLive reports whether the live rows of model at now are exactly got.
func equalLive[R any](model map[string]R, got map[string]string, now int64, f func(R) (string, int64)) bool {
	n := 0
	for k, r := range model {
		v, deadline := f(r)
		if deadline != 0 && deadline < now {
			continue
		}
		n++
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return n == len(got)
}

// --- local directory: process crash and torn WAL tails ---

// copyDir copies a database directory (without its lock file).
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if rel == "LOCK" {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLocalProcessCrash copies the directory of a running database (no
// background work in flight) once FlushWAL(false) has handed the WAL to the
// operating system, and opens the copy: everything written, synced or not,
// is in the page cache and must be recovered.
//
// It copies files, so it runs on a local directory whatever the backend.
func TestLocalProcessCrash(t *testing.T) {
	e := newLocalEnv(t, func(o *mayfly.Options) { o.DisableAutoCompaction = true })
	put(t, e.db, "flushed", "1")
	e.flush()
	must(t, e.db.PutWith([]byte("synced"), []byte("2"), mayfly.ExpireAfter(time.Minute), mayfly.Sync))
	put(t, e.db, "unsynced", "3")
	b := e.db.NewBatch()
	b.Put([]byte("batch-a"), []byte("4"))
	b.Delete([]byte("flushed"))
	must(t, b.Write(nil))
	must(t, e.db.FlushWAL(false))

	dst := t.TempDir()
	copyDir(t, e.dir, dst)
	db, err := mayfly.Open(dst, &mayfly.Options{Clock: e.clk})
	must(t, err)
	defer db.Close()
	wantAbsent(t, db, "flushed")
	wantValue(t, db, "synced", "2")
	wantTTL(t, db, "synced", time.Minute)
	wantValue(t, db, "unsynced", "3")
	wantValue(t, db, "batch-a", "4")
	if m := db.Metrics(); m.WALTornTails != 0 {
		t.Fatalf("WALTornTails = %d after a clean copy; want 0", m.WALTornTails)
	}
}

func walFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	must(t, err)
	// An empty segment is the next one, created ahead of need.
	files = slices.DeleteFunc(files, func(f string) bool { fi, err := os.Stat(f); return err == nil && fi.Size() == 0 })
	sort.Strings(files)
	return files
}

// walRecordEnds returns the offset just past each batch record of WAL
// segment p (sync marks are skipped; see wal/wal.go).
func walRecordEnds(t testing.TB, p string) []int64 {
	t.Helper()
	s, err := storage.NewLocal(filepath.Dir(p))
	must(t, err)
	var num uint64
	_, err = fmt.Sscanf(filepath.Base(p), "%d.wal", &num)
	must(t, err)
	res, err := wal.Replay(s, filepath.Base(p), num, func([]byte) error { return nil })
	must(t, err)
	if res.Torn() {
		t.Fatalf("%s: torn at %d: %s", p, res.TornOffset, res.TornReason)
	}
	data, err := os.ReadFile(p)
	must(t, err)
	var ends []int64
	for off := int64(wal.HeaderSize); off < res.ValidBytes; {
		end := off + int64(wal.RecordLen(int(binary.LittleEndian.Uint32(data[off+4:]))))
		if data[off+8] == wal.RecordTypeFull {
			ends = append(ends, end)
		}
		off = end
	}
	return ends
}

// TestTornWALTail damages the last record of the WAL in several ways and
// checks that recovery drops exactly that batch, counts one torn tail, and
// leaves a database that accepts writes and reopens cleanly.
//
// It edits WAL files, so it runs on a local directory whatever the backend.
func TestTornWALTail(t *testing.T) {
	t.Parallel()
	const batches, rows = 5, 4
	walDeleted := make(chan string, 16)
	base := newLocalEnv(t, func(o *mayfly.Options) {
		o.DisableAutoCompaction = true
		o.EventListener = &mayfly.EventListener{WALDeleted: func(w mayfly.WALInfo) { walDeleted <- w.Segment }}
	})
	put(t, base.db, "flushed", "f")
	base.flush()
	// Flush returns once the table is recorded; the flushed memtable's WAL
	// segment is deleted just after, by the flush goroutine.
	<-walDeleted
	wals := walFiles(t, base.dir)
	if len(wals) != 1 {
		t.Fatalf("WAL files = %v; want exactly one", wals)
	}
	for i := range batches {
		b := base.db.NewBatch()
		for j := range rows {
			must(t, b.PutTTL([]byte(fmt.Sprintf("b%d-%d", i, j)), []byte(fmt.Sprintf("v%d", i)), mayfly.ExpireAfter(time.Hour)))
		}
		must(t, b.Write(mayfly.Sync))
	}
	must(t, base.db.Close())
	if got := walFiles(t, base.dir); len(got) != 1 || got[0] != wals[0] {
		t.Fatalf("WAL files after Close = %v; want %v", got, wals)
	}
	// The segment is preallocated (it ends in zeros, not at its last
	// record), so find the record boundaries by reading it.
	ends := walRecordEnds(t, wals[0])
	if len(ends) != batches {
		t.Fatalf("WAL holds %d records; want %d", len(ends), batches)
	}
	start, end := ends[batches-2], ends[batches-1] // the last record

	type damage struct {
		name      string
		lastKept  bool // the last batch survives
		torn      bool
		transform func(data []byte) []byte
	}
	cases := []damage{
		{"cut at record boundary", false, false, func(d []byte) []byte { return d[:start] }},
		{"garbage appended", true, true, func(d []byte) []byte { return append(d, 0xAB, 0xCD, 0xEF, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10) }},
		{"flipped payload byte", false, true, func(d []byte) []byte { d[end-3] ^= 0x40; return d }},
		{"flipped crc byte", false, true, func(d []byte) []byte { d[start] ^= 0x01; return d }},
	}
	for _, cut := range []int64{1, 4, 8, 9, 10, 20, (end - start) / 2, end - start - 1} {
		cut := cut
		cases = append(cases, damage{fmt.Sprintf("truncated %d bytes into the record", cut), false, true,
			func(d []byte) []byte { return d[:start+cut] }})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, base.dir, dir)
			walPath := filepath.Join(dir, "wal", filepath.Base(wals[0]))
			data, err := os.ReadFile(walPath)
			must(t, err)
			must(t, os.WriteFile(walPath, c.transform(data), 0o600))

			e := &env{t: t, dir: dir, local: true, clk: base.clk}
			e.open()
			t.Cleanup(e.closeQuietly)
			m := e.db.Metrics()
			wantTorn := uint64(0)
			if c.torn {
				wantTorn = 1
			}
			if m.WALTornTails != wantTorn {
				t.Fatalf("WALTornTails = %d; want %d", m.WALTornTails, wantTorn)
			}
			check := func() {
				t.Helper()
				wantValue(t, e.db, "flushed", "f")
				for i := range batches {
					for j := range rows {
						k := fmt.Sprintf("b%d-%d", i, j)
						if i < batches-1 || c.lastKept {
							wantValue(t, e.db, k, fmt.Sprintf("v%d", i))
							wantTTL(t, e.db, k, time.Hour)
						} else {
							wantAbsent(t, e.db, k)
						}
					}
				}
			}
			check()
			must(t, e.db.PutWith([]byte("after"), []byte("a"), mayfly.NoExpiry(), mayfly.Sync))
			e.reopen()
			if m := e.db.Metrics(); m.WALTornTails != 0 {
				t.Fatalf("second reopen: WALTornTails = %d; want 0", m.WALTornTails)
			}
			check()
			wantValue(t, e.db, "after", "a")
			e.reopen()
			check()
			wantValue(t, e.db, "after", "a")
		})
	}
}
