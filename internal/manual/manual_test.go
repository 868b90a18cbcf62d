package manual

import (
	"runtime"
	"testing"
)

func TestNewFree(t *testing.T) {
	b0, n0 := Allocated()
	bufs := make([][]byte, 0, 8)
	for _, n := range []int{1, 4096, 4097, 1 << 20} {
		b := New(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("New(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("New(%d): byte %d is %d, want 0", n, i, b[i])
			}
		}
		b[0], b[n-1] = 1, 2 // writable at both ends
		bufs = append(bufs, b)
	}
	if b, n := Allocated(); b-b0 != 1+4096+4097+1<<20 || n-n0 != 4 {
		t.Fatalf("Allocated after 4 New = %d bytes, %d buffers (from %d, %d)", b, n, b0, n0)
	}
	for _, b := range bufs {
		Free(b[:1]) // a reslice from the first byte frees the whole buffer
	}
	Free(nil)
	if b, n := Allocated(); b != b0 || n != n0 {
		t.Fatalf("Allocated after Free = %d bytes, %d buffers, want %d, %d", b, n, b0, n0)
	}
}

func TestNewRejectsNonPositive(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New(0) did not panic")
		}
	}()
	New(0)
}

func TestPurposeCounters(t *testing.T) {
	p0 := PurposeBytes()
	b0, _ := Allocated()
	x := NewFor(PurposeWAL, 8192)
	y := NewFor(PurposeMemtableArena, 4096)
	z := New(4096)
	p := PurposeBytes()
	if p[PurposeWAL]-p0[PurposeWAL] != 8192 || p[PurposeMemtableArena]-p0[PurposeMemtableArena] != 4096 || p[PurposeOther]-p0[PurposeOther] != 4096 {
		t.Fatalf("after New: %v, started at %v", p, p0)
	}
	var sum int64
	for _, n := range p {
		sum += n
	}
	if b, _ := Allocated(); sum != b || b-b0 != 16384 {
		t.Fatalf("purposes sum to %d, Allocated %d (grew %d)", sum, b, b-b0)
	}
	Move(PurposeMemtableArena, PurposeMemtablePooled, len(y))
	if p := PurposeBytes(); p[PurposeMemtableArena] != p0[PurposeMemtableArena] || p[PurposeMemtablePooled]-p0[PurposeMemtablePooled] != 4096 {
		t.Fatalf("after Move: %v", p)
	}
	FreeFor(PurposeWAL, x[:10]) // a reslice frees its whole capacity
	FreeFor(PurposeMemtablePooled, y)
	Free(z)
	if p := PurposeBytes(); p != p0 {
		t.Fatalf("after Free: %v, want %v", p, p0)
	}
	if PurposeReadAhead.String() != "read_ahead" || NumPurposes.String() != "unknown" {
		t.Fatalf("names: %q %q", PurposeReadAhead, NumPurposes)
	}
}

// TestDiscard: a discarded buffer stays handed out (the counters do not
// change) and stays usable; on Linux its pages are given back, so its bytes
// read as zeros.
func TestDiscard(t *testing.T) {
	b := New(64 << 10)
	defer Free(b)
	for i := range b {
		b[i] = 0xAB
	}
	before, n := Allocated()
	Discard(b[16<<10 : 32<<10])
	if after, m := Allocated(); after != before || m != n {
		t.Fatalf("Allocated after Discard = %d bytes, %d buffers, want %d, %d", after, m, before, n)
	}
	b[20<<10] = 1 // still writable
	if runtime.GOOS != "linux" {
		return
	}
	for i := 16 << 10; i < 32<<10; i++ {
		if want := byte(0); i == 20<<10 {
			want = 1
			if b[i] != want {
				t.Fatalf("byte %d = %#x after the write, want %#x", i, b[i], want)
			}
		} else if b[i] != want {
			t.Fatalf("discarded byte %d = %#x, want 0", i, b[i])
		}
	}
	if b[16<<10-1] != 0xAB || b[32<<10] != 0xAB {
		t.Fatal("Discard changed bytes outside the range it was given")
	}
}
