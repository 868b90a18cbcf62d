package sstable

// Two-level iterator: a cursor over the table's point index (the index
// block decoded, pointindex.go) picks a data block, a data block iterator
// walks its rows.
//
//	index block:  [last key of block 0 | handle 0] [last key of block 1 | handle 1] ...
//	                         |                                 |
//	                         v                                 v
//	data blocks:   [row row row ... row]           [row row ... row]
//
// Positioning by internal key: SeekGE(ukey) looks for the internal key
// SeekKey(ukey, MaxSeq), which sorts before every version of ukey. The
// first index entry >= it names the only block that can hold the answer
// (or, if that block holds no such row, the next one does).
//
// A user iterator walks the Reader's point index, loading it on first use
// (lazy.go); a compaction iterator walks the loaded one or, if none is
// loaded, the stored index block read for itself (rawindex.go), which it
// frees at Close or Reset. An error loading either is the iterator's error
// from the start.

import (
	"github.com/mayflydb/mayfly/format"
)

// Iterator walks a table's rows in internal-key order. It implements
// format.Iterator. Row keys alias the iterator's buffers or a block, and
// values a block; both are valid until the next positioning call (or Close
// or Reset), since the iterator holds its current block only while it is
// positioned in it (see the block lifetime rule in cache.go).
//
// Next on an iterator exhausted backwards moves to the first row, and Prev
// on one exhausted forwards moves to the last row; Next and Prev on an
// unpositioned iterator return false. An error is sticky.
type Iterator struct {
	r       *Reader
	index   indexCursor
	data    blockIter
	dataOff uint64   // offset of the block data iterates; valid if loaded
	blk     blockRef // the block data iterates, held until the next one loads
	loaded  bool
	pos     iterPos
	seekKey []byte
	err     error
	ra      readAhead // see readahead.go
	// noFill is set for a compaction's iterator: blocks it reads are not
	// added to the cache (see NewCompactionIter).
	noFill bool
	// raMax caps read-ahead (the Reader's cap for this kind of iterator);
	// <= 0 disables it.
	raMax int
}

type iterPos uint8

const (
	posNone   iterPos = iota // unpositioned
	posValid                 // at a row
	posBefore                // exhausted backwards
	posAfter                 // exhausted forwards
)

var _ format.Iterator = (*Iterator)(nil)

// indexCursor is a position in a table's index: entry i, or none when i is
// out of range (-1 before the first, n after the last). It walks either a
// point index (px) or, for a compaction iterator, a raw index block (raw,
// rawindex.go), and holds the handle of its entry. A copy of a cursor moves
// independently of it (read-ahead plans with one); only the Iterator that
// set it releases what it points at.
type indexCursor struct {
	px  *pointIndex
	raw *rawIndex
	n   int
	i   int
	h   blockHandle // the handle of entry i, if valid
	err error       // an entry of raw no longer decodes
}

// setIndex points c at px, at raw if px is nil, or at no entries if both are.
func (c *indexCursor) setIndex(px *pointIndex, raw *rawIndex) {
	*c = indexCursor{px: px, raw: raw, i: -1}
	switch {
	case px != nil:
		c.n = px.len()
	case raw != nil:
		c.n = raw.n
	}
}

// at moves to entry i (clamped to [-1, n]) and reports whether it is one.
func (c *indexCursor) at(i int) bool {
	c.i = min(max(i, -1), c.n)
	if c.i < 0 || c.i >= c.n {
		return false
	}
	if c.raw == nil {
		c.h = c.px.handles[c.i]
		return true
	}
	_, h, ok := c.raw.entry(c.i)
	if !ok {
		c.err = c.raw.errAt(c.i)
		c.i = c.n
		return false
	}
	c.h = h
	return true
}

func (c *indexCursor) valid() bool { return c.i >= 0 && c.i < c.n }

func (c *indexCursor) first() bool { return c.at(0) }

func (c *indexCursor) last() bool { return c.at(c.n - 1) }

func (c *indexCursor) next() bool { return c.at(c.i + 1) }

func (c *indexCursor) prev() bool { return c.at(c.i - 1) }

// seekGE moves to the first entry whose separator is >= ikey.
func (c *indexCursor) seekGE(ikey []byte) bool {
	switch {
	case c.n == 0:
		return c.at(0)
	case c.raw == nil:
		return c.at(c.px.seek(ikey))
	}
	i := c.raw.seek(ikey)
	if i < 0 {
		c.err = c.raw.errAt(0)
		return c.at(c.n)
	}
	return c.at(i)
}

// handle returns the handle of the current entry, which must be valid. The
// index's handles were all checked to lie within the data blocks when it
// was loaded.
func (c *indexCursor) handle() blockHandle { return c.h }

// release gives back what the cursor's Iterator holds of its index (its
// reference to the point index, or its raw index block) and empties it.
func (c *indexCursor) release() {
	if c.px != nil {
		c.px.unref()
	}
	if c.raw != nil {
		c.raw.free()
	}
	*c = indexCursor{}
}

// NewIter returns an iterator over the table. It is unpositioned. The
// first iterator (or Get) loads the table's index; if that fails, the
// iterator returns the error from Error and is never positioned.
func (r *Reader) NewIter() format.Iterator {
	it := &Iterator{r: r, raMax: r.raMax}
	it.setReader()
	return it
}

// setReader points a fresh iterator at its Reader's index: the Reader's
// loaded one, or for a compaction iterator a private one if none is loaded.
func (it *Iterator) setReader() {
	var px *pointIndex
	var raw *rawIndex
	var err error
	if it.noFill {
		px, raw, err = it.r.compactionIndex()
	} else {
		px, err = it.r.loadedIndex()
	}
	it.index.setIndex(px, raw)
	it.err = err
	it.ra.reset(it.raMax)
}

// NewCompactionIter returns an iterator for reading the whole table once,
// as a compaction does: it uses blocks already in the cache but does not add
// the ones it reads, so a compaction neither evicts the blocks readers use
// nor keeps the blocks of a table about to be deleted in memory. It never
// reads the filter, and it reads the index for itself unless the Reader has
// loaded it, so compacting a table loads none of its metadata into the
// Reader.
func (r *Reader) NewCompactionIter() format.Iterator {
	it := &Iterator{r: r, noFill: true, raMax: r.raComp}
	it.setReader()
	return it
}

func (it *Iterator) fail(err error) bool {
	if it.err == nil {
		it.err = err
	}
	it.pos = posNone
	it.loaded = false
	it.data = blockIter{keyBuf: it.data.keyBuf[:0]}
	it.releaseBlock()
	return false
}

// releaseBlock drops the iterator's reference to its current block.
func (it *Iterator) releaseBlock() {
	it.blk.release()
	it.blk = blockRef{}
}

// loadBlock points the data iterator at the block of the current index
// entry, keeping it if it is already loaded. forward says the index
// iterator just stepped to that entry from the one before (a sequential
// scan, which reads ahead).
func (it *Iterator) loadBlock(forward bool) bool {
	h := it.index.handle()
	if it.loaded && it.dataOff == h.offset {
		return true
	}
	it.loaded = false
	b, err := it.readBlock(h, forward)
	if err != nil {
		return it.fail(err)
	}
	it.blk.release()
	it.blk = b
	if err := it.data.init(b.b, it.r.name, int64(h.offset), false); err != nil {
		return it.fail(err)
	}
	it.loaded, it.dataOff = true, h.offset
	return true
}

// exhausted records that the iterator ran off one end (or failed).
func (it *Iterator) exhausted(p iterPos) bool {
	if it.data.err != nil {
		return it.fail(it.data.err)
	}
	if it.index.err != nil {
		return it.fail(it.index.err)
	}
	it.pos = p
	return false
}

// skipForward moves on to the first row of the following blocks while the
// data iterator is exhausted.
func (it *Iterator) skipForward() bool {
	for !it.data.valid() {
		if it.data.err != nil || !it.index.next() {
			return it.exhausted(posAfter)
		}
		if !it.loadBlock(true) {
			return false
		}
		it.data.first()
	}
	it.pos = posValid
	return true
}

// skipBackward moves back to the last row of the preceding blocks while the
// data iterator is exhausted.
func (it *Iterator) skipBackward() bool {
	for !it.data.valid() {
		if it.data.err != nil || !it.index.prev() {
			return it.exhausted(posBefore)
		}
		if !it.loadBlock(false) {
			return false
		}
		it.data.last()
	}
	it.pos = posValid
	return true
}

// First moves to the first row.
func (it *Iterator) First() bool {
	if it.err != nil {
		return false
	}
	if !it.index.first() {
		return it.exhausted(posAfter)
	}
	if !it.loadBlock(false) {
		return false
	}
	it.data.first()
	return it.skipForward()
}

// Last moves to the last row.
func (it *Iterator) Last() bool {
	if it.err != nil {
		return false
	}
	if !it.index.last() {
		return it.exhausted(posBefore)
	}
	if !it.loadBlock(false) {
		return false
	}
	it.data.last()
	return it.skipBackward()
}

// seekGEInternal moves to the first row whose internal key is >= ikey.
func (it *Iterator) seekGEInternal(ikey []byte) bool {
	if it.err != nil {
		return false
	}
	if !it.index.seekGE(ikey) {
		return it.exhausted(posAfter)
	}
	if !it.loadBlock(false) {
		return false
	}
	it.data.seekGE(ikey)
	return it.skipForward()
}

// SeekGE moves to the first row whose user key is >= key.
func (it *Iterator) SeekGE(key []byte) bool {
	it.seekKey = format.SeekKey(it.seekKey[:0], key, format.MaxSeq)
	return it.seekGEInternal(it.seekKey)
}

// SeekLT moves to the last row whose user key is < key.
func (it *Iterator) SeekLT(key []byte) bool {
	if it.SeekGE(key) {
		return it.Prev()
	}
	if it.err != nil {
		return false
	}
	return it.Last()
}

// Next moves to the following row.
func (it *Iterator) Next() bool {
	switch {
	case it.err != nil:
		return false
	case it.pos == posBefore:
		return it.First()
	case it.pos != posValid:
		return false
	}
	it.data.next()
	return it.skipForward()
}

// Prev moves to the preceding row.
func (it *Iterator) Prev() bool {
	switch {
	case it.err != nil:
		return false
	case it.pos == posAfter:
		return it.Last()
	case it.pos != posValid:
		return false
	}
	it.data.prev()
	return it.skipBackward()
}

// Valid reports whether the iterator is at a row.
func (it *Iterator) Valid() bool { return it.err == nil && it.pos == posValid }

// Row returns the current row.
func (it *Iterator) Row() *format.Row { return &it.data.row }

// Error returns the first error the iterator met.
func (it *Iterator) Error() error { return it.err }

// Close releases the iterator and returns Error. It waits for any
// read-ahead fetch the iterator started.
func (it *Iterator) Close() error {
	if it.r != nil {
		it.closeReadAhead()
	}
	it.releaseBlock()
	it.index.release()
	err := it.err
	*it = Iterator{err: err, pos: posNone}
	return err
}
