package sstable

// Check: a full verification pass over a table.
//
// Check re-reads every block from the file (bypassing the cache), verifies
// each checksum, decodes every entry, and checks the structure end to end:
// rows strictly increasing across blocks, each index key equal to the last
// key of its block, blocks laid out back to back before the metadata, and
// the row and block counts and key bounds agreeing with the properties,
// and the filter (if any) holding every user key.

import (
	"bytes"

	"github.com/mayflydb/mayfly/format"
)

// Check reads and verifies every block of the table and returns the first
// problem found (a corruption error, or an I/O error). It reads the index
// and filter from the file itself, whether or not the Reader has loaded
// them, and keeps neither.
func (r *Reader) Check() error {
	if _, err := r.readProperties(); err != nil {
		return err
	}
	rawIndex, err := r.readIndex()
	if err != nil {
		return err
	}
	idxOff := int64(r.footer.index.offset)
	px, err := buildPointIndex(rawIndex, r.name, idxOff, r.dataEnd)
	if err != nil {
		return err
	}
	px.unref()
	filter, err := r.readFilter()
	if err != nil {
		return err
	}
	c := tableCheck{r: r, filter: filter}
	var (
		index   blockIter
		blocks  uint64
		nextOff uint64
	)
	if err := index.init(rawIndex, r.name, idxOff, true); err != nil {
		return err
	}
	iri := 0
	for ok := index.first(); ok; ok = index.next() {
		if iri < index.numRestarts && index.restartOffset(iri) == index.off {
			iri++
		}
		h, err := r.indexHandle(&index)
		if err != nil {
			return err
		}
		if h.offset != nextOff {
			return corruptf(r.name, idxOff, "index entry %d: block at %d, want %d", blocks, h.offset, nextOff)
		}
		nextOff = h.offset + h.length + trailerLen
		if err := c.dataBlock(h); err != nil {
			return err
		}
		if !bytes.Equal(index.key, c.last) {
			return corruptf(r.name, idxOff, "index entry %d: key differs from its block's last key", blocks)
		}
		blocks++
	}
	if index.err != nil {
		return index.err
	}
	if iri != index.numRestarts {
		return corruptf(r.name, idxOff, "index block restart %d does not point at an entry", iri)
	}
	meta := r.footer.props.offset
	if f := r.footer.filter; f != (blockHandle{}) {
		meta = f.offset
	}
	if nextOff != meta {
		return corruptf(r.name, idxOff, "data blocks end at %d, metadata starts at %d", nextOff, meta)
	}
	c.props.Largest = c.last
	return r.checkProperties(&c.props, blocks)
}

// tableCheck is the state Check carries from one data block to the next.
type tableCheck struct {
	r      *Reader
	filter *tableFilter // nil for a table without a filter
	data   blockIter
	last   []byte     // the internal key of the last row checked
	props  Properties // recomputed from the rows checked so far
}

// dataBlock reads the data block at h from the file and checks it: the
// block is not empty, its keys increase strictly and continue those of the
// blocks before it, every restart points at an entry that shares no prefix,
// and the filter holds each user key. It adds the block's rows to c.props
// and leaves c.last at the block's last key.
func (c *tableCheck) dataBlock(h blockHandle) error {
	r, data := c.r, &c.data
	b, err := r.readBlock(h, "data")
	if err != nil {
		return err
	}
	if err := data.init(b, r.name, int64(h.offset), false); err != nil {
		return err
	}
	n, ri := 0, 0
	for ok := data.first(); ok; ok = data.next() {
		row := &data.row
		if c.last != nil && format.CompareInternal(c.last, data.key) >= 0 {
			return corruptf(r.name, int64(h.offset), "data block entry at %d: key out of order", data.off)
		}
		if ri < data.numRestarts && data.restartOffset(ri) == data.off {
			if data.shared != 0 {
				return corruptf(r.name, int64(h.offset), "data block entry at %d: restart entry shares a prefix", data.off)
			}
			ri++
		}
		if c.props.NumRows == 0 {
			c.props.Smallest = bytes.Clone(data.key)
		}
		if c.filter != nil && !c.filter.mayContain(row.Key) {
			return corruptf(r.name, int64(r.footer.filter.offset), "filter block misses key %q", row.Key)
		}
		c.props.record(row)
		c.last = append(c.last[:0], data.key...)
		n++
	}
	if data.err != nil {
		return data.err
	}
	if n == 0 {
		return corruptf(r.name, int64(h.offset), "empty data block")
	}
	if ri != data.numRestarts {
		return corruptf(r.name, int64(h.offset), "data block restart %d does not point at an entry", ri)
	}
	return nil
}

// checkProperties compares p, the statistics recomputed from every row of
// the table, and blocks, the number of data blocks, with the properties the
// table stores.
func (r *Reader) checkProperties(p *Properties, blocks uint64) error {
	want := r.props
	switch {
	case blocks != want.NumDataBlocks:
		return corruptf(r.name, int64(r.footer.props.offset), "properties: %d data blocks, found %d", want.NumDataBlocks, blocks)
	case p.NumRows != want.NumRows || p.NumTombstones != want.NumTombstones || p.NumTTLRows != want.NumTTLRows:
		return corruptf(r.name, int64(r.footer.props.offset), "properties: row counts disagree with the data")
	case p.RowFeatures != want.RowFeatures || p.RawKeyBytes != want.RawKeyBytes || p.RawValueBytes != want.RawValueBytes || p.TTLBytes != want.TTLBytes:
		return corruptf(r.name, int64(r.footer.props.offset), "properties: row features or byte counts disagree with the data")
	case p.MinTS != want.MinTS || p.MaxTS != want.MaxTS || p.MinExpireTS != want.MinExpireTS || p.MaxExpireTS != want.MaxExpireTS:
		return corruptf(r.name, int64(r.footer.props.offset), "properties: time bounds disagree with the data")
	case p.SmallestSeq != want.SmallestSeq || p.LargestSeq != want.LargestSeq:
		return corruptf(r.name, int64(r.footer.props.offset), "properties: sequence bounds disagree with the data")
	case !bytes.Equal(p.Smallest, want.Smallest) || !bytes.Equal(p.Largest, want.Largest):
		return corruptf(r.name, int64(r.footer.props.offset), "properties: key bounds disagree with the data")
	}
	return nil
}
