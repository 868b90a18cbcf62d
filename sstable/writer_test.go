package sstable

import (
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// TestDataBlocksWithinBlockSize checks that the writer ends a data block
// before a row that would take it past BlockSize (so a decoded block fits
// the BlockSize allocation class), and still fills blocks to within one
// row plus maxEntryLen's slack of it; a row larger than BlockSize gets a
// block of its own.
func TestDataBlocksWithinBlockSize(t *testing.T) {
	const blockSize = 4096
	var rows []format.Row
	for i := range 3000 {
		r := format.Row{Key: fmt.Appendf(nil, "user/%010d", i), Seq: uint64(i + 1), Value: make([]byte, 60+i%80)}
		if i%3 == 0 {
			r.Flags = format.FlagHasTS | format.FlagHasExpire
			r.TS, r.ExpireTS = 1_700_000_000_000, 1_700_000_360_000
		}
		if i == 1500 {
			r.Value = make([]byte, 3*blockSize)
		}
		rows = append(rows, r)
	}
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		data, props := buildTable(t, rows, WriterOptions{BlockSize: blockSize, Compression: c})
		r := openTable(t, data, nil)
		sizes := make([]int, len(mustIndex(t, r).handles))
		for i, h := range mustIndex(t, r).handles {
			b, err := r.readBlock(h, "data")
			if err != nil {
				t.Fatal(err)
			}
			sizes[i] = len(b)
		}
		big, small := 0, 0
		for i, n := range sizes {
			// The block before the oversized row's and the last block may
			// end short; no other.
			beforeBig := i+1 < len(sizes) && sizes[i+1] > blockSize
			switch {
			case n > blockSize:
				big++
			case i != len(sizes)-1 && !beforeBig && n < blockSize-200:
				small++
			}
		}
		if big != 1 || small != 0 {
			t.Errorf("%v: %d data blocks: %d above %d bytes (want 1, the oversized row), %d under %d bytes",
				c, props.NumDataBlocks, big, blockSize, small, blockSize-200)
		}
	}
}
