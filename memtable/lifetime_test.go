package memtable

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
)

// mustPanic fails t unless f panics.
func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s did not panic", what)
		}
	}()
	f()
}

// TestArenaOffHeapAndFreedByLastUnref fills shared chunks and an oversized
// record, checks that the arena is counted by internal/manual, that it stays
// readable while any reference is held, and that the last Unref gives every
// byte back and makes further use panic instead of reading freed memory.
func TestArenaOffHeapAndFreedByLastUnref(t *testing.T) {
	b0, n0 := manual.Allocated()
	m := New(1)
	if b, n := manual.Allocated(); b != b0 || n != n0 {
		t.Fatalf("an empty memtable allocated %d bytes in %d buffers", b-b0, n-n0)
	}
	val := bytes.Repeat([]byte("v"), 1000)
	const rows = 3000 // about 3 MB: several shared chunks
	for i := range rows {
		m.Add(&format.Row{Key: fmt.Appendf(nil, "k%06d", i), Seq: uint64(i + 1), Value: val})
	}
	big := bytes.Repeat([]byte("B"), arenaChunk/2) // a chunk of its own
	m.Add(&format.Row{Key: []byte("big"), Seq: rows + 1, Value: big})

	b, n := manual.Allocated()
	wantMin := int64(rows*(1000+7+recordHeader) + len(big))
	if b-b0 < wantMin || n-n0 < 4 {
		t.Fatalf("arena holds %d bytes in %d buffers, want at least %d bytes in 4", b-b0, n-n0, wantMin)
	}

	m.Ref() // a second holder, e.g. a read state
	m.Unref()
	if m.Released() {
		t.Fatal("Released with a reference held")
	}
	if r, ok := m.Get([]byte("big"), format.MaxSeq); !ok || !bytes.Equal(r.Value, big) {
		t.Fatal("oversized row unreadable while a reference is held")
	}
	it := m.NewIter()
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		count++
	}
	it.Close()
	if count != rows+1 {
		t.Fatalf("iterator saw %d rows, want %d", count, rows+1)
	}

	m.Unref() // the last reference
	if !m.Released() {
		t.Fatal("not Released after the last Unref")
	}
	if b, n := manual.Allocated(); b != b0 || n != n0 {
		t.Fatalf("after the last Unref %d bytes in %d buffers are still allocated", b-b0, n-n0)
	}
	if m.chunks() != nil {
		t.Fatal("the last Unref kept the chunk table reachable")
	}
	if m.Len() != rows+1 || m.Size() == 0 {
		t.Fatalf("Len/Size after release = %d/%d", m.Len(), m.Size())
	}
	mustPanic(t, "Get after release", func() { m.Get([]byte("k000001"), format.MaxSeq) })
	mustPanic(t, "iterating after release", func() { m.NewIter().First() })
	mustPanic(t, "Add after release", func() { m.Add(&format.Row{Key: []byte("x"), Seq: 1}) })
	mustPanic(t, "Ref after release", m.Ref)
	mustPanic(t, "Unref after release", m.Unref)
}

// TestIteratorOutlivesOtherReferences holds an iterator's own reference
// while the creator drops its one: the rows stay readable until the
// iterator's holder lets go.
func TestIteratorOutlivesOtherReferences(t *testing.T) {
	b0, _ := manual.Allocated()
	m := New(1)
	for i := range 100 {
		m.Add(&format.Row{Key: fmt.Appendf(nil, "k%03d", i), Seq: uint64(i + 1), Value: fmt.Appendf(nil, "v%03d", i)})
	}
	m.Ref() // the reader's reference
	it := m.NewIter()
	m.Unref() // the creator's
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := fmt.Sprintf("v%03d", i); string(it.Row().Value) != want {
			t.Fatalf("row %d value %q, want %q", i, it.Row().Value, want)
		}
		i++
	}
	if i != 100 {
		t.Fatalf("iterated %d rows, want 100", i)
	}
	it.Close()
	m.Unref()
	if b, _ := manual.Allocated(); b != b0 {
		t.Fatalf("%d bytes still allocated after the reader's Unref", b-b0)
	}
}
