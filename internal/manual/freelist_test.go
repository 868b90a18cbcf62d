package manual

import (
	"sync"
	"testing"
)

// inUse is the memory handed out and not idle in a FreeList.
func inUse() (bytes, count int64) {
	b, n := Allocated()
	ib, in := Idle()
	return b - ib, n - in
}

func TestFreeListReusesAndBounds(t *testing.T) {
	b0, n0 := Allocated()
	ib0, in0 := Idle()
	l := NewFreeList(8192, 2)
	x, y, z := l.Get(), l.Get(), l.Get()
	if len(x) != 8192 || cap(x) != 8192 {
		t.Fatalf("Get: len %d cap %d", len(x), cap(x))
	}
	if b, n := Allocated(); b-b0 != 3*8192 || n-n0 != 3 {
		t.Fatalf("after 3 Get: %d bytes, %d buffers allocated", b-b0, n-n0)
	}
	x[0] = 7
	l.Put(x[:1])
	l.Put(y)
	l.Put(z) // the list is full: z is freed
	if b, n := Allocated(); b-b0 != 2*8192 || n-n0 != 2 {
		t.Fatalf("after 3 Put into a list of 2: %d bytes, %d buffers allocated, want 2 buffers", b-b0, n-n0)
	}
	if ib, in := Idle(); ib-ib0 != 2*8192 || in-in0 != 2 {
		t.Fatalf("Idle = %d bytes, %d buffers, want 2 buffers", ib, in)
	}
	// LIFO: y comes back first, then x with its contents (not zeroed).
	if got := l.Get(); &got[0] != &y[0] {
		t.Fatal("Get did not reuse the last buffer Put")
	}
	got := l.Get()
	if &got[0] != &x[0] || got[0] != 7 || len(got) != 8192 {
		t.Fatalf("second Get: reused %v, byte 0 = %d, len %d", &got[0] == &x[0], got[0], len(got))
	}
	if b, n := Allocated(); b-b0 != 2*8192 || n-n0 != 2 {
		t.Fatalf("reuse allocated: %d bytes, %d buffers", b-b0, n-n0)
	}
	Free(got)
	Free(y)
	if b, n := Allocated(); b != b0 || n != n0 {
		t.Fatalf("after freeing all: %d bytes, %d buffers, want %d, %d", b, n, b0, n0)
	}
	if ib, in := Idle(); ib != ib0 || in != in0 {
		t.Fatalf("Idle = %d, %d after emptying the list", ib, in)
	}
}

func TestFreeListPutForeignPanics(t *testing.T) {
	l := NewFreeList(4096, 1)
	defer func() {
		if recover() == nil {
			t.Fatal("Put of a buffer of another size did not panic")
		}
	}()
	l.Put(make([]byte, 100))
}

func TestFreeListConcurrent(t *testing.T) {
	b0, n0 := inUse()
	_, in0 := Idle()
	l := NewFreeList(4096, 3)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				b := l.Get()
				b[0], b[4095] = byte(g), byte(i)
				if b[0] != byte(g) || b[4095] != byte(i) {
					t.Errorf("buffer shared between goroutines")
					return
				}
				l.Put(b)
			}
		}()
	}
	wg.Wait()
	if b, n := inUse(); b != b0 || n != n0 {
		t.Fatalf("in use after all Put: %d bytes, %d buffers, want %d, %d", b, n, b0, n0)
	}
	if _, n := Idle(); n-in0 > 3 {
		t.Fatalf("%d idle buffers in a list of at most 3", n)
	}
}

func TestCarver(t *testing.T) {
	b0, n0 := Allocated()
	c := NewCarver(1024, 4)
	var chunks [][]byte
	for i := range 9 {
		b := c.Get()
		if len(b) != 1024 || cap(b) != 1024 {
			t.Fatalf("chunk %d: len %d cap %d", i, len(b), cap(b))
		}
		for j := range b {
			if b[j] != 0 {
				t.Fatalf("chunk %d not zeroed", i)
			}
		}
		for j := range b {
			b[j] = byte(i + 1)
		}
		chunks = append(chunks, b)
	}
	for i, b := range chunks { // chunks do not overlap
		for j := range b {
			if b[j] != byte(i+1) {
				t.Fatalf("chunk %d byte %d = %d, overwritten by another chunk", i, j, b[j])
			}
		}
	}
	// 9 chunks of 4 per slab: 3 slabs.
	if b, n := Allocated(); b-b0 != 3*4*1024 || n-n0 != 3 {
		t.Fatalf("after 9 chunks: %d bytes, %d buffers", b-b0, n-n0)
	}
	c.FreeAll()
	c.FreeAll()
	if b, n := Allocated(); b != b0 || n != n0 {
		t.Fatalf("after FreeAll: %d bytes, %d buffers, want %d, %d", b, n, b0, n0)
	}
	c.Get() // usable again
	c.FreeAll()
	if b, n := Allocated(); b != b0 || n != n0 {
		t.Fatalf("after reuse and FreeAll: %d bytes, %d buffers", b, n)
	}
}

func TestFreeListClose(t *testing.T) {
	b0, n0 := Allocated()
	ib0, in0 := Idle()
	l := NewFreeList(4096, 4)
	x, y := l.Get(), l.Get()
	l.Put(x)
	l.Close()
	if ib, in := Idle(); ib != ib0 || in != in0 {
		t.Fatalf("Idle after Close = %d bytes, %d buffers, want %d, %d", ib, in, ib0, in0)
	}
	l.Put(y) // after Close: freed, not kept
	z := l.Get()
	l.Put(z)
	l.Close()
	if b, n := Allocated(); b != b0 || n != n0 {
		t.Fatalf("after Close: %d bytes, %d buffers allocated, want %d, %d", b, n, b0, n0)
	}
}
