package sstable

// Block compression.
//
// Every block is stored as its (possibly compressed) bytes followed by a
// 5-byte trailer; see footer.go for the trailer. The compression type byte of
// the trailer selects the decoder:
//
//	0  none    the block bytes are the block
//	1  snappy  Snappy block format (uvarint decoded length, then
//	           Snappy-encoded data), written with s2's Snappy-compatible
//	           encoder
//	2  zstd    one zstd frame carrying its frame content size
//
// The byte is a blockType; the Compression a writer is asked for is a
// separate type whose zero value means the default (SnappyCompression).
//
// A writer stores a block uncompressed when compression saves less than
// 1/8 (12.5%) of its size. A reader bounds the decoded length announced by
// the compressed data by MaxBlockSize before it allocates anything.

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Compression selects how data blocks are compressed. Its zero value,
// DefaultCompression, means SnappyCompression; NoCompression asks for none.
// The values are not the bytes stored in block trailers (blockType).
type Compression uint8

// Supported compressions.
const (
	// DefaultCompression is the zero value: SnappyCompression.
	DefaultCompression Compression = iota
	// NoCompression stores every block as it is.
	NoCompression
	// SnappyCompression compresses blocks with Snappy.
	SnappyCompression
	// ZstdCompression compresses blocks with zstd.
	ZstdCompression
)

// String returns the name of the compression.
func (c Compression) String() string {
	switch c {
	case DefaultCompression:
		return "default"
	case NoCompression:
		return "none"
	case SnappyCompression:
		return "snappy"
	case ZstdCompression:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// Valid reports whether c is one of the constants above.
func (c Compression) Valid() bool { return c <= ZstdCompression }

// Resolve returns the compression c stands for: SnappyCompression for
// DefaultCompression, c itself otherwise.
func (c Compression) Resolve() Compression {
	if c == DefaultCompression {
		return SnappyCompression
	}
	return c
}

// blockType is the compression byte of a block trailer, as drawn above.
type blockType uint8

// Block trailer compression bytes. They are on disk: never renumber them.
const (
	blockNone   blockType = 0
	blockSnappy blockType = 1
	blockZstd   blockType = 2
)

// blockType returns the trailer byte of blocks c compresses (c resolved).
func (c Compression) blockType() blockType {
	switch c.Resolve() {
	case SnappyCompression:
		return blockSnappy
	case ZstdCompression:
		return blockZstd
	}
	return blockNone
}

// MaxBlockSize bounds the decoded size of any compressed block. A block
// whose compressed form announces a larger size is corrupt.
const MaxBlockSize = 64 << 20

// maxSnappyRatio bounds the expansion of Snappy data (at most 64/3).
const maxSnappyRatio = 22

// The zstd encoder and decoder are shared by every writer and reader of the
// process: EncodeAll and DecodeAll are safe for concurrent use.
var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error
)

func zstdCodec() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdOnce.Do(func() {
		zstdEnc, zstdErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderCRC(false),   // blocks carry their own CRC-32C
			zstd.WithSingleSegment(true), // always record the frame content size
			zstd.WithLowerEncoderMem(true))
		if zstdErr != nil {
			return
		}
		zstdDec, zstdErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxBlockSize),
			zstd.WithDecodeAllCapLimit(true))
	})
	return zstdEnc, zstdDec, zstdErr
}

// compress compresses src with c into dst[:0]. It returns the bytes to
// store and the trailer byte of the compression actually used (src itself
// and blockNone when compression does not save at least 1/8 of the size),
// and dst's possibly grown buffer for reuse.
func compress(dst, src []byte, c Compression) (out []byte, typ blockType, buf []byte, err error) {
	if len(src) == 0 {
		return src, blockNone, dst, nil
	}
	typ = c.blockType()
	switch typ {
	case blockSnappy:
		n := s2.MaxEncodedLen(len(src))
		if n < 0 {
			return src, blockNone, dst, nil
		}
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		out = s2.EncodeSnappy(dst[:cap(dst)], src)
	case blockZstd:
		enc, _, err := zstdCodec()
		if err != nil {
			return nil, 0, dst, err
		}
		out = enc.EncodeAll(src, dst[:0])
	default:
		return src, blockNone, dst, nil
	}
	if len(out) > len(src)-len(src)/8 {
		return src, blockNone, out[:0], nil
	}
	return out, typ, out[:0], nil
}

// blockAlloc returns the buffer of n bytes a block is decoded into (slab
// memory for a block about to be cached); nil allocates on the Go heap.
type blockAlloc func(n int) []byte

func (a blockAlloc) get(n int) []byte {
	if a == nil || n == 0 {
		return make([]byte, n)
	}
	return a(n)
}

// decompress decodes a block stored with compression typ into a buffer from
// alloc. The result never aliases src unless typ is blockNone (then it is
// src). Errors are corruption errors naming file and the block offset;
// alloc is only called once the decoded size has been checked.
func decompress(typ byte, src []byte, file string, off int64, alloc blockAlloc) ([]byte, error) {
	switch blockType(typ) {
	case blockNone:
		return src, nil
	case blockSnappy:
		n, err := s2.DecodedLen(src)
		if err != nil {
			return nil, corruptf(file, off, "snappy block: %v", err)
		}
		if n > MaxBlockSize {
			return nil, corruptf(file, off, "snappy block decodes to %d bytes, above the %d limit", n, MaxBlockSize)
		}
		// No Snappy op expands more than 64 bytes out of 3 bytes in, so a
		// larger claim is corrupt; checking it avoids allocating for it.
		if n > maxSnappyRatio*len(src) {
			return nil, corruptf(file, off, "snappy block of %d bytes claims %d decoded bytes", len(src), n)
		}
		dst := alloc.get(n)
		out, err := s2.Decode(dst, src)
		if err != nil {
			return nil, corruptf(file, off, "snappy block: %v", err)
		}
		if len(out) != n {
			return nil, corruptf(file, off, "snappy block decoded to %d bytes, want %d", len(out), n)
		}
		return out, nil
	case blockZstd:
		_, dec, err := zstdCodec()
		if err != nil {
			return nil, err
		}
		var h zstd.Header
		if err := h.Decode(src); err != nil {
			return nil, corruptf(file, off, "zstd block header: %v", err)
		}
		if h.Skippable || !h.HasFCS {
			return nil, corruptf(file, off, "zstd block without frame content size")
		}
		if h.FrameContentSize > MaxBlockSize {
			return nil, corruptf(file, off, "zstd block decodes to %d bytes, above the %d limit", h.FrameContentSize, MaxBlockSize)
		}
		n := int(h.FrameContentSize)
		dst := alloc.get(n)
		out, err := dec.DecodeAll(src, dst[:0])
		if err != nil {
			return nil, corruptf(file, off, "zstd block: %v", err)
		}
		if len(out) != n {
			return nil, corruptf(file, off, "zstd block decoded to %d bytes, want %d", len(out), n)
		}
		if n > 0 && &out[0] != &dst[0] {
			copy(dst, out) // the decoder did not decode in place
		}
		return dst, nil
	}
	return nil, corruptf(file, off, "unknown block compression type %d", typ)
}
