package diskcache

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/mayflydb/mayfly/storage"
)

// countingStore counts Opens that reach the wrapped storage, and the
// reads made of the objects they return.
type countingStore struct {
	storage.Storage
	opens, reads int
}

func (s *countingStore) Open(name string) (storage.ObjectReader, error) {
	s.opens++
	r, err := s.Storage.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingReader{ObjectReader: r, s: s}, nil
}

type countingReader struct {
	storage.ObjectReader
	s *countingStore
}

func (r *countingReader) ReadAt(p []byte, off int64) (int, error) {
	r.s.reads++
	return r.ObjectReader.ReadAt(p, off)
}

// TestMissCopiesInOneRead: a miss copies a table of the default target
// size with one read of the remote object (one ranged GET on an object
// store), and a larger one in fillChunk pieces.
func TestMissCopiesInOneRead(t *testing.T) {
	inner := &countingStore{Storage: storage.NewMem()}
	c, err := New(inner, t.TempDir(), 64<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{8 << 20, fillChunk + 1} {
		data := bytes.Repeat([]byte{byte(size)}, size)
		name := fmt.Sprintf("sst/%06d.sst", size)
		put(t, inner.Storage, name, data)
		inner.reads = 0
		r, err := c.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		want := (size + fillChunk - 1) / fillChunk
		if inner.reads != want {
			t.Errorf("%d-byte table: %d remote reads, want %d", size, inner.reads, want)
		}
		if got := read(t, c, name); !bytes.Equal(got, data) {
			t.Errorf("%d-byte table: cached copy differs", size)
		}
	}
}

func put(t *testing.T, s storage.Storage, name string, data []byte) {
	t.Helper()
	w, err := s.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s storage.Storage, name string) []byte {
	t.Helper()
	r, err := s.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWriteThroughReadMissEvict(t *testing.T) {
	inner := &countingStore{Storage: storage.NewMem()}
	c, err := New(inner, t.TempDir(), 250, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := bytes.Repeat([]byte("a"), 100)
	put(t, c, "sst/000001.sst", a) // write-through: cached at once
	if got := read(t, c, "sst/000001.sst"); !bytes.Equal(got, a) {
		t.Fatal("wrong bytes from the write-through copy")
	}
	if inner.opens != 0 {
		t.Fatalf("a written object was fetched %d times", inner.opens)
	}
	b := bytes.Repeat([]byte("b"), 100)
	put(t, inner.Storage, "sst/000002.sst", b) // written by someone else
	if got := read(t, c, "sst/000002.sst"); !bytes.Equal(got, b) || inner.opens != 1 {
		t.Fatalf("miss: bytes ok=%v, inner opens %d", bytes.Equal(got, b), inner.opens)
	}
	read(t, c, "sst/000002.sst")
	if inner.opens != 1 {
		t.Fatalf("second read fetched again (%d opens)", inner.opens)
	}
	hits, misses, size := c.Metrics()
	if hits != 2 || misses != 1 || size != 200 {
		t.Fatalf("hits %d misses %d size %d", hits, misses, size)
	}
	// A third object passes the 250-byte budget: the least recently used
	// copy (000001) goes.
	put(t, c, "sst/000003.sst", bytes.Repeat([]byte("c"), 100))
	if _, _, size := c.Metrics(); size > 250 {
		t.Fatalf("cache holds %d bytes, budget 250", size)
	}
	read(t, c, "sst/000001.sst")
	if inner.opens != 2 {
		t.Fatalf("evicted object not fetched again (%d opens)", inner.opens)
	}
	// Non-cached names pass through; Remove drops the copy.
	put(t, c, "manifest/1", []byte("m"))
	read(t, c, "manifest/1")
	if err := c.Remove("sst/000001.sst"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open("sst/000001.sst"); err == nil {
		t.Fatal("removed object still readable")
	}
}

func TestReuseAcrossRestartAndFencing(t *testing.T) {
	dir := t.TempDir()
	inner := storage.NewMem()
	c, err := New(inner, dir, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "sst/000001.sst", []byte("hello"))
	counting := &countingStore{Storage: inner}
	c2, err := New(counting, dir, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, c2, "sst/000001.sst"); string(got) != "hello" || counting.opens != 0 {
		t.Fatalf("copy from an earlier run not reused: %q, %d opens", got, counting.opens)
	}
	w, err := Wrap(inner, t.TempDir(), 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.(storage.LogFencer); ok {
		t.Fatal("a cache over a backend without fencing claims to fence")
	}
}
