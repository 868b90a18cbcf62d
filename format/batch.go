package format

import (
	"encoding/binary"
	"fmt"
)

// Batch encoding.
//
// A batch is the unit of atomicity: its rows enter the WAL as one record and
// become visible together. The WAL record payload is exactly this encoding:
//
//	+---------+-----------+------------------+----------------------+
//	| seq u64 | count u32 | commit_ts i64    | entries...           |
//	+---------+-----------+------------------+----------------------+
//	  header (BatchHeaderLen = 20 bytes, little-endian)
//
// Each entry is:
//
//	+----------+------------------------+---------------+-----+--------------------+-------+
//	| flags u8 | expire_ts i64          | uvarint       | key | uvarint            | value |
//	|          | (only if FlagHasExpire)| key length    |     | value length       |       |
//	|          |                        |               |     | (only value rows)  |       |
//	+----------+------------------------+---------------+-----+--------------------+-------+
//
// flags is one of: a value row (0 or FlagHasExpire), a tombstone
// (FlagTombstone), a deadline row (FlagDeadline, with or without
// FlagHasExpire) or a merge operand (FlagMerge, with or without
// FlagHasExpire; its value field is the operand); tombstones and deadline
// rows have no value field. The i-th entry gets sequence number seq+i.
// Rows that carry an expiry, tombstones, deadline rows and merge operands
// also carry ts = commit_ts (FlagHasTS); the header's commit_ts is the engine
// clock reading the batch committed at, and seeds the clock on recovery.
// expire_ts is fixed width so that a relative TTL can be stamped in place as
// an absolute deadline when the batch commits.

// BatchHeaderLen is the size of the batch header.
const BatchHeaderLen = 20

// BatchHeader is the decoded header of a batch.
type BatchHeader struct {
	Seq      uint64
	Count    uint32
	CommitTS int64
}

// DecodeBatchHeader reads a batch header.
func DecodeBatchHeader(data []byte) (BatchHeader, bool) {
	if len(data) < BatchHeaderLen {
		return BatchHeader{}, false
	}
	return BatchHeader{
		Seq:      binary.LittleEndian.Uint64(data[0:]),
		Count:    binary.LittleEndian.Uint32(data[8:]),
		CommitTS: int64(binary.LittleEndian.Uint64(data[12:])),
	}, true
}

// PutBatchHeader writes h into data[:BatchHeaderLen].
func PutBatchHeader(data []byte, h BatchHeader) {
	binary.LittleEndian.PutUint64(data[0:], h.Seq)
	binary.LittleEndian.PutUint32(data[8:], h.Count)
	binary.LittleEndian.PutUint64(data[12:], uint64(h.CommitTS))
}

// AppendBatchEntry appends one entry. For a row with FlagHasExpire the
// expire_ts slot holds expireSlot, which the caller may overwrite in place
// later (its offset is the returned slot, or -1 when there is none).
func AppendBatchEntry(dst []byte, flags uint8, expireSlot int64, key, value []byte) ([]byte, int) {
	dst = append(dst, flags)
	slot := -1
	if flags&FlagHasExpire != 0 {
		slot = len(dst)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(expireSlot))
	}
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	if FlagsHaveValue(flags) {
		dst = binary.AppendUvarint(dst, uint64(len(value)))
		dst = append(dst, value...)
	}
	return dst, slot
}

// LastBatchEntry returns the key and value of the entry with a value that
// ends data, as AppendBatchEntry wrote it, given their lengths; both alias
// data.
func LastBatchEntry(data []byte, keyLen, valueLen int) (key, value []byte) {
	end := len(data)
	valueStart := end - valueLen
	keyEnd := valueStart - uvarintLen(uint64(valueLen))
	return data[keyEnd-keyLen : keyEnd : keyEnd], data[valueStart:end:end]
}

// BatchReader decodes the entries of an encoded batch.
type BatchReader struct {
	data   []byte
	off    int
	header BatchHeader
	i      uint32
}

// NewBatchReader validates the header of data and returns a reader over its
// entries. The rows it yields alias data.
func NewBatchReader(data []byte) (BatchReader, error) {
	h, ok := DecodeBatchHeader(data)
	if !ok {
		return BatchReader{}, fmt.Errorf("batch of %d bytes is shorter than its header: %w", len(data), ErrCorruption)
	}
	// Every entry takes at least 2 bytes (flags, key length), which bounds
	// the count before anything is sized by it.
	if uint64(h.Count) > uint64(len(data)-BatchHeaderLen)/2 {
		return BatchReader{}, fmt.Errorf("batch count %d exceeds its %d bytes: %w", h.Count, len(data), ErrCorruption)
	}
	if h.Seq > MaxSeq || uint64(h.Count) > MaxSeq-h.Seq+1 {
		return BatchReader{}, fmt.Errorf("batch sequence %d+%d out of range: %w", h.Seq, h.Count, ErrCorruption)
	}
	return BatchReader{data: data, off: BatchHeaderLen, header: h}, nil
}

// Header returns the batch header.
func (br *BatchReader) Header() BatchHeader { return br.header }

// Next decodes the next entry into r. It returns false at the end of the
// batch; err is non-nil if the entry is malformed or the count disagrees
// with the bytes present.
func (br *BatchReader) Next(r *Row) (ok bool, err error) {
	if br.i == br.header.Count {
		if br.off != len(br.data) {
			return false, fmt.Errorf("batch has %d trailing bytes after %d entries: %w", len(br.data)-br.off, br.header.Count, ErrCorruption)
		}
		return false, nil
	}
	bad := func(what string) (bool, error) {
		return false, fmt.Errorf("batch entry %d at byte %d: %s: %w", br.i, br.off, what, ErrCorruption)
	}
	d := br.data[br.off:]
	if len(d) < 1 {
		return bad("truncated")
	}
	flags := d[0]
	if flags&^(FlagTombstone|FlagHasExpire|FlagDeadline|FlagMerge) != 0 || !ValidKind(flags) {
		return bad(fmt.Sprintf("invalid flags %#x", flags))
	}
	n := 1
	*r = Row{Seq: br.header.Seq + uint64(br.i), Flags: flags}
	if !FlagsHaveValue(flags) || flags&FlagMerge != 0 {
		// A tombstone records when it was written, so that compaction can
		// bound how long deleted data stays on disk; a deadline row, so
		// that its folded value keeps a creation time; an operand, so that
		// a reader can tell which window it belongs to.
		r.TS = br.header.CommitTS
		r.Flags |= FlagHasTS
	}
	if flags&FlagHasExpire != 0 {
		if len(d) < n+8 {
			return bad("truncated expire_ts")
		}
		r.ExpireTS = int64(binary.LittleEndian.Uint64(d[n:]))
		r.TS = br.header.CommitTS
		r.Flags |= FlagHasTS
		n += 8
	}
	klen, m := binary.Uvarint(d[n:])
	if m <= 0 || klen > uint64(len(d)-n-m) {
		return bad("bad key length")
	}
	n += m
	r.Key = d[n : n+int(klen) : n+int(klen)]
	n += int(klen)
	if FlagsHaveValue(flags) {
		vlen, m := binary.Uvarint(d[n:])
		if m <= 0 || vlen > uint64(len(d)-n-m) {
			return bad("bad value length")
		}
		n += m
		r.Value = d[n : n+int(vlen) : n+int(vlen)]
		n += int(vlen)
	}
	br.off += n
	br.i++
	return true, nil
}
