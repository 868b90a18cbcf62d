package manual

import "fmt"

// Carver hands out fixed-size chunks carved from larger buffers (slabs), so
// that a writer needing many chunks maps memory once per slab rather than
// once per chunk. Chunks are not freed one by one: FreeAll frees every slab
// at once, when the owner is done with all its chunks. A Carver is not safe
// for concurrent use; its zero value is not usable.
type Carver struct {
	chunk   int
	perSlab int
	purpose Purpose
	slabs   [][]byte
	off     int // next free byte of the last slab
}

// NewCarver returns a Carver of chunk-byte chunks, perSlab of them to a
// slab. A slab's pages take memory only once written, so a slab that is
// mostly unused costs little.
func NewCarver(chunk, perSlab int) *Carver {
	if chunk <= 0 || perSlab <= 0 {
		panic(fmt.Sprintf("manual: NewCarver(%d, %d)", chunk, perSlab))
	}
	return &Carver{chunk: chunk, perSlab: perSlab}
}

// NewCarverFor is NewCarver for slabs counted under purpose p.
func NewCarverFor(p Purpose, chunk, perSlab int) *Carver {
	c := NewCarver(chunk, perSlab)
	c.purpose = p
	return c
}

// Get returns a zeroed chunk (len and cap the chunk size). It stays valid
// until FreeAll.
func (c *Carver) Get() []byte {
	if len(c.slabs) == 0 || c.off+c.chunk > len(c.slabs[len(c.slabs)-1]) {
		c.slabs = append(c.slabs, NewFor(c.purpose, c.chunk*c.perSlab))
		c.off = 0
	}
	s := c.slabs[len(c.slabs)-1]
	b := s[c.off : c.off+c.chunk : c.off+c.chunk]
	c.off += c.chunk
	return b
}

// FreeAll frees every slab; every chunk Get returned becomes invalid. The
// Carver may be used again afterwards. FreeAll of an empty Carver is a no-op.
func (c *Carver) FreeAll() {
	for i, s := range c.slabs {
		FreeFor(c.purpose, s)
		c.slabs[i] = nil
	}
	c.slabs = c.slabs[:0]
	c.off = 0
}
