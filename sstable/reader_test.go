package sstable

import "testing"

// TestFilterSize: FilterSize is the filter block's length, which grows with
// the bits per key the writer was given, and is 0 for a table without one.
func TestFilterSize(t *testing.T) {
	rows := genRows(4000, 7)
	sizes := map[int]int64{}
	for _, bits := range []int{0, 10, 16} {
		data, _ := buildTable(t, rows, WriterOptions{BloomBitsPerKey: bits})
		r := openTable(t, data, nil)
		sizes[bits] = r.FilterSize()
		r.Close()
	}
	if sizes[0] != 0 {
		t.Fatalf("table without a filter: FilterSize %d, want 0", sizes[0])
	}
	// Blocked filters: 64-byte lines, ceil(keys*bits/512) of them, plus a
	// small header.
	for _, bits := range []int{10, 16} {
		lines := (4000*int64(bits) + 511) / 512
		if got := sizes[bits]; got < 64*lines || got > 64*lines+64 {
			t.Errorf("%d bits per key: FilterSize %d, want %d lines of 64 bytes and a header", bits, got, lines)
		}
	}
}
