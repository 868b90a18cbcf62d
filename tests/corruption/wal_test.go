package corruption

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/storage"
)

// WAL segment layout (wal/wal.go): a 24-byte header, then records of
// crc32c u32 | length u32 | type u8 | payload; the CRC covers length, type
// and payload. Type 1 holds a batch; type 2 is a sync mark, whose 8-byte
// payload is the offset through which the segment was durable when it was
// appended (one in front of the first record after each sync); type 3, the
// seal, ends a segment a rotation finished.
const (
	walHeaderLen = 24
	recHeaderLen = 9
	recBatch     = 1
	recSyncMark  = 2
)

type walRecord struct{ off, len int } // len is the payload length

func (r walRecord) end() int { return r.off + recHeaderLen + r.len }

// parseWAL returns the batch records of segment b (not its sync marks).
func parseWAL(t *testing.T, b []byte) []walRecord {
	t.Helper()
	var out []walRecord
	for off := walHeaderLen; off+recHeaderLen <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off+4:]))
		if b[off+8] == 0 {
			break // end marker
		}
		if off+recHeaderLen+n > len(b) {
			t.Fatalf("record at %d runs past the segment", off)
		}
		if b[off+8] == recBatch {
			out = append(out, walRecord{off, n})
		}
		off += recHeaderLen + n
	}
	return out
}

// reseal recomputes the CRC of the record at r, so that damage to its
// payload reaches the batch decoder.
func reseal(b []byte, r walRecord) {
	crc := crc32.Checksum(b[r.off+4:r.end()], crc32.MakeTable(crc32.Castagnoli))
	binary.LittleEndian.PutUint32(b[r.off:], crc)
}

// walOptions keep everything in the memtable: no rotation unless asked.
func walOptions() *mayfly.Options {
	o := baseOptions()
	o.MemtableSize = 4 << 20
	return o
}

func batchKey(b, j int) string { return fmt.Sprintf("b%04d-k%d", b, j) }

// writeBatches commits batches [lo, hi) of three rows each, synced, and
// records them in m.
func writeBatches(t *testing.T, db *mayfly.DB, m *model, lo, hi int) {
	t.Helper()
	for i := lo; i < hi; i++ {
		b := db.NewBatch()
		for j := range 3 {
			must(t, b.Put([]byte(batchKey(i, j)), []byte(value(i))))
			m.live[batchKey(i, j)] = value(i)
		}
		must(t, b.Write(mayfly.Sync))
	}
}

// dropBatches moves the batches [lo, hi) of m to the must-be-absent set.
func dropBatches(m *model, lo, hi int) *model {
	c := newModel()
	for k, v := range m.live {
		c.live[k] = v
	}
	for i := lo; i < hi; i++ {
		for j := range 3 {
			delete(c.live, batchKey(i, j))
			c.dead[batchKey(i, j)] = true
		}
	}
	return c
}

// openRecovered opens dir, which must succeed, and checks the rows and the
// torn-tail count.
func openRecovered(t *testing.T, dir string, m *model, wantTorn uint64) {
	t.Helper()
	db, err := mayfly.Open(dir, walOptions())
	if err != nil {
		t.Errorf("Open: %v", err)
		return
	}
	if got := db.Metrics().WALTornTails; got != wantTorn {
		t.Errorf("WALTornTails = %d, want %d", got, wantTorn)
	}
	verifyAll(t, "recovered", db, m, nil, nil)
	verifyScan(t, "recovered", db, m, false)
	if err := db.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// oneSegment builds a database whose 40 batches are only in its single WAL
// segment (Close does not flush).
func oneSegment(t *testing.T) (dir string, m *model, seg string) {
	t.Helper()
	dir, m = t.TempDir(), newModel()
	db, err := mayfly.Open(dir, walOptions())
	must(t, err)
	writeBatches(t, db, m, 0, 40)
	must(t, db.Close())
	if n := len(files(t, dir, "sst", ".sst")); n != 0 {
		t.Fatalf("%d tables after Close; the data should be in the WAL only", n)
	}
	segs := files(t, dir, "wal", ".wal")
	if len(segs) != 1 {
		t.Fatalf("WAL segments %v, want one", segs)
	}
	return dir, m, segs[0]
}

func TestWALTornTail(t *testing.T) {
	src, m, seg := oneSegment(t)
	orig := readFile(t, src, seg)
	recs := parseWAL(t, orig)
	if len(recs) != 40 {
		t.Fatalf("%d records, want 40 (one per synced batch)", len(recs))
	}
	last := recs[len(recs)-1]
	for _, cut := range []struct {
		desc string
		n    int
	}{
		{"one byte of the record header", last.off + 1},
		{"record header less one byte", last.off + recHeaderLen - 1},
		{"record header only", last.off + recHeaderLen},
		{"half the payload", last.off + recHeaderLen + last.len/2},
		{"all but the last byte", last.end() - 1},
	} {
		t.Run(strings.ReplaceAll(cut.desc, " ", "_"), func(t *testing.T) {
			dir := copyDir(t, src)
			writeFile(t, dir, seg, orig[:cut.n])
			want := dropBatches(m, 39, 40) // the torn batch is absent, every row of it
			noPanic(t, "torn tail", func() { openRecovered(t, dir, want, 1) })
			// The recovery was flushed: it survives another reopen, with
			// nothing torn this time.
			noPanic(t, "second open", func() { openRecovered(t, dir, want, 0) })
		})
	}
	t.Run("intact", func(t *testing.T) {
		noPanic(t, "intact", func() { openRecovered(t, copyDir(t, src), m, 0) })
	})
}

// TestWALDamagedRecordInNewestSegment: every batch of the newest segment
// was committed with Sync, so a sync mark follows each record but the last:
// a record before the last that fails its CRC lies in bytes a later sync
// made durable. That is damage, not a torn write: Open fails with
// ErrCorruption at the record's offset and changes nothing, and
// WALRecoveryPointInTime opens at the last intact batch before it. Damage
// in the last record, which no mark follows, cannot be told from a torn
// write: it is dropped as a torn tail.
func TestWALDamagedRecordInNewestSegment(t *testing.T) {
	src, m, seg := oneSegment(t)
	orig := readFile(t, src, seg)
	recs := parseWAL(t, orig)
	for _, i := range []int{39, 38, 20, 0} {
		t.Run(fmt.Sprintf("record_%d_of_40", i+1), func(t *testing.T) {
			dir := copyDir(t, src)
			r := recs[i]
			writeFile(t, dir, seg, flip(orig, r.off+recHeaderLen+r.len/2))
			if i == 39 {
				noPanic(t, "torn", func() { openRecovered(t, dir, dropBatches(m, 39, 40), 1) })
				return
			}
			noPanic(t, "damaged", func() {
				db, err := mayfly.Open(dir, walOptions())
				if err == nil {
					db.Close()
					t.Fatal("Open succeeded with synced WAL data damaged")
				}
				checkCorruption(t, "Open", err, seg, func(o int64) bool { return o == int64(r.off) })
				if !strings.Contains(err.Error(), "WALRecoveryPointInTime") {
					t.Errorf("the error does not say how to accept the loss: %v", err)
				}
			})
			noPanic(t, "point in time", func() {
				openPointInTime(t, dir, dropBatches(m, i, 40), uint64(39-i))
			})
		})
	}
}

// TestWALUnsyncedDamageIsTorn: without Sync no mark follows a record, so a
// crash may have left any of them partly written: damage there is a torn
// tail, dropped with the intact records after it, and counted.
func TestWALUnsyncedDamageIsTorn(t *testing.T) {
	src, m := t.TempDir(), newModel()
	db, err := mayfly.Open(src, walOptions())
	must(t, err)
	for i := range 40 {
		for j := range 3 {
			must(t, db.Put([]byte(batchKey(i, j)), []byte(value(i))))
			m.live[batchKey(i, j)] = value(i)
		}
	}
	must(t, db.FlushWAL(false))
	// A copy of the directory now is what a crash leaves: nothing synced.
	dir := copyDir(t, src)
	must(t, db.Close())
	seg := files(t, dir, "wal", ".wal")[0]
	orig := readFile(t, dir, seg)
	recs := parseWAL(t, orig)
	if len(recs) != 120 {
		t.Fatalf("%d records, want 120", len(recs))
	}
	r := recs[60]
	writeFile(t, dir, seg, flip(orig, r.off+recHeaderLen+r.len/2))
	want := newModel()
	for k, v := range m.live {
		want.live[k] = v
	}
	for i := 20; i < 40; i++ {
		for j := range 3 {
			delete(want.live, batchKey(i, j))
			want.dead[batchKey(i, j)] = true
		}
	}
	noPanic(t, "torn", func() {
		db, err := mayfly.Open(dir, walOptions())
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer db.Close()
		met := db.Metrics()
		if met.WALTornTails != 1 || met.WALRecordsDropped != 59 || met.WALBytesDropped != uint64(recs[119].end()-r.off) {
			t.Errorf("torn tails %d, dropped %d records and %d bytes; want 1, 59, %d",
				met.WALTornTails, met.WALRecordsDropped, met.WALBytesDropped, recs[119].end()-r.off)
		}
		verifyAll(t, "torn", db, want, nil, nil)
	})
}

// openPointInTime opens dir with WALRecoveryPointInTime, which must
// succeed, drop droppedRecords intact records and report them, and leave
// the rows of m; then a default Open must find the same rows and nothing to
// drop.
func openPointInTime(t *testing.T, dir string, m *model, droppedRecords uint64) {
	t.Helper()
	o := walOptions()
	o.WALRecovery = mayfly.WALRecoveryPointInTime
	var events []mayfly.WALRecoveryInfo
	o.EventListener = &mayfly.EventListener{WALRecovered: func(i mayfly.WALRecoveryInfo) { events = append(events, i) }}
	db, err := mayfly.Open(dir, o)
	if err != nil {
		t.Fatalf("Open with WALRecoveryPointInTime: %v", err)
	}
	met := db.Metrics()
	if met.WALRecordsDropped != droppedRecords || met.WALBytesDropped == 0 {
		t.Errorf("dropped %d records, %d bytes; want %d records", met.WALRecordsDropped, met.WALBytesDropped, droppedRecords)
	}
	if len(events) != 1 || !events[0].Damaged || events[0].RecordsDropped != droppedRecords ||
		events[0].BytesDropped != met.WALBytesDropped || events[0].Segment == "" {
		t.Errorf("events %+v; want one reporting %d records and %d bytes", events, droppedRecords, met.WALBytesDropped)
	}
	verifyAll(t, "point in time", db, m, nil, nil)
	verifyScan(t, "point in time", db, m, false)
	must(t, db.Close())
	db, err = mayfly.Open(dir, walOptions())
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	defer db.Close()
	if met := db.Metrics(); met.WALTornTails != 0 || met.WALRecordsDropped != 0 {
		t.Errorf("second Open: torn tails %d, dropped %d", met.WALTornTails, met.WALRecordsDropped)
	}
	verifyAll(t, "second open", db, m, nil, nil)
}

// TestWALFlippedByteLosesSyncedRows is the scenario of issue 17: 510 rows
// written with Sync, one byte flipped in the middle of the newest segment.
// Open used to succeed and drop every later row, acknowledged ones
// included; now it refuses, naming the segment and offset.
func TestWALFlippedByteLosesSyncedRows(t *testing.T) {
	src, m := t.TempDir(), newModel()
	db, err := mayfly.Open(src, walOptions())
	must(t, err)
	for i := range 510 {
		k, v := fmt.Sprintf("row%04d", i), value(i)
		must(t, db.PutWith([]byte(k), []byte(v), mayfly.DefaultTTL(), mayfly.Sync))
		m.live[k] = v
	}
	must(t, db.Close())
	seg := files(t, src, "wal", ".wal")[0]
	orig := readFile(t, src, seg)
	recs := parseWAL(t, orig)
	if len(recs) != 510 {
		t.Fatalf("%d records, want 510", len(recs))
	}
	// A payload byte of the middle record (a byte at len/2 may fall in a
	// sync mark instead, which is damage too, at the mark's offset).
	hit := len(recs) / 2
	mid := recs[hit].off + recHeaderLen + recs[hit].len/2
	dir := copyDir(t, src)
	writeFile(t, dir, seg, flip(orig, mid))

	db, err = mayfly.Open(dir, walOptions())
	if err == nil {
		db.Close()
		t.Fatalf("Open succeeded with byte %d of %s flipped", mid, seg)
	}
	checkCorruption(t, "Open", err, seg, func(o int64) bool { return o == int64(recs[hit].off) })
	if got := readFile(t, dir, seg); !bytes.Equal(got, flip(orig, mid)) {
		t.Fatal("the failed Open changed the segment")
	}

	want := newModel()
	for i := range 510 {
		k := fmt.Sprintf("row%04d", i)
		if i < hit {
			want.live[k] = m.live[k]
		} else {
			want.dead[k] = true
		}
	}
	openPointInTime(t, dir, want, uint64(509-hit))
}

// TestWALBadBatchWithValidCRC: a record whose CRC is right but whose batch
// does not decode cannot come from a torn write. Open must fail with a
// corruption error naming the segment and the record's offset.
func TestWALBadBatchWithValidCRC(t *testing.T) {
	src, m, seg := oneSegment(t)
	orig := readFile(t, src, seg)
	recs := parseWAL(t, orig)
	r := recs[20]
	for _, tc := range []struct {
		desc   string
		damage func(p []byte) // p is the record's payload (a batch)
	}{
		{"invalid entry flags", func(p []byte) { p[20] = 0x80 }},
		{"count one too many", func(p []byte) { binary.LittleEndian.PutUint32(p[8:], binary.LittleEndian.Uint32(p[8:])+1) }},
		{"key length past the end", func(p []byte) { p[21] = 0x7f }},
	} {
		t.Run(strings.ReplaceAll(tc.desc, " ", "_"), func(t *testing.T) {
			dir := copyDir(t, src)
			b := append([]byte(nil), orig...)
			tc.damage(b[r.off+recHeaderLen : r.end()])
			reseal(b, r)
			writeFile(t, dir, seg, b)
			noPanic(t, "bad batch", func() {
				db, err := mayfly.Open(dir, walOptions())
				if err == nil {
					db.Close()
					t.Fatal("Open succeeded")
				}
				if !errors.Is(err, mayfly.ErrCorruption) || !strings.Contains(err.Error(), seg) {
					t.Fatalf("Open: %v; want ErrCorruption naming %s", err, seg)
				}
				checkCorruption(t, "Open", err, seg, func(o int64) bool { return o == int64(r.off) })
			})
			// Accepting the loss keeps none of the bad batch's rows, even
			// those that decode before the damage.
			pit := copyDir(t, dir)
			noPanic(t, "point in time", func() { openPointInTime(t, pit, dropBatches(m, 20, 40), 19) })
			writeFile(t, dir, seg, orig)
		})
	}
}

// gatedStorage blocks the creation of tables until gate is closed, then
// refuses it: flushes hang, then fail, so that the WAL segments of frozen
// memtables stay live.
type gatedStorage struct {
	storage.Storage
	gate chan struct{}
}

var errRefused = errors.New("test: table creation refused")

func (g *gatedStorage) Create(name string) (storage.ObjectWriter, error) {
	if strings.HasPrefix(name, "sst/") {
		<-g.gate
		return nil, errRefused
	}
	return g.Storage.Create(name)
}

// twoSegments builds a database whose data is in two WAL segments, neither
// flushed: a memtable rotation starts the second segment, and the flush of
// the first memtable is held and then made to fail before Close.
func twoSegments(t *testing.T) (dir string, m *model, older, newer string) {
	t.Helper()
	dir, m = t.TempDir(), newModel()
	local, err := storage.NewLocal(dir)
	must(t, err)
	gs := &gatedStorage{Storage: local, gate: make(chan struct{})}
	o := baseOptions()
	o.Storage = gs
	o.MemtableSize = 8 << 10
	o.MaxImmutableMemtables = 4
	db, err := mayfly.Open(dir, o)
	must(t, err)
	released := false
	defer func() {
		if !released {
			close(gs.gate)
			db.Close()
			local.Close()
		}
	}()
	n := 0
	for ; db.Metrics().WALSegmentsCreated < 2; n++ {
		if n > 1000 {
			t.Fatal("no memtable rotation after 1000 batches")
		}
		writeBatches(t, db, m, n, n+1)
	}
	// A few batches in the second segment; far below MemtableSize.
	writeBatches(t, db, m, n, n+10)
	if got := db.Metrics().WALSegmentsCreated; got != 2 {
		t.Fatalf("%d segments created, want 2", got)
	}
	released = true
	close(gs.gate)
	if err := db.Close(); err != nil {
		t.Logf("Close after the refused flush: %v", err)
	}
	must(t, local.Close())
	segs := files(t, dir, "wal", ".wal")
	if len(segs) != 2 || len(files(t, dir, "sst", ".sst")) != 0 {
		t.Fatalf("could not produce two live WAL segments: segments %v, tables %v", segs, files(t, dir, "sst", ".sst"))
	}
	return dir, m, segs[0], segs[1]
}

func TestWALOlderSegment(t *testing.T) {
	src, m, older, newer := twoSegments(t)
	origOld := readFile(t, src, older)
	origNew := readFile(t, src, newer)
	recs := parseWAL(t, origOld)
	if len(recs) < 5 {
		t.Fatalf("older segment has %d records", len(recs))
	}
	mid := recs[len(recs)/2]

	t.Run("intact", func(t *testing.T) {
		noPanic(t, "intact", func() { openRecovered(t, copyDir(t, src), m, 0) })
	})

	for _, tc := range []struct {
		desc   string
		damage func() []byte
		at     int64 // offset the error must report
	}{
		{"payload byte of a middle record", func() []byte { return flip(origOld, mid.off+recHeaderLen+mid.len/2) }, int64(mid.off)},
		{"CRC of a middle record", func() []byte { return flip(origOld, mid.off) }, int64(mid.off)},
		{"length of a middle record", func() []byte { return flip(origOld, mid.off+5) }, int64(mid.off)},
		{"payload byte of the last record", func() []byte { r := recs[len(recs)-1]; return flip(origOld, r.off+recHeaderLen) }, int64(recs[len(recs)-1].off)},
		{"truncated mid-record", func() []byte { return origOld[:mid.off+recHeaderLen+mid.len/2] }, int64(mid.off)},
		{"truncated in the last record", func() []byte { return origOld[:recs[len(recs)-1].end()-1] }, int64(recs[len(recs)-1].off)},
		{"segment header", func() []byte { return flip(origOld, 14) }, 0},
	} {
		t.Run(strings.ReplaceAll(tc.desc, " ", "_"), func(t *testing.T) {
			dir := copyDir(t, src)
			writeFile(t, dir, older, tc.damage())
			noPanic(t, "damaged older segment", func() {
				db, err := mayfly.Open(dir, walOptions())
				if err == nil {
					db.Close()
					t.Fatalf("Open succeeded with a damaged older segment")
				}
				checkCorruption(t, "Open", err, older, func(o int64) bool { return o == tc.at })
			})
			// The failed Open changed nothing.
			writeFile(t, dir, older, origOld)
			noPanic(t, "repaired", func() { openRecovered(t, dir, m, 0) })
		})
	}

	t.Run("torn_tail_of_the_newer_segment", func(t *testing.T) {
		dir := copyDir(t, src)
		nrecs := parseWAL(t, origNew)
		last := nrecs[len(nrecs)-1]
		writeFile(t, dir, newer, origNew[:last.off+recHeaderLen+last.len/2])
		// The newer segment holds the last batches; the very last is torn.
		total := len(m.live) / 3
		noPanic(t, "torn newer", func() { openRecovered(t, dir, dropBatches(m, total-1, total), 1) })
	})
}

// TestWALOlderSegmentPointInTime: damage in an older segment fails a
// default Open; WALRecoveryPointInTime opens at the last intact record
// before it, dropping the rest of that segment and the whole newer one, and
// the database then opens and takes writes normally.
func TestWALOlderSegmentPointInTime(t *testing.T) {
	src, m, older, newer := twoSegments(t)
	origOld := readFile(t, src, older)
	recs := parseWAL(t, origOld)
	k := len(recs) / 2
	dir := copyDir(t, src)
	writeFile(t, dir, older, flip(origOld, recs[k].off+recHeaderLen+recs[k].len/2))

	_, err := mayfly.Open(dir, walOptions())
	checkCorruption(t, "Open", err, older, func(o int64) bool { return o == int64(recs[k].off) })

	// The older segment holds batches [0, len(recs)); keep [0, k).
	total := len(m.live) / 3
	want := dropBatches(m, k, total)
	newerRecs := uint64(len(parseWAL(t, readFile(t, dir, newer))))
	o := walOptions()
	o.WALRecovery = mayfly.WALRecoveryPointInTime
	var events []mayfly.WALRecoveryInfo
	o.EventListener = &mayfly.EventListener{WALRecovered: func(i mayfly.WALRecoveryInfo) { events = append(events, i) }}
	db, err := mayfly.Open(dir, o)
	if err != nil {
		t.Fatalf("Open with WALRecoveryPointInTime: %v", err)
	}
	wantDropped := uint64(len(recs)-1-k) + newerRecs
	if len(events) != 1 || events[0].Segment != older || events[0].Offset != int64(recs[k].off) ||
		events[0].RecordsDropped != wantDropped || !slices.Equal(events[0].SegmentsDropped, []string{newer}) {
		t.Fatalf("events %+v; want one at %s offset %d dropping %d records and %s", events, older, recs[k].off, wantDropped, newer)
	}
	if met := db.Metrics(); met.WALRecordsDropped != wantDropped || met.WALBytesDropped != events[0].BytesDropped {
		t.Errorf("metrics dropped %d records, %d bytes; event %+v", met.WALRecordsDropped, met.WALBytesDropped, events[0])
	}
	verifyAll(t, "point in time", db, want, nil, nil)
	// A write after the recovery survives the next Open, which replays
	// nothing of the dropped segments.
	must(t, db.PutWith([]byte("after"), []byte("recovery"), mayfly.DefaultTTL(), mayfly.Sync))
	want.live["after"] = "recovery"
	must(t, db.Close())
	for _, seg := range files(t, dir, "wal", ".wal") {
		if seg <= newer {
			t.Errorf("segment %s left after the recovery", seg)
		}
	}
	openRecovered(t, dir, want, 0)
}

// sealOffset returns the offset of the seal record (type 3) of segment b.
func sealOffset(t *testing.T, b []byte) int {
	t.Helper()
	for off := walHeaderLen; off+recHeaderLen <= len(b) && b[off+8] != 0; {
		if b[off+8] == 3 {
			return off
		}
		off += recHeaderLen + int(binary.LittleEndian.Uint32(b[off+4:]))
	}
	t.Fatal("segment has no seal")
	return 0
}

// withoutMarks returns segment b with its sync marks left out: the segment
// as written by unsynced commits only.
func withoutMarks(t *testing.T, b []byte) []byte {
	t.Helper()
	out := append([]byte(nil), b[:walHeaderLen]...)
	for _, r := range parseWAL(t, b) {
		out = append(out, b[r.off:r.end()]...)
	}
	return out
}

// TestWALOlderSegmentWithoutSeal: a rotation syncs the old segment's seal in
// the background, and every sync of the newer segment waits for it; so an
// older segment without its seal (cut short or torn in its last record) is
// the log's torn tail when the newer segment holds no sync mark (no sync of
// it completed): Open drops the rest of it and the newer segment. With a
// sync mark in the newer segment the same older segment is refused.
func TestWALOlderSegmentWithoutSeal(t *testing.T) {
	src, m, older, newer := twoSegments(t)
	origOld, origNew := readFile(t, src, older), readFile(t, src, newer)
	recs := parseWAL(t, origOld)
	nOld, total := len(recs), len(m.live)/3
	sealAt := sealOffset(t, origOld)
	last := recs[nOld-1]
	for _, tc := range []struct {
		desc     string
		old      []byte
		keep     int // batches that survive
		newerMks bool
	}{
		{"seal missing, newer segment unsynced", origOld[:sealAt], nOld, false},
		{"last record torn, newer segment unsynced", origOld[:last.off+recHeaderLen+last.len/2], nOld - 1, false},
		{"seal missing, newer segment synced", origOld[:sealAt], 0, true},
	} {
		t.Run(strings.ReplaceAll(tc.desc, " ", "_"), func(t *testing.T) {
			dir := copyDir(t, src)
			writeFile(t, dir, older, tc.old)
			if !tc.newerMks {
				writeFile(t, dir, newer, withoutMarks(t, origNew))
			}
			noPanic(t, tc.desc, func() {
				if tc.newerMks {
					db, err := mayfly.Open(dir, walOptions())
					if err == nil {
						db.Close()
						t.Fatal("Open succeeded with an unsealed older segment under a synced newer one")
					}
					checkCorruption(t, "Open", err, older, func(o int64) bool { return o == int64(sealAt) })
					return
				}
				openRecovered(t, dir, dropBatches(m, tc.keep, total), 1)
			})
		})
	}
}
