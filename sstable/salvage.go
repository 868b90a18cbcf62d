package sstable

// Salvage: reading what is left of a damaged table.
//
// A SalvageIter walks the data blocks in index order, one at a time, read
// straight from the file (no cache, no read-ahead). A block is kept only if
// it passes its checksum, decompresses, decodes entry by entry, holds at
// least one entry, and its keys are strictly increasing, within the block
// and after the last key kept before it. Any other block is skipped whole
// and reported in Damaged; the rows of every kept block are yielded, in
// internal-key order. The index block must be readable: without it the
// blocks cannot be found, and NewSalvageIter fails. Nothing else the table
// holds (filter, properties beyond what Open read) is consulted.

import (
	"errors"

	"github.com/mayflydb/mayfly/format"
)

// DamagedBlock is a data block a SalvageIter skipped.
type DamagedBlock struct {
	Offset uint64 // where the block starts in the file
	Length uint64 // its stored length, without the 5-byte trailer
	Err    error  // why it was skipped; wraps format.ErrCorruption
}

// SalvageIter yields the rows of a table's readable data blocks. It is not
// safe for concurrent use.
type SalvageIter struct {
	r       *Reader
	handles []blockHandle
	next    int // index of the next block to read
	data    blockIter
	inBlock bool
	last    []byte // internal key of the last row of the last kept block
	damaged []DamagedBlock
	err     error
}

// NewSalvageIter reads the table's index block and returns an iterator
// positioned before its first row. It fails (with an error wrapping
// format.ErrCorruption if the index is damaged) when the index cannot be
// read or one of its entries does not decode.
func (r *Reader) NewSalvageIter() (*SalvageIter, error) {
	raw, err := r.readIndex()
	if err != nil {
		return nil, err
	}
	var index blockIter
	if err := index.init(raw, r.name, int64(r.footer.index.offset), true); err != nil {
		return nil, err
	}
	s := &SalvageIter{r: r}
	for ok := index.first(); ok; ok = index.next() {
		h, err := r.indexHandle(&index)
		if err != nil {
			return nil, err
		}
		s.handles = append(s.handles, h)
	}
	if index.err != nil {
		return nil, index.err
	}
	return s, nil
}

// Next moves to the next row of a readable block. It returns false at the
// end of the table or on an error other than corruption (an I/O error),
// which Error then returns.
func (s *SalvageIter) Next() bool {
	if s.err != nil {
		return false
	}
	if s.inBlock && s.data.next() {
		return true
	}
	s.inBlock = false
	for s.next < len(s.handles) {
		h := s.handles[s.next]
		s.next++
		b, err := s.r.readBlock(h, "data")
		if err == nil {
			err = s.check(b, h)
		}
		if err != nil {
			if !errors.Is(err, format.ErrCorruption) {
				s.err = err
				return false
			}
			s.damaged = append(s.damaged, DamagedBlock{Offset: h.offset, Length: h.length, Err: err})
			continue
		}
		if err := s.data.init(b, s.r.name, int64(h.offset), false); err != nil || !s.data.first() {
			// check decoded this very block: unreachable unless memory is
			// damaged, and then no row of it is trusted.
			s.err = corruptf(s.r.name, int64(h.offset), "data block changed between two decodings")
			return false
		}
		s.inBlock = true
		return true
	}
	return false
}

// check decodes every entry of block b (at h) and verifies the order of its
// keys. On success it records the block's last key.
func (s *SalvageIter) check(b []byte, h blockHandle) error {
	var it blockIter
	if err := it.init(b, s.r.name, int64(h.offset), false); err != nil {
		return err
	}
	last, n := s.last, 0
	var buf []byte
	for ok := it.first(); ok; ok = it.next() {
		if last != nil && format.CompareInternal(last, it.key) >= 0 {
			return corruptf(s.r.name, int64(h.offset), "data block entry at %d: key out of order", it.off)
		}
		buf = append(buf[:0], it.key...)
		last = buf
		n++
	}
	if it.err != nil {
		return it.err
	}
	if n == 0 {
		return corruptf(s.r.name, int64(h.offset), "empty data block")
	}
	s.last = append(s.last[:0], last...)
	return nil
}

// Row returns the current row. It is valid until the next call to Next.
func (s *SalvageIter) Row() *format.Row { return &s.data.row }

// Blocks returns the number of data blocks the index lists.
func (s *SalvageIter) Blocks() int { return len(s.handles) }

// Damaged returns the blocks skipped so far, in file order.
func (s *SalvageIter) Damaged() []DamagedBlock { return s.damaged }

// Error returns the error that stopped the iterator, if any. Damaged blocks
// are not errors.
func (s *SalvageIter) Error() error { return s.err }
