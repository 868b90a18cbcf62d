package wal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/storage"
)

// writePreallocated writes payloads through CreateLog on a local directory
// (so the log is preallocated) and returns the storage, the segment file's
// bytes as read back, and the offset at which each record starts (plus the
// end of the last one).
func writePreallocated(t *testing.T, payloads [][]byte) (*storage.Local, []byte, []int64) {
	t.Helper()
	s, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lw, err := CreateLog(s, "wal/000007.wal")
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(lw, testSeg)
	if err != nil {
		t.Fatal(err)
	}
	// bounds[i] is where record i starts (after the sync mark, if any,
	// that precedes it); the last entry is the end of the records.
	var bounds []int64
	for i, p := range payloads {
		if err := w.Write(AppendRecord(nil, p)); err != nil {
			t.Fatal(err)
		}
		bounds = append(bounds, w.Size()-int64(RecordLen(len(p))))
		if i%4 == 0 {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	bounds = append(bounds, w.Size())
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	// Read the segment as a crash would leave it: still open, with its
	// reserved tail (Close trims the tail).
	data, err := storage.ReadAll(s, "wal/000007.wal")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	closed, err := storage.ReadAll(s, "wal/000007.wal")
	if err != nil {
		t.Fatal(err)
	}
	if end := bounds[len(bounds)-1]; int64(len(closed)) != end {
		t.Fatalf("closed segment is %d bytes, want its %d bytes of records (the reserved tail trimmed)", len(closed), end)
	}
	return s, data, bounds
}

func TestPreallocatedSegmentReplaysCleanly(t *testing.T) {
	payloads := testPayloads(rand.New(rand.NewPCG(11, 12)), 40)
	s, data, bounds := writePreallocated(t, payloads)
	end := bounds[len(bounds)-1]
	if int64(len(data))%storage.LogPreallocSize != 0 || int64(len(data)) <= end {
		t.Fatalf("file is %d bytes for %d bytes of records: not preallocated", len(data), end)
	}
	if !allZero(data[end:]) {
		t.Fatal("preallocated tail is not zero")
	}
	got, res, err := replayAll(t, s, "wal/000007.wal")
	if err != nil || res.Torn() || res.ValidBytes != end || !samePayloads(got, payloads) {
		t.Fatalf("replay: %v %+v (%d of %d records)", err, res, len(got), len(payloads))
	}
}

// TestPreallocatedSegmentCuts simulates a crash that kept the records of a
// preallocated segment up to some point and left the rest of the reserved
// space zero (or, at worst, a later page written while an earlier one was
// not): at a record boundary replay ends cleanly, inside a record it stops
// at a torn record, and data after zeros is reported, never silently read.
func TestPreallocatedSegmentCuts(t *testing.T) {
	payloads := testPayloads(rand.New(rand.NewPCG(13, 14)), 30)
	_, data, bounds := writePreallocated(t, payloads)
	const name = "wal/000007.wal"
	replayCut := func(t *testing.T, img []byte) ([][]byte, ReplayResult) {
		t.Helper()
		m := storage.NewMem()
		putLog(t, m, name, img)
		got, res, err := replayAll(t, m, name)
		if err != nil {
			t.Fatalf("replay error %v", err)
		}
		return got, res
	}
	for k, b := range bounds {
		// Records 0..k-1 written, the rest of the reserved space zero.
		img := bytes.Clone(data)
		clear(img[b:])
		got, res := replayCut(t, img)
		if res.Torn() || res.ValidBytes != b || !samePayloads(got, payloads[:k]) {
			t.Fatalf("cut at boundary %d (offset %d): %+v, %d records", k, b, res, len(got))
		}
		if k == len(payloads) {
			continue
		}
		// Record k partly written: its first byte (part of the CRC) or all
		// but its last byte reached the disk.
		for _, keep := range []int64{1, int64(RecordLen(len(payloads[k]))) - 1} {
			img := bytes.Clone(data)
			clear(img[b+keep:])
			if allZero(img[b : b+keep]) {
				continue // the kept bytes happen to be zero: a clean end
			}
			got, res := replayCut(t, img)
			if res.TornOffset != b || !samePayloads(got, payloads[:k]) {
				t.Fatalf("record %d cut after %d bytes: %+v, %d records", k, keep, res, len(got))
			}
			if err := res.TornError(name); !errors.Is(err, format.ErrCorruption) ||
				!strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), fmt.Sprint(b)) {
				t.Fatalf("TornError = %v; want corruption naming %s and offset %d", err, name, b)
			}
		}
		// Zeros after record k-1, then garbage further on (record k's page
		// lost, a later page written): replay stops at the zeros and
		// reports the garbage.
		img = bytes.Clone(data)
		clear(img[b:])
		junk := b + RecordHeaderSize + int64(k%7)*4096
		img[junk] = 0x5a
		got, res = replayCut(t, img)
		if res.TornOffset != b || !samePayloads(got, payloads[:k]) ||
			!strings.Contains(res.TornReason, fmt.Sprint(junk)) {
			t.Fatalf("garbage at %d after zeros at %d: %+v, %d records", junk, b, res, len(got))
		}
	}
}
