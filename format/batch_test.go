package format

import (
	"bytes"
	"errors"
	"testing"
)

// TestBatchDeadlineEntries: deadline rows round-trip through the batch
// encoding without a value field and carry the commit time; a deadline row
// that is also a tombstone is refused as corruption.
func TestBatchDeadlineEntries(t *testing.T) {
	data := make([]byte, BatchHeaderLen)
	data, _ = AppendBatchEntry(data, FlagDeadline|FlagHasExpire, 900, []byte("a"), nil)
	data, _ = AppendBatchEntry(data, FlagDeadline, 0, []byte("b"), nil)
	data, _ = AppendBatchEntry(data, 0, 0, []byte("c"), []byte("v"))
	PutBatchHeader(data, BatchHeader{Seq: 10, Count: 3, CommitTS: 77})
	br, err := NewBatchReader(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Key: []byte("a"), Seq: 10, Flags: FlagDeadline | FlagHasExpire | FlagHasTS, TS: 77, ExpireTS: 900},
		{Key: []byte("b"), Seq: 11, Flags: FlagDeadline | FlagHasTS, TS: 77},
		{Key: []byte("c"), Seq: 12, Value: []byte("v")},
	}
	for i, w := range want {
		var r Row
		if ok, err := br.Next(&r); !ok || err != nil {
			t.Fatalf("entry %d: %v, %v", i, ok, err)
		}
		if string(r.Key) != string(w.Key) || r.Seq != w.Seq || r.Flags != w.Flags || r.TS != w.TS || r.ExpireTS != w.ExpireTS || string(r.Value) != string(w.Value) {
			t.Fatalf("entry %d = %+v, want %+v", i, r, w)
		}
	}
	var r Row
	if ok, err := br.Next(&r); ok || err != nil {
		t.Fatalf("after the last entry: %v, %v", ok, err)
	}

	bad := make([]byte, BatchHeaderLen)
	bad, _ = AppendBatchEntry(bad, FlagDeadline|FlagTombstone, 0, []byte("a"), nil)
	PutBatchHeader(bad, BatchHeader{Seq: 1, Count: 1})
	br, err = NewBatchReader(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := br.Next(&r); !errors.Is(err, ErrCorruption) {
		t.Fatalf("tombstone deadline row: %v, want ErrCorruption", err)
	}
}

// TestBatchMergeEntries: merge operands round-trip with their value and
// carry the commit time whether or not they have a TTL; an operand that
// is also a tombstone or a deadline row is refused as corruption.
func TestBatchMergeEntries(t *testing.T) {
	data := make([]byte, BatchHeaderLen)
	data, _ = AppendBatchEntry(data, FlagMerge|FlagHasExpire, 900, []byte("a"), []byte("+1"))
	data, _ = AppendBatchEntry(data, FlagMerge, 0, []byte("b"), []byte("+2"))
	PutBatchHeader(data, BatchHeader{Seq: 10, Count: 2, CommitTS: 77})
	br, err := NewBatchReader(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Key: []byte("a"), Seq: 10, Flags: FlagMerge | FlagHasExpire | FlagHasTS, TS: 77, ExpireTS: 900, Value: []byte("+1")},
		{Key: []byte("b"), Seq: 11, Flags: FlagMerge | FlagHasTS, TS: 77, Value: []byte("+2")},
	}
	for i, w := range want {
		var r Row
		if ok, err := br.Next(&r); !ok || err != nil {
			t.Fatalf("entry %d: %v, %v", i, ok, err)
		}
		if string(r.Key) != string(w.Key) || r.Seq != w.Seq || r.Flags != w.Flags || r.TS != w.TS || r.ExpireTS != w.ExpireTS || string(r.Value) != string(w.Value) {
			t.Fatalf("entry %d = %+v, want %+v", i, r, w)
		}
	}
	for _, flags := range []uint8{FlagMerge | FlagTombstone, FlagMerge | FlagDeadline} {
		bad := make([]byte, BatchHeaderLen)
		bad, _ = AppendBatchEntry(bad, flags, 0, []byte("a"), nil)
		PutBatchHeader(bad, BatchHeader{Seq: 1, Count: 1})
		br, err := NewBatchReader(bad)
		if err != nil {
			t.Fatal(err)
		}
		var r Row
		if _, err := br.Next(&r); !errors.Is(err, ErrCorruption) {
			t.Fatalf("flags %#x: %v, want ErrCorruption", flags, err)
		}
	}
}

// TestLastBatchEntry: the key and value of the last entry appended are
// found from their lengths, with and without an expire slot, for lengths
// whose varints take one and two bytes.
func TestLastBatchEntry(t *testing.T) {
	for _, c := range []struct {
		flags      uint8
		key, value []byte
	}{
		{FlagMerge, []byte("k"), []byte("12345678")},
		{FlagMerge | FlagHasExpire, bytes.Repeat([]byte("k"), 200), bytes.Repeat([]byte("v"), 300)},
		{0, []byte("key"), nil},
	} {
		data, _ := AppendBatchEntry([]byte("prefix"), FlagTombstone, 0, []byte("other"), nil)
		data, _ = AppendBatchEntry(data, c.flags, 5, c.key, c.value)
		k, v := LastBatchEntry(data, len(c.key), len(c.value))
		if !bytes.Equal(k, c.key) || !bytes.Equal(v, c.value) {
			t.Fatalf("flags %#x: got key %q value %q, want %q %q", c.flags, k, v, c.key, c.value)
		}
	}
}
