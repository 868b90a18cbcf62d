package sstable

import (
	"bytes"
	"errors"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// salvageAll reads every row a SalvageIter yields, copied.
func salvageAll(t *testing.T, data []byte) ([]format.Row, *SalvageIter) {
	t.Helper()
	r := openTable(t, data, nil)
	defer r.Close()
	s, err := r.NewSalvageIter()
	if err != nil {
		t.Fatalf("NewSalvageIter: %v", err)
	}
	var rows []format.Row
	for s.Next() {
		row := *s.Row()
		row.Key, row.Value = bytes.Clone(row.Key), bytes.Clone(row.Value)
		rows = append(rows, row)
	}
	if err := s.Error(); err != nil {
		t.Fatalf("salvage: %v", err)
	}
	return rows, s
}

// blockRows returns, per data block of the intact table data, how many
// rows it holds, and the blocks' handles.
func blockRows(t *testing.T, data []byte) ([]int, []blockHandle) {
	t.Helper()
	r := openTable(t, data, nil)
	defer r.Close()
	idx := rawIndexIter(t, r)
	var counts []int
	var hs []blockHandle
	for ok := idx.first(); ok; ok = idx.next() {
		h, err := r.indexHandle(idx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.readBlock(h, "data")
		if err != nil {
			t.Fatal(err)
		}
		var it blockIter
		if err := it.init(b, r.name, int64(h.offset), false); err != nil {
			t.Fatal(err)
		}
		n := 0
		for ok := it.first(); ok; ok = it.next() {
			n++
		}
		counts, hs = append(counts, n), append(hs, h)
	}
	return counts, hs
}

func TestSalvageIntact(t *testing.T) {
	want := genRows(400, 7)
	for _, c := range []Compression{NoCompression, SnappyCompression} {
		data, props := buildTable(t, want, WriterOptions{BlockSize: 512, RestartInterval: 16, Compression: c})
		got, s := salvageAll(t, data)
		if len(s.Damaged()) != 0 {
			t.Fatalf("compression %d: damaged blocks in an intact table: %v", c, s.Damaged())
		}
		if uint64(s.Blocks()) != props.NumDataBlocks || s.Blocks() < 5 {
			t.Fatalf("compression %d: %d blocks, properties say %d (want at least 5)", c, s.Blocks(), props.NumDataBlocks)
		}
		if len(got) != len(want) {
			t.Fatalf("compression %d: %d rows, want %d", c, len(got), len(want))
		}
		for i := range want {
			if !rowsEqual(&got[i], &want[i]) {
				t.Fatalf("compression %d: row %d = %s, want %s", c, i, fmtRow(&got[i]), fmtRow(&want[i]))
			}
		}
	}
}

// TestSalvageDamagedBlock damages one data block: its rows are skipped and
// reported, every other block's rows are yielded.
func TestSalvageDamagedBlock(t *testing.T) {
	want := genRows(400, 8)
	data, _ := buildTable(t, want, WriterOptions{BlockSize: 512, RestartInterval: 16})
	counts, hs := blockRows(t, data)
	for _, bad := range []int{0, 2, len(hs) - 1} {
		damaged := bytes.Clone(data)
		damaged[hs[bad].offset+hs[bad].length/2] ^= 0xff
		got, s := salvageAll(t, damaged)
		before := 0
		for _, n := range counts[:bad] {
			before += n
		}
		skip := counts[bad]
		expect := append(append([]format.Row(nil), want[:before]...), want[before+skip:]...)
		if len(got) != len(expect) {
			t.Fatalf("block %d damaged: %d rows, want %d", bad, len(got), len(expect))
		}
		for i := range expect {
			if !rowsEqual(&got[i], &expect[i]) {
				t.Fatalf("block %d damaged: row %d = %s, want %s", bad, i, fmtRow(&got[i]), fmtRow(&expect[i]))
			}
		}
		d := s.Damaged()
		if len(d) != 1 || d[0].Offset != hs[bad].offset || d[0].Length != hs[bad].length || !errors.Is(d[0].Err, format.ErrCorruption) {
			t.Fatalf("block %d damaged: Damaged() = %+v, want the block at %d", bad, d, hs[bad].offset)
		}
	}
}

// TestSalvageDamagedIndex: without the index no block can be found, and
// NewSalvageIter fails with a corruption error.
func TestSalvageDamagedIndex(t *testing.T) {
	data, _ := buildTable(t, genRows(200, 9), WriterOptions{BlockSize: 512, RestartInterval: 16})
	r := openTable(t, data, nil)
	idx := r.footer.index
	r.Close()
	damaged := bytes.Clone(data)
	damaged[idx.offset+idx.length/2] ^= 0xff
	r = openTable(t, damaged, nil)
	defer r.Close()
	if _, err := r.NewSalvageIter(); !errors.Is(err, format.ErrCorruption) {
		t.Fatalf("NewSalvageIter with a damaged index: %v, want ErrCorruption", err)
	}
}
