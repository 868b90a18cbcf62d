package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
)

// batchEntry is one write of a test batch, in the form Batch builds it:
// flags are FlagTombstone or FlagHasExpire (never FlagHasTS, which the
// reader adds), expire is the stamped deadline.
type batchEntry struct {
	flags      uint8
	expire     int64
	key, value []byte
}

// encodeBatch encodes a batch exactly as mayfly.Batch does: a header slot,
// AppendBatchEntry for each write, then the header stamped at commit (and
// each relative expiry slot overwritten with its deadline in place).
func encodeBatch(seq uint64, commitTS int64, entries []batchEntry) []byte {
	data := make([]byte, BatchHeaderLen, 256)
	for _, e := range entries {
		var slot int
		// The engine first stores a relative TTL in the slot and stamps the
		// absolute deadline at commit; do the same.
		data, slot = AppendBatchEntry(data, e.flags, 1000, e.key, e.value)
		if slot >= 0 {
			binary.LittleEndian.PutUint64(data[slot:], uint64(e.expire))
		}
	}
	PutBatchHeader(data, BatchHeader{Seq: seq, Count: uint32(len(entries)), CommitTS: commitTS})
	return data
}

// seedBatches returns well-formed batches of the shapes the engine writes.
func seedBatches() [][]byte {
	const now = 1767225600000
	var many []batchEntry
	for i := range 40 {
		e := batchEntry{key: fmt.Appendf(nil, "user:%05d", i), value: bytes.Repeat([]byte{byte(i)}, i%7)}
		switch i % 3 {
		case 1:
			e.flags, e.expire = FlagHasExpire, now+int64(i)*1000
		case 2:
			e.flags, e.value = FlagTombstone, nil
		}
		many = append(many, e)
	}
	return [][]byte{
		encodeBatch(1, now, nil),
		encodeBatch(1, now, []batchEntry{{key: []byte("k"), value: []byte("v")}}),
		encodeBatch(7, now, []batchEntry{{flags: FlagHasExpire, expire: now + 60_000, key: []byte("session"), value: []byte("token")}}),
		encodeBatch(9, now, []batchEntry{{flags: FlagTombstone, key: []byte("gone")}}),
		encodeBatch(1<<40, now, []batchEntry{
			{key: []byte("a"), value: nil},
			{flags: FlagHasExpire, expire: now, key: []byte("b"), value: bytes.Repeat([]byte("x"), 200)},
			{flags: FlagTombstone, key: bytes.Repeat([]byte("c"), 130)},
		}),
		encodeBatch(100, now, many),
		encodeBatch(MaxSeq-1, now, []batchEntry{{key: []byte("last"), value: []byte("seq")}}),
		encodeBatch(MaxSeq-2, -5, []batchEntry{{flags: FlagHasExpire, expire: 1<<63 - 1, key: []byte("x"), value: []byte("y")}, {flags: FlagTombstone, key: []byte("z")}}),
		encodeBatch(12, now, []batchEntry{{flags: FlagDeadline | FlagHasExpire, expire: now + 1000, key: []byte("slide")}, {flags: FlagDeadline, key: []byte("persist")}}),
		encodeBatch(14, now, []batchEntry{{flags: FlagMerge | FlagHasExpire, expire: now + 60_000, key: []byte("hits"), value: []byte{1, 0, 0, 0, 0, 0, 0, 0}}, {flags: FlagMerge, key: []byte("total"), value: []byte{2}}}),
	}
}

// checkBatch decodes data with a BatchReader to the end and checks what it
// yields against the encoding's rules. It returns the rows and the first
// error (every error must wrap ErrCorruption).
func checkBatch(t *testing.T, data []byte) ([]Row, error) {
	t.Helper()
	br, err := NewBatchReader(data)
	if err != nil {
		if !errors.Is(err, ErrCorruption) {
			t.Fatalf("NewBatchReader: non-corruption error %v", err)
		}
		return nil, err
	}
	h := br.Header()
	if len(data) < BatchHeaderLen {
		t.Fatalf("accepted a %d-byte batch", len(data))
	}
	if uint64(h.Count)*2 > uint64(len(data)-BatchHeaderLen) {
		t.Fatalf("accepted count %d for %d bytes", h.Count, len(data))
	}
	var rows []Row
	for i := uint64(0); ; i++ {
		if i > uint64(h.Count) {
			t.Fatalf("Next kept returning rows past count %d", h.Count)
		}
		var r Row
		ok, err := br.Next(&r)
		if err != nil {
			if ok {
				t.Fatal("Next returned ok with an error")
			}
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("Next: non-corruption error %v", err)
			}
			return rows, err
		}
		if !ok {
			if i != uint64(h.Count) {
				t.Fatalf("clean end after %d of %d entries", i, h.Count)
			}
			return rows, nil
		}
		if r.Seq != h.Seq+i || r.Seq > MaxSeq {
			t.Fatalf("entry %d: seq %d, header seq %d", i, r.Seq, h.Seq)
		}
		if r.Flags&^KnownFlags != 0 {
			t.Fatalf("entry %d: unknown flags %#x", i, r.Flags)
		}
		if !ValidKind(r.Flags) {
			t.Fatalf("entry %d: flags %#x name no one kind of row", i, r.Flags)
		}
		// Tombstones, deadline rows, merge operands and rows with a
		// deadline carry the commit time.
		stamped := r.Flags&(FlagTombstone|FlagHasExpire|FlagDeadline|FlagMerge) != 0
		if stamped != (r.Flags&FlagHasTS != 0) || (stamped && r.TS != h.CommitTS) || (!stamped && r.TS != 0) {
			t.Fatalf("entry %d: flags %#x ts %d, commit ts %d", i, r.Flags, r.TS, h.CommitTS)
		}
		if r.Flags&FlagHasExpire == 0 && r.ExpireTS != 0 {
			t.Fatalf("entry %d: expire ts %d without the flag", i, r.ExpireTS)
		}
		if !r.HasValue() && r.Value != nil {
			t.Fatalf("entry %d: tombstone or deadline row with a value", i)
		}
		// Key and value alias data and cannot be appended to in place.
		if cap(r.Key) != len(r.Key) || cap(r.Value) != len(r.Value) {
			t.Fatalf("entry %d: key or value capacity past its length", i)
		}
		if len(r.Key)+len(r.Value) > len(data) {
			t.Fatalf("entry %d: %d key and value bytes from a %d-byte batch", i, len(r.Key)+len(r.Value), len(data))
		}
		rows = append(rows, r)
	}
}

// decodeOnly runs a BatchReader over data without checking anything; it is
// what the allocation bound measures.
func decodeOnly(data []byte) {
	br, err := NewBatchReader(data)
	if err != nil {
		return
	}
	var r Row
	for {
		ok, err := br.Next(&r)
		if !ok || err != nil {
			return
		}
	}
}

var allocSample = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// heapAllocated returns the bytes allocated on the heap so far. It is cheap
// (no stop-the-world) and exact for large objects, which is what an
// allocation sized by a corrupt count would be; small objects are counted
// a span at a time.
func heapAllocated() uint64 {
	metrics.Read(allocSample)
	return allocSample[0].Value.Uint64()
}

// maxDecodeAlloc bounds the bytes decoding any batch may allocate: the
// reader, one error, and slack for small-object accounting. Rows alias the
// input, so nothing is sized by the data or by the count in the header.
const maxDecodeAlloc = 64 << 10

// decodeAllocBytes returns the fewest bytes decoding data allocated over a
// few tries (other goroutines can allocate during one measurement, never
// less than the decode itself).
func decodeAllocBytes(data []byte) uint64 {
	best := ^uint64(0)
	for range 3 {
		before := heapAllocated()
		decodeOnly(data)
		best = min(best, heapAllocated()-before)
		if best <= maxDecodeAlloc {
			break
		}
	}
	return best
}

// FuzzBatchReader decodes arbitrary bytes as a batch (a WAL record payload).
// Nothing may panic, every error must be a corruption error, decoding must
// allocate no more than a small constant however large the header's count,
// and a batch that decodes re-encodes to one that decodes to the same rows.
func FuzzBatchReader(f *testing.F) {
	for _, b := range seedBatches() {
		f.Add(b)
	}
	good := seedBatches()[5]
	// Corrupt counts: huge, one too many, and the largest the length allows.
	for _, count := range []uint32{1<<32 - 1, 41, uint32(len(good)-BatchHeaderLen) / 2} {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[8:], count)
		f.Add(b)
	}
	f.Add(good[:len(good)-1])
	f.Add(append(bytes.Clone(good), 0))
	f.Add(good[:BatchHeaderLen])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := checkBatch(t, data)
		if n := decodeAllocBytes(data); n > maxDecodeAlloc {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(data), n)
		}
		if err != nil {
			return
		}
		// Re-encode what was decoded: the canonical form is no longer than
		// the input (varints may have been overlong) and decodes the same.
		h, _ := DecodeBatchHeader(data)
		entries := make([]batchEntry, len(rows))
		for i, r := range rows {
			entries[i] = batchEntry{flags: r.Flags &^ FlagHasTS, expire: r.ExpireTS, key: r.Key, value: r.Value}
		}
		again := encodeBatch(h.Seq, h.CommitTS, entries)
		if len(again) > len(data) {
			t.Fatalf("re-encoding grew from %d to %d bytes", len(data), len(again))
		}
		rows2, err := checkBatch(t, again)
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if len(rows2) != len(rows) {
			t.Fatalf("re-encoded batch has %d rows, want %d", len(rows2), len(rows))
		}
		for i := range rows {
			a, b := rows[i], rows2[i]
			if a.Seq != b.Seq || a.Flags != b.Flags || a.TS != b.TS || a.ExpireTS != b.ExpireTS ||
				!bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || (a.Value == nil) != (b.Value == nil) {
				t.Fatalf("row %d: %+v re-decodes as %+v", i, a, b)
			}
		}
	})
}

func TestBatchReaderSeeds(t *testing.T) {
	for i, b := range seedBatches() {
		rows, err := checkBatch(t, b)
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		h, _ := DecodeBatchHeader(b)
		if uint32(len(rows)) != h.Count {
			t.Fatalf("seed %d: %d rows, count %d", i, len(rows), h.Count)
		}
	}
	// The mixed seed round trips field by field.
	rows, _ := checkBatch(t, seedBatches()[4])
	if string(rows[0].Key) != "a" || rows[0].Value == nil || len(rows[0].Value) != 0 || rows[0].Flags != 0 {
		t.Errorf("row 0: %+v (an empty value is not a nil value)", rows[0])
	}
	if rows[1].Flags != FlagHasExpire|FlagHasTS || rows[1].ExpireTS != 1767225600000 || rows[1].TS != 1767225600000 {
		t.Errorf("row 1: %+v", rows[1])
	}
	if rows[2].Flags != FlagTombstone|FlagHasTS || rows[2].Seq != 1<<40+2 || rows[2].Value != nil {
		t.Errorf("row 2: %+v", rows[2])
	}
}

func TestBatchReaderRejects(t *testing.T) {
	good := encodeBatch(5, 1000, []batchEntry{{key: []byte("k"), value: []byte("v")}, {flags: FlagHasExpire, expire: 2000, key: []byte("e"), value: []byte("w")}})
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short header", good[:BatchHeaderLen-1]},
		{"count above bytes/2", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 1<<31); return b })},
		{"count one too many", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 3); return b })},
		{"count one too few (trailing bytes)", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 1); return b })},
		{"seq above MaxSeq", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint64(b, MaxSeq+1); return b })},
		{"seq+count past MaxSeq", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint64(b, MaxSeq); return b })},
		{"FlagHasTS in a batch", mutate(func(b []byte) []byte { b[BatchHeaderLen] |= FlagHasTS; return b })},
		{"reserved flag", mutate(func(b []byte) []byte { b[BatchHeaderLen] |= 1 << 5; return b })},
		{"key length past the end", mutate(func(b []byte) []byte { b[BatchHeaderLen+1] = 100; return b })},
		{"value length past the end", mutate(func(b []byte) []byte { b[BatchHeaderLen+3] = 100; return b })},
		{"truncated expire_ts", good[:len(good)-10]},
		{"truncated value", good[:len(good)-1]},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"overflowing varint", append(encodeBatch(1, 0, nil)[:8], append([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, bytes.Repeat([]byte{0xff}, 11)...)...)},
	} {
		rows, err := checkBatch(t, tc.data)
		if err == nil {
			t.Errorf("%s: accepted, %d rows", tc.name, len(rows))
		}
	}
}

// TestBatchReaderAcceptsMaxSeq: MaxSeq is "the largest sequence number a
// row can carry", so a batch whose last entry gets sequence MaxSeq is valid.
// NewBatchReader rejects it: its range check is Count > MaxSeq-Seq, which
// is off by one (the last entry's sequence is Seq+Count-1).
func TestBatchReaderAcceptsMaxSeq(t *testing.T) {
	for _, tc := range []struct {
		seq uint64
		n   int
	}{{MaxSeq, 1}, {MaxSeq - 1, 2}} {
		es := make([]batchEntry, tc.n)
		for i := range es {
			es[i] = batchEntry{key: []byte{'a' + byte(i)}}
		}
		rows, err := checkBatch(t, encodeBatch(tc.seq, 0, es))
		if err != nil {
			t.Errorf("batch of %d at seq %d (last entry at MaxSeq): %v", tc.n, tc.seq, err)
			continue
		}
		if rows[len(rows)-1].Seq != MaxSeq {
			t.Errorf("last seq %d", rows[len(rows)-1].Seq)
		}
	}
	// One past MaxSeq is out of range either way.
	if _, err := checkBatch(t, encodeBatch(MaxSeq, 0, []batchEntry{{key: []byte("a")}, {key: []byte("b")}})); err == nil {
		t.Error("batch running past MaxSeq accepted")
	}
}

// TestBatchReaderAllocations checks that decoding never allocates in
// proportion to the entries, valid or claimed: a valid batch costs the same
// few allocations at any size, and a corrupt count costs no more.
func TestBatchReaderAllocations(t *testing.T) {
	mk := func(n int) []byte {
		es := make([]batchEntry, n)
		for i := range es {
			es[i] = batchEntry{key: fmt.Appendf(nil, "k%d", i), value: []byte("v")}
		}
		return encodeBatch(1, 0, es)
	}
	small, large := mk(4), mk(20000)
	aSmall := testing.AllocsPerRun(50, func() { decodeOnly(small) })
	aLarge := testing.AllocsPerRun(50, func() { decodeOnly(large) })
	if aLarge > aSmall || aLarge > 2 {
		t.Errorf("decoding 4 entries: %v allocs, 20000 entries: %v allocs", aSmall, aLarge)
	}
	// A header claiming the most entries the length allows, with garbage
	// after the first: one error, not a buffer sized by the count.
	bogus := bytes.Clone(large)
	binary.LittleEndian.PutUint32(bogus[8:], uint32(len(bogus)-BatchHeaderLen)/2)
	bogus[BatchHeaderLen+len(large)/2] = 0xf8
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for range 10 {
		decodeOnly(bogus)
	}
	runtime.ReadMemStats(&ms1)
	if per := (ms1.TotalAlloc - ms0.TotalAlloc) / 10; per > 4096 {
		t.Errorf("decoding a %d-byte batch with a corrupt count allocated %d bytes", len(bogus), per)
	}
	if n := decodeAllocBytes(bogus); n > maxDecodeAlloc {
		t.Errorf("decodeAllocBytes = %d", n)
	}
}
