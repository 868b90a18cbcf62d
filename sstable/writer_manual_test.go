package sstable

import (
	"errors"
	"testing"

	"github.com/mayflydb/mayfly/internal/manual"
)

// limitWriter accepts limit bytes, then fails every write.
type limitWriter struct{ n, limit int }

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n+len(p) > l.limit {
		return 0, errors.New("disk full")
	}
	l.n += len(p)
	return len(p), nil
}

// TestWriterFreesFilterMemory: the filter's off-heap hash chunks are freed
// once a table is finished, abandoned with Abort, or fails in Add or in
// Finish, so that manual memory returns to where it started; a second end
// frees nothing more.
func TestWriterFreesFilterMemory(t *testing.T) {
	rows := genRows(12000, 3) // 12000 distinct keys: three chunks of hashes
	opts := WriterOptions{BloomBitsPerKey: 10, Compression: SnappyCompression}
	full, _ := buildTable(t, rows, opts)
	check := func(what string, b0, n0 int64) {
		t.Helper()
		if b, n := manual.Allocated(); b != b0 || n != n0 {
			t.Fatalf("%s: manual memory %d bytes in %d buffers, want %d in %d", what, b, n, b0, n0)
		}
	}
	addAll := func(w *Writer, upto int) error {
		for i := range rows[:upto] {
			if err := w.Add(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	}

	t.Run("finish", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		w := NewWriter(&limitWriter{limit: len(full)}, opts)
		if err := addAll(w, len(rows)); err != nil {
			t.Fatal(err)
		}
		if _, n := manual.Allocated(); n == n0 {
			t.Fatal("a writer with a filter holds no manual memory before Finish")
		}
		if _, err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		check("after Finish", b0, n0)
		w.Abort()
		check("after Abort following Finish", b0, n0)
	})
	t.Run("abort", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		w := NewWriter(&limitWriter{limit: len(full)}, opts)
		if err := addAll(w, len(rows)/2); err != nil {
			t.Fatal(err)
		}
		w.Abort()
		check("after Abort", b0, n0)
		w.Abort()
		if err := w.Add(&rows[len(rows)/2]); err == nil {
			t.Fatal("Add after Abort succeeded")
		}
		if _, err := w.Finish(); err == nil {
			t.Fatal("Finish after Abort succeeded")
		}
		check("after a second Abort, Add and Finish", b0, n0)
	})
	t.Run("error in add", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		w := NewWriter(&limitWriter{limit: len(full) / 3}, opts)
		if err := addAll(w, len(rows)); err == nil {
			t.Fatal("Add into a full disk succeeded")
		}
		if _, err := w.Finish(); err == nil {
			t.Fatal("Finish after a failed Add succeeded")
		}
		check("after a failed Add and Finish", b0, n0)
	})
	t.Run("error in finish", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		w := NewWriter(&limitWriter{limit: len(full) - 1}, opts) // the footer does not fit
		if err := addAll(w, len(rows)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Finish(); err == nil {
			t.Fatal("Finish into a full disk succeeded")
		}
		check("after a failed Finish", b0, n0)
	})
}
