package storage

import (
	"path/filepath"
	"testing"
)

// TestWritebackRequests: a local log and a table being written ask for
// writeback of each writebackStep of bytes as it is written, contiguously
// from the start and never past the bytes written.
func TestWritebackRequests(t *testing.T) {
	l, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	type req struct{ off, n int64 }
	got := map[string][]req{}
	testHookWriteback = func(name string, off, n int64) {
		got[filepath.Base(name)] = append(got[filepath.Base(name)], req{off, n})
	}
	defer func() { testHookWriteback = nil }()

	lw, err := l.CreateLog("wal/000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	ow, err := l.Create("sst/000002.sst")
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 100<<10)
	const total = 25 * 100 << 10 // 2.5 MB: two requests each
	for range total / len(chunk) {
		if _, err := lw.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if _, err := ow.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := ow.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("writeback requests for %d files (%v), want the log and the table", len(got), got)
	}
	for name, reqs := range got {
		next := int64(0)
		for _, r := range reqs {
			if r.off != next || r.n < writebackStep || r.off+r.n > total {
				t.Fatalf("%s: requests %v: not contiguous steps of at least %d within %d bytes", name, reqs, writebackStep, total)
			}
			next = r.off + r.n
		}
		if len(reqs) != 2 || total-next >= writebackStep {
			t.Fatalf("%s: requests %v leave %d bytes unrequested", name, reqs, total-next)
		}
	}
}
