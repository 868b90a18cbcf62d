package s3

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

// TestListLogsReadsOnlyNewParts: ListLogs costs one LIST for every log of a
// directory, its readers cost nothing until read, and reading from an
// offset fetches only the parts past it.
func TestListLogsReadsOnlyNewParts(t *testing.T) {
	s := openStore(t, func(c *Config) { c.FlushInterval = time.Hour })
	var want []byte
	lw, err := s.CreateLog("wal/000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	write := func(p string) {
		t.Helper()
		want = append(want, p...)
		if _, err := lw.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
		if err := lw.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	write("first part ")
	write("second part ")
	if err := s.PutIfAbsent("wal/plain-object", []byte("x")); err != nil {
		t.Fatal(err)
	}
	other, err := s.CreateLog("wal/000002.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	before := s.Metrics()
	logs, err := s.ListLogs("wal")
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Metrics(); d.Requests()-before.Requests() != 1 || d.Lists-before.Lists != 1 {
		t.Fatalf("ListLogs sent %d requests, want one LIST", d.Requests()-before.Requests())
	}
	if len(logs) != 2 || logs[0].Name != "wal/000001.wal" || logs[1].Name != "wal/000002.wal" {
		t.Fatalf("ListLogs = %+v, want the two logs and not the plain object", logs)
	}
	if logs[1].Reader == nil || logs[1].Reader.Size() != 0 || logs[1].FenceOnly {
		t.Fatalf("empty log listed as %+v, want an empty reader", logs[1])
	}
	r := logs[0].Reader
	if r.Size() != int64(len(want)) {
		t.Fatalf("listed size %d, want %d", r.Size(), len(want))
	}
	got := make([]byte, len(want))
	if _, err := r.ReadAt(got, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}

	off := int64(len(want))
	write("third part")
	logs, err = s.ListLogs("wal")
	if err != nil {
		t.Fatal(err)
	}
	r = logs[0].Reader
	before = s.Metrics()
	tail := make([]byte, r.Size()-off)
	if _, err := r.ReadAt(tail, off); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if string(tail) != "third part" {
		t.Fatalf("tail %q, want %q", tail, "third part")
	}
	if d := s.Metrics(); d.RangeGets-before.RangeGets != 1 || d.Requests()-before.Requests() != 1 {
		t.Fatalf("reading the new part sent %d requests (%d ranged GETs), want one ranged GET",
			d.Requests()-before.Requests(), d.RangeGets-before.RangeGets)
	}
}

// TestReleaseLogKeepsFence: releasing a fenced log deletes its data and
// keeps the one empty part its writer would upload next, which still
// fences that writer; releasing an unfenced log removes it whole.
func TestReleaseLogKeepsFence(t *testing.T) {
	s := openStore(t, func(c *Config) { c.FlushInterval = time.Hour })
	lw, err := s.CreateLog("wal/000003.wal")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"aaa", "bbb", "ccc"} {
		lw.Write([]byte(p))
		if err := lw.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FenceLog("wal/000003.wal"); err != nil {
		t.Fatal(err)
	}
	kept, err := s.ReleaseLog("wal/000003.wal")
	if err != nil || !kept {
		t.Fatalf("ReleaseLog of a fenced log = %v, %v; want a kept marker", kept, err)
	}
	parts, err := s.listParts("wal/000003.wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 || parts[0].n != 5 || parts[0].size != 0 {
		t.Fatalf("parts after release = %+v, want only the empty part 5", parts)
	}
	logs, err := s.ListLogs("wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 || !logs[0].FenceOnly || logs[0].Reader != nil {
		t.Fatalf("released log listed as %+v, want FenceOnly without a reader", logs)
	}
	if _, err := s.Open("wal/000003.wal"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("Open of a released log = %v, want ErrNotExist", err)
	}
	// The writer has not noticed the fence: its next upload must fail.
	lw.Write([]byte("late"))
	if err := lw.Sync(); !errors.Is(err, ErrFenced) {
		t.Fatalf("writer's sync after the release = %v, want ErrFenced", err)
	}
	// Releasing again changes nothing.
	if kept, err := s.ReleaseLog("wal/000003.wal"); err != nil || !kept {
		t.Fatalf("second ReleaseLog = %v, %v; want the marker kept", kept, err)
	}

	plain, err := s.CreateLog("wal/000004.wal")
	if err != nil {
		t.Fatal(err)
	}
	plain.Write([]byte("data"))
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	if kept, err := s.ReleaseLog("wal/000004.wal"); err != nil || kept {
		t.Fatalf("ReleaseLog of an unfenced log = %v, %v; want it removed whole", kept, err)
	}
	if names := mustList(t, s, "wal"); len(names) != 1 || names[0] != "wal/000003.wal" {
		t.Fatalf("List after the releases = %v, want only the fenced log's marker", names)
	}
}
