package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenLocalReadOnly: a missing directory or a file is an error and
// nothing is created; an existing directory is read, and every write is
// refused without touching the file system (no lock file either).
func TestOpenLocalReadOnly(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "missing")
	if _, err := OpenLocalReadOnly(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenLocalReadOnly(missing) = %v; want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the missing directory exists now: %v", err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLocalReadOnly(file); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("OpenLocalReadOnly(file) = %v; want ENOTDIR", err)
	}

	dir := filepath.Join(base, "db")
	w, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.PutIfAbsent("sst/000001.sst", []byte("table")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sst", "000002.sst.123.tmp"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenLocalReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := string(mustRead(t, ro, "sst/000001.sst")); got != "table" {
		t.Fatalf("read = %q", got)
	}
	wantRefusesWrites(t, ro, "sst", "wal", "manifest")
	for _, name := range []string{"LOCK", "wal", "manifest"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was created: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sst", "000002.sst.123.tmp")); err != nil {
		t.Errorf("RemoveTemps removed a temporary file: %v", err)
	}
}
