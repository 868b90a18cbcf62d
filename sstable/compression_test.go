package sstable

import (
	"bytes"
	"testing"
)

// TestCompressionTrailerBytes pins the block trailer's compression byte of
// each Compression: it is on disk (see the package doc of compression.go),
// and the Compression constants are not it. DefaultCompression writes
// Snappy blocks.
func TestCompressionTrailerBytes(t *testing.T) {
	src := bytes.Repeat([]byte("compressible "), 200)
	for _, c := range []struct {
		c    Compression
		want byte
	}{
		{NoCompression, 0},
		{DefaultCompression, 1},
		{SnappyCompression, 1},
		{ZstdCompression, 2},
	} {
		_, typ, _, err := compress(nil, src, c.c)
		if err != nil {
			t.Fatal(err)
		}
		if byte(typ) != c.want {
			t.Errorf("%v: trailer byte %d, want %d", c.c, typ, c.want)
		}
		block := appendTrailer(nil, 0, typ)
		if block[0] != c.want {
			t.Errorf("%v: appendTrailer wrote %d, want %d", c.c, block[0], c.want)
		}
	}
}

// TestDefaultCompressionIsSnappy: a table written with the zero
// WriterOptions.Compression is byte for byte the table written with
// SnappyCompression, and an unknown Compression is refused.
func TestDefaultCompressionIsSnappy(t *testing.T) {
	rows := genRows(200, 3)
	def, _ := buildTable(t, rows, WriterOptions{BlockSize: 512, CreationTime: 1})
	snappy, _ := buildTable(t, rows, WriterOptions{BlockSize: 512, CreationTime: 1, Compression: SnappyCompression})
	none, _ := buildTable(t, rows, WriterOptions{BlockSize: 512, CreationTime: 1, Compression: NoCompression})
	if !bytes.Equal(def, snappy) {
		t.Fatal("the default compression wrote a table unlike SnappyCompression's")
	}
	if bytes.Equal(def, none) {
		t.Fatal("SnappyCompression wrote the same table as NoCompression")
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{Compression: ZstdCompression + 1})
	if _, err := w.Finish(); err == nil {
		t.Fatalf("a writer with %v finished a table", ZstdCompression+1)
	}
}
