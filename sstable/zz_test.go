package sstable

import ("testing"; "bytes")

func TestZZSeeds(t *testing.T) {
	for _, c := range []Compression{SnappyCompression, ZstdCompression} {
		rows := genRows(5, uint64(c))
			for i := range rows {
				if !rows[i].IsTombstone() {
					rows[i].Value = bytes.Repeat([]byte{'z'}, 8+8*(i%4))
				}
			}
		data, _ := buildTable(t, rows, WriterOptions{BlockSize: 64, RestartInterval: 3, Compression: c, BloomBitsPerKey: 10})
		r := openTable(t, data, nil)
		it := r.NewIter().(*Iterator)
		types := map[byte]int{}
		for ok := it.index.first(); ok; ok = it.index.next() {
			h, _ := r.indexHandle(&it.index)
			types[data[h.offset+h.length]]++
		}
		t.Logf("%v: len %d types %v", c, len(data), types)
	}
}
