package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/storage"
)

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
	writeSegmentSyncEvery(t, src, "wal/full", payloads, 0) // no sync marks: every cut is a torn write
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
	writeSegmentSyncEvery(t, src, "wal/full", payloads, 0) // no sync marks: damage reads as torn
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
			// The resync scan finds the two records after the damaged one.
			if res.LostRecords != 2 || res.LostBytes != int64(len(full))-start || res.SyncedThrough != 0 {
				t.Fatalf("flip %d.%d: lost %d records, %d bytes, synced through %d; want 2, %d, 0",
					off, bit, res.LostRecords, res.LostBytes, res.SyncedThrough, int64(len(full))-start)
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
	// A header with a valid checksum but a version this build does not know.
	data := bytes.Clone(full)
	data[8] = 3
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
	marked := appendSyncMark(AppendRecord(AppendHeader(nil, testSeg), []byte("synced")), int64(HeaderSize+RecordLen(6)))
	marked = AppendRecord(marked, []byte("after the mark"))
	f.Add(marked)
	f.Add(flipByte(marked, HeaderSize+RecordHeaderSize+2))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := storage.NewMem()
		putLog(t, s, "wal/f", data)
		var got [][]byte
		res, err := Replay(s, "wal/f", testSeg, func(p []byte) error {
			if len(p) > len(data) {
				t.Fatalf("payload of %d bytes from %d-byte file", len(p), len(data))
			}
			got = append(got, bytes.Clone(p))
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
		// The valid prefix is exactly the intact records (and sync marks).
		if res.Records > 0 {
			var want [][]byte
			recs := splitRecords(data[:res.ValidBytes])
			for _, r := range recs {
				if r.typ == RecordTypeFull {
					want = append(want, r.payload)
				}
			}
			if !samePayloads(got, want) || recs[len(recs)-1].end() != res.ValidBytes {
				t.Fatalf("the valid prefix is not the records replayed")
			}
		}
	})
}

// TestReplayVersion1 replays a version 1 segment built byte by byte (the
// format before sync marks): it must still read, and a record of type 2 in
// it is corruption, not a sync mark.
func TestReplayVersion1(t *testing.T) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	seg := []byte{
		'M', 'F', 'L', 'Y', 'W', 'A', 'L', 0x1a, // magic
		1, 0, 0, 0, // version 1
		testSeg, 0, 0, 0, 0, 0, 0, 0, // segment number
		0, 0, 0, 0, // crc32c of bytes 0..20, below
	}
	binary.LittleEndian.PutUint32(seg[20:], crc32.Checksum(seg[:20], castagnoli))
	record := func(typ byte, payload string) []byte {
		r := append([]byte{0, 0, 0, 0, byte(len(payload)), 0, 0, 0, typ}, payload...)
		binary.LittleEndian.PutUint32(r, crc32.Checksum(r[4:], castagnoli))
		return r
	}
	seg = append(seg, record(1, "first batch")...)
	seg = append(seg, record(1, "")...)
	seg = append(seg, record(1, "third")...)
	s := storage.NewMem()
	putLog(t, s, "wal/v1", seg)
	got, res, err := replayAll(t, s, "wal/v1")
	if err != nil || res.Torn() || res.ValidBytes != int64(len(seg)) ||
		!samePayloads(got, [][]byte{[]byte("first batch"), {}, []byte("third")}) {
		t.Fatalf("version 1 segment: %v %+v %q", err, res, got)
	}

	markOff := int64(len(seg))
	mark := record(2, "\x18\x00\x00\x00\x00\x00\x00\x00") // what version 2 reads as a mark through offset 24
	putLog(t, s, "wal/v1mark", append(bytes.Clone(seg), mark...))
	_, _, err = replayAll(t, s, "wal/v1mark")
	var ce *format.CorruptionError
	if !errors.As(err, &ce) || ce.Offset != markOff || !strings.Contains(err.Error(), "unknown type 2") {
		t.Fatalf("type 2 in a version 1 segment: %v; want corruption at %d", err, markOff)
	}
}

// syncedSegment writes n records, each with WriteSync (as synced commits
// do), to a Mem log and returns the storage and each record's offset. With
// closeIt the Writer is closed; otherwise the bytes are what a crash right
// after the last Sync leaves. Either way the last record has no mark after
// it.
func syncedSegment(t *testing.T, n int, closeIt bool) (*storage.Mem, []int64) {
	t.Helper()
	s := storage.NewMem()
	w := newTestWriter(t, s, "wal/s")
	var offs []int64
	for i := range n {
		p := fmt.Appendf(nil, "synced commit %03d %s", i, strings.Repeat("v", i%40))
		if err := w.WriteSync(AppendRecord(nil, p)); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, w.Size()-int64(RecordLen(len(p))))
	}
	if closeIt {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return s, offs
	}
	return s.CrashClone(), offs
}

// TestSyncedDamageIsCorruption: damage in a record that a later sync mark
// shows was durable is corruption at the record's offset; damage after the
// last mark is a torn tail.
func TestSyncedDamageIsCorruption(t *testing.T) {
	const n = 50
	for _, closed := range []bool{false, true} {
		s, offs := syncedSegment(t, n, closed)
		seg, _ := storage.ReadAll(s, "wal/s")
		for _, k := range []int{0, 1, n / 2, n - 2, n - 1} {
			for _, at := range []int64{0, 5, RecordHeaderSize + 3} { // CRC, length, payload
				d := storage.NewMem()
				putLog(t, d, "wal/d", flipByte(seg, int(offs[k]+at)))
				got, res, err := replayAll(t, d, "wal/d")
				what := fmt.Sprintf("closed %v, record %d, byte %d", closed, k, at)
				if len(got) != k || res.TornOffset != offs[k] {
					t.Fatalf("%s: %d records, %+v; want %d, stopped at %d", what, len(got), res, k, offs[k])
				}
				// No mark follows the last record.
				if k == n-1 {
					if err != nil || res.SyncedDamage() {
						t.Fatalf("%s: %v %+v; want a torn tail", what, err, res)
					}
					continue
				}
				var ce *format.CorruptionError
				if !errors.As(err, &ce) || ce.File != "wal/d" || ce.Offset != offs[k] || !res.SyncedDamage() {
					t.Fatalf("%s: %v; want corruption at %d", what, err, offs[k])
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("durable through offset %d", res.SyncedThrough)) || res.SyncedThrough <= offs[k] {
					t.Fatalf("%s: %v (synced through %d) does not name the synced offset that proves it", what, err, res.SyncedThrough)
				}
				if at != 5 && res.LostRecords != n-1-k { // a damaged length may swallow or misplace the rest
					t.Fatalf("%s: %d intact records after the damage, want %d", what, res.LostRecords, n-1-k)
				}
			}
		}
	}
}

// TestCrashAfterSyncIsTorn simulates crashes that lose or reorder the pages
// written after the last completed Sync: whatever survives of them, replay
// reports a torn tail, never corruption, because every mark after the
// damage records a durable offset at or before it.
func TestCrashAfterSyncIsTorn(t *testing.T) {
	s := storage.NewMem()
	w := newTestWriter(t, s, "wal/c")
	for i := range 10 {
		if err := w.WriteSync(AppendRecord(nil, fmt.Appendf(nil, "durable %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	synced := w.Size()
	// Unsynced: a mark of synced, then records; then another Sync never
	// completes (the crash).
	var unsynced []int64
	for i := range 6 {
		if err := w.Write(AppendRecord(nil, bytes.Repeat([]byte{byte('a' + i)}, 100))); err != nil {
			t.Fatal(err)
		}
		unsynced = append(unsynced, w.Size()-int64(RecordLen(100)))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	full, _ := storage.ReadAll(s, "wal/c")
	// The first unsynced record carries the mark of the last Sync.
	if m := marksOf(full); len(m) == 0 || m[len(m)-1] != [2]int64{synced, synced} {
		t.Fatalf("marks %v; want the last at offset %d with value %d", m, synced, synced)
	}
	for _, tc := range []struct {
		desc      string
		zeroFrom  int64 // bytes [zeroFrom, zeroTo) never reached the disk
		zeroTo    int64
		wantTorn  int64
		wantAfter int // intact records found after the damage
	}{
		{"the mark lost, later records kept", synced, unsynced[0], synced, 6},
		{"a middle record lost", unsynced[2], unsynced[3], unsynced[2], 3},
		{"half of a record lost", unsynced[3] + 50, unsynced[4], unsynced[3], 2},
		{"everything after the sync lost", synced, int64(len(full)), -1, 0},
	} {
		img := bytes.Clone(full)
		clear(img[tc.zeroFrom:tc.zeroTo])
		d := storage.NewMem()
		putLog(t, d, "wal/d", img)
		_, res, err := replayAll(t, d, "wal/d")
		if err != nil || res.TornOffset != tc.wantTorn || res.SyncedDamage() || res.LostRecords != tc.wantAfter {
			t.Fatalf("%s: %v %+v; want torn at %d with %d intact records after it", tc.desc, err, res, tc.wantTorn, tc.wantAfter)
		}
	}
}

// TestReplayFrom replays the rest of a segment from a record boundary, as a
// reader following a live segment does: offsets in the result, and in a
// corruption error, are offsets in the segment.
func TestReplayFrom(t *testing.T) {
	s, offs := syncedSegment(t, 20, true)
	seg, _ := storage.ReadAll(s, "wal/s")
	r, err := s.Open("wal/s")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	res, err := ReplayFrom(r, "wal/s", testSeg, offs[12], func([]byte) error { n++; return nil })
	if err != nil || n != 8 || res.Records != 8 || res.ValidBytes != int64(len(seg)) || res.Torn() {
		t.Fatalf("from record 12: %v, %d records, %+v", err, n, res)
	}
	d := storage.NewMem()
	putLog(t, d, "wal/d", flipByte(seg, int(offs[15]+RecordHeaderSize)))
	rd, _ := d.Open("wal/d")
	defer rd.Close()
	res, err = ReplayFrom(rd, "wal/d", testSeg, offs[12], func([]byte) error { return nil })
	var ce *format.CorruptionError
	if !errors.As(err, &ce) || ce.Offset != offs[15] || res.TornOffset != offs[15] || res.Records != 3 {
		t.Fatalf("damage at %d: %v %+v", offs[15], err, res)
	}
	if _, err := ReplayFrom(rd, "wal/d", testSeg, HeaderSize-1, func([]byte) error { return nil }); err == nil {
		t.Fatal("replay from inside the header succeeded")
	}
}

// TestReplayCountsSyncMarks: ReplayResult.SyncMarks counts the marks read
// and HasSyncMark also sees those found after a tear; a segment never
// synced has none.
func TestReplayCountsSyncMarks(t *testing.T) {
	const n = 5
	s, offs := syncedSegment(t, n, true)
	_, res, err := replayAll(t, s, "wal/s")
	if err != nil || res.SyncMarks != n-1 || !res.HasSyncMark() {
		t.Fatalf("synced segment: %v, %d marks (has %v); want %d", err, res.SyncMarks, res.HasSyncMark(), n-1)
	}
	seg, _ := storage.ReadAll(s, "wal/s")
	d := storage.NewMem()
	putLog(t, d, "wal/d", flipByte(seg, int(offs[0]))) // damage before every mark
	_, res, _ = replayAll(t, d, "wal/d")
	if res.SyncMarks != 0 || !res.HasSyncMark() {
		t.Fatalf("damaged first record: %d marks read, has %v; want 0 read and the later ones found", res.SyncMarks, res.HasSyncMark())
	}
	u := storage.NewMem()
	w := newTestWriter(t, u, "wal/u")
	for i := range n {
		if err := w.Write(AppendRecord(nil, fmt.Appendf(nil, "unsynced %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, res, err = replayAll(t, u, "wal/u")
	if err != nil || res.Records != n || res.HasSyncMark() {
		t.Fatalf("unsynced segment: %v, %+v; want %d records and no mark", err, res, n)
	}
}
