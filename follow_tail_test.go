package mayfly

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
)

// tornTailSetup leaves on mem a flushed row "k1" and a WAL segment (the
// newest) holding only the first half of the record of row "k2". It
// returns the segment's name and the record's second half.
func tornTailSetup(t *testing.T, mem *storage.Mem, clk *clock.Manual) (string, []byte) {
	t.Helper()
	db := openTestDB(t, "", clk, func(o *Options) { o.Storage = mem })
	if err := db.PutWith([]byte("k1"), []byte("v1"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.PutWith([]byte("k2"), []byte("v2"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	name := logName(db.logNum)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := storage.ReadAll(mem, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) <= wal.HeaderSize+wal.RecordHeaderSize {
		t.Fatalf("segment %s holds %d bytes, want a header and a record", name, len(full))
	}
	if err := mem.Remove(name); err != nil {
		t.Fatal(err)
	}
	lw, err := mem.CreateLog(name)
	if err != nil {
		t.Fatal(err)
	}
	cut := wal.HeaderSize + (len(full)-wal.HeaderSize)/2
	if _, err := lw.Write(full[:cut]); err != nil {
		t.Fatal(err)
	}
	lw.Close()
	return name, full[cut:]
}

// TestFollowerTornTailIsRetried: a follower that finds half a record at the
// tail of the newest segment shows what precedes it, reports no error, and
// shows the row once the rest of the record is there.
func TestFollowerTornTailIsRetried(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	name, rest := tornTailSetup(t, mem, clk)
	f := openTestDB(t, "", clk, func(o *Options) {
		o.Storage, o.ReadOnly, o.FollowInterval, o.FollowWAL = mem, true, time.Hour, true
	})
	defer f.Close()
	mustGet(t, f, "k1", "v1")
	mustGet(t, f, "k2", "")
	if _, err := f.Refresh(); err != nil {
		t.Fatalf("Refresh with a torn tail: %v", err)
	}
	mustGet(t, f, "k2", "")
	// The writer completes the record (Mem logs cannot be reopened for
	// appending: rewrite the segment with the same prefix and the rest).
	full, err := storage.ReadAll(mem, name)
	if err != nil {
		t.Fatal(err)
	}
	mem.Remove(name)
	lw, err := mem.CreateLog(name)
	if err != nil {
		t.Fatal(err)
	}
	lw.Write(append(full, rest...))
	lw.Close()
	changed, err := f.Refresh()
	if err != nil || !changed {
		t.Fatalf("Refresh after the record was completed = %v, %v; want a change", changed, err)
	}
	mustGet(t, f, "k2", "v2")
	mustGet(t, f, "k1", "v1")
	if changed, err := f.Refresh(); err != nil || changed {
		t.Fatalf("Refresh of an unchanged WAL = %v, %v; want no change", changed, err)
	}
}

// TestFollowerTornTailBeforeSpareSegment: an empty segment after the one
// being written is the writer's next segment, created ahead of need: the
// torn record before it is still a write in progress, not corruption.
func TestFollowerTornTailBeforeSpareSegment(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	name, _ := tornTailSetup(t, mem, clk)
	n, _ := parseNum(name, "wal", ".wal")
	lw, err := mem.CreateLog(logName(n + 1))
	if err != nil {
		t.Fatal(err)
	}
	lw.Close()
	f := openTestDB(t, "", clk, func(o *Options) {
		o.Storage, o.ReadOnly, o.FollowInterval, o.FollowWAL = mem, true, time.Hour, true
	})
	defer f.Close()
	if _, err := f.Refresh(); err != nil {
		t.Fatalf("Refresh with a torn tail before an empty spare segment: %v", err)
	}
	mustGet(t, f, "k1", "v1")
	mustGet(t, f, "k2", "")
}

// TestFollowerTornRecordBeforeNewestSegment: a torn record in a segment
// that a newer one follows cannot be a write in progress: Refresh reports
// corruption naming the segment.
func TestFollowerTornRecordBeforeNewestSegment(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	name, _ := tornTailSetup(t, mem, clk)
	f := openTestDB(t, "", clk, func(o *Options) {
		o.Storage, o.ReadOnly, o.FollowInterval, o.FollowWAL = mem, true, time.Hour, true
	})
	defer f.Close()
	n, _ := parseNum(name, "wal", ".wal")
	lw, err := mem.CreateLog(logName(n + 1))
	if err != nil {
		t.Fatal(err)
	}
	lw.Write(wal.AppendHeader(nil, n+1))
	lw.Close()
	_, err = f.Refresh()
	var ce *format.CorruptionError
	if !errors.As(err, &ce) || ce.File != name {
		t.Fatalf("Refresh = %v, want a corruption error naming %s", err, name)
	}
	mustGet(t, f, "k1", "v1")
}

// TestFollowerSyncMarksUseSegmentOffsets: a follower reads the newest
// segment from where its last poll stopped, and compares sync marks with
// offsets in the segment. A torn record followed by a mark of a sync that
// did not cover it (a writer appended the record while that sync ran) is a
// torn tail; a damaged record followed by a mark of a sync that covered it
// is corruption, reported once a second read confirms it.
func TestFollowerSyncMarksUseSegmentOffsets(t *testing.T) {
	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	db := openTestDB(t, "", clk, func(o *Options) { o.Storage = mem })
	for _, k := range []string{"k1", "k2", "k3"} {
		if err := db.PutWith([]byte(k), []byte("v"), NoExpiry(), Sync); err != nil {
			t.Fatal(err)
		}
	}
	name := logName(db.logNum)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := storage.ReadAll(mem, name)
	if err != nil {
		t.Fatal(err)
	}
	// full: header, k1, mark(end of k1), k2, mark(end of k2), k3.
	recLen := func(off int) int { return wal.RecordHeaderSize + int(binary.LittleEndian.Uint32(full[off+4:])) }
	endK1 := wal.HeaderSize + recLen(wal.HeaderSize)
	markK1 := full[endK1 : endK1+wal.SyncMarkSize]
	k2 := full[endK1+wal.SyncMarkSize : endK1+wal.SyncMarkSize+recLen(endK1+wal.SyncMarkSize)]
	endK2 := endK1 + wal.SyncMarkSize + len(k2)
	rewrite := func(parts ...[]byte) {
		t.Helper()
		mem.Remove(name)
		lw, err := mem.CreateLog(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			lw.Write(p)
		}
		lw.Close()
	}
	rewrite(full[:endK1])
	f := openTestDB(t, "", clk, func(o *Options) {
		o.Storage, o.ReadOnly, o.FollowInterval, o.FollowWAL = mem, true, time.Hour, true
	})
	defer f.Close()
	mustGet(t, f, "k1", "v")

	// Half of k2 at the end of k1, then the mark of the sync through the
	// end of k1: torn, not damage (the mark's value is not past it).
	rewrite(full[:endK1], k2[:len(k2)/2], markK1, k2)
	if _, err := f.Refresh(); err != nil {
		t.Fatalf("Refresh with a torn record before a mark that does not cover it: %v", err)
	}
	mustGet(t, f, "k2", "")

	// k2 damaged, then the mark of the sync through the end of k2.
	bad := bytes.Clone(k2)
	bad[len(bad)-1] ^= 0xff
	rewrite(full[:endK1], markK1, bad, full[endK2:])
	_, err = f.Refresh()
	var ce *format.CorruptionError
	if !errors.As(err, &ce) || ce.File != name || ce.Offset != int64(endK1+wal.SyncMarkSize) {
		t.Fatalf("Refresh = %v, want corruption in %s at offset %d", err, name, endK1+wal.SyncMarkSize)
	}
	mustGet(t, f, "k1", "v")
}
