package slab

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/mayflydb/mayfly/internal/manual"
)

func TestClassOf(t *testing.T) {
	for i, size := range classSizes {
		if i > 0 && size <= classSizes[i-1] {
			t.Fatalf("class sizes not ascending at %d: %v", i, classSizes)
		}
		lo := 1
		if i > 0 {
			lo = classSizes[i-1] + 1
		}
		for _, n := range []int{lo, (lo + size) / 2, size} {
			if got := classOf(n); got != i {
				t.Fatalf("classOf(%d) = %d (size %d), want %d (size %d)", n, got, classSizes[got], i, size)
			}
		}
	}
	if got := classSizes[len(classSizes)-1]; got != MaxClassSize {
		t.Fatalf("largest class %d, want %d", got, MaxClassSize)
	}
	if len(classSizes) != 94 || ClassSize(4097) != 4224 || ClassSize(4129) != 4224 || ClassSize(MaxClassSize+1) != MaxClassSize+pageSize {
		t.Fatalf("ClassSize(4097) = %d, ClassSize(%d) = %d", ClassSize(4097), MaxClassSize+1, ClassSize(MaxClassSize+1))
	}
}

// TestEveryClass allocates, fills and frees buffers of every class (and a
// large one), checking that buffers do not overlap, that the counters follow,
// and that Close returns every byte to internal/manual.
func TestEveryClass(t *testing.T) {
	m0, n0 := manual.Allocated()
	a := New()
	var bufs []Buf
	sizes := append([]int{1, 4097}, classSizes...)
	sizes = append(sizes, MaxClassSize+1, 3<<20)
	var wantBytes int64
	for i, n := range sizes {
		for j := range 3 {
			b := a.Alloc(n)
			if len(b.B) != n || cap(b.B) != ClassSize(n) {
				t.Fatalf("Alloc(%d): len %d cap %d, want %d, %d", n, len(b.B), cap(b.B), n, ClassSize(n))
			}
			fill(b.B, byte(i*3+j))
			bufs = append(bufs, b)
			wantBytes += int64(ClassSize(n))
		}
	}
	st := a.Stats()
	if st.Bufs != int64(len(bufs)) || st.BufBytes != wantBytes || st.Large != 6 {
		t.Fatalf("stats %+v, want %d bufs of %d bytes, 6 large", st, len(bufs), wantBytes)
	}
	if m, _ := manual.Allocated(); m-m0 != st.SlabBytes+st.LargeBytes {
		t.Fatalf("manual holds %d bytes, allocator says %d slab + %d large", m-m0, st.SlabBytes, st.LargeBytes)
	}
	// Every buffer still holds its own pattern: none overlaps another.
	k := 0
	for i := range sizes {
		for j := range 3 {
			if !all(bufs[k].B, byte(i*3+j)) {
				t.Fatalf("buffer %d (size %d) was overwritten", k, sizes[i])
			}
			k++
		}
	}
	for _, b := range bufs {
		a.Free(b)
	}
	a.Free(Buf{})
	if st := a.Stats(); st.Bufs != 0 || st.BufBytes != 0 || st.Large != 0 || st.LargeBytes != 0 {
		t.Fatalf("after freeing all: %+v", st)
	}
	// One empty slab per class in use is kept until Close.
	if st := a.Stats(); st.Slabs == 0 {
		t.Fatalf("no slab kept after freeing all: %+v", st)
	}
	a.Close()
	if st := a.Stats(); !st.Empty() {
		t.Fatalf("after Close: %+v", st)
	}
	if m, n := manual.Allocated(); m != m0 || n != n0 {
		t.Fatalf("manual.Allocated after Close = %d, %d; want %d, %d", m, n, m0, n0)
	}
}

// TestReuseAndRelease checks that freed blocks are reused before a new slab
// is mapped, that a class keeps one empty slab, and that a second emptied
// slab is unmapped.
func TestReuseAndRelease(t *testing.T) {
	a := New()
	defer a.Close()
	const n = 4096
	per := SlabSize / n
	var bufs []Buf
	for range per {
		bufs = append(bufs, a.Alloc(n))
	}
	if st := a.Stats(); st.Slabs != 1 {
		t.Fatalf("%d blocks of %d: %d slabs, want 1", per, n, st.Slabs)
	}
	freed := bufs[7]
	a.Free(freed)
	again := a.Alloc(n)
	if &again.B[0] != &freed.B[0] {
		t.Fatal("a freed block was not reused")
	}
	bufs[7] = again
	extra := a.Alloc(n) // the first slab is full: a second one
	if st := a.Stats(); st.Slabs != 2 {
		t.Fatalf("%d slabs after overflowing the first, want 2", st.Slabs)
	}
	a.Free(extra) // the second slab empties: kept, the only empty one
	if st := a.Stats(); st.Slabs != 2 {
		t.Fatalf("%d slabs after emptying one, want 2 (one empty kept)", st.Slabs)
	}
	for _, b := range bufs {
		a.Free(b) // the first slab empties too: one of the two goes
	}
	if st := a.Stats(); st.Slabs != 1 || st.Bufs != 0 {
		t.Fatalf("after freeing all: %+v, want 1 slab, 0 bufs", st)
	}
}

func TestPoison(t *testing.T) {
	defer func(p bool) { poison = p }(poison)
	poison = true
	a := New()
	defer a.Close()
	keep := a.Alloc(100)
	b := a.Alloc(100)
	fill(keep.B, 1)
	fill(b.B, 2)
	mem := b.B[:cap(b.B)]
	a.Free(b)
	if !all(mem, PoisonByte) {
		t.Fatal("freed block not poisoned")
	}
	if !all(keep.B, 1) {
		t.Fatal("poisoning touched a live neighbour")
	}
	a.Free(keep)
}

func TestAllocRejectsNonPositive(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Alloc(0) did not panic")
		}
	}()
	New().Alloc(0)
}

// TestConcurrent allocates and frees from several goroutines (run it with
// -race); each checks its buffers keep their pattern.
func TestConcurrent(t *testing.T) {
	m0, n0 := manual.Allocated()
	a := New()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []Buf
			for i := range 2000 {
				b := a.Alloc(1 + (i*977+g*131)%(20<<10))
				fill(b.B, byte(g))
				held = append(held, b)
				if len(held) > 50 {
					for _, h := range held[:25] {
						if !all(h.B, byte(g)) {
							t.Errorf("goroutine %d: a held buffer changed", g)
						}
						a.Free(h)
					}
					held = append(held[:0], held[25:]...)
				}
			}
			for _, h := range held {
				a.Free(h)
			}
		}()
	}
	wg.Wait()
	a.Close()
	if m, n := manual.Allocated(); m != m0 || n != n0 {
		t.Fatalf("manual.Allocated = %d, %d; want %d, %d", m, n, m0, n0)
	}
}

func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

func all(b []byte, v byte) bool {
	return bytes.Count(b, []byte{v}) == len(b)
}

// TestKeptSlabDiscarded: the empty slab a class keeps mapped gives its
// pages past keptResident back to the kernel (they read as zeros when
// next handed out, on Linux), so that memory no buffer uses is not
// resident; refilling it needs no new mapping.
func TestKeptSlabDiscarded(t *testing.T) {
	a := New()
	defer a.Close()
	const n = 4096
	var bufs []Buf
	for range SlabSize / n {
		b := a.Alloc(n)
		for i := range b.B {
			b.B[i] = 0xAB
		}
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		a.Free(b)
	}
	if st := a.Stats(); st.Slabs != 1 || st.SlabMaps != 1 {
		t.Fatalf("after freeing every block: %+v, want the one slab kept", st)
	}
	bufs = bufs[:0]
	for range SlabSize / n {
		bufs = append(bufs, a.Alloc(n))
	}
	defer func() {
		for _, b := range bufs {
			a.Free(b)
		}
	}()
	if st := a.Stats(); st.SlabMaps != 1 {
		t.Fatalf("refilling the kept slab mapped a new one: %+v", st)
	}
	if runtime.GOOS != "linux" {
		return // elsewhere the pages may keep their bytes
	}
	for _, b := range bufs {
		off := uintptr(unsafe.Pointer(&b.B[0])) - uintptr(unsafe.Pointer(&bufs[0].B[0]))
		if off < keptResident {
			continue // kept resident, bytes as they were
		}
		for i, c := range b.B {
			if c != 0 {
				t.Fatalf("byte %d of the block at offset %d is %#x, want 0 (pages past keptResident not given back)", i, off, c)
			}
		}
	}
}
