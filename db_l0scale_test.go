package mayfly

import (
	"context"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// TestShortLivedL0SmallMemtable: a stream of 5 s TTL rows through a memtable
// so small that it fills about twice a second keeps ten or more level-0
// tables alive, more than the reference ShortLivedL0Limit (6) and the
// slowdown threshold (8). With the limit scaled by the memtable size they
// wait for their whole-file drops: no level-0 compaction merges them into
// the base level (after which no level-0 table could be dropped whole), and
// no write is slowed down. Live rows read back throughout.
func TestShortLivedL0SmallMemtable(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) {
		o.MemtableSize = 64 << 10
		o.NoCompression = true
	})
	defer db.Close()
	const perStep = 100 // 1000 rows/s in 100 ms steps
	maxL0, n := 0, 0
	churnSteps(t, db, clk, 300, perStep, func(step int) { // 30 s of clock
		n += perStep
		maxL0 = max(maxL0, db.Metrics().Levels[0].Files)
		if step%50 == 49 {
			for i := n - 4000; i < n; i += 7 { // written within the last 4 s
				mustGet(t, db, string(churnKey(i)), string(churnValue(i)))
			}
		}
	})
	m := db.Metrics()
	t.Logf("flushes %d, drops %d, compactions %v, max level-0 files %d, slowdowns %d, stalls %d",
		m.Flushes, m.WholeFileDrops, m.CompactionsByKind, maxL0, m.WriteSlowdowns, m.WriteStalls)
	if maxL0 <= 8 {
		t.Errorf("level 0 held at most %d files: the test does not pass the reference limit", maxL0)
	}
	if c := m.CompactionsByKind["l0"]; c != 0 {
		t.Errorf("%d level-0 compactions merged short-lived tables (max %d level-0 files)", c, maxL0)
	}
	if m.WholeFileDrops < m.Flushes/2 {
		t.Errorf("%d whole-file drops of %d flushed tables", m.WholeFileDrops, m.Flushes)
	}
	if m.WriteSlowdowns != 0 || m.WriteStalls != 0 {
		t.Errorf("%d write slowdowns, %d stalls with short-lived level-0 tables only", m.WriteSlowdowns, m.WriteStalls)
	}
}

// churnSteps writes perStep rows of 5 s TTL (churnKey order, continuing
// across steps), advances the clock by 100 ms and waits for the background,
// steps times, calling after with the step's index after each.
func churnSteps(t *testing.T, db *DB, clk *clock.Manual, steps, perStep int, after func(step int)) {
	t.Helper()
	ctx := context.Background()
	n := 0
	for step := range steps {
		for range perStep {
			if err := db.PutTTL(churnKey(n), churnValue(n), ExpireAfter(5*time.Second)); err != nil {
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
