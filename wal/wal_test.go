package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
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
// records per Write, and returns the Writer's final size.
func writeSegment(t testing.TB, s storage.Storage, name string, payloads [][]byte) int64 {
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
		if i%10 == 0 {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	size := w.Size()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return size
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

func TestEmptySegments(t *testing.T) {
	s := storage.NewMem()
	// Header only: clean, no records.
	lw, _ := s.CreateLog("wal/a")
	w, err := NewWriter(lw, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	if w.Size() != HeaderSize {
		t.Fatalf("size %d", w.Size())
	}
	got, res, err := replayAll(t, s, "wal/a")
	if err != nil || len(got) != 0 || res.TornOffset != -1 || res.ValidBytes != HeaderSize {
		t.Fatalf("header only: %v %+v", err, res)
	}
	// Empty file, short header, all-zero header: torn at 0.
	for name, data := range map[string][]byte{
		"wal/empty": nil,
		"wal/short": AppendHeader(nil, testSeg)[:HeaderSize-1],
		"wal/zero":  make([]byte, 100),
	} {
		putLog(t, s, name, data)
		got, res, err := replayAll(t, s, name)
		if err != nil || len(got) != 0 || res.TornOffset != 0 || res.ValidBytes != 0 {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		terr := res.TornError(name)
		var ce *format.CorruptionError
		if !errors.As(terr, &ce) || ce.File != name || ce.Offset != 0 {
			t.Fatalf("%s: TornError = %v", name, terr)
		}
	}
	if _, err := Replay(s, "wal/missing", testSeg, func([]byte) error { return nil }); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("missing segment: %v", err)
	}
}

func TestTornTail(t *testing.T) {
	var payloads [][]byte
	for i := range 20 {
		payloads = append(payloads, bytes.Repeat([]byte{byte(i)}, i*7))
	}
	payloads = append(payloads, bytes.Repeat([]byte("last record "), 30))
	src := storage.NewMem()
	writeSegment(t, src, "wal/full", payloads)
	full, err := storage.ReadAll(src, "wal/full")
	if err != nil {
		t.Fatal(err)
	}
	lastStart := int64(len(full) - RecordLen(len(payloads[len(payloads)-1])))
	for cut := int64(0); cut < int64(len(full)); cut++ {
		s := storage.NewMem()
		putLog(t, s, "wal/t", full[:cut])
		got, res, err := replayAll(t, s, "wal/t")
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		switch {
		case cut < HeaderSize:
			if len(got) != 0 || res.TornOffset != 0 {
				t.Fatalf("cut %d in header: %+v", cut, res)
			}
		case cut >= lastStart:
			if !samePayloads(got, payloads[:len(payloads)-1]) {
				t.Fatalf("cut %d: got %d records", cut, len(got))
			}
			wantTorn := lastStart
			if cut == lastStart {
				wantTorn = -1 // a clean cut between records
			}
			if res.TornOffset != wantTorn || res.ValidBytes != lastStart {
				t.Fatalf("cut %d: result %+v, want torn at %d", cut, res, wantTorn)
			}
			if wantTorn >= 0 {
				var ce *format.CorruptionError
				if err := res.TornError("wal/t"); !errors.As(err, &ce) || ce.Offset != lastStart || ce.File != "wal/t" {
					t.Fatalf("cut %d: TornError %v", cut, err)
				}
			}
		default:
			// Any earlier cut yields a prefix of the records and a torn
			// offset at a record boundary.
			if len(got) > len(payloads) || !samePayloads(got, payloads[:len(got)]) {
				t.Fatalf("cut %d: records are not a prefix", cut)
			}
			if res.TornOffset != -1 && res.TornOffset != res.ValidBytes {
				t.Fatalf("cut %d: result %+v", cut, res)
			}
		}
	}
}

func TestBitFlips(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	payloads := testPayloads(rng, 6)
	payloads[3] = []byte("the record to damage")
	src := storage.NewMem()
	writeSegment(t, src, "wal/full", payloads)
	full, _ := storage.ReadAll(src, "wal/full")
	start := int64(HeaderSize)
	for _, p := range payloads[:3] {
		start += int64(RecordLen(len(p)))
	}
	end := start + int64(RecordLen(len(payloads[3])))
	for off := start; off < end; off++ {
		for bit := range 8 {
			data := bytes.Clone(full)
			data[off] ^= 1 << bit
			s := storage.NewMem()
			putLog(t, s, "wal/f", data)
			got, res, err := replayAll(t, s, "wal/f")
			if err != nil {
				t.Fatalf("flip %d.%d: %v", off, bit, err)
			}
			if !samePayloads(got, payloads[:3]) || res.TornOffset != start || res.ValidBytes != start {
				t.Fatalf("flip %d.%d: %d records, %+v; want torn at %d", off, bit, len(got), res, start)
			}
		}
	}
}

func TestBadHeader(t *testing.T) {
	src := storage.NewMem()
	writeSegment(t, src, "wal/full", [][]byte{[]byte("a"), []byte("b")})
	full, _ := storage.ReadAll(src, "wal/full")
	for off := range HeaderSize {
		data := bytes.Clone(full)
		data[off] ^= 0x10
		s := storage.NewMem()
		putLog(t, s, "wal/h", data)
		got, _, err := replayAll(t, s, "wal/h")
		var ce *format.CorruptionError
		if !errors.As(err, &ce) || ce.File != "wal/h" || ce.Offset != 0 || len(got) != 0 {
			t.Fatalf("flip at %d: err %v, %d records", off, err, len(got))
		}
	}
	// A valid header for another segment number.
	_, err := Replay(src, "wal/full", testSeg+1, func([]byte) error { return nil })
	if !errors.Is(err, format.ErrCorruption) || !strings.Contains(err.Error(), "segment 7") {
		t.Fatalf("wrong segment: %v", err)
	}
	// A header with a valid checksum but another version.
	data := bytes.Clone(full)
	data[8] = 2
	binary.LittleEndian.PutUint32(data[20:], crc32.Checksum(data[:20], crcTable))
	s := storage.NewMem()
	putLog(t, s, "wal/v", data)
	if _, err := Replay(s, "wal/v", testSeg, func([]byte) error { return nil }); !errors.Is(err, format.ErrCorruption) {
		t.Fatalf("bad version: %v", err)
	}
}

func TestEndMarker(t *testing.T) {
	payloads := [][]byte{[]byte("one"), []byte("two"), {}}
	src := storage.NewMem()
	writeSegment(t, src, "wal/full", payloads)
	full, _ := storage.ReadAll(src, "wal/full")
	for _, pad := range []int{1, 5, RecordHeaderSize, 100, 3 * readChunk} {
		s := storage.NewMem()
		putLog(t, s, "wal/p", append(bytes.Clone(full), make([]byte, pad)...))
		got, res, err := replayAll(t, s, "wal/p")
		if err != nil || !samePayloads(got, payloads) || res.TornOffset != -1 || res.ValidBytes != int64(len(full)) {
			t.Fatalf("pad %d: %v %+v", pad, err, res)
		}
	}
	// Non-zero data after an end marker.
	for _, at := range []int{RecordHeaderSize, 2 * readChunk} {
		data := append(bytes.Clone(full), make([]byte, at+10)...)
		data[len(full)+at+3] = 1
		s := storage.NewMem()
		putLog(t, s, "wal/g", data)
		got, res, err := replayAll(t, s, "wal/g")
		if err != nil || !samePayloads(got, payloads) || res.TornOffset != int64(len(full)) {
			t.Fatalf("garbage at %d: %v %+v", at, err, res)
		}
		if !strings.Contains(res.TornReason, fmt.Sprint(len(full)+at+3)) {
			t.Fatalf("reason %q does not name the offset", res.TornReason)
		}
	}
}

func TestUnknownTypeIsCorruption(t *testing.T) {
	rec := AppendRecord(nil, []byte("payload"))
	rec[8] = 9
	crcFix(rec) // so that only the type is wrong
	data := append(AppendHeader(nil, testSeg), AppendRecord(nil, []byte("ok"))...)
	off := int64(len(data))
	data = append(data, rec...)
	s := storage.NewMem()
	putLog(t, s, "wal/u", data)
	got, _, err := replayAll(t, s, "wal/u")
	var ce *format.CorruptionError
	if !errors.As(err, &ce) || ce.Offset != off || len(got) != 1 {
		t.Fatalf("err %v, %d records", err, len(got))
	}
}

// crcFix recomputes the CRC of one encoded record in place.
func crcFix(rec []byte) {
	binary.LittleEndian.PutUint32(rec, crc32.Checksum(rec[4:], crcTable))
}

func TestHugeLength(t *testing.T) {
	for _, length := range []uint32{MaxRecordSize, MaxRecordSize + 1, 1<<32 - 1} {
		data := AppendHeader(nil, testSeg)
		off := int64(len(data))
		data = append(data, 1, 2, 3, 4, byte(length), byte(length>>8), byte(length>>16), byte(length>>24), RecordTypeFull)
		data = append(data, make([]byte, 64)...)
		s := storage.NewMem()
		putLog(t, s, "wal/x", data)
		// A small file claiming a huge record must not make Replay allocate
		// anything near the claimed size.
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := Replay(s, "wal/x", testSeg, func([]byte) error { return nil })
		runtime.ReadMemStats(&after)
		if err != nil || res.TornOffset != off || res.Records != 0 {
			t.Fatalf("length %d: %v %+v", length, err, res)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
			t.Fatalf("length %d: replay allocated %d bytes", length, n)
		}
	}
}

func TestCallbackError(t *testing.T) {
	s := storage.NewMem()
	writeSegment(t, s, "wal/c", [][]byte{[]byte("a"), []byte("b"), []byte("c")})
	stop := errors.New("stop")
	n := 0
	res, err := Replay(s, "wal/c", testSeg, func([]byte) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 || res.Records != 1 {
		t.Fatalf("err %v, n %d, %+v", err, n, res)
	}
}

type failLog struct {
	writes, syncs int
	failWrite     bool
	failSync      bool
}

func (f *failLog) Write(p []byte) (int, error) {
	if f.failWrite {
		return len(p) / 2, errors.New("disk full")
	}
	f.writes++
	return len(p), nil
}

func (f *failLog) Sync() error {
	if f.failSync {
		return errors.New("EIO")
	}
	f.syncs++
	return nil
}

func (f *failLog) Close() error { return nil }

func TestWriterStickyErrors(t *testing.T) {
	fl := &failLog{}
	w, err := NewWriter(fl, 1)
	if err != nil {
		t.Fatal(err)
	}
	fl.failWrite = true
	// Write only queues; the failure surfaces when the flusher writes.
	if err := w.Write(AppendRecord(nil, []byte("xx"))); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("flush of a failed write succeeded")
	}
	fl.failWrite = false
	if err := w.Write(AppendRecord(nil, []byte("yy"))); err == nil {
		t.Fatal("write after a failed write succeeded")
	}
	if err := w.Sync(); err == nil {
		t.Fatal("sync after a failed write succeeded")
	}

	fl = &failLog{}
	w, _ = NewWriter(fl, 1)
	fl.failSync = true
	if err := w.Sync(); err == nil {
		t.Fatal("sync succeeded")
	}
	fl.failSync = false
	if err := w.Write(AppendRecord(nil, nil)); err == nil {
		t.Fatal("write after a failed sync succeeded")
	}

	fl = &failLog{}
	w, _ = NewWriter(fl, 1)
	w.Close()
	if err := w.Write(AppendRecord(nil, nil)); err == nil {
		t.Fatal("write after close succeeded")
	}
}

func TestCrashReplay(t *testing.T) {
	// Records synced before a crash survive it; later ones may not.
	m := storage.NewMem()
	lw, _ := m.CreateLog("wal/000001.wal")
	w, _ := NewWriter(lw, testSeg)
	w.Write(AppendRecord(nil, []byte("synced")))
	w.Sync()
	w.Write(AppendRecord(nil, []byte("lost")))
	c := m.CrashClone()
	got, res, err := replayAll(t, c, "wal/000001.wal")
	if err != nil || len(got) != 1 || string(got[0]) != "synced" || res.TornOffset != -1 {
		t.Fatalf("after crash: %v %q %+v", err, got, res)
	}
	// Crash before the header was synced.
	m2 := storage.NewMem()
	lw2, _ := m2.CreateLog("wal/000002.wal")
	NewWriter(lw2, testSeg)
	_, res, err = replayAll(t, m2.CrashClone(), "wal/000002.wal")
	if err != nil || res.TornOffset != 0 {
		t.Fatalf("unsynced header: %v %+v", err, res)
	}
}

func FuzzReplay(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	var seg []byte
	seg = AppendHeader(seg, testSeg)
	for _, p := range testPayloads(rng, 8) {
		if len(p) < 1000 {
			seg = AppendRecord(seg, p)
		}
	}
	f.Add(seg)
	f.Add(seg[:len(seg)-3])
	f.Add(seg[:HeaderSize])
	f.Add(seg[:10])
	f.Add([]byte{})
	f.Add(append(bytes.Clone(seg), make([]byte, 20)...))
	huge := append(AppendHeader(nil, testSeg), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x0f, 1)
	f.Add(huge)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := storage.NewMem()
		putLog(t, s, "wal/f", data)
		var re []byte
		res, err := Replay(s, "wal/f", testSeg, func(p []byte) error {
			if len(p) > len(data) {
				t.Fatalf("payload of %d bytes from %d-byte file", len(p), len(data))
			}
			if len(re) == 0 {
				re = AppendHeader(re, testSeg)
			}
			re = AppendRecord(re, p)
			return nil
		})
		if err != nil {
			if !errors.Is(err, format.ErrCorruption) {
				t.Fatalf("non-corruption error %v", err)
			}
			return
		}
		if res.ValidBytes > int64(len(data)) || res.FileSize != int64(len(data)) {
			t.Fatalf("result %+v for %d bytes", res, len(data))
		}
		if res.TornOffset != -1 && res.TornOffset != res.ValidBytes {
			t.Fatalf("torn offset %d != valid bytes %d", res.TornOffset, res.ValidBytes)
		}
		// The intact records re-encode to exactly the valid prefix.
		if res.Records > 0 && !bytes.Equal(re, data[:res.ValidBytes]) {
			t.Fatalf("re-encoding differs from the valid prefix")
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{128, 1024, 16 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			s, err := storage.NewLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			lw, err := CreateLog(s, "wal/000001.wal") // preallocated, as the engine does
			if err != nil {
				b.Fatal(err)
			}
			w, err := NewWriter(lw, 1)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			payload := bytes.Repeat([]byte{0xab}, size)
			var buf []byte
			b.SetBytes(int64(RecordLen(size)))
			b.ResetTimer()
			for range b.N {
				buf = AppendRecord(buf[:0], payload)
				if err := w.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendSync(b *testing.B) {
	for _, size := range []int{128, 16 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			s, err := storage.NewLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			lw, err := CreateLog(s, "wal/000001.wal") // preallocated, as the engine does
			if err != nil {
				b.Fatal(err)
			}
			w, err := NewWriter(lw, 1)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			payload := bytes.Repeat([]byte{0xcd}, size)
			var buf []byte
			b.SetBytes(int64(RecordLen(size)))
			b.ResetTimer()
			for range b.N {
				buf = AppendRecord(buf[:0], payload)
				if err := w.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := w.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWritesAroundMaxPending round-trips a mix of small records and records
// larger than maxPending, written without syncs in between, so that Write
// both waits for the flusher (the pending buffer would pass maxPending) and
// passes an oversized write into an empty buffer; every record must come
// back in order.
func TestWritesAroundMaxPending(t *testing.T) {
	s := storage.NewMem()
	rng := rand.New(rand.NewPCG(3, 4))
	var payloads [][]byte
	for i := range 40 {
		size := rng.IntN(maxPending / 4)
		if i%7 == 2 {
			size = maxPending + rng.IntN(maxPending)
		}
		p := make([]byte, size)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		payloads = append(payloads, p)
	}
	w := newTestWriter(t, s, "wal/000009.wal")
	for _, p := range payloads {
		if err := w.Write(AppendRecord(nil, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, res, err := replayAll(t, s, "wal/000009.wal")
	if err != nil {
		t.Fatal(err)
	}
	if !samePayloads(got, payloads) || res.Torn() {
		t.Fatalf("replayed %d of %d records (torn %v)", len(got), len(payloads), res.Torn())
	}
}

// TestWriterBuffersTakenOnFirstWrite: a Writer that is never written to
// maps no pending buffer; written to, it maps at most two, outside the Go
// heap, and Close unmaps them.
func TestWriterBuffersTakenOnFirstWrite(t *testing.T) {
	b0, n0 := manual.Allocated()
	lw, err := storage.NewMem().CreateLog("000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(lw, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	if b, n := manual.Allocated(); b != b0 || n != n0 {
		t.Fatalf("a Writer not yet written to maps %d bytes in %d buffers", b-b0, n-n0)
	}
	rec := AppendRecord(nil, []byte("row"))
	for range 100 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, want := w.Size(), int64(HeaderSize+100*len(rec)); got != want {
		t.Fatalf("size %d after 100 records, want %d", got, want)
	}
	if b, n := manual.Allocated(); n-n0 < 1 || n-n0 > 2 || b-b0 != (n-n0)*maxPending {
		t.Fatalf("a written Writer maps %d bytes in %d buffers, want 1 or 2 of %d", b-b0, n-n0, maxPending)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkManualFreed(t, b0, n0)
	if err := w.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
	if err := w.Write(rec); err == nil {
		t.Fatal("Write after Close succeeded")
	}
	checkManualFreed(t, b0, n0)
}

// checkManualFreed fails t unless manual memory is back to b0 bytes in n0
// buffers.
func checkManualFreed(t *testing.T, b0, n0 int64) {
	t.Helper()
	if b, n := manual.Allocated(); b != b0 || n != n0 {
		t.Fatalf("manual memory %d bytes in %d buffers, want %d in %d", b, n, b0, n0)
	}
}

// TestOversizedWriteBufferNotKept: a write larger than maxPending gets a Go
// heap buffer for that one write; once it has been handed to the log the
// Writer must not keep that buffer, and its own two buffers stay the only
// ones mapped.
func TestOversizedWriteBufferNotKept(t *testing.T) {
	b0, n0 := manual.Allocated()
	w := newTestWriter(t, storage.NewMem(), "wal/000010.wal")
	big := AppendRecord(nil, make([]byte, 3*maxPending))
	small := AppendRecord(nil, []byte("row"))
	for _, rec := range [][]byte{big, small, big, small, small, big} {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	pc := cap(w.pending)
	idle := len(w.idle)
	w.mu.Unlock()
	if pc > maxPending || idle > 2 {
		t.Fatalf("after oversized writes the pending buffer has capacity %d and %d buffers are idle, want at most %d and 2", pc, idle, maxPending)
	}
	if b, n := manual.Allocated(); n-n0 > 2 || b-b0 != (n-n0)*maxPending {
		t.Fatalf("oversized writes left %d manual bytes in %d buffers", b-b0, n-n0)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkManualFreed(t, b0, n0)
}

// TestWriterFreesBuffersOnErrorAndPendingClose: the pending buffers are
// unmapped exactly once by Close after a failed write, after a failed sync,
// and when Close is called while the flusher is still writing one buffer
// and the other holds records.
func TestWriterFreesBuffersOnErrorAndPendingClose(t *testing.T) {
	rec := AppendRecord(nil, make([]byte, 1000))
	t.Run("write error", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		fl := &failLog{}
		w, err := NewWriter(fl, testSeg)
		if err != nil {
			t.Fatal(err)
		}
		fl.failWrite = true
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err == nil {
			t.Fatal("Flush after a failed write succeeded")
		}
		if err := w.Write(rec); err == nil {
			t.Fatal("Write after a failed write succeeded")
		}
		if err := w.Close(); err == nil {
			t.Fatal("Close after a failed write succeeded")
		}
		checkManualFreed(t, b0, n0)
	})
	t.Run("sync error", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		fl := &failLog{failSync: true}
		w, err := NewWriter(fl, testSeg)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteSync(rec); err == nil {
			t.Fatal("WriteSync with a failing sync succeeded")
		}
		w.Close()
		checkManualFreed(t, b0, n0)
	})
	t.Run("close while writing", func(t *testing.T) {
		b0, n0 := manual.Allocated()
		g := &gateLog{entered: make(chan struct{}, 8), gate: make(chan struct{})}
		w, err := NewWriter(g, testSeg)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		<-g.entered // the flusher holds the first buffer
		for range 10 {
			if err := w.Write(rec); err != nil { // into the second buffer
				t.Fatal(err)
			}
		}
		closed := make(chan error)
		go func() { closed <- w.Close() }()
		// Close cannot free while the flusher writes: the buffers stay.
		if b, n := manual.Allocated(); n-n0 != 2 || b-b0 != 2*maxPending {
			t.Fatalf("during Close: %d manual bytes in %d buffers, want 2 of %d", b-b0, n-n0, maxPending)
		}
		close(g.gate)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if g.writes != 3 {
			t.Fatalf("%d log writes, want 3 (header, first record, the other ten)", g.writes)
		}
		checkManualFreed(t, b0, n0)
	})
}

// gateLog is a LogWriter whose writes after the first (the segment header)
// wait until the test closes gate, so that records pile up in the Writer's
// pending buffer meanwhile.
type gateLog struct {
	failLog
	entered chan struct{} // receives once per gated Write, before it waits
	gate    chan struct{} // closed to let writes through
}

func (g *gateLog) Write(p []byte) (int, error) {
	if g.writes > 0 {
		g.entered <- struct{}{}
		<-g.gate
	}
	return g.failLog.Write(p)
}

// TestPendingBufferGrowsToMaxPending: while the flusher is stuck in a write,
// appends fill the other buffer up to maxPending, its fixed capacity: append
// must never outgrow it (which would move the pending bytes to the Go heap).
func TestPendingBufferGrowsToMaxPending(t *testing.T) {
	g := &gateLog{entered: make(chan struct{}, 8), gate: make(chan struct{})}
	w, err := NewWriter(g, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	rec := AppendRecord(nil, make([]byte, 1000))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	<-g.entered // the flusher holds the first buffer until the gate opens
	n := maxPending / len(rec)
	for range n {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	pl, pc := len(w.pending), cap(w.pending)
	w.mu.Unlock()
	if pl != n*len(rec) || pc != maxPending {
		t.Fatalf("pending buffer holds %d bytes in %d, want %d in exactly %d", pl, pc, n*len(rec), maxPending)
	}
	close(g.gate)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if g.writes != 3 {
		t.Fatalf("%d log writes, want 3 (header, first record, the piled-up records)", g.writes)
	}
}
