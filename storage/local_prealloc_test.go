package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPreallocatedLogSteps: a preallocated local log grows with its writes
// until its first Sync, then reserves space LogPreallocSize (64 KiB) at a
// time ahead of them; it reads back as its bytes followed by zeros; Close
// trims the reserved tail.
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
	for _, step := range []struct {
		writeTo, wantSize int64
		syncAfter         bool
	}{
		{writeTo: 10, wantSize: 10},
		{writeTo: 5000, wantSize: 5000, syncAfter: true},
		{writeTo: 5001, wantSize: 64 << 10},
		{writeTo: 64 << 10, wantSize: 64 << 10},
		{writeTo: 64<<10 + 1, wantSize: 128 << 10},
		{writeTo: 300 << 10, wantSize: 320 << 10},
		{writeTo: 1536 << 10, wantSize: 1536 << 10},
		{writeTo: 2<<20 + 1, wantSize: 2<<20 + 64<<10},
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
		if step.syncAfter {
			if err := lw.Sync(); err != nil {
				t.Fatal(err)
			}
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
