package wal

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mayflydb/mayfly/storage"
)

const testSeg = 7

// testPayloads returns n payloads of varied sizes, including empty ones and
// some larger than Replay's read-ahead chunk.
func testPayloads(rng *rand.Rand, n int) [][]byte {
	var out [][]byte
	for i := range n {
		var size int
		switch {
		case i%17 == 3:
			size = 0
		case i%53 == 10:
			size = readChunk + rng.IntN(3*readChunk)
		default:
			size = rng.IntN(300)
		}
		p := make([]byte, size)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		out = append(out, p)
	}
	return out
}

// newTestWriter creates log name in s and returns a Writer for it as
// segment testSeg.
func newTestWriter(t testing.TB, s storage.Storage, name string) *Writer {
	t.Helper()
	lw, err := s.CreateLog(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(lw, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// writeSegment writes payloads as segment testSeg named name, grouping a few
// records per Write and syncing every ten records and at the end, and
// returns the segment's size once closed.
func writeSegment(t testing.TB, s storage.Storage, name string, payloads [][]byte) int64 {
	t.Helper()
	return writeSegmentSyncEvery(t, s, name, payloads, 10)
}

// writeSegmentSyncEvery is writeSegment syncing after every syncEvery-th
// record and at the end, or never if syncEvery is 0.
func writeSegmentSyncEvery(t testing.TB, s storage.Storage, name string, payloads [][]byte, syncEvery int) int64 {
	t.Helper()
	w := newTestWriter(t, s, name)
	var buf []byte
	for i, p := range payloads {
		buf = AppendRecord(buf, p)
		if i%3 == 0 || i == len(payloads)-1 {
			if err := w.Write(buf); err != nil {
				t.Fatal(err)
			}
			buf = buf[:0]
		}
		if syncEvery > 0 && i%syncEvery == 0 {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if syncEvery > 0 {
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.Size()
}

func replayAll(t testing.TB, s storage.Storage, name string) ([][]byte, ReplayResult, error) {
	t.Helper()
	var got [][]byte
	res, err := Replay(s, name, testSeg, func(p []byte) error {
		got = append(got, bytes.Clone(p))
		return nil
	})
	return got, res, err
}

// putLog stores data as a log named name.
func putLog(t testing.TB, s storage.Storage, name string, data []byte) {
	t.Helper()
	lw, err := s.CreateLog(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := lw.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
}

func samePayloads(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y []byte) bool { return bytes.Equal(x, y) })
}

func TestRoundTrip(t *testing.T) {
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    storage.Storage
	}{{"Mem", storage.NewMem()}, {"Local", local}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			payloads := testPayloads(rng, 500)
			size := writeSegment(t, tc.s, "wal/000007.wal", payloads)
			got, res, err := replayAll(t, tc.s, "wal/000007.wal")
			if err != nil {
				t.Fatal(err)
			}
			if !samePayloads(got, payloads) {
				t.Fatalf("replayed %d records, want %d (or contents differ)", len(got), len(payloads))
			}
			if res.Records != len(payloads) || res.ValidBytes != size || res.FileSize != size || res.TornOffset != -1 || res.Torn() {
				t.Fatalf("result %+v, size %d", res, size)
			}
			if res.TornError("x") != nil {
				t.Fatal("TornError on a clean segment")
			}
		})
	}
}

// testRecord is one record found by splitRecords.
type testRecord struct {
	off     int64
	typ     uint8
	payload []byte
}

func (r testRecord) end() int64 { return r.off + int64(RecordLen(len(r.payload))) }

// splitRecords splits the records of an intact segment (its CRCs are not
// checked) up to its end or an end marker.
func splitRecords(seg []byte) []testRecord {
	var out []testRecord
	for off := int64(HeaderSize); off+RecordHeaderSize <= int64(len(seg)) && seg[off+8] != 0; {
		n := int64(binary.LittleEndian.Uint32(seg[off+4:]))
		out = append(out, testRecord{off, seg[off+8], seg[off+RecordHeaderSize : off+RecordHeaderSize+n]})
		off += RecordHeaderSize + n
	}
	return out
}

// flipByte returns a copy of b with the byte at off inverted.
func flipByte(b []byte, off int) []byte {
	c := bytes.Clone(b)
	c[off] ^= 0xff
	return c
}

// crcFix recomputes the CRC of one encoded record in place.
func crcFix(rec []byte) {
	binary.LittleEndian.PutUint32(rec, crc32.Checksum(rec[4:], crcTable))
}
