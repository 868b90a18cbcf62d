package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// The reference makes one timed RefBlock write per op into a file it
// preallocated, measures the growing file only when asked, and leaves no
// files behind.
func TestFdatasyncRef(t *testing.T) {
	for _, noGrow := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "ref")
		res, err := fdatasyncRef(dir, Params{SyncOps: 16, RefNoGrowing: noGrow}, Result{Engine: "disk", Workload: "fdatasync"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops != 16 || res.OpsPerSec <= 0 || res.P50us <= 0 {
			t.Errorf("noGrow=%v: ops %d, %v ops/s, p50 %vµs", noGrow, res.Ops, res.OpsPerSec, res.P50us)
		}
		if _, ok := res.Extra["growing_file_ops_per_sec"]; ok == noGrow {
			t.Errorf("noGrow=%v: growing-file figure present=%v", noGrow, ok)
		}
		// write_bytes counts what the timed loop dirtied: one block per
		// op where the kernel accounts it (0 where /proc/self/io is absent).
		if b := res.Extra["io_write_bytes_per_op"]; b != 0 && b != RefBlock {
			t.Errorf("noGrow=%v: %v write bytes per op, want %d", noGrow, b, RefBlock)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("noGrow=%v: %s left behind (%v)", noGrow, dir, err)
		}
	}
	if _, err := fdatasyncRef(t.TempDir(), Params{}, Result{}); err == nil {
		t.Error("a reference of 0 ops did not fail")
	}
}
