package tests

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/sstable"
)

// stage moves the data of an env somewhere else in the engine (or nowhere).
type stage struct {
	name  string
	mem   bool // needs a Mem-backed env
	apply func(e *env)
}

var ttlStages = []stage{
	{"memtable", false, func(e *env) {}},
	{"flush", false, func(e *env) { e.flush() }},
	{"compact", false, func(e *env) { e.compact() }},
	{"close+reopen", false, func(e *env) { e.reopen() }},
	{"reopen-without-close", true, func(e *env) { e.crashReopen() }},
}

// TestTTLBoundary checks the visibility rule at every place a row can live:
// a row with deadline D is visible (TTL 0) at D and absent at D+1ms.
func TestTTLBoundary(t *testing.T) {
	for _, st := range ttlStages {
		t.Run(st.name, func(t *testing.T) {
			var e *env
			if st.mem {
				e = newMemEnv(t, nil)
			} else {
				e = newEnv(t, nil)
			}
			must(t, e.db.PutWith([]byte("ttl"), []byte("v"), mayfly.ExpireAfter(10*time.Second), mayfly.Sync))
			must(t, e.db.PutWith([]byte("perm"), []byte("p"), mayfly.NoExpiry(), mayfly.Sync))
			wantTTL(t, e.db, "ttl", 10*time.Second)

			st.apply(e)
			wantValue(t, e.db, "ttl", "v")
			wantTTL(t, e.db, "ttl", 10*time.Second)
			wantNoExpiry(t, e.db, "perm")

			e.clk.Advance(10*time.Second - time.Millisecond)
			wantTTL(t, e.db, "ttl", time.Millisecond)
			e.clk.Advance(time.Millisecond) // now == deadline
			wantValue(t, e.db, "ttl", "v")
			wantTTL(t, e.db, "ttl", 0)

			// Moving the data again exactly at the deadline must keep it.
			st.apply(e)
			wantValue(t, e.db, "ttl", "v")
			wantTTL(t, e.db, "ttl", 0)
			if got := scanAll(t, e.db.NewIter); len(got) != 2 {
				t.Fatalf("scan at deadline = %v; want both keys", got)
			}

			e.clk.Advance(time.Millisecond) // deadline + 1ms
			wantAbsent(t, e.db, "ttl")
			wantTTLNotFound(t, e.db, "ttl")
			wantValue(t, e.db, "perm", "p")
			if got := scanAll(t, e.db.NewIter); len(got) != 1 || got[0].k != "perm" {
				t.Fatalf("scan after deadline = %v; want only perm", got)
			}

			st.apply(e)
			wantAbsent(t, e.db, "ttl")
			wantValue(t, e.db, "perm", "p")
			e.compact()
			e.reopen()
			wantAbsent(t, e.db, "ttl")
			wantValue(t, e.db, "perm", "p")
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestExpireAfterRoundsUpToMillisecond(t *testing.T) {
	e := newEnv(t, nil)
	putTTL(t, e.db, "k", "v", mayfly.ExpireAfter(1500*time.Microsecond))
	wantTTL(t, e.db, "k", 2*time.Millisecond)
	e.clk.Advance(2 * time.Millisecond)
	wantValue(t, e.db, "k", "v")
	e.clk.Advance(time.Millisecond)
	wantAbsent(t, e.db, "k")
}

func TestOverwriteTTLWithNoTTL(t *testing.T) {
	e := newEnv(t, nil)
	putTTL(t, e.db, "k", "short", mayfly.ExpireAfter(time.Second))
	e.flush() // the TTL version is on disk, the permanent one in the memtable
	put(t, e.db, "k", "forever")
	wantNoExpiry(t, e.db, "k")

	e.clk.Advance(time.Hour)
	wantValue(t, e.db, "k", "forever")
	e.flush()
	e.compact()
	wantValue(t, e.db, "k", "forever")
	wantNoExpiry(t, e.db, "k")
	e.reopen()
	e.clk.Advance(1000 * time.Hour)
	wantValue(t, e.db, "k", "forever")
}

func TestOverwriteNoTTLWithTTL(t *testing.T) {
	e := newEnv(t, nil)
	put(t, e.db, "k", "forever")
	putTTL(t, e.db, "k", "short", mayfly.ExpireAfter(time.Second))
	wantValue(t, e.db, "k", "short")
	wantTTL(t, e.db, "k", time.Second)
	e.clk.Advance(time.Second + time.Millisecond)
	wantAbsent(t, e.db, "k")
	e.flush()
	wantAbsent(t, e.db, "k")
}

func TestDeleteTTLKey(t *testing.T) {
	e := newEnv(t, nil)
	putTTL(t, e.db, "k", "v", mayfly.ExpireAfter(time.Hour))
	e.flush()
	del(t, e.db, "k")
	wantAbsent(t, e.db, "k")
	wantTTLNotFound(t, e.db, "k")
	e.flush()
	wantAbsent(t, e.db, "k")
	e.clk.Advance(2 * time.Hour)
	e.compact()
	wantAbsent(t, e.db, "k")
	if m := e.db.Metrics(); m.DiskBytes() != 0 {
		t.Fatalf("deleted and expired key still on disk after full compaction: %+v", m.Levels)
	}
}

func TestDefaultTTL(t *testing.T) {
	e := newEnv(t, func(o *mayfly.Options) { o.DefaultTTL = time.Minute })
	put(t, e.db, "default", "v")
	putTTL(t, e.db, "explicit-default", "v", mayfly.DefaultTTL())
	putTTL(t, e.db, "noexpiry", "v", mayfly.NoExpiry())
	putTTL(t, e.db, "after", "v", mayfly.ExpireAfter(5*time.Second))
	b := e.db.NewBatch()
	must(t, b.Put([]byte("batch-default"), []byte("v")))
	must(t, b.Write(nil))

	wantTTL(t, e.db, "default", time.Minute)
	wantTTL(t, e.db, "explicit-default", time.Minute)
	wantTTL(t, e.db, "batch-default", time.Minute)
	wantNoExpiry(t, e.db, "noexpiry")
	wantTTL(t, e.db, "after", 5*time.Second)

	e.clk.Advance(5*time.Second + time.Millisecond)
	wantAbsent(t, e.db, "after")
	wantValue(t, e.db, "default", "v")
	e.clk.Advance(time.Minute - 5*time.Second)
	wantAbsent(t, e.db, "default")
	wantAbsent(t, e.db, "explicit-default")
	wantAbsent(t, e.db, "batch-default")
	wantValue(t, e.db, "noexpiry", "v")
}

func TestDefaultTTLInvalidOptions(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, 500 * time.Microsecond} {
		_, err := mayfly.Open(t.TempDir(), &mayfly.Options{DefaultTTL: d})
		if !isErr(err, mayfly.ErrInvalidOptions) {
			t.Errorf("Open with DefaultTTL %v: %v; want ErrInvalidOptions", d, err)
		}
	}
}

func TestExpireAtFuture(t *testing.T) {
	e := newEnv(t, nil)
	deadline := epoch.Add(time.Hour)
	// Sub-millisecond parts are truncated: the deadline is epoch+1h exactly.
	putTTL(t, e.db, "k", "v", mayfly.ExpireAt(deadline.Add(700*time.Microsecond)))
	wantTTL(t, e.db, "k", time.Hour)
	e.flush()
	e.clk.Set(deadline)
	wantValue(t, e.db, "k", "v")
	wantTTL(t, e.db, "k", 0)
	e.clk.Advance(time.Millisecond)
	wantAbsent(t, e.db, "k")
}

func TestExpireAtNowIsVisible(t *testing.T) {
	e := newEnv(t, nil)
	putTTL(t, e.db, "k", "v", mayfly.ExpireAt(e.clk.Now()))
	wantValue(t, e.db, "k", "v")
	wantTTL(t, e.db, "k", 0)
}

// TestExpireAtPast: a deadline already passed is accepted, the key reads as
// absent at once, and the older version stays hidden everywhere.
func TestExpireAtPast(t *testing.T) {
	e := newEnv(t, nil)
	put(t, e.db, "k", "old")
	e.compact()
	before := e.db.Metrics().RowsWritten
	putTTL(t, e.db, "k", "late", mayfly.ExpireAt(e.clk.Now().Add(-time.Second)))
	if got := e.db.Metrics().RowsWritten; got != before+1 {
		t.Fatalf("RowsWritten = %d; want %d (past ExpireAt is a real write)", got, before+1)
	}
	wantAbsent(t, e.db, "k")
	wantTTLNotFound(t, e.db, "k")
	e.flush()
	wantAbsent(t, e.db, "k")
	e.compact()
	wantAbsent(t, e.db, "k")
	e.reopen()
	wantAbsent(t, e.db, "k")
	if got := scanAll(t, e.db.NewIter); len(got) != 0 {
		t.Fatalf("scan = %v; want nothing", got)
	}
}

func TestExpireAtMaxDeadline(t *testing.T) {
	e := newEnv(t, nil)
	putTTL(t, e.db, "k", "v", mayfly.ExpireAt(mayfly.MaxDeadline))
	check := func() {
		t.Helper()
		wantValue(t, e.db, "k", "v")
		// ~7973 years away: the remaining time saturates at the largest Duration.
		wantTTL(t, e.db, "k", time.Duration(math.MaxInt64))
	}
	check()
	e.compact()
	check()
	e.reopen()
	check()
}

// TestNoResurrection: an expired row hides the older version beneath it
// wherever each of them lives.
func TestNoResurrection(t *testing.T) {
	for _, where := range []string{"memtable", "L0", "bottom"} {
		t.Run("ttl-version-in-"+where, func(t *testing.T) {
			e := newEnv(t, nil)
			put(t, e.db, "a", "neighbour")
			put(t, e.db, "k", "old")
			put(t, e.db, "z", "neighbour")
			e.compact() // the old, permanent version is at the bottom
			if rows := diskRows(e.db.Metrics()); rows != 3 {
				t.Fatalf("after compaction the tables hold %d rows; want 3", rows)
			}
			putTTL(t, e.db, "k", "new", mayfly.ExpireAfter(time.Second))
			switch where {
			case "L0":
				e.flush()
			case "bottom":
				e.compact()
			}
			wantValue(t, e.db, "k", "new")
			e.clk.Advance(time.Second)
			wantValue(t, e.db, "k", "new")
			e.clk.Advance(time.Millisecond)

			check := func(stage string) {
				t.Helper()
				if v, err := e.db.Get([]byte("k")); !isErr(err, mayfly.ErrNotFound) {
					t.Fatalf("%s: Get(k) = %q, %v; want ErrNotFound (older version resurrected?)", stage, v, err)
				}
				got := scanAll(t, e.db.NewIter)
				if len(got) != 2 || got[0].k != "a" || got[1].k != "z" {
					t.Fatalf("%s: scan = %v; want only a and z", stage, got)
				}
				checkReverse(t, e.db, []string{"z", "a"})
			}
			check("expired")
			e.flush()
			check("flush")
			e.compact()
			check("compact")
			e.reopen()
			check("reopen")
			e.compact()
			check("compact after reopen")
			if rows := diskRows(e.db.Metrics()); rows != 2 {
				t.Fatalf("the tables hold %d rows after expiry and compaction; want 2", rows)
			}
		})
	}
}

// checkReverse asserts a Last/Prev walk yields exactly keys.
func checkReverse(t testing.TB, db *mayfly.DB, keys []string) {
	t.Helper()
	it, err := db.NewIter(nil)
	must(t, err)
	defer it.Close()
	var got []string
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	if len(got) != len(keys) {
		t.Fatalf("reverse scan = %q; want %q", got, keys)
	}
	for i := range keys {
		if got[i] != keys[i] {
			t.Fatalf("reverse scan = %q; want %q", got, keys)
		}
	}
}

func TestNoResurrectionWithSnapshots(t *testing.T) {
	e := newEnv(t, nil)
	put(t, e.db, "a", "neighbour")
	put(t, e.db, "k", "old")
	e.compact()
	snapOld, err := e.db.NewSnapshot()
	must(t, err)
	putTTL(t, e.db, "k", "new", mayfly.ExpireAfter(time.Second))
	e.flush()
	snapNew, err := e.db.NewSnapshot()
	must(t, err)

	e.clk.Advance(time.Second + time.Millisecond)
	wantAbsent(t, e.db, "k")
	wantValue(t, snapOld, "k", "old")
	wantValue(t, snapNew, "k", "new")
	wantTTL(t, snapNew, "k", time.Second)

	e.compact()
	wantAbsent(t, e.db, "k")
	wantValue(t, snapOld, "k", "old")
	wantValue(t, snapNew, "k", "new")

	must(t, snapNew.Close())
	e.compact()
	wantAbsent(t, e.db, "k")
	wantValue(t, snapOld, "k", "old")

	must(t, snapOld.Close())
	e.compact()
	wantAbsent(t, e.db, "k")
	if rows := diskRows(e.db.Metrics()); rows != 1 {
		t.Fatalf("the tables hold %d rows once no snapshot needs k; want 1 (a)", rows)
	}
	e.reopen()
	wantAbsent(t, e.db, "k")
	wantValue(t, e.db, "a", "neighbour")
}

// TestNoResurrectionWhenBaseLevelMovesDown: the base level (where L0
// compacts to) is computed from the bottom level's size. When expiry
// shrinks the bottom, the base moves down below a level that still holds
// older data; L0 must not be compacted beneath it.
func TestNoResurrectionWhenBaseLevelMovesDown(t *testing.T) {
	e := newEnv(t, func(o *mayfly.Options) {
		o.Compression = sstable.NoCompression
		o.LBaseMaxBytes = 32 << 10
		o.LevelSizeRatio = 4
		o.L0CompactionThreshold = 1
		o.DisablePeriodicCompaction = true
		o.TargetFileSize = 64 << 10
	})
	ctx := t.Context()
	// ~512 KiB of rows expiring in a minute, at the bottom: the base level
	// moves up to L4.
	val := strings.Repeat("x", 1000)
	for i := range 512 {
		putTTL(t, e.db, fmt.Sprintf("t%04d", i), val, mayfly.ExpireAfter(time.Minute))
	}
	e.compact()
	must(t, e.db.WaitForCompactions(ctx))
	put(t, e.db, "k1", "v1")
	put(t, e.db, "k2", "v1")
	e.flush()
	must(t, e.db.WaitForCompactions(ctx)) // k1, k2 go to the base level (L4)
	upper := -1
	for l, lm := range e.db.Metrics().Levels {
		if l > 0 && l < len(e.db.Metrics().Levels)-1 && lm.Rows == 2 {
			upper = l
		}
	}
	if upper < 0 {
		t.Fatalf("setup: k1, k2 not in an intermediate level: %+v", e.db.Metrics().Levels)
	}

	// The bottom expires and is dropped: the base moves down to the bottom.
	e.clk.Advance(2 * time.Minute)
	must(t, e.db.WaitForCompactions(ctx))
	wantValue(t, e.db, "k1", "v1")

	del(t, e.db, "k1")
	put(t, e.db, "k2", "v2")
	putTTL(t, e.db, "k3", "x", mayfly.ExpireAfter(time.Millisecond)) // widen nothing; just more L0 data
	e.flush()
	must(t, e.db.WaitForCompactions(ctx))
	t.Logf("levels: %+v", e.db.Metrics().Levels)
	wantAbsent(t, e.db, "k1")
	wantValue(t, e.db, "k2", "v2")
	e.reopen()
	wantAbsent(t, e.db, "k1")
	wantValue(t, e.db, "k2", "v2")
}

// TestClockNeverBelowRecordedTime: a database reopened with a clock source
// behind the time it has recorded reads at the recorded time, so a row that
// had expired stays expired.
func TestClockNeverBelowRecordedTime(t *testing.T) {
	// No compaction: k's table must keep k for the reopened handle to judge.
	e := newEnv(t, func(o *mayfly.Options) { o.DisableAutoCompaction = true })
	putTTL(t, e.db, "k", "v", mayfly.ExpireAfter(time.Minute))
	e.flush() // k is in a table, not yet expired
	e.clk.Advance(time.Hour)
	put(t, e.db, "other", "v")
	e.flush() // the manifest records the engine time, an hour on
	wantAbsent(t, e.db, "k")

	e.clk = clock.NewManual(epoch) // the source is now an hour behind
	e.reopen()
	wantAbsent(t, e.db, "k")
	wantTTLNotFound(t, e.db, "k")
	e.clk.Advance(30 * time.Minute) // still behind the recorded time
	wantAbsent(t, e.db, "k")
	wantValue(t, e.db, "other", "v")
}
