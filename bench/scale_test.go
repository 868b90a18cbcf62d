package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// readIO sees a synced write of 1 MiB, and addTo reports the difference.
func TestReadIO(t *testing.T) {
	before := readIO()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	extra := map[string]float64{}
	readIO().sub(before).addTo(extra)
	if extra["io_write_bytes"] < 1<<20 {
		t.Fatalf("io_write_bytes %v after writing and syncing 1 MiB", extra["io_write_bytes"])
	}
	if _, ok := extra["io_read_bytes"]; !ok {
		t.Fatal("no io_read_bytes")
	}
}
