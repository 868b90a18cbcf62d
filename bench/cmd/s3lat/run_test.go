package main

import (
	"path/filepath"
	"testing"
	"time"
)

// TestPhasesOnLocalDirectory runs every phase on local directories (no
// request counters there) with small settings and checks what each
// measured.
func TestPhasesOnLocalDirectory(t *testing.T) {
	dir := t.TempDir()
	p := params{
		valueSize: 100, writers: 2, writeDur: 20 * time.Millisecond, rate: 1000, steadyDur: 20 * time.Millisecond,
		keys: 5000, coldReads: 100, warmReads: 500, readers: 2, readDur: 20 * time.Millisecond, tmp: t.TempDir(),
	}
	loc := func(phase string) (string, error) { return filepath.Join(dir, phase), nil }
	r := &result{rtt: 0}
	if err := writes(p, r, loc, t.Logf); err != nil {
		t.Fatal(err)
	}
	if r.sync.ops == 0 || r.nosync.ops == 0 {
		t.Errorf("write phases made %d synced and %d unsynced writes", r.sync.ops, r.nosync.ops)
	}
	if r.steady.ops != 20 {
		t.Errorf("steady phase made %d writes, want 20 (1000/s for 20ms)", r.steady.ops)
	}
	if err := reads(p, r, loc, t.Logf); err != nil {
		t.Fatal(err) // reads checks, by a scan, that the fixture holds its keys
	}
	if r.fixtureTables == 0 || r.fixtureBytes == 0 {
		t.Errorf("fixture: %d tables, %d bytes", r.fixtureTables, r.fixtureBytes)
	}
	if r.cold.ops != 100 || r.warm.ops != 500 || r.readTput.ops == 0 {
		t.Errorf("reads: %d cold, %d warm, %d in the throughput phase", r.cold.ops, r.warm.ops, r.readTput.ops)
	}
	if r.copied.size == 0 || r.whole.size != r.copied.size || r.whole.table != r.copied.table {
		t.Errorf("table fetches: %+v and %+v", r.copied, r.whole)
	}
}
