package mayfly

import (
	"path/filepath"
	"testing"
)

// TestL0StallDefaultsScaleWithMemtable: the default level-0 slowdown and
// stop thresholds are 8 and 12 files at the 16 MiB reference memtable and
// above; below it the slowdown threshold doubles (never more) and the stop
// threshold scales with 16 MiB over the memtable size up to three times (36
// files below 6 MiB+), and explicit thresholds are kept as given (the
// slowdown still clamped to the stop threshold).
func TestL0StallDefaultsScaleWithMemtable(t *testing.T) {
	for _, c := range []struct {
		memtable, wantMemtable int64
		slowdown, stop         int
		wantSlowdown, wantStop int
	}{
		{0, DefaultMemtableSize, 0, 0, 8 * l0StallScale(DefaultMemtableSize), 12 * l0StopScale(DefaultMemtableSize)},
		{64 << 20, 64 << 20, 0, 0, 8, 12},
		{16 << 20, 16 << 20, 0, 0, 8, 12},
		{16<<20 - 1, 16<<20 - 1, 0, 0, 16, 24},
		{8 << 20, 8 << 20, 0, 0, 16, 24},
		{8<<20 - 1, 8<<20 - 1, 0, 0, 16, 36},
		{6 << 20, 6 << 20, 0, 0, 16, 36},
		{4 << 20, 4 << 20, 0, 0, 16, 36},
		{1 << 20, 1 << 20, 0, 0, 16, 36}, // capped at twice and three times
		{4 << 10, 4 << 10, 0, 0, 16, 36},
		{8 << 20, 8 << 20, 8, 12, 8, 12},  // explicit: as given
		{8 << 20, 8 << 20, 0, 6, 6, 6},    // default slowdown clamped to an explicit stop
		{8 << 20, 8 << 20, 10, 0, 10, 24}, // explicit slowdown, default stop
	} {
		o, err := (&Options{MemtableSize: c.memtable, L0SlowdownWritesThreshold: c.slowdown, L0StopWritesThreshold: c.stop}).withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if o.MemtableSize != c.wantMemtable || o.L0SlowdownWritesThreshold != c.wantSlowdown || o.L0StopWritesThreshold != c.wantStop {
			t.Errorf("MemtableSize %d, thresholds %d/%d: got memtable %d, thresholds %d/%d; want %d, %d/%d",
				c.memtable, c.slowdown, c.stop, o.MemtableSize, o.L0SlowdownWritesThreshold, o.L0StopWritesThreshold,
				c.wantMemtable, c.wantSlowdown, c.wantStop)
		}
	}
	// The resolved thresholds are the ones the write path and the picker use.
	db, err := Open(filepath.Join(t.TempDir(), "db"), &Options{MemtableSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.pickerOptsValue().L0SlowdownWritesThreshold; got != 16 || db.opts.L0StopWritesThreshold != 24 {
		t.Fatalf("8 MiB memtable: DB uses thresholds %d/%d, want 16/24", got, db.opts.L0StopWritesThreshold)
	}
}
