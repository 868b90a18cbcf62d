package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

const testName = "sst/000001.sst"

// exerciseCache is shared by the tables exercise opens: with FileNum 0 each
// Reader gets a cache id of its own.
var exerciseCache = NewCache(1 << 20)

// exercise opens data and reads everything: every row forwards and
// backwards, seeks, gets, and Check; then every row forwards again with
// read-ahead. It returns the first error.
func exercise(data []byte) error {
	if err := exercisePlain(data); err != nil {
		return err
	}
	r, err := Open(newMemObject(data), ReaderOptions{Name: testName, ReadAhead: 1 << 10})
	if err != nil {
		return err
	}
	defer r.Close()
	// A compaction iterator (its own index) and then a user iterator (the
	// Reader's).
	for _, it := range []format.Iterator{r.NewCompactionIter(), r.NewIter()} {
		n := 0
		for ok := it.First(); ok && n < 1<<16; ok = it.Next() {
			n++
		}
		for ok := it.Last(); ok && n > 0; ok = it.Prev() {
			n--
		}
		for _, k := range []string{"", "key00000010", "key00000011", "zz"} {
			it.SeekGE([]byte(k))
			it.SeekLT([]byte(k))
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}

func exercisePlain(data []byte) error {
	r, err := Open(newMemObject(data), ReaderOptions{Name: testName, Cache: exerciseCache})
	if err != nil {
		return err
	}
	defer r.Close()
	it := r.NewIter()
	n := 0
	for ok := it.First(); ok && n < 1<<16; ok = it.Next() {
		n++
	}
	for ok := it.Last(); ok && n > 0; ok = it.Prev() {
		n--
	}
	for _, k := range []string{"", "a", "key00000010", "key00000011", "zz"} {
		it.SeekGE([]byte(k))
		it.SeekLT([]byte(k))
		if _, _, err := r.Get([]byte(k), format.MaxSeq); err != nil {
			return err
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	return r.Check()
}

// wantCorruption checks err is a corruption error naming the file and,
// if off >= 0, that offset.
func wantCorruption(t *testing.T, what string, err error, off int64) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	var ce *format.CorruptionError
	if !errors.Is(err, format.ErrCorruption) || !errors.As(err, &ce) {
		t.Fatalf("%s: not a corruption error: %v", what, err)
	}
	if ce.File != testName || !strings.Contains(err.Error(), testName) {
		t.Fatalf("%s: error does not name the file: %v", what, err)
	}
	if off >= 0 && ce.Offset != off {
		t.Fatalf("%s: offset %d, want %d: %v", what, ce.Offset, off, err)
	}
}

func smallTable(t testing.TB, c Compression) []byte {
	data, _ := buildTable(t, genRows(40, 9), WriterOptions{BlockSize: 256, Compression: c, BloomBitsPerKey: 10, RestartInterval: 4})
	return data
}

func tableFooter(t testing.TB, data []byte) footer {
	f, err := decodeFooter(data[len(data)-FooterLen:], int64(len(data)), testName)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCorruptBlocks(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		t.Run(c.String(), func(t *testing.T) {
			data := smallTable(t, c)
			ft := tableFooter(t, data)
			flip := func(off uint64) []byte {
				d := bytes.Clone(data)
				d[off] ^= 0x40
				return d
			}
			at := func(h blockHandle) []uint64 { return []uint64{h.offset, h.offset + h.length/2, h.offset + h.length} }
			// The properties block fails Open at its own offset.
			for _, at := range at(ft.props) {
				_, err := Open(newMemObject(flip(at)), ReaderOptions{Name: testName})
				wantCorruption(t, fmt.Sprintf("properties byte %d", at), err, int64(ft.props.offset))
			}
			// The index and filter are read on first use: Open succeeds,
			// and every use that needs the block fails at its offset.
			rows := genRows(40, 9)
			key := rows[0].Key
			for _, at := range at(ft.index) {
				r := openTable(t, flip(at), nil)
				what := fmt.Sprintf("index byte %d", at)
				off := int64(ft.index.offset)
				_, _, err := r.Get(key, format.MaxSeq)
				wantCorruption(t, what+": Get", err, off)
				wantCorruption(t, what+": NewIter", r.NewIter().Error(), off)
				wantCorruption(t, what+": NewCompactionIter", r.NewCompactionIter().Error(), off)
				wantCorruption(t, what+": Check", r.Check(), off)
			}
			for _, at := range at(ft.filter) {
				r := openTable(t, flip(at), nil)
				what := fmt.Sprintf("filter byte %d", at)
				off := int64(ft.filter.offset)
				_, err := r.MayContain(key)
				wantCorruption(t, what+": MayContain", err, off)
				_, _, err = r.Get(key, format.MaxSeq)
				wantCorruption(t, what+": Get", err, off)
				wantCorruption(t, what+": Check", r.Check(), off)
				// Scans do not need the filter.
				scanCount(t, r, len(rows))
			}
			// Data blocks: Open succeeds, reads fail at the block's offset.
			r := openTable(t, data, nil)
			handles := dataHandles(t, r)
			if len(handles) < 3 {
				t.Fatalf("%d data blocks", len(handles))
			}
			for _, h := range handles {
				d := flip(h.offset + h.length/2)
				r, err := Open(newMemObject(d), ReaderOptions{Name: testName})
				if err != nil {
					t.Fatalf("Open with a bad data block: %v", err)
				}
				wantCorruption(t, "Check", r.Check(), int64(h.offset))
				it := r.NewIter()
				for ok := it.First(); ok; ok = it.Next() {
				}
				wantCorruption(t, "forward scan", it.Error(), int64(h.offset))
				it = r.NewIter()
				for ok := it.Last(); ok; ok = it.Prev() {
				}
				wantCorruption(t, "backward scan", it.Error(), int64(h.offset))
			}
		})
	}
}

func TestCorruptFooter(t *testing.T) {
	data := smallTable(t, NoCompression)
	for i := len(data) - FooterLen; i < len(data); i++ {
		d := bytes.Clone(data)
		d[i] ^= 1
		_, err := Open(newMemObject(d), ReaderOptions{Name: testName})
		wantCorruption(t, fmt.Sprintf("footer byte %d", i), err, -1)
	}
	// A valid-CRC footer whose handles point outside the file, or with an
	// unknown version.
	ft := tableFooter(t, data)
	for name, mod := range map[string]func(f *footer){
		"index":     func(f *footer) { f.index.offset = uint64(len(data)) },
		"props":     func(f *footer) { f.props.length = 1 << 62 },
		"filter":    func(f *footer) { f.filter.offset = 1<<64 - 3 },
		"version":   func(f *footer) { f.version = FormatVersion + 1 },
		"version 0": func(f *footer) { f.version = 0 },
	} {
		f := ft
		mod(&f)
		d := append(bytes.Clone(data[:len(data)-FooterLen]), f.encode()...)
		_, err := Open(newMemObject(d), ReaderOptions{Name: testName})
		wantCorruption(t, name, err, -1)
	}
}

func TestTruncated(t *testing.T) {
	data := smallTable(t, SnappyCompression)
	for n := 0; n < len(data); n++ {
		_, err := Open(newMemObject(data[:n]), ReaderOptions{Name: testName})
		wantCorruption(t, fmt.Sprintf("truncated to %d", n), err, -1)
	}
}

// byteStride is the step of the byte-by-byte corruption tests: every byte,
// or a sample under the (slow) race detector.
func byteStride() int {
	if raceEnabled {
		return 7
	}
	return 1
}

// TestEveryByteFlip flips each byte of a small table in turn: every flip
// must be reported as corruption by Open or by reading, never missed and
// never a panic.
func TestEveryByteFlip(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		data := smallTable(t, c)
		for i := 0; i < len(data); i += byteStride() {
			d := bytes.Clone(data)
			d[i] ^= 0x10
			wantCorruption(t, fmt.Sprintf("%v byte %d", c, i), exercise(d), -1)
		}
	}
}

// reseal rewrites every block trailer CRC and the footer CRC of a table, so
// that corrupted contents reach the decoders instead of failing the CRC.
// It returns data unchanged where the structure cannot be followed.
func reseal(data []byte) []byte {
	if len(data) < FooterLen {
		return data
	}
	d := bytes.Clone(data)
	fo := len(d) - FooterLen
	binary.LittleEndian.PutUint32(d[fo+52:], crc32.Checksum(d[fo:fo+52], castagnoli))
	end := uint64(fo)
	fix := func(h blockHandle) {
		if h.within(end) {
			n := h.offset + h.length
			binary.LittleEndian.PutUint32(d[n+1:], crc32.Checksum(d[h.offset:n+1], castagnoli))
		}
	}
	var hs [3]blockHandle
	for i := range hs {
		hs[i] = blockHandle{binary.LittleEndian.Uint64(d[fo+16*i:]), binary.LittleEndian.Uint64(d[fo+16*i+8:])}
		fix(hs[i])
	}
	idx := hs[2]
	if !idx.within(end) {
		return d
	}
	b, err := decompress(d[idx.offset+idx.length], d[idx.offset:idx.offset+idx.length], "", 0, nil)
	if err != nil {
		return d
	}
	var it blockIter
	if it.init(b, "", 0, true) != nil {
		return d
	}
	for ok := it.first(); ok; ok = it.next() {
		if h, ok := decodeHandle(it.row.Value); ok {
			fix(h)
		}
	}
	return d
}

// TestResealedCorruption corrupts bytes behind valid CRCs: decoding must
// fail cleanly (or succeed on a still-valid table), never panic.
func TestResealedCorruption(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		data := smallTable(t, c)
		for i := 0; i < len(data)-FooterLen; i += byteStride() {
			x := []byte{0x01, 0x80, 0xff}[i%3]
			d := bytes.Clone(data)
			d[i] ^= x
			if err := exercise(reseal(d)); err != nil && !errors.Is(err, format.ErrCorruption) {
				t.Fatalf("%v byte %d ^%#x: %v", c, i, x, err)
			}
		}
	}
}

func TestBlockDecodeRejects(t *testing.T) {
	var w blockWriter
	w.restartInterval = 2
	for i := range 5 {
		r := format.Row{Key: fmt.Appendf(nil, "k%d", i), Seq: 1, Flags: format.FlagHasTS, TS: 77}
		w.add(format.AppendInternalKey(nil, &r), &r, []byte("val"))
	}
	block := w.finish()
	// Every truncation of the block either fails init or decodes (by
	// chance) without panicking; a failure is a corruption error.
	for n := range len(block) {
		var it blockIter
		if err := it.init(block[:n], testName, 99, false); err != nil {
			wantCorruption(t, fmt.Sprintf("prefix %d", n), err, 99)
			continue
		}
		for ok := it.last(); ok; ok = it.prev() {
		}
		if it.err != nil {
			wantCorruption(t, fmt.Sprintf("prefix %d", n), it.err, 99)
		}
	}
	bad := bytes.Clone(block)
	binary.LittleEndian.PutUint32(bad[len(bad)-4:], 1000)
	var it blockIter
	wantCorruption(t, "restart count", it.init(bad, testName, 99, false), 99)
}
