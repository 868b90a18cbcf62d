package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPreallocatedLogSteps: a preallocated local log reserves space
// LogPreallocSize (64 KiB) at a time ahead of its writes; it reads back as
// its bytes followed by zeros; Close trims the reserved tail.
func TestPreallocatedLogSteps(t *testing.T) {
	dir := t.TempDir()
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	lw, err := l.CreatePreallocatedLog("wal/000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(dir, "wal", "000001.wal"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	written := int64(0)
	for _, step := range []struct{ writeTo, wantSize int64 }{
		{10, 64 << 10},
		{64 << 10, 64 << 10},
		{64<<10 + 1, 128 << 10},
		{300 << 10, 320 << 10},
		{1536 << 10, 1536 << 10},
		{2<<20 + 1, 2<<20 + 64<<10},
	} {
		chunk := make([]byte, step.writeTo-written)
		for i := range chunk {
			chunk[i] = byte(written+int64(i)) | 1 // never zero
		}
		if _, err := lw.Write(chunk); err != nil {
			t.Fatal(err)
		}
		written = step.writeTo
		if got := size(); got != step.wantSize {
			t.Fatalf("after writing %d bytes the file is %d bytes, want %d", written, got, step.wantSize)
		}
	}
	if err := lw.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if got := size(); got != written {
		t.Fatalf("closed log is %d bytes, want the %d written", got, written)
	}
	data, err := ReadAll(l, "wal/000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range data {
		if b != byte(i)|1 {
			t.Fatalf("byte %d = %#x, want %#x", i, b, byte(i)|1)
		}
	}
}
