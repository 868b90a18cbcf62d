package sstable

// Reader: opens a table and reads its blocks.
//
// Open reads, from the end of the file backwards, the footer (64 bytes) and
// the properties block, checking both CRCs. That is all a table costs in
// memory while nothing reads it. The rest of the metadata is loaded on first
// use (lazy.go):
//
//	index block  -> decoded into the point index (pointindex.go), the first
//	                time a Get or a user iterator needs it;
//	filter block -> decoded, the first time a point lookup asks MayContain.
//
// Each is read, CRC-checked and decoded once, then kept (and charged to the
// block cache, charge.go) until Close; the raw index block is not kept.
// A load that fails returns the corruption or I/O error, naming the file and
// the block's offset, and is tried again by the next caller. Compaction
// iterators read the index block for their own lifetime, outside the Go
// heap, without decoding or pinning it (rawindex.go), and never read the
// filter. Data blocks are read on demand through the block
// cache.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/storage"
)

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Cache holds data blocks; nil reads every block from the file.
	Cache *Cache
	// FileNum keys this table's blocks in Cache. Readers sharing a Cache
	// must use distinct numbers for distinct files; 0 makes the cache assign
	// a unique id (blocks are then not shared with other Readers).
	FileNum uint64
	// Name is the file's name, used in errors.
	Name string
	// ReadAhead is the largest single read, in bytes, that an iterator
	// moving forward through consecutive data blocks makes to fetch the
	// blocks ahead of it (readahead.go). Zero or negative disables
	// read-ahead: every data block is then read on its own. Point lookups
	// (Get) never read ahead.
	ReadAhead int
	// CompactionReadAhead is ReadAhead for the iterators of
	// NewCompactionIter. Zero means ReadAhead; negative disables
	// read-ahead for them.
	CompactionReadAhead int
	// ReadAheadAfter is how many forward steps from one data block to the
	// next an iterator makes reading block by block before it starts
	// reading ahead (counted again after every seek), so that a short
	// range scan does not fetch and decode a window it will not use. Zero
	// reads ahead from the first step.
	ReadAheadAfter int
	// IndependentMisses makes each point lookup that misses the cache read
	// and decode the block itself, even while another lookup is reading
	// the same block; the first to finish caches it. That suits a local
	// file, where a read is a copy from the page cache and a duplicate is
	// rare and cheap, and saves every miss the bookkeeping that shares
	// one read among concurrent misses. Leave it off on an object store,
	// where each read is a request.
	IndependentMisses bool
}

// Reader reads one table. It is safe for concurrent use.
type Reader struct {
	f       storage.ObjectReader
	name    string
	cache   *Cache
	cacheID uint64
	size    int64
	footer  footer
	props   *Properties
	dataEnd uint64 // end of the data blocks: the first metadata block's offset
	raMax   int    // ReaderOptions.ReadAhead; <= 0 disables read-ahead
	raComp  int    // the same for compaction iterators
	raAfter int    // ReaderOptions.ReadAheadAfter
	alone   bool   // ReaderOptions.IndependentMisses

	getPool sync.Pool // *getState for Get

	meta lazyMeta // index and filter, loaded on first use (lazy.go)
}

// Open opens a table, reading and verifying its footer and properties. The
// index and filter are read and verified on first use, so a corrupt index
// or filter surfaces as an error of the first Get, MayContain or iterator
// that needs it (and of Check). On error the caller still owns f.
func Open(f storage.ObjectReader, opts ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, name: opts.Name, cache: opts.Cache, size: f.Size(), raMax: opts.ReadAhead, raComp: opts.CompactionReadAhead, raAfter: opts.ReadAheadAfter, alone: opts.IndependentMisses}
	if r.raComp == 0 {
		r.raComp = r.raMax
	}
	if r.cache != nil {
		r.cacheID = opts.FileNum
		if r.cacheID == 0 {
			r.cacheID = r.cache.newID()
		}
	}
	if r.size < FooterLen {
		return nil, corruptf(r.name, 0, "file of %d bytes is shorter than the %d-byte footer", r.size, FooterLen)
	}
	var fb [FooterLen]byte
	if err := r.readAt(fb[:], r.size-FooterLen); err != nil {
		return nil, err
	}
	var err error
	if r.footer, err = decodeFooter(fb[:], r.size, r.name); err != nil {
		return nil, err
	}
	r.dataEnd = min(r.footer.props.offset, r.footer.index.offset)
	if fh := r.footer.filter; fh != (blockHandle{}) {
		r.dataEnd = min(r.dataEnd, fh.offset)
	}
	if r.props, err = r.readProperties(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reader) readProperties() (*Properties, error) {
	h := r.footer.props
	b, err := r.readBlock(h, "properties")
	if err != nil {
		return nil, err
	}
	p, err := decodeProperties(b, r.name, int64(h.offset))
	if err != nil {
		return nil, err
	}
	p.Size = uint64(r.size)
	return p, nil
}

// readIndex reads and checks the index block onto the Go heap.
func (r *Reader) readIndex() ([]byte, error) { return r.readIndexInto(nil) }

// readIndexBuf reads and checks the index block into a metadata buffer
// (metabuf.go) that the caller owns and must free. The block is b; it lies
// in the buffer unless it was too large for a pooled read and stored
// uncompressed (then it is a Go heap buffer of its own and the returned
// buffer is empty). On error nothing is left to free.
func (r *Reader) readIndexBuf() (metaBuf, []byte, error) {
	var mb metaBuf
	b, err := r.readIndexInto(func(n int) []byte {
		mb.free() // never called twice today; free rather than leak if it were
		mb = newIndexBlockBuf(n)
		return mb.b
	})
	if err != nil || !mb.holds(b) {
		mb.free()
	}
	if err != nil {
		return metaBuf{}, nil, err
	}
	return mb, b, nil
}

// readIndexInto reads the index block, decoding it into a buffer from
// alloc, and checks its restart array against the data block count.
func (r *Reader) readIndexInto(alloc blockAlloc) ([]byte, error) {
	h := r.footer.index
	b, err := r.readBlockInto(h, "index", alloc)
	if err != nil {
		return nil, err
	}
	var it blockIter
	if err := it.init(b, r.name, int64(h.offset), true); err != nil {
		return nil, err
	}
	if (it.numRestarts == 0) != (r.props.NumDataBlocks == 0) {
		return nil, corruptf(r.name, int64(h.offset), "index block disagrees with %d data blocks", r.props.NumDataBlocks)
	}
	return b, nil
}

func (r *Reader) readFilter() (*tableFilter, error) {
	h := r.footer.filter
	if h == (blockHandle{}) {
		return nil, nil
	}
	b, err := r.readBlock(h, "filter")
	if err != nil {
		return nil, err
	}
	return decodeFilter(b, r.name, int64(h.offset))
}

func (r *Reader) readAt(p []byte, off int64) error {
	n, err := r.f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	return r.readErr(off, err)
}

// readErr wraps the error of a read that came back short at off.
func (r *Reader) readErr(off int64, err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("sstable: reading %s at %d: %w", r.name, off, err)
}

// readBlock reads the block at h, verifies its trailer and returns its
// decoded bytes, in an allocation of their own sized to the block. The
// stored bytes go through a pooled buffer (a compressed block is decoded
// into a fresh one, an uncompressed one copied out), so a block read
// allocates once; blocks larger than maxPooledReadBuf are read into a
// buffer of their own instead, so the pool never keeps a huge one.
func (r *Reader) readBlock(h blockHandle, kind string) ([]byte, error) {
	return r.readBlockInto(h, kind, nil)
}

// readBlockInto is readBlock decoding into a buffer from alloc (except a
// block above maxPooledReadBuf stored uncompressed, which stays in its own
// Go heap read buffer).
func (r *Reader) readBlockInto(h blockHandle, kind string, alloc blockAlloc) ([]byte, error) {
	if !h.within(uint64(r.size - FooterLen)) {
		return nil, corruptf(r.name, int64(h.offset), "%s block handle %d+%d outside the file", kind, h.offset, h.length)
	}
	n := int(h.length + trailerLen)
	if n > maxPooledReadBuf {
		buf := make([]byte, n)
		if err := r.readAt(buf, int64(h.offset)); err != nil {
			return nil, err
		}
		return r.decodeBlock(buf, h, kind, false, alloc)
	}
	bp, _ := readBufPool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	buf := (*bp)[:n]
	defer readBufPool.Put(bp)
	if err := r.readAt(buf, int64(h.offset)); err != nil {
		return nil, err
	}
	return r.decodeBlock(buf, h, kind, true, alloc)
}

// readBufPool recycles the buffers blocks are read into before they are
// decompressed (or, uncompressed, copied out).
var readBufPool sync.Pool // *[]byte

// maxPooledReadBuf bounds the read buffers kept for reuse.
const maxPooledReadBuf = 256 << 10

// decodeBlock verifies the trailer of the block at h, whose stored bytes
// and trailer are buf, and returns its decoded bytes, in a buffer from alloc.
// An uncompressed block aliases buf unless copyRaw is set, in which case it
// gets a buffer of its own (so that a block cut out of a larger read does
// not pin that read).
func (r *Reader) decodeBlock(buf []byte, h blockHandle, kind string, copyRaw bool, alloc blockAlloc) ([]byte, error) {
	n := int(h.length)
	typ := buf[n]
	if got, want := binary.LittleEndian.Uint32(buf[n+1:]), crc32.Checksum(buf[:n+1], castagnoli); got != want {
		return nil, corruptf(r.name, int64(h.offset), "%s block checksum mismatch: stored %#08x, computed %#08x", kind, got, want)
	}
	if copyRaw && blockType(typ) == blockNone {
		b := alloc.get(n)
		copy(b, buf[:n])
		return b, nil
	}
	return decompress(typ, buf[:n:n], r.name, int64(h.offset), alloc)
}

// dataBlock returns the decoded data block at h, through the cache; with
// fill false a block the cache misses is read without being added. The
// caller must release the reference when done with the block's bytes.
func (r *Reader) dataBlock(h blockHandle, fill bool) (blockRef, error) {
	if b, ok := r.cachedBlock(h); ok {
		return b, nil
	}
	return r.readDataBlock(h, fill)
}

// cachedBlock returns a reference to the data block at h if the cache
// holds it.
func (r *Reader) cachedBlock(h blockHandle) (blockRef, bool) {
	return r.cache.get(cacheKey{id: r.cacheID, off: h.offset})
}

// cacheBlock offers the decoded data block b at h to the cache and returns
// the block to use: the cached copy of b, or b itself if it was not cached.
func (r *Reader) cacheBlock(h blockHandle, b []byte) blockRef {
	return r.cache.set(cacheKey{id: r.cacheID, off: h.offset}, b)
}

// readDataBlock reads the data block at h, which the cache missed, and
// with fill caches it.
func (r *Reader) readDataBlock(h blockHandle, fill bool) (blockRef, error) {
	if !fill || r.cache == nil || r.cache.c == nil {
		b, err := r.readBlock(h, "data")
		return blockRef{b: b}, err
	}
	if r.alone {
		l := r.cache.soloLoader()
		b, err := r.readBlockInto(h, "data", l.alloc)
		return r.cache.finishSolo(cacheKey{id: r.cacheID, off: h.offset}, l, b, err)
	}
	return r.cache.load(cacheKey{id: r.cacheID, off: h.offset}, func(alloc blockAlloc) ([]byte, error) {
		return r.readBlockInto(h, "data", alloc)
	})
}

// Properties returns the table's properties; the caller must not modify them.
func (r *Reader) Properties() *Properties { return r.props }

// FilterSize returns the length in bytes of the table's filter block, 0 for
// a table written without a filter. It reads nothing.
func (r *Reader) FilterSize() int64 { return int64(r.footer.filter.length) }

// MayContain reports whether the table may hold a row for ukey: false only
// when the bloom filter rules it out. Without a filter it returns true. The
// first call reads and checks the filter block; an error reading or
// decoding it (naming the file and the block's offset) is returned, and the
// next call tries again.
func (r *Reader) MayContain(ukey []byte) (bool, error) {
	if r.footer.filter == (blockHandle{}) {
		return true, nil
	}
	f, err := r.loadedFilter()
	if err != nil {
		return false, err
	}
	return f.mayContain(ukey), nil
}

// indexHandle decodes the handle of the index entry it is at.
func (r *Reader) indexHandle(it *blockIter) (blockHandle, error) {
	h, ok := decodeHandle(it.row.Value)
	if !ok {
		return h, corruptf(r.name, int64(r.footer.index.offset), "index entry at %d: bad block handle", it.off)
	}
	return h, nil
}

type getState struct {
	data    blockIter
	seekKey []byte
}

// Get returns the newest row for ukey with Seq <= seq, tombstones included;
// found is false if there is none. The row's Key is ukey itself (the slice
// passed in) and its Value is a copy of its own, so both may be retained.
func (r *Reader) Get(ukey []byte, seq uint64) (row format.Row, found bool, err error) {
	if ok, err := r.MayContain(ukey); !ok {
		return format.Row{}, false, err
	}
	row, ref, found, err := r.GetAfterFilter(ukey, seq)
	if found {
		row.Value = bytes.Clone(row.Value)
	}
	ref.Release()
	return row, found, err
}

// GetAfterFilter is Get for a caller that has already asked MayContain(ukey)
// and got true: it does not probe the bloom filter again. The first call (of
// it or of NewIter) loads the index; an error loading it is returned. It
// does not copy the value: the row's Value aliases a (possibly cached) data
// block that stays valid only until the caller releases ref, which it must
// do once, found or not.
func (r *Reader) GetAfterFilter(ukey []byte, seq uint64) (row format.Row, ref BlockRef, found bool, err error) {
	if seq > format.MaxSeq {
		seq = format.MaxSeq
	}
	px, err := r.loadedIndex()
	if err != nil {
		return format.Row{}, BlockRef{}, false, err
	}
	gs, _ := r.getPool.Get().(*getState)
	if gs == nil {
		gs = &getState{}
	}
	var b blockRef
	defer func() {
		px.unref()
		// Drop references to the block before pooling.
		gs.data.data, gs.data.key, gs.data.row = nil, nil, format.Row{}
		r.getPool.Put(gs)
		if found {
			ref = BlockRef{c: b.c}
		} else {
			b.release()
		}
	}()
	gs.seekKey = format.SeekKey(gs.seekKey[:0], ukey, seq)
	for i := px.seek(gs.seekKey); ; i++ {
		if i >= px.len() {
			return format.Row{}, BlockRef{}, false, nil
		}
		h := px.handles[i]
		b.release()
		b = blockRef{}
		if b, err = r.dataBlock(h, true); err != nil {
			return format.Row{}, BlockRef{}, false, err
		}
		if err := gs.data.init(b.b, r.name, int64(h.offset), false); err != nil {
			return format.Row{}, BlockRef{}, false, err
		}
		if gs.data.seekGE(gs.seekKey) {
			break
		}
		if gs.data.err != nil {
			return format.Row{}, BlockRef{}, false, gs.data.err
		}
		// Only a block whose last key is below the index key gets here;
		// try the next block rather than trust the index.
	}
	if !bytes.Equal(gs.data.row.Key, ukey) {
		return format.Row{}, BlockRef{}, false, nil
	}
	row = gs.data.row
	row.Key = ukey
	return row, BlockRef{}, true, nil
}

// Close closes the underlying object and gives back the memory charged to
// the cache for the table's index and filter (if they were loaded). Loads
// after Close fail.
func (r *Reader) Close() error {
	r.meta.close(r.cache)
	return r.f.Close()
}
