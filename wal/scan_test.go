package wal

import (
	"bytes"
	"testing"

	"github.com/mayflydb/mayfly/storage"
)

// TestScanLostCounts checks the resync scan after damage: intact records
// are counted (one larger than the scan window included, whose CRC is read
// in chunks), zero padding is not counted as lost bytes, and a sync mark
// after a large record is still found.
func TestScanLostCounts(t *testing.T) {
	big := bytes.Repeat([]byte("large record "), 2*scanWindow/13)
	seg := AppendHeader(nil, testSeg)
	first := int64(len(seg))
	seg = AppendRecord(seg, []byte("damaged"))
	seg = AppendRecord(seg, big)
	seg = AppendRecord(seg, []byte("small"))
	end := int64(len(seg))
	padded := append(bytes.Clone(seg), make([]byte, 5000)...)

	damaged := flipByte(padded, int(first+RecordHeaderSize))
	s := storage.NewMem()
	putLog(t, s, "wal/a", damaged)
	_, res, err := replayAll(t, s, "wal/a")
	if err != nil || res.TornOffset != first || res.LostRecords != 2 || res.LostBytes != end-first || res.SyncedThrough != 0 {
		t.Fatalf("unsynced: %v %+v; want torn at %d, 2 records and %d bytes lost", err, res, first, end-first)
	}

	// The same with a sync mark after the large record, recording the
	// segment durable through the end of the large record.
	synced := end - int64(RecordLen(len("small")))
	marked := appendSyncMark(bytes.Clone(seg[:synced]), synced)
	marked = AppendRecord(marked, []byte("small"))
	putLog(t, s, "wal/b", flipByte(marked, int(first+RecordHeaderSize)))
	_, res, err = replayAll(t, s, "wal/b")
	if err == nil || res.SyncedThrough != synced || res.LostRecords != 2 || res.LostBytes != int64(len(marked))-first {
		t.Fatalf("synced: %v %+v; want corruption proven by the mark through %d", err, res, synced)
	}

	// Nothing but zeros after the damage: nothing lost beyond the damaged
	// bytes themselves.
	zeros := bytes.Clone(padded)
	clear(zeros[first+RecordHeaderSize:])
	zeros[first] ^= 0xff // a header whose CRC cannot match
	putLog(t, s, "wal/c", zeros)
	_, res, err = replayAll(t, s, "wal/c")
	if err != nil || res.TornOffset != first || res.LostRecords != 0 || res.LostBytes != RecordHeaderSize {
		t.Fatalf("zeros after the damage: %v %+v", err, res)
	}
}
