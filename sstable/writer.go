// Package sstable reads and writes Mayfly's sorted string tables: immutable
// files of rows in internal-key order.
//
// A table is laid out as
//
//	+-------------+-----+-------------+--------------+------------+-------------+--------+
//	| data block0 | ... | data blockN | filter block | properties | index block | footer |
//	+-------------+-----+-------------+--------------+------------+-------------+--------+
//
// Data blocks hold the rows (block.go), each block followed by a 5-byte
// trailer with its compression type and CRC-32C (footer.go). The optional
// filter block is a bloom filter over user keys (filter.go), the properties
// block describes the table (properties.go), the index block has one entry
// per data block, keyed by the block's last internal key, whose value is the
// block's handle, and the fixed-size footer locates the three metadata blocks.
package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/mayflydb/mayfly/format"
)

// WriterOptions configure a Writer. Zero fields take their defaults.
type WriterOptions struct {
	BlockSize       int         // uncompressed data block size limit; default 4096 (see maxEntryLen)
	RestartInterval int         // entries between restart points; default 16
	Compression     Compression // per-block compression; zero value = DefaultCompression (Snappy)
	BloomBitsPerKey int         // bloom filter bits per user key; 0 = no filter
	CreationTime    int64       // Unix ms, recorded in the properties
}

const (
	defaultBlockSize       = 4096
	defaultRestartInterval = 16
)

// Writer writes a table to an io.Writer. It is not safe for concurrent use.
type Writer struct {
	w    io.Writer
	opts WriterOptions

	offset  uint64 // bytes written so far
	data    blockWriter
	index   blockWriter
	filter  *filterWriter
	props   Properties
	lastKey []byte // internal key of the last row added
	lastRow format.Row
	scratch []byte // the row being added's internal key
	compBuf []byte // compression output
	encBuf  []byte // block + trailer being written
	hbuf    []byte
	err     error
	done    bool
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer, opts WriterOptions) *Writer {
	if opts.BlockSize <= 0 {
		opts.BlockSize = defaultBlockSize
	}
	if opts.RestartInterval <= 0 {
		opts.RestartInterval = defaultRestartInterval
	}
	wr := &Writer{w: w, opts: opts}
	wr.data.restartInterval = opts.RestartInterval
	wr.index.restartInterval = 1
	if opts.BloomBitsPerKey > 0 {
		wr.filter = newFilterWriter(opts.BloomBitsPerKey)
	}
	if !opts.Compression.Valid() {
		wr.err = fmt.Errorf("sstable: unknown compression %v", opts.Compression)
	}
	wr.props.CreationTime = opts.CreationTime
	return wr
}

// errFinished is returned by Add and Finish after Finish.
var errFinished = errors.New("sstable: writer already finished")

// Add appends a row. Rows must arrive in strictly increasing internal-key
// order (format.CompareRows); Add copies what it keeps.
func (w *Writer) Add(r *format.Row) error {
	if w.done {
		return errFinished
	}
	if w.err != nil {
		return w.err
	}
	switch {
	case r.Flags&^format.KnownFlags != 0:
		return fmt.Errorf("sstable: row %q has unknown flags %#x", r.Key, r.Flags)
	case r.Seq > format.MaxSeq:
		return fmt.Errorf("sstable: row %q has sequence %d above MaxSeq", r.Key, r.Seq)
	case r.Flags&format.FlagHasTS != 0 && r.TS < 0, r.Flags&format.FlagHasExpire != 0 && r.ExpireTS < 0:
		return fmt.Errorf("sstable: row %q has a negative time", r.Key)
	case !format.ValidKind(r.Flags):
		return fmt.Errorf("sstable: row %q has flags %#x of more than one kind (tombstone, deadline row, merge operand)", r.Key, r.Flags)
	case !r.HasValue() && len(r.Value) != 0:
		return fmt.Errorf("sstable: tombstone or deadline row %q has a value", r.Key)
	case w.filter != nil && !w.filter.canAdd():
		return fmt.Errorf("sstable: table too large for its filter")
	}
	w.scratch = format.AppendInternalKey(w.scratch[:0], r)
	if w.props.NumRows > 0 && format.CompareInternal(w.scratch, w.lastKey) <= 0 {
		return fmt.Errorf("sstable: row %q seq %d out of order (after %q seq %d)",
			r.Key, r.Seq, w.lastRow.Key, w.lastRow.Seq)
	}
	// End the block before a row that would take it past BlockSize, so that
	// a decoded block (the block cache's unit of allocation) stays within
	// BlockSize and fits its allocator size class: 4096 rather than 4096
	// plus part of a row, which Go rounds up to a 4864-byte object.
	if w.data.entries > 0 && w.data.estimatedSize()+maxEntryLen(len(w.scratch), r) > w.opts.BlockSize {
		if err := w.flushData(); err != nil {
			return err
		}
	}
	w.data.add(w.scratch, r, r.Value)
	if w.filter != nil {
		w.filter.add(r.Key)
	}
	if w.props.NumRows == 0 {
		w.props.Smallest = append([]byte(nil), w.scratch...)
	}
	w.props.record(r)
	w.lastKey, w.scratch = w.scratch, w.lastKey
	n := len(w.lastKey) - format.TrailerLen
	w.lastRow = format.Row{Key: w.lastKey[:n:n], Seq: r.Seq, Flags: r.Flags, TS: r.TS, ExpireTS: r.ExpireTS}
	if w.data.estimatedSize() >= w.opts.BlockSize {
		return w.flushData()
	}
	return nil
}

// maxEntryLen bounds the bytes blockWriter.add appends for a row with an
// internal key of keyLen bytes, including a new restart point: three
// length varints, the key, at most two attribute varints and the value.
// A block therefore ends at most this much short of BlockSize; a row larger
// than BlockSize gets a block of its own.
func maxEntryLen(keyLen int, r *format.Row) int {
	return 3*binary.MaxVarintLen64 + keyLen + 2*binary.MaxVarintLen64 + len(r.Value) + 4
}

// EstimatedSize returns the bytes written so far plus the pending block.
func (w *Writer) EstimatedSize() uint64 {
	n := w.offset
	if w.data.entries > 0 {
		n += uint64(w.data.estimatedSize()) + trailerLen
	}
	return n
}

// writeBlock writes a block with its trailer and returns its handle.
func (w *Writer) writeBlock(block []byte, c Compression) (blockHandle, error) {
	if w.err != nil {
		return blockHandle{}, w.err
	}
	out, typ, cbuf, err := compress(w.compBuf[:0], block, c)
	w.compBuf = cbuf
	if err != nil {
		w.err = err
		return blockHandle{}, err
	}
	buf := append(w.encBuf[:0], out...)
	h := blockHandle{offset: w.offset, length: uint64(len(buf))}
	buf = appendTrailer(buf, 0, typ)
	w.encBuf = buf
	if _, err := w.w.Write(buf); err != nil {
		w.err = err
		return blockHandle{}, err
	}
	w.offset += uint64(len(buf))
	return h, nil
}

func (w *Writer) flushData() error {
	if w.data.entries == 0 {
		return nil
	}
	h, err := w.writeBlock(w.data.finish(), w.opts.Compression)
	if err != nil {
		return err
	}
	w.data.reset()
	w.props.NumDataBlocks++
	w.hbuf = h.append(w.hbuf[:0])
	w.index.add(w.lastKey, &w.lastRow, w.hbuf)
	return nil
}

// Abort abandons the table: it releases the Writer's buffers outside the Go
// heap (the filter's key hashes) without writing anything more; the caller
// aborts the underlying writer. Abort after Finish or Abort does nothing. A
// Writer must end with Finish or Abort: one dropped without either keeps
// its filter memory mapped.
func (w *Writer) Abort() {
	w.done = true
	w.releaseFilter()
}

// releaseFilter frees the filter's hashes, once: w.filter is cleared.
func (w *Writer) releaseFilter() {
	if w.filter != nil {
		w.filter.release()
		w.filter = nil
	}
}

// Finish writes the pending data block, the filter, properties and index
// blocks and the footer, and returns the table's properties (Size is the
// file's size). The Writer cannot be used afterwards, whether Finish
// succeeded or not; the caller closes or commits the underlying writer.
func (w *Writer) Finish() (*Properties, error) {
	if w.done {
		return nil, errFinished
	}
	w.done = true
	defer w.releaseFilter() // on every path, including errors
	if w.err != nil {
		return nil, w.err
	}
	if err := w.flushData(); err != nil {
		return nil, err
	}
	var ft footer
	ft.version = versionFor(w.props.RowFeatures)
	w.props.FormatVersion = ft.version
	if w.filter != nil {
		b, err := w.filter.build()
		w.releaseFilter() // build copied what it needs into b
		if err != nil {
			return nil, err
		}
		if ft.filter, err = w.writeBlock(b, NoCompression); err != nil {
			return nil, err
		}
	}
	if w.props.NumRows > 0 {
		w.props.Largest = bytes.Clone(w.lastKey)
	}
	var err error
	if ft.props, err = w.writeBlock(w.props.encode(nil), NoCompression); err != nil {
		return nil, err
	}
	if ft.index, err = w.writeBlock(w.index.finish(), w.opts.Compression); err != nil {
		return nil, err
	}
	if _, err := w.w.Write(ft.encode()); err != nil {
		w.err = err
		return nil, err
	}
	w.offset += FooterLen
	p := w.props
	p.Size = w.offset
	return &p, nil
}
