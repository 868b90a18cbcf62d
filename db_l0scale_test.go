package mayfly

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

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
		t.Fatalf("slowdown threshold %d with a 64 KiB memtable, want 16", o.L0SlowdownWritesThreshold)
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

// openSmallMemtableDB opens a DB in a fresh directory with a 64 KiB
// memtable and no compression, on clk.
func openSmallMemtableDB(t *testing.T, clk *clock.Manual) *DB {
	t.Helper()
	return openTestDB(t, t.TempDir(), clk, func(o *Options) {
		o.MemtableSize = 64 << 10
		o.NoCompression = true
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
