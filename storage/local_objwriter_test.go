package storage

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/mayflydb/mayfly/internal/manual"
)

// manualInUse is the manual memory handed out and not idle in a free list.
func manualInUse() (bytes, count int64) {
	b, n := manual.Allocated()
	ib, in := manual.Idle()
	return b - ib, n - in
}

// TestLocalObjectWriterBuffering: writes smaller than, equal to and larger
// than the buffer, in any mix, land in the file in order and in full.
func TestLocalObjectWriterBuffering(t *testing.T) {
	l, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 4096, objectWriteBuf - 1, 1, objectWriteBuf, 3 * objectWriteBuf, 0, 17, objectWriteBuf + 5, 4000}
	for i := range 40 {
		sizes = append(sizes, rng.IntN(3*objectWriteBuf)+i%2)
	}
	w, err := l.Create("sst/000001.sst")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, n := range sizes {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		if got, err := w.Write(p); err != nil || got != n {
			t.Fatalf("Write of %d bytes = %d, %v", n, got, err)
		}
		want = append(want, p...)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(l.Dir(), "sst", "000001.sst"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes, differing from the %d written", len(got), len(want))
	}
}

// TestLocalObjectWriterFreesBuffer: the write buffer goes back to the free
// list exactly once at Commit, at Abort, and after a failed write, so the
// manual memory in use returns to its start; the free list keeps at most
// objectBufsIdle buffers idle.
func TestLocalObjectWriterFreesBuffer(t *testing.T) {
	l, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b0, n0 := manualInUse()
	ib0, in0 := manual.Idle()
	check := func(when string) {
		t.Helper()
		if b, n := manualInUse(); b != b0 || n != n0 {
			t.Fatalf("%s: %d manual bytes in %d buffers in use, want %d in %d", when, b, n, b0, n0)
		}
		if _, n := manual.Idle(); n-in0 > objectBufsIdle {
			t.Fatalf("%s: %d idle buffers, want at most %d", when, n, objectBufsIdle)
		}
	}
	data := bytes.Repeat([]byte("x"), 5000)
	var ws []ObjectWriter
	for i := range 4 { // four at once: two more than the list keeps
		w, err := l.Create("sst/" + string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if b, n := manualInUse(); n-n0 != 4 || b-b0 != 4*objectWriteBuf {
		t.Fatalf("4 writers use %d manual bytes in %d buffers", b-b0, n-n0)
	}
	for i, w := range ws {
		var err error
		if i%2 == 0 {
			err = w.Commit()
		} else {
			err = w.Abort()
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(); err != nil { // a second end is a no-op
			t.Fatal(err)
		}
		if err := w.Commit(); err == nil {
			t.Fatal("Commit after Commit or Abort succeeded")
		}
		if _, err := w.Write(data); err == nil {
			t.Fatal("Write after Commit or Abort succeeded")
		}
	}
	check("after Commit and Abort")

	// A write error: the file is closed under the writer.
	w, err := l.Create("sst/failed")
	if err != nil {
		t.Fatal(err)
	}
	w.(*localObjectWriter).f.Close()
	if _, err := w.Write(make([]byte, 2*objectWriteBuf)); err == nil {
		t.Fatal("Write to a closed file succeeded")
	}
	if _, err := w.Write(data); err == nil {
		t.Fatal("Write after a failed write succeeded")
	}
	if err := w.Commit(); err == nil {
		t.Fatal("Commit after a failed write succeeded")
	}
	check("after a failed write and Commit")
	if _, err := os.Stat(filepath.Join(l.Dir(), "sst", "failed")); !os.IsNotExist(err) {
		t.Fatalf("failed object exists: %v", err)
	}
	// Close frees the idle buffers: nothing is left, idle or in use.
	a0, c0 := manual.Allocated()
	ib, in := manual.Idle()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if a, c := manual.Allocated(); a != a0-(ib-ib0) || c != c0-(in-in0) {
		t.Fatalf("Close left %d bytes in %d buffers allocated, want %d in %d", a, c, a0-(ib-ib0), c0-(in-in0))
	}
}
