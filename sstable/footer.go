package sstable

// Block handles, block trailers and the footer.
//
// Every block (data, filter, properties, index) is followed by a trailer:
//
//	+--------------------------+------------------+-----------------------+
//	| block bytes (compressed) | compression u8   | CRC-32C u32 (LE) over |
//	|                          |                  | block bytes + type    |
//	+--------------------------+------------------+-----------------------+
//
// A block handle locates a block: its offset in the file and its length,
// which excludes the 5-byte trailer. In index entries a handle is encoded as
// uvarint(offset) uvarint(length).
//
// The footer is the last FooterLen (64) bytes of the file, little-endian:
//
//	+----------------------------+ 0
//	| filter handle  off u64     |
//	|                len u64     |   len 0 (and off 0): no filter
//	+----------------------------+ 16
//	| properties handle off, len |
//	+----------------------------+ 32
//	| index handle      off, len |
//	+----------------------------+ 48
//	| format version u32         |
//	+----------------------------+ 52
//	| CRC-32C u32 of bytes 0..52 |
//	+----------------------------+ 56
//	| magic u64                  |
//	+----------------------------+ 64

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/mayflydb/mayfly/format"
)

const (
	// FooterLen is the size of the footer.
	FooterLen = 64
	// FormatVersion is the newest table format this package writes and
	// reads. Version 2 added the blocked filter type (filter.go); version 3
	// added deadline rows (format.FlagDeadline); version 4 merge operands
	// (format.FlagMerge). A table is written at version 4 only if it holds
	// an operand, else at version 3 only if it holds a deadline row, else
	// at version 2 (versionFor), so that a binary that predates a row kind
	// reads every table of a database that never used it and names the
	// version of one that did. This package reads MinFormatVersion and up.
	FormatVersion = 4
	// deadlineFormatVersion is the version of a table with deadline rows
	// and no merge operand.
	deadlineFormatVersion = 3
	// plainFormatVersion is the version of a table without deadline rows
	// or merge operands.
	plainFormatVersion = 2
	// MinFormatVersion is the oldest table format this package reads.
	MinFormatVersion = 1
	// Magic ends every table; on disk it reads "MAYFLYs1".
	Magic uint64 = 0x3173594c4659414d

	trailerLen = 5
)

// versionFor returns the format version of a table whose rows' flags OR to
// rowFeatures.
func versionFor(rowFeatures uint8) uint32 {
	switch {
	case rowFeatures&format.FlagMerge != 0:
		return FormatVersion
	case rowFeatures&format.FlagDeadline != 0:
		return deadlineFormatVersion
	}
	return plainFormatVersion
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// blockHandle locates a block in the file; length excludes the trailer.
type blockHandle struct {
	offset, length uint64
}

func (h blockHandle) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.length)
}

// decodeHandle decodes a varint handle that must use all of src.
func decodeHandle(src []byte) (blockHandle, bool) {
	off, n := binary.Uvarint(src)
	if n <= 0 {
		return blockHandle{}, false
	}
	length, m := binary.Uvarint(src[n:])
	if m <= 0 || n+m != len(src) {
		return blockHandle{}, false
	}
	return blockHandle{off, length}, true
}

// within reports whether the block and its trailer lie in [0, end).
func (h blockHandle) within(end uint64) bool {
	return h.length <= end && end-h.length >= trailerLen && h.offset <= end-h.length-trailerLen
}

// appendTrailer appends the trailer for block (already in dst[start:]).
func appendTrailer(dst []byte, start int, typ blockType) []byte {
	dst = append(dst, byte(typ))
	crc := crc32.Checksum(dst[start:], castagnoli)
	return binary.LittleEndian.AppendUint32(dst, crc)
}

type footer struct {
	filter, props, index blockHandle
	version              uint32
}

func (f *footer) encode() []byte {
	b := make([]byte, 0, FooterLen)
	for _, h := range []blockHandle{f.filter, f.props, f.index} {
		b = binary.LittleEndian.AppendUint64(b, h.offset)
		b = binary.LittleEndian.AppendUint64(b, h.length)
	}
	b = binary.LittleEndian.AppendUint32(b, f.version)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return binary.LittleEndian.AppendUint64(b, Magic)
}

// decodeFooter checks and decodes the footer of a file of the given size
// whose last FooterLen bytes are b.
func decodeFooter(b []byte, size int64, file string) (footer, error) {
	var f footer
	off := size - FooterLen
	if m := binary.LittleEndian.Uint64(b[56:]); m != Magic {
		return f, corruptf(file, off+56, "bad magic %#016x (not a table, or truncated)", m)
	}
	if got, want := binary.LittleEndian.Uint32(b[52:]), crc32.Checksum(b[:52], castagnoli); got != want {
		return f, corruptf(file, off+52, "footer checksum mismatch: stored %#08x, computed %#08x", got, want)
	}
	f.version = binary.LittleEndian.Uint32(b[48:])
	if f.version < MinFormatVersion || f.version > FormatVersion {
		return f, corruptf(file, off+48, "unknown format version %d", f.version)
	}
	hs := []*blockHandle{&f.filter, &f.props, &f.index}
	for i, h := range hs {
		h.offset = binary.LittleEndian.Uint64(b[16*i:])
		h.length = binary.LittleEndian.Uint64(b[16*i+8:])
	}
	end := uint64(off)
	if f.filter != (blockHandle{}) && !f.filter.within(end) {
		return f, corruptf(file, off, "filter handle %d+%d outside the file", f.filter.offset, f.filter.length)
	}
	if !f.props.within(end) {
		return f, corruptf(file, off+16, "properties handle %d+%d outside the file", f.props.offset, f.props.length)
	}
	if !f.index.within(end) {
		return f, corruptf(file, off+32, "index handle %d+%d outside the file", f.index.offset, f.index.length)
	}
	return f, nil
}
