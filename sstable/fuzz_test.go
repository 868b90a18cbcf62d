package sstable

import (
	"bytes"
	"errors"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// FuzzOpen opens arbitrary bytes as a table and reads all of it. With
// resealed set, block and footer CRCs are recomputed first so that mutated
// contents reach the decoders. Errors must be corruption errors; nothing may
// panic or allocate by an unchecked length.
func FuzzOpen(f *testing.F) {
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		for _, bloomBits := range []int{0, 10} {
			// Small seeds keep each run, and the minimization of new
			// inputs, fast.
			rows := genRows(5, uint64(c))
			for i := range rows {
				if !rows[i].IsTombstone() {
					rows[i].Value = bytes.Repeat([]byte{'z'}, 8+8*(i%4))
				}
			}
			data, _ := buildTable(f, rows, WriterOptions{
				BlockSize: 64, RestartInterval: 3, Compression: c, BloomBitsPerKey: bloomBits,
			})
			f.Add(data, false)
			f.Add(data, true)
		}
	}
	// A format-4 table: merge operands and a deadline row among values.
	rows := genRows(5, 9)
	for i := range rows {
		rows[i].Flags, rows[i].Value = format.FlagMerge|format.FlagHasTS|format.FlagHasExpire, []byte{byte(i), 0, 0, 0, 0, 0, 0, 0}
		rows[i].TS, rows[i].ExpireTS = 100, 200
	}
	rows[2] = format.Row{Key: rows[2].Key, Seq: rows[2].Seq, Flags: format.FlagDeadline | format.FlagHasTS, TS: 100}
	merged, props := buildTable(f, rows, WriterOptions{BlockSize: 64, RestartInterval: 3})
	if props.FormatVersion != FormatVersion {
		f.Fatalf("seed table with operands at version %d", props.FormatVersion)
	}
	f.Add(merged, false)
	f.Add(merged, true)
	empty, _ := buildTable(f, nil, WriterOptions{})
	f.Add(empty, false)
	f.Add([]byte("short"), false)
	f.Fuzz(func(t *testing.T, data []byte, resealed bool) {
		if resealed {
			data = reseal(data)
		}
		if err := exercise(data); err != nil && !errors.Is(err, format.ErrCorruption) {
			t.Fatalf("non-corruption error: %v", err)
		}
	})
}

// FuzzBlock iterates arbitrary bytes as a block in every direction and
// seeks in it.
func FuzzBlock(f *testing.F) {
	var w blockWriter
	for _, ri := range []int{1, 3} {
		w.reset()
		w.restartInterval = ri
		rows := genRows(10, 4)
		for i := range rows {
			w.add(format.AppendInternalKey(nil, &rows[i]), &rows[i], rows[i].Value)
		}
		f.Add(bytes.Clone(w.finish()), []byte("key00000006"))
	}
	f.Add([]byte{0, 0, 0, 0}, []byte("k"))
	f.Fuzz(func(t *testing.T, data, seek []byte) {
		var it blockIter
		if err := it.init(data, "fuzz", 0, false); err != nil {
			if !errors.Is(err, format.ErrCorruption) {
				t.Fatal(err)
			}
			return
		}
		n := 0
		for ok := it.first(); ok; ok = it.next() {
			n++
		}
		for ok := it.last(); ok && n > 0; ok = it.prev() {
			n--
		}
		it.err = nil
		it.seekGE(format.SeekKey(nil, seek, format.MaxSeq))
		it.prev()
		it.next()
		if it.err != nil && !errors.Is(it.err, format.ErrCorruption) {
			t.Fatal(it.err)
		}
	})
}
