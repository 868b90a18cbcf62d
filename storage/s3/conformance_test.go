package s3

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/storage"
)

// TestConformance mirrors the storage package's conformance suite (which
// is unexported there) against the S3 backend, except for Lock: object
// stores have no locks (see TestLockIsNoop).
func TestConformance(t *testing.T) {
	serverConfig(t)

	t.Run("CreateCommit", func(t *testing.T) {
		s := openStore(t, nil)
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
		if _, err := s.Open("sst/000001.sst"); !errors.Is(err, storage.ErrNotExist) {
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
		if err := w.Commit(); err == nil {
			t.Fatal("second commit succeeded")
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
		if n, err := r.ReadAt(buf, 11); n != 0 || err != io.EOF {
			t.Fatalf("ReadAt at end = %d, %v; want 0, EOF", n, err)
		}
		if _, err := r.ReadAt(buf, -1); err == nil {
			t.Fatal("ReadAt at a negative offset succeeded")
		}
	})

	t.Run("EmptyObject", func(t *testing.T) {
		s := openStore(t, nil)
		w, _ := s.Create("sst/empty")
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, s, "sst/empty"); len(got) != 0 {
			t.Fatalf("read %q", got)
		}
	})

	t.Run("Abort", func(t *testing.T) {
		s := openStore(t, nil)
		w, err := s.Create("sst/000002.sst")
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("doomed"))
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Open("sst/000002.sst"); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("open after abort: %v", err)
		}
		if names := mustList(t, s, "sst"); len(names) != 0 {
			t.Fatalf("list after abort = %q", names)
		}
		if err := w.Commit(); err == nil {
			t.Fatal("commit after abort succeeded")
		}
	})

	t.Run("OpenMissing", func(t *testing.T) {
		s := openStore(t, nil)
		_, err := s.Open("nope/000001.sst")
		if !errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), "000001.sst") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("PutIfAbsent", func(t *testing.T) {
		s := openStore(t, nil)
		if err := s.PutIfAbsent("manifest/1", []byte("one")); err != nil {
			t.Fatal(err)
		}
		before := s.Metrics()
		err := s.PutIfAbsent("manifest/1", []byte("two"))
		if !errors.Is(err, storage.ErrExists) {
			t.Fatalf("second put: %v", err)
		}
		if d := s.Metrics().Retries - before.Retries; d != 0 {
			t.Fatalf("a lost conditional write was retried %d times", d)
		}
		if got := mustRead(t, s, "manifest/1"); string(got) != "one" {
			t.Fatalf("read %q", got)
		}
	})

	t.Run("PutIfAbsentRace", func(t *testing.T) {
		s := openStore(t, nil)
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
				case !errors.Is(err, storage.ErrExists):
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

	t.Run("ListSortedWithoutPartsOrPending", func(t *testing.T) {
		s := openStore(t, nil)
		for _, n := range []string{"sst/000010.sst", "sst/000002.sst", "sst/000001.sst", "other/x", "sstx/1", "sst/deeper/1"} {
			if err := s.PutIfAbsent(n, []byte(n)); err != nil {
				t.Fatal(err)
			}
		}
		lw, err := s.CreateLog("sst/000005.log") // several parts, listed once
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			fmt.Fprintf(lw, "rec %d;", i)
			if err := lw.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		defer lw.Close()
		pending, err := s.Create("sst/000003.sst")
		if err != nil {
			t.Fatal(err)
		}
		defer pending.Abort()
		pending.Write([]byte("pending"))
		want := []string{"sst/000001.sst", "sst/000002.sst", "sst/000005.log", "sst/000010.sst", "sst/deeper/1"}
		if got := mustList(t, s, "sst"); !slices.Equal(got, want) {
			t.Fatalf("list = %q, want %q", got, want)
		}
		if got := mustList(t, s, "missing"); len(got) != 0 {
			t.Fatalf("list of missing dir = %q", got)
		}
		if got := mustList(t, s, "sst/000001.sst"); len(got) != 0 {
			t.Fatalf("list of an object = %q", got)
		}
		if _, err := s.List(""); err == nil {
			t.Fatal("List(\"\") succeeded")
		}
	})

	t.Run("ListPaginates", func(t *testing.T) {
		s := openStore(t, nil)
		var want []string
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := range 1100 { // more than one page of 1000 keys
			name := fmt.Sprintf("sst/%06d.sst", i)
			want = append(want, name)
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := s.PutIfAbsent(name, nil); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		before := s.Metrics().Lists
		if got := mustList(t, s, "sst"); !slices.Equal(got, want) {
			t.Fatalf("list has %d names, want %d", len(got), len(want))
		}
		if pages := s.Metrics().Lists - before; pages < 2 {
			t.Fatalf("listing took %d requests, want several pages", pages)
		}
	})

	t.Run("Remove", func(t *testing.T) {
		s := openStore(t, nil)
		if err := s.PutIfAbsent("sst/1", []byte("a")); err != nil {
			t.Fatal(err)
		}
		if err := s.Remove("sst/1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Open("sst/1"); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("open after remove: %v", err)
		}
		if err := s.Remove("sst/1"); err != nil {
			t.Fatalf("removing a missing object: %v", err)
		}
		if err := s.PutIfAbsent("sst/1", []byte("b")); err != nil {
			t.Fatalf("put after remove: %v", err)
		}
		// Removing sst/1 leaves sst/10 alone.
		if err := s.PutIfAbsent("sst/10", []byte("c")); err != nil {
			t.Fatal(err)
		}
		if err := s.Remove("sst/1"); err != nil {
			t.Fatal(err)
		}
		if got := mustList(t, s, "sst"); !slices.Equal(got, []string{"sst/10"}) {
			t.Fatalf("list = %q", got)
		}
	})

	t.Run("InvalidNames", func(t *testing.T) {
		s := openStore(t, nil)
		for _, n := range []string{"", "/abs", "a//b", "a/../b", "./a", "a/", "a\\b", "x.tmp", "LOCK", "wal/1.part-00000001"} {
			if err := s.PutIfAbsent(n, nil); err == nil {
				t.Errorf("PutIfAbsent(%q) succeeded", n)
			}
			if _, err := s.CreateLog(n); err == nil {
				t.Errorf("CreateLog(%q) succeeded", n)
			}
			if _, err := s.Create(n); err == nil {
				t.Errorf("Create(%q) succeeded", n)
			}
		}
	})

	t.Run("Logs", func(t *testing.T) {
		s := openStore(t, nil)
		lw, err := s.CreateLog("wal/000001.wal")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateLog("wal/000001.wal"); !errors.Is(err, storage.ErrExists) {
			t.Fatalf("second CreateLog: %v", err)
		}
		if got := mustRead(t, s, "wal/000001.wal"); len(got) != 0 {
			t.Fatalf("new log holds %q", got)
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
		if err := s.PutIfAbsent("wal/000001.wal.x", nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Remove("wal/000001.wal"); err != nil {
			t.Fatal(err)
		}
		if got := mustList(t, s, "wal"); !slices.Equal(got, []string{"wal/000001.wal.x"}) {
			t.Fatalf("list after remove = %q", got)
		}
		if _, err := s.Open("wal/000001.wal"); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("open of a removed log: %v", err)
		}
		// The name is free again.
		lw, err = s.CreateLog("wal/000001.wal")
		if err != nil {
			t.Fatalf("CreateLog after Remove: %v", err)
		}
		lw.Close()
		// A log cannot take an object's name.
		if err := s.PutIfAbsent("wal/000002.wal", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateLog("wal/000002.wal"); !errors.Is(err, storage.ErrExists) {
			t.Fatalf("CreateLog over an object: %v", err)
		}
	})
}

// TestLockIsNoop: object stores have no locks; fencing replaces them.
func TestLockIsNoop(t *testing.T) {
	s := openStore(t, nil)
	a, err := s.Lock(true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Lock(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRangedReads reads an object and a many-part log at many offsets and
// lengths, crossing part boundaries.
func TestRangedReads(t *testing.T) {
	s := openStore(t, nil)
	rng := mrand.New(mrand.NewPCG(1, 2))
	data := make([]byte, 200<<10)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	w, _ := s.Create("sst/000001.sst")
	w.Write(data)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	lw, err := s.CreateLog("wal/000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); {
		n := min(1+rng.IntN(30<<10), len(data)-off)
		lw.Write(data[off : off+n])
		off += n
		if rng.IntN(3) > 0 || off == len(data) {
			if err := lw.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	lw.Close()
	if err := s.FenceLog("wal/000001.wal"); err != nil { // an empty part inside the log
		t.Fatal(err)
	}
	for _, name := range []string{"sst/000001.sst", "wal/000001.wal"} {
		r, err := s.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if r.Size() != int64(len(data)) {
			t.Fatalf("%s: size %d, want %d", name, r.Size(), len(data))
		}
		for i := range 60 {
			off := rng.IntN(len(data) + 10)
			ln := rng.IntN(40 << 10)
			switch i {
			case 0:
				off, ln = 0, len(data)
			case 1:
				off, ln = len(data)-1, 1
			case 2:
				off, ln = len(data)-5, 10
			}
			buf := make([]byte, ln)
			n, err := r.ReadAt(buf, int64(off))
			wantN := max(0, min(ln, len(data)-off))
			if n != wantN {
				t.Fatalf("%s: ReadAt(%d bytes at %d) = %d, want %d (%v)", name, ln, off, n, wantN, err)
			}
			if n < ln && err != io.EOF {
				t.Fatalf("%s: short ReadAt at %d: err = %v, want EOF", name, off, err)
			}
			if n == ln && err != nil && err != io.EOF {
				t.Fatalf("%s: ReadAt at %d: %v", name, off, err)
			}
			if n > 0 && !bytes.Equal(buf[:n], data[off:off+n]) {
				t.Fatalf("%s: ReadAt(%d bytes at %d) returned wrong bytes", name, ln, off)
			}
		}
		r.Close()
	}
}

// TestLargeObjectSpillAndMultipart writes an object that spills to a
// temporary file and goes up in a multipart upload.
func TestLargeObjectSpillAndMultipart(t *testing.T) {
	s := openStore(t, func(c *Config) {
		c.SpillBytes = 1 << 20
		c.MultipartThreshold = 6 << 20
		c.PartSize = 5 << 20
	})
	data := make([]byte, 12<<20+12345)
	rng := mrand.New(mrand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	w, _ := s.Create("sst/big.sst")
	for off := 0; off < len(data); off += 100 << 10 {
		if _, err := w.Write(data[off:min(off+100<<10, len(data))]); err != nil {
			t.Fatal(err)
		}
	}
	if w.(*objectWriter).f == nil {
		t.Fatal("the writer did not spill to a temporary file")
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if m := s.Metrics(); m.Posts < 2 || m.Puts < 3 {
		t.Fatalf("no multipart upload: %+v", m)
	}
	if got := mustRead(t, s, "sst/big.sst"); !bytes.Equal(got, data) {
		t.Fatal("large object read back differs")
	}
	// A small object spilled to disk but uploaded in one PUT.
	w, _ = s.Create("sst/medium.sst")
	w.Write(data[:3<<20])
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, s, "sst/medium.sst"); !bytes.Equal(got, data[:3<<20]) {
		t.Fatal("medium object read back differs")
	}
}
