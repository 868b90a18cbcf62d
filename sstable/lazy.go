package sstable

// Lazy table metadata: the index and the filter are loaded on first use.
//
// In a write-heavy workload most tables are flushed, opened, compacted away
// and deleted without serving a single point lookup; holding their decoded
// index and filter from Open on made them most of the live heap of a fill.
// So Open reads only the footer and properties, and:
//
//   - the point index (the index block decoded, pointindex.go) is built the
//     first time GetAfterFilter or a user iterator (NewIter, Reset) needs
//     it; the raw index block is dropped once decoded;
//   - the filter is decoded the first time MayContain needs it;
//   - a compaction iterator uses the point index if it is already loaded
//     and otherwise walks the stored index block, read for itself outside
//     the Go heap and freed when it closes (rawindex.go), so a table that
//     is only ever compacted holds no metadata.
//
// Loads are serialised by one mutex: concurrent first users wait for the
// one load instead of repeating it, and later users find the result with
// an atomic load (the fast path is one pointer load). A failed load stores
// nothing, so the next caller tries again: an I/O error on an object store
// may be transient, and a corrupt block fails the same way every time.
// Each loaded structure is charged to the block cache when it is stored,
// and Close gives back everything charged, exactly once; a load after
// Close fails instead of charging memory that nothing would give back.
// The point index lives outside the Go heap and is reference-counted
// (pointindex.go): Close drops the Reader's reference, an iterator still
// open keeps the index until it closes, and a Get or iterator started after
// Close fails with errReaderClosed.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// errReaderClosed is returned by a metadata load after Close.
var errReaderClosed = errors.New("sstable: reader is closed")

// lazyMeta holds a Reader's metadata loaded on first use.
type lazyMeta struct {
	index  atomic.Pointer[pointIndex]
	filter atomic.Pointer[tableFilter]

	mu      sync.Mutex // serialises loads and close
	closed  bool       // under mu
	charged int64      // bytes charged to the cache, under mu
}

// charge records n bytes of loaded metadata, charging them to c. The
// caller holds mu.
func (m *lazyMeta) charge(c *Cache, n int64) {
	m.charged += n
	c.charge(n)
}

// close gives back what was charged to c, drops the Reader's reference to
// the point index (freeing it unless an iterator or a Get still holds one)
// and makes later loads fail.
func (m *lazyMeta) close(c *Cache) {
	m.mu.Lock()
	n := m.charged
	m.charged, m.closed = 0, true
	px := m.index.Swap(nil)
	m.mu.Unlock()
	c.charge(-n)
	if px != nil {
		px.unref()
	}
}

// lazyLoad returns *p, calling read to fill it (under m.mu, charging the bytes
// that size reports to c) if it is not loaded yet. A failed read stores
// nothing.
func lazyLoad[T any](m *lazyMeta, p *atomic.Pointer[T], c *Cache, name string, read func() (*T, error), size func(*T) int64) (*T, error) {
	if v := p.Load(); v != nil {
		return v, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v := p.Load(); v != nil {
		return v, nil
	}
	if m.closed {
		return nil, fmt.Errorf("%w: %s", errReaderClosed, name)
	}
	v, err := read()
	if err != nil {
		return nil, err
	}
	p.Store(v)
	m.charge(c, size(v))
	return v, nil
}

// loadedIndex returns the table's point index, loading it on first use,
// with a reference taken for the caller, who must unref it when done.
func (r *Reader) loadedIndex() (*pointIndex, error) {
	px, err := lazyLoad(&r.meta, &r.meta.index, r.cache, r.name, r.readPointIndex, (*pointIndex).bytes)
	if err != nil {
		return nil, err
	}
	if !px.tryRef() {
		// Close dropped the last reference since the load.
		return nil, fmt.Errorf("%w: %s", errReaderClosed, r.name)
	}
	return px, nil
}

// loadedFilter returns the table's filter, loading it on first use. The
// table must have one.
func (r *Reader) loadedFilter() (*tableFilter, error) {
	return lazyLoad(&r.meta, &r.meta.filter, r.cache, r.name, r.readFilter, (*tableFilter).bytes)
}

// compactionIndex returns the index a compaction iterator walks: the loaded
// point index if there is one, else the index block read for the caller
// alone as a rawIndex (rawindex.go), which the caller owns and must free,
// or, for a block that is not one entry per restart, a private point index.
func (r *Reader) compactionIndex() (*pointIndex, *rawIndex, error) {
	if px := r.meta.index.Load(); px != nil && px.tryRef() {
		return px, nil, nil
	}
	r.meta.mu.Lock()
	closed := r.meta.closed
	r.meta.mu.Unlock()
	if closed {
		return nil, nil, fmt.Errorf("%w: %s", errReaderClosed, r.name)
	}
	mem, b, err := r.readIndexBuf()
	if err != nil {
		return nil, nil, err
	}
	off := int64(r.footer.index.offset)
	x, err := newRawIndex(b, r.name, off, r.dataEnd)
	if x != nil {
		x.mem = mem
		return nil, x, nil
	}
	var px *pointIndex
	if err == nil {
		px, err = buildPointIndex(b, r.name, off, r.dataEnd)
	}
	mem.free()
	return px, nil, err
}

// readPointIndex reads, checks and decodes the index block. The stored
// block is read outside the Go heap too, and freed once decoded.
func (r *Reader) readPointIndex() (*pointIndex, error) {
	mem, b, err := r.readIndexBuf()
	if err != nil {
		return nil, err
	}
	defer mem.free()
	return buildPointIndex(b, r.name, int64(r.footer.index.offset), r.dataEnd)
}

// bytes returns the memory px holds.
func (px *pointIndex) bytes() int64 { return int64(len(px.mem.b)) }

// bytes returns the memory f holds.
func (f *tableFilter) bytes() int64 {
	if f.legacy != nil {
		return int64(f.legacy.Cap() / 8)
	}
	return int64(8 * cap(f.blocked.words))
}
