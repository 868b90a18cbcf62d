package sstable

// Properties block.
//
// The properties block holds one record (version 1), fields in this order:
//
//	+--------------------------------------+
//	| format_version   uvarint (= 1)       |
//	| row_features     u8                  |  OR of all rows' flags
//	| creation_time    varint (zigzag)     |  Unix ms
//	| min_ts, max_ts   varint, varint      |  over rows with FlagHasTS
//	| min_expire_ts,                       |
//	| max_expire_ts    varint, varint      |  over rows with FlagHasExpire
//	| min_tombstone_ts varint              |  over tombstones with FlagHasTS
//	| num_rows, num_tombstones,            |
//	| num_ttl_rows, ttl_bytes,             |
//	| raw_key_bytes, raw_value_bytes,      |
//	| num_data_blocks,                     |
//	| smallest_seq, largest_seq  uvarint×9 |
//	| smallest  uvarint length + bytes     |  internal keys; both empty
//	| largest   uvarint length + bytes     |  when num_rows == 0
//	+--------------------------------------+
//
// Nothing may follow the record. A reader rejects any other format_version.
// Size is not stored: a reader sets it to the file's size.

import (
	"encoding/binary"

	"github.com/mayflydb/mayfly/format"
)

// Properties describe a table.
type Properties struct {
	FormatVersion uint32
	// TableStats holds the statistics a manifest entry shares. Size is the
	// total file size; CreationTime comes from WriterOptions.CreationTime.
	format.TableStats
	hasTombstoneTS bool

	RawKeyBytes   uint64 // user key bytes of all rows
	RawValueBytes uint64
	NumDataBlocks uint64
}

// record updates the properties for one more row (rows arrive in order).
func (p *Properties) record(r *format.Row) {
	first := p.NumRows == 0
	seenTS := p.RowFeatures&format.FlagHasTS != 0
	p.NumRows++
	p.RowFeatures |= r.Flags
	if r.Flags&format.FlagTombstone != 0 {
		if r.Flags&format.FlagHasTS != 0 && (!p.hasTombstoneTS || r.TS < p.MinTombstoneTS) {
			p.MinTombstoneTS, p.hasTombstoneTS = r.TS, true
		}
		p.NumTombstones++
	}
	if r.Flags&format.FlagHasTS != 0 {
		if !seenTS {
			p.MinTS, p.MaxTS = r.TS, r.TS
		}
		p.MinTS, p.MaxTS = min(p.MinTS, r.TS), max(p.MaxTS, r.TS)
	}
	if r.Flags&(format.FlagHasExpire|format.FlagMerge) == format.FlagHasExpire {
		// A merge operand's expire_ts is the deadline of a window it may
		// start, not its own expiry: it is no TTL row.
		if p.NumTTLRows == 0 {
			p.MinExpireTS, p.MaxExpireTS = r.ExpireTS, r.ExpireTS
		}
		p.MinExpireTS, p.MaxExpireTS = min(p.MinExpireTS, r.ExpireTS), max(p.MaxExpireTS, r.ExpireTS)
		p.NumTTLRows++
		p.TTLBytes += uint64(len(r.Key) + len(r.Value))
	}
	p.RawKeyBytes += uint64(len(r.Key))
	p.RawValueBytes += uint64(len(r.Value))
	if first {
		p.SmallestSeq, p.LargestSeq = r.Seq, r.Seq
	}
	p.SmallestSeq, p.LargestSeq = min(p.SmallestSeq, r.Seq), max(p.LargestSeq, r.Seq)
}

func (p *Properties) encode(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(p.FormatVersion))
	dst = append(dst, p.RowFeatures)
	for _, v := range []int64{p.CreationTime, p.MinTS, p.MaxTS, p.MinExpireTS, p.MaxExpireTS, p.MinTombstoneTS} {
		dst = binary.AppendVarint(dst, v)
	}
	for _, v := range []uint64{p.NumRows, p.NumTombstones, p.NumTTLRows, p.TTLBytes,
		p.RawKeyBytes, p.RawValueBytes, p.NumDataBlocks, p.SmallestSeq, p.LargestSeq} {
		dst = binary.AppendUvarint(dst, v)
	}
	dst = binary.AppendUvarint(dst, uint64(len(p.Smallest)))
	dst = append(dst, p.Smallest...)
	dst = binary.AppendUvarint(dst, uint64(len(p.Largest)))
	return append(dst, p.Largest...)
}

// decodeProperties decodes a properties record; the error is a corruption
// error at off (the block's offset).
func decodeProperties(b []byte, file string, off int64) (*Properties, error) {
	d := propDecoder{b: b}
	p := &Properties{}
	v := d.uvarint()
	if d.bad {
		return nil, corruptf(file, off, "properties: truncated version")
	}
	if v < MinFormatVersion || v > FormatVersion {
		return nil, corruptf(file, off, "properties: unknown format version %d", v)
	}
	p.FormatVersion = uint32(v)
	p.RowFeatures = d.byte()
	for _, v := range []*int64{&p.CreationTime, &p.MinTS, &p.MaxTS, &p.MinExpireTS, &p.MaxExpireTS, &p.MinTombstoneTS} {
		*v = d.varint()
	}
	for _, v := range []*uint64{&p.NumRows, &p.NumTombstones, &p.NumTTLRows, &p.TTLBytes,
		&p.RawKeyBytes, &p.RawValueBytes, &p.NumDataBlocks, &p.SmallestSeq, &p.LargestSeq} {
		*v = d.uvarint()
	}
	p.Smallest = d.bytes()
	p.Largest = d.bytes()
	switch {
	case d.bad:
		return nil, corruptf(file, off, "properties: truncated or malformed record")
	case d.off != len(b):
		return nil, corruptf(file, off, "properties: %d trailing bytes", len(b)-d.off)
	case p.RowFeatures&^format.KnownFlags != 0:
		return nil, corruptf(file, off, "properties: unknown row features %#x", p.RowFeatures)
	case p.NumTombstones > p.NumRows || p.NumTTLRows > p.NumRows:
		return nil, corruptf(file, off, "properties: row counts disagree")
	}
	if p.NumRows == 0 {
		if len(p.Smallest) != 0 || len(p.Largest) != 0 {
			return nil, corruptf(file, off, "properties: empty table with key bounds")
		}
		p.Smallest, p.Largest = nil, nil
	} else {
		_, _, _, ok1 := format.SplitInternalKey(p.Smallest)
		_, _, _, ok2 := format.SplitInternalKey(p.Largest)
		if !ok1 || !ok2 {
			return nil, corruptf(file, off, "properties: malformed key bounds")
		}
		if format.CompareInternal(p.Smallest, p.Largest) > 0 {
			return nil, corruptf(file, off, "properties: smallest key above largest")
		}
	}
	return p, nil
}

type propDecoder struct {
	b   []byte
	off int
	bad bool
}

func (d *propDecoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.off += n
	return v
}

func (d *propDecoder) varint() int64 {
	if d.bad {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.off += n
	return v
}

func (d *propDecoder) byte() byte {
	if d.bad || d.off >= len(d.b) {
		d.bad = true
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

// bytes returns a copy, so that Properties never alias a block.
func (d *propDecoder) bytes() []byte {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)-d.off) {
		d.bad = true
		return nil
	}
	v := append([]byte(nil), d.b[d.off:d.off+int(n)]...)
	d.off += int(n)
	return v
}
