package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// testConformance checks the behaviour every backend must share.
func testConformance(t *testing.T, open func(t *testing.T) Storage) {
	t.Run("SentinelErrorsSayPrefixOnce", func(t *testing.T) {
		s := open(t)
		if err := s.PutIfAbsent("manifest/000001", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		_, openErr := s.Open("sst/000009.sst")
		putErr := s.PutIfAbsent("manifest/000001", []byte("v2"))
		if _, err := s.CreateLog("wal/000001.wal"); err != nil {
			t.Fatal(err)
		}
		_, logErr := s.CreateLog("wal/000001.wal")
		l, err := s.Lock(true)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		_, lockErr := s.Lock(true)
		for _, c := range []struct {
			err, want error
			names     string
		}{
			{openErr, ErrNotExist, "sst/000009.sst"},
			{putErr, ErrExists, "manifest/000001"},
			{logErr, ErrExists, "wal/000001.wal"},
			{lockErr, ErrLocked, ""},
		} {
			if !errors.Is(c.err, c.want) {
				t.Errorf("err = %v, want %v", c.err, c.want)
				continue
			}
			msg := c.err.Error()
			if n := strings.Count(msg, "mayfly/storage:"); n != 1 || !strings.Contains(msg, filepath.FromSlash(c.names)) {
				t.Errorf("%q: want the prefix once (found %d) and the name %q", msg, n, c.names)
			}
		}
	})
	t.Run("CreateCommit", func(t *testing.T) {
		s := open(t)
		w, err := s.Create("sst/000001.sst")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("hello ")); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("world")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Open("sst/000001.sst"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("open before commit: err = %v, want ErrNotExist", err)
		}
		if names := mustList(t, s, "sst"); len(names) != 0 {
			t.Fatalf("list before commit = %q, want empty", names)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("x")); err == nil {
			t.Fatal("write after commit succeeded")
		}
		if got := mustRead(t, s, "sst/000001.sst"); string(got) != "hello world" {
			t.Fatalf("read %q", got)
		}
		r, err := s.Open("sst/000001.sst")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if r.Size() != 11 {
			t.Fatalf("size %d", r.Size())
		}
		buf := make([]byte, 5)
		if n, err := r.ReadAt(buf, 6); n != 5 || string(buf) != "world" || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt = %d %q %v", n, buf, err)
		}
		if n, err := r.ReadAt(buf, 8); n != 3 || err != io.EOF {
			t.Fatalf("short ReadAt = %d, %v; want 3, EOF", n, err)
		}
	})

	t.Run("Abort", func(t *testing.T) {
		s := open(t)
		w, err := s.Create("sst/000002.sst")
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("doomed"))
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Open("sst/000002.sst"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("open after abort: %v", err)
		}
		if names := mustList(t, s, "sst"); len(names) != 0 {
			t.Fatalf("list after abort = %q", names)
		}
	})

	t.Run("OpenMissing", func(t *testing.T) {
		s := open(t)
		_, err := s.Open("nope/000001.sst")
		if !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "000001.sst") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("PutIfAbsent", func(t *testing.T) {
		s := open(t)
		if err := s.PutIfAbsent("manifest/1", []byte("one")); err != nil {
			t.Fatal(err)
		}
		err := s.PutIfAbsent("manifest/1", []byte("two"))
		if !errors.Is(err, ErrExists) {
			t.Fatalf("second put: %v", err)
		}
		if got := mustRead(t, s, "manifest/1"); string(got) != "one" {
			t.Fatalf("read %q", got)
		}
	})

	t.Run("PutIfAbsentRace", func(t *testing.T) {
		s := open(t)
		for round := range 5 {
			name := fmt.Sprintf("manifest/%03d", round)
			const n = 16
			var wg sync.WaitGroup
			errs := make([]error, n)
			start := make(chan struct{})
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[i] = s.PutIfAbsent(name, []byte(fmt.Sprintf("writer %d", i)))
				}()
			}
			close(start)
			wg.Wait()
			winner := -1
			for i, err := range errs {
				switch {
				case err == nil:
					if winner >= 0 {
						t.Fatalf("writers %d and %d both won", winner, i)
					}
					winner = i
				case !errors.Is(err, ErrExists):
					t.Fatalf("writer %d: %v", i, err)
				}
			}
			if winner < 0 {
				t.Fatal("no writer won")
			}
			if got := mustRead(t, s, name); string(got) != fmt.Sprintf("writer %d", winner) {
				t.Fatalf("content %q, winner %d", got, winner)
			}
		}
		if names := mustList(t, s, "manifest"); len(names) != 5 {
			t.Fatalf("list = %q", names)
		}
	})

	t.Run("ListSortedIgnoresTemps", func(t *testing.T) {
		s := open(t)
		for _, n := range []string{"sst/000010.sst", "sst/000002.sst", "sst/000001.sst", "other/x", "sstx/1"} {
			if err := s.PutIfAbsent(n, []byte(n)); err != nil {
				t.Fatal(err)
			}
		}
		pending, err := s.Create("sst/000003.sst") // a temp file in sst/ for Local
		if err != nil {
			t.Fatal(err)
		}
		defer pending.Abort()
		pending.Write([]byte("pending"))
		want := []string{"sst/000001.sst", "sst/000002.sst", "sst/000010.sst"}
		if got := mustList(t, s, "sst"); !slices.Equal(got, want) {
			t.Fatalf("list = %q, want %q", got, want)
		}
		if got := mustList(t, s, "missing"); len(got) != 0 {
			t.Fatalf("list of missing dir = %q", got)
		}
		if _, err := s.List(""); err == nil {
			t.Fatal("List(\"\") succeeded")
		}
	})

	t.Run("Remove", func(t *testing.T) {
		s := open(t)
		if err := s.PutIfAbsent("sst/1", []byte("a")); err != nil {
			t.Fatal(err)
		}
		if err := s.Remove("sst/1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Open("sst/1"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("open after remove: %v", err)
		}
		if err := s.Remove("sst/1"); err != nil {
			t.Fatalf("removing a missing object: %v", err)
		}
		if err := s.PutIfAbsent("sst/1", []byte("b")); err != nil {
			t.Fatalf("put after remove: %v", err)
		}
	})

	t.Run("InvalidNames", func(t *testing.T) {
		s := open(t)
		for _, n := range []string{"", "/abs", "a//b", "a/../b", "./a", "a/", "a\\b", "x.tmp", "LOCK"} {
			if err := s.PutIfAbsent(n, nil); err == nil {
				t.Errorf("PutIfAbsent(%q) succeeded", n)
			}
			if _, err := s.CreateLog(n); err == nil {
				t.Errorf("CreateLog(%q) succeeded", n)
			}
		}
	})

	t.Run("Logs", func(t *testing.T) {
		s := open(t)
		lw, err := s.CreateLog("wal/000001.wal")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateLog("wal/000001.wal"); !errors.Is(err, ErrExists) {
			t.Fatalf("second CreateLog: %v", err)
		}
		var want []byte
		for i := range 100 {
			p := []byte(fmt.Sprintf("record-%d;", i))
			want = append(want, p...)
			if _, err := lw.Write(p); err != nil {
				t.Fatal(err)
			}
			if i%10 == 0 {
				if err := lw.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := lw.Sync(); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, s, "wal/000001.wal"); !bytes.Equal(got, want) {
			t.Fatalf("log content %q", got)
		}
		if err := lw.Close(); err != nil {
			t.Fatal(err)
		}
		if got := mustList(t, s, "wal"); !slices.Equal(got, []string{"wal/000001.wal"}) {
			t.Fatalf("list = %q", got)
		}
		if err := s.Remove("wal/000001.wal"); err != nil {
			t.Fatal(err)
		}
		if got := mustList(t, s, "wal"); len(got) != 0 {
			t.Fatalf("list after remove = %q", got)
		}
	})

	t.Run("LogSyncDuringWrites", func(t *testing.T) {
		// Sync may run while a Write does (LogWriter); run under -race. The
		// log is created preallocated where the backend can, so that the
		// first Sync arms its reservation while writes go on.
		s := open(t)
		lw, err := CreateLogPreallocated(s, "wal/000002.wal")
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		for i := range 2000 {
			want = append(want, fmt.Sprintf("record-%d;", i)...)
		}
		done := make(chan error, 1)
		go func() {
			for off := 0; off < len(want); off += 10 {
				if _, err := lw.Write(want[off:min(off+10, len(want))]); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		var werr error
		for wrote := false; !wrote; {
			select {
			case werr = <-done:
				wrote = true
			default:
			}
			if err := lw.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if werr != nil {
			t.Fatal(werr)
		}
		if err := lw.Close(); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, s, "wal/000002.wal"); !bytes.Equal(got, want) {
			t.Fatalf("log of %d bytes after writes beside syncs, want the %d written in order", len(got), len(want))
		}
	})

	t.Run("Lock", func(t *testing.T) {
		s := open(t)
		ex, err := s.Lock(true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Lock(true); !errors.Is(err, ErrLocked) {
			t.Fatalf("second exclusive lock: %v", err)
		}
		if _, err := s.Lock(false); !errors.Is(err, ErrLocked) {
			t.Fatalf("shared lock under exclusive: %v", err)
		}
		if err := ex.Close(); err != nil {
			t.Fatal(err)
		}
		sh1, err := s.Lock(false)
		if err != nil {
			t.Fatal(err)
		}
		sh2, err := s.Lock(false)
		if err != nil {
			t.Fatalf("second shared lock: %v", err)
		}
		if _, err := s.Lock(true); !errors.Is(err, ErrLocked) {
			t.Fatalf("exclusive lock under shared: %v", err)
		}
		sh1.Close()
		if _, err := s.Lock(true); !errors.Is(err, ErrLocked) {
			t.Fatalf("exclusive lock under one shared: %v", err)
		}
		sh2.Close()
		ex, err = s.Lock(true)
		if err != nil {
			t.Fatalf("exclusive lock after release: %v", err)
		}
		ex.Close()
		if err := ex.Close(); err != nil {
			t.Fatalf("second release: %v", err)
		}
	})
}

func mustList(t *testing.T, s Storage, dir string) []string {
	t.Helper()
	names, err := s.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func mustRead(t *testing.T, s Storage, name string) []byte {
	t.Helper()
	b, err := ReadAll(s, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLocalConformance(t *testing.T) {
	testConformance(t, func(t *testing.T) Storage {
		s, err := NewLocal(filepath.Join(t.TempDir(), "db", "nested"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestMemConformance(t *testing.T) {
	testConformance(t, func(t *testing.T) Storage { return NewMem() })
}

func TestLocalFilesAndTemps(t *testing.T) {
	dir := t.TempDir()
	s, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Create("sst/000001.sst")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("data"))
	tmps, _ := filepath.Glob(filepath.Join(dir, "sst", "*.tmp"))
	if len(tmps) != 1 {
		t.Fatalf("temp files while writing: %q", tmps)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent("manifest/1", []byte("m")); err != nil {
		t.Fatal(err)
	}
	lw, err := s.CreateLog("wal/1")
	if err != nil {
		t.Fatal(err)
	}
	lw.Close()
	for _, p := range []string{"sst/000001.sst", "manifest/1", "wal/1"} {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, fi.Mode().Perm())
		}
		dfi, err := os.Stat(filepath.Dir(filepath.Join(dir, filepath.FromSlash(p))))
		if err != nil {
			t.Fatal(err)
		}
		if dfi.Mode().Perm() != 0o700 {
			t.Errorf("directory of %s mode %v, want 0700", p, dfi.Mode().Perm())
		}
	}
	tmps, _ = filepath.Glob(filepath.Join(dir, "*", "*.tmp"))
	if len(tmps) != 0 {
		t.Fatalf("temp files left: %q", tmps)
	}

	// A temp file left by a crash is ignored by List and removed by RemoveTemps.
	stray := filepath.Join(dir, "sst", "000002.sst.123.tmp")
	if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := mustList(t, s, "sst"); !slices.Equal(got, []string{"sst/000001.sst"}) {
		t.Fatalf("list = %q", got)
	}
	if err := s.RemoveTemps("sst"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("stray temp survived: %v", err)
	}
	// List of a name that is a file, not a directory.
	if got := mustList(t, s, "sst/000001.sst"); len(got) != 0 {
		t.Fatalf("list of a file = %q", got)
	}
	// Open of a directory is not an object.
	if _, err := s.Open("sst"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("open of a directory: %v", err)
	}
}

func TestLocalLockNamesDirectory(t *testing.T) {
	dir := t.TempDir()
	s1, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := NewLocal(dir) // a second handle on the same directory
	if err != nil {
		t.Fatal(err)
	}
	l, err := s1.Lock(true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = s2.Lock(true)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("err = %v; want ErrLocked naming %s", err, dir)
	}
}

func TestNewLocalOnFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLocal(p); err == nil {
		t.Fatal("NewLocal on a file succeeded")
	}
}

func TestMemCrashClone(t *testing.T) {
	m := NewMem()
	if err := m.PutIfAbsent("manifest/1", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	w, _ := m.Create("sst/1")
	w.Write([]byte("committed"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	pending, _ := m.Create("sst/2")
	pending.Write([]byte("not committed"))

	lw, err := m.CreateLog("wal/1")
	if err != nil {
		t.Fatal(err)
	}
	lw.Write([]byte("synced;"))
	if err := lw.Sync(); err != nil {
		t.Fatal(err)
	}
	lw.Write([]byte("unsynced"))
	lw2, _ := m.CreateLog("wal/2") // created, never written
	_ = lw2

	lock, err := m.Lock(true)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()

	c := m.CrashClone()
	if got := mustRead(t, c, "wal/1"); string(got) != "synced;" {
		t.Fatalf("crashed log = %q", got)
	}
	if got := mustRead(t, m, "wal/1"); string(got) != "synced;unsynced" {
		t.Fatalf("original log = %q", got)
	}
	if got := mustRead(t, c, "wal/2"); len(got) != 0 {
		t.Fatalf("empty log = %q", got)
	}
	if got := mustRead(t, c, "sst/1"); string(got) != "committed" {
		t.Fatalf("object = %q", got)
	}
	if got := mustRead(t, c, "manifest/1"); string(got) != "m1" {
		t.Fatalf("object = %q", got)
	}
	if _, err := c.Open("sst/2"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("uncommitted object survived the crash: %v", err)
	}
	// The clone is independent and unlocked.
	cl, err := c.Lock(true)
	if err != nil {
		t.Fatalf("lock on clone: %v", err)
	}
	cl.Close()
	lw.Write([]byte("more"))
	lw.Sync()
	if got := mustRead(t, c, "wal/1"); string(got) != "synced;" {
		t.Fatalf("clone changed with the original: %q", got)
	}
	// Committing the pending writer after the crash affects only the original.
	if err := pending.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open("sst/2"); !errors.Is(err, ErrNotExist) {
		t.Fatal("late commit leaked into the clone")
	}
	// A crash after Sync keeps everything.
	c2 := m.CrashClone()
	if got := mustRead(t, c2, "wal/1"); string(got) != "synced;unsyncedmore" {
		t.Fatalf("second crash log = %q", got)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMemReaderSnapshot(t *testing.T) {
	m := NewMem()
	lw, _ := m.CreateLog("wal/1")
	lw.Write([]byte("abc"))
	r, err := m.Open("wal/1")
	if err != nil {
		t.Fatal(err)
	}
	lw.Write([]byte("def"))
	if r.Size() != 3 {
		t.Fatalf("reader size %d, want the 3 bytes present at Open", r.Size())
	}
	buf := make([]byte, 3)
	if n, err := r.ReadAt(buf, 0); n != 3 || err != nil || string(buf) != "abc" {
		t.Fatalf("ReadAt = %d %v %q", n, err, buf)
	}
}
