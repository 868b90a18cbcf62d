package wal

// Replay: reading a segment back, record by record, and telling a torn
// tail from damage in durable bytes (see the package documentation).

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/storage"
)

// ReplayResult describes what Replay read.
type ReplayResult struct {
	// Records is the number of intact records passed to fn.
	Records int
	// ValidBytes is the offset just past the last intact record (or past the
	// header when there are none; 0 if the header itself is missing).
	ValidBytes int64
	// FileSize is the size of the segment as read.
	FileSize int64
	// TornOffset is where replay stopped at damaged or incomplete data: the
	// offset of the first record that could not be read, 0 for a missing or
	// damaged header. It is -1 if the segment ended cleanly, or if fn or a
	// read failed.
	TornOffset int64
	// TornReason says what was wrong at TornOffset.
	TornReason string
	// Version is the segment's format version (0 if its header was not read).
	Version uint32
	// Sealed reports that the segment ends in a seal: its writer finished
	// it (see the package documentation).
	Sealed bool
	// SyncMarks is the number of intact sync marks read before TornOffset
	// (or to the end of the segment).
	SyncMarks int
	// The fields below describe the bytes from TornOffset to the end of the
	// segment, found by a byte-by-byte scan when TornOffset >= 0: what a
	// recovery that stops at TornOffset drops.
	//
	// LostRecords is the number of intact full records (with a valid CRC)
	// found after TornOffset.
	LostRecords int
	// LostBytes is the number of bytes from TornOffset to the last non-zero
	// byte of the segment (zero padding is not counted).
	LostBytes int64
	// SyncedThrough is the largest value of a sync mark found after
	// TornOffset (0 if none). Above TornOffset, it proves that the bytes at
	// TornOffset were durable before they were damaged.
	SyncedThrough int64
}

// HasSyncMark reports whether the segment holds a sync mark, before or
// after TornOffset: a Sync of it completed (see "Seals" in the package
// documentation for what that proves about older segments).
func (r ReplayResult) HasSyncMark() bool { return r.SyncMarks > 0 || r.SyncedThrough > 0 }

// Torn reports whether replay stopped at a damaged or incomplete record.
func (r ReplayResult) Torn() bool { return r.TornOffset >= 0 }

// SyncedDamage reports whether replay stopped at damage in bytes that a
// later completed Sync had made durable: corruption, not a torn write.
func (r ReplayResult) SyncedDamage() bool { return r.TornOffset >= 0 && r.SyncedThrough > r.TornOffset }

// TornError returns a corruption error naming segment name and TornOffset,
// or nil if the segment ended cleanly. Use it when a torn tail is not
// acceptable, i.e. for every segment but the newest.
func (r ReplayResult) TornError(name string) error {
	if r.TornOffset < 0 {
		return nil
	}
	return format.Corruptf(name, r.TornOffset, "torn or damaged WAL record (%d bytes of %d valid; %d intact records in %d bytes after it): %s",
		r.ValidBytes, r.FileSize, r.LostRecords, r.LostBytes, r.TornReason)
}

// readChunk is the read-ahead size used by Replay.
const readChunk = 256 << 10

// Replay reads segment name from s, checks that its header names segment
// wantSegNum, and calls fn with the payload of each intact full record in
// order. The payload aliases a buffer that is valid only during the call.
//
// A bad header returns a corruption error at offset 0, except that a
// segment shorter than the header, or with an all-zero header, yields zero
// records with TornOffset 0. A torn or damaged record stops the replay and
// is reported in the result with a nil error, unless a sync mark after it
// proves it was durable: then the error is a corruption error at the
// record's offset (see the package documentation). An error returned by fn
// stops the replay and is returned as is, with the result so far. Whenever
// TornOffset is set, the Lost fields describe the rest of the segment.
func Replay(s storage.Storage, name string, wantSegNum uint64, fn func(payload []byte) error) (ReplayResult, error) {
	return ReplayRecords(s, name, wantSegNum, func(_ int64, payload []byte) error { return fn(payload) })
}

// ReplayRecords is Replay passing fn each record's offset in the segment
// too (sync marks, which fn does not see, take room between records).
func ReplayRecords(s storage.Storage, name string, wantSegNum uint64, fn func(off int64, payload []byte) error) (ReplayResult, error) {
	r, err := s.Open(name)
	if err != nil {
		return ReplayResult{TornOffset: -1}, err
	}
	defer r.Close()
	rp := replayer{r: r, name: name, res: ReplayResult{TornOffset: -1, FileSize: r.Size()}, version: Version}
	err = rp.run(wantSegNum, 0, fn)
	return rp.res, err
}

// ReplayFrom is Replay reading segment name from r, starting at offset
// start: 0 reads and checks the header; a larger start must be a record
// boundary past a header checked before (a reader following a live
// segment), and offsets in the result are segment offsets either way.
func ReplayFrom(r storage.ObjectReader, name string, wantSegNum uint64, start int64, fn func(payload []byte) error) (ReplayResult, error) {
	rp := replayer{r: r, name: name, res: ReplayResult{TornOffset: -1, FileSize: r.Size()}, version: Version}
	err := rp.run(wantSegNum, start, func(_ int64, payload []byte) error { return fn(payload) })
	return rp.res, err
}

// replayer is the state of one Replay.
type replayer struct {
	r       storage.ObjectReader
	name    string
	res     ReplayResult
	version uint32
}

// stop records that replay stopped at damaged or incomplete data at off,
// scans the rest of the segment, and returns err, or a corruption error if
// err is nil and a sync mark proves that the data at off was durable.
func (rp *replayer) stop(off int64, err error, reason string, args ...any) error {
	rp.res.TornOffset = off
	rp.res.TornReason = fmt.Sprintf(reason, args...)
	if serr := rp.scanLost(off); serr != nil {
		return fmt.Errorf("wal: read %s after offset %d: %w", rp.name, off, serr)
	}
	if err == nil && rp.res.SyncedDamage() {
		err = format.Corruptf(rp.name, off, "damaged WAL record in data a later sync made durable (a sync mark records the segment durable through offset %d; %d intact records in %d bytes follow): %s",
			rp.res.SyncedThrough, rp.res.LostRecords, rp.res.LostBytes, rp.res.TornReason)
	}
	return err
}

// run replays the segment from offset start (0: the header first), calling
// fn with each intact full record, and fills rp.res.
func (rp *replayer) run(wantSegNum uint64, start int64, fn func(off int64, payload []byte) error) error {
	size := rp.res.FileSize
	name := rp.name
	if start > 0 && (start < HeaderSize || start > size) {
		return fmt.Errorf("wal: replay %s from offset %d: not a record boundary of a %d-byte segment", name, start, size)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(rp.r, start, size-start), readChunk)
	if start == 0 {
		if ok, err := rp.readHeader(br, wantSegNum); !ok {
			return err
		}
		start = HeaderSize
	}

	off := start
	rp.res.ValidBytes = off
	var rh [RecordHeaderSize]byte
	var payload []byte
	for off < size {
		remain := size - off
		if remain < RecordHeaderSize {
			n, err := io.ReadFull(br, rh[:remain])
			if err != nil {
				return fmt.Errorf("wal: read %s at offset %d: %w", name, off, err)
			}
			if allZero(rh[:n]) {
				return nil // zero padding shorter than a header
			}
			return rp.stop(off, nil, "truncated record header (%d of %d bytes)", remain, RecordHeaderSize)
		}
		if _, err := io.ReadFull(br, rh[:]); err != nil {
			return fmt.Errorf("wal: read %s at offset %d: %w", name, off, err)
		}
		if allZero(rh[:]) {
			// End marker: the rest must be zero padding.
			nz, err := firstNonZero(br, off+RecordHeaderSize)
			if err != nil {
				return fmt.Errorf("wal: read %s: %w", name, err)
			}
			if nz >= 0 {
				return rp.stop(off, nil, "end marker at offset %d followed by non-zero data at offset %d", off, nz)
			}
			return nil
		}
		crc := binary.LittleEndian.Uint32(rh[0:])
		length := binary.LittleEndian.Uint32(rh[4:])
		typ := rh[8]
		if length > MaxRecordSize {
			return rp.stop(off, nil, "record length %d exceeds the maximum %d", length, MaxRecordSize)
		}
		if int64(length) > remain-RecordHeaderSize {
			return rp.stop(off, nil, "record of %d bytes truncated: only %d bytes remain", length, remain-RecordHeaderSize)
		}
		if cap(payload) < int(length) {
			payload = make([]byte, length)
		}
		payload = payload[:length]
		if _, err := io.ReadFull(br, payload); err != nil {
			return fmt.Errorf("wal: read %s at offset %d: %w", name, off, err)
		}
		sum := crc32.Update(crc32.Checksum(rh[4:], crcTable), crcTable, payload)
		if sum != crc {
			return rp.stop(off, nil, "record checksum %#08x, computed %#08x", crc, sum)
		}
		if end, err := rp.deliver(br, off, typ, payload, fn); end {
			return err
		}
		off += RecordHeaderSize + int64(length)
		rp.res.ValidBytes = off
	}
	return nil
}

// readHeader reads the segment header from br, positioned at offset 0, and
// checks it. Like checkHeader, it returns false and the error to return
// (nil for a torn write) when the replay stops at the header.
func (rp *replayer) readHeader(br *bufio.Reader, wantSegNum uint64) (bool, error) {
	size := rp.res.FileSize
	if size < HeaderSize {
		return false, rp.stop(0, nil, "segment of %d bytes is shorter than its %d-byte header", size, HeaderSize)
	}
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return false, fmt.Errorf("wal: read header of %s: %w", rp.name, err)
	}
	return rp.checkHeader(hdr[:], wantSegNum)
}

// deliver acts on the record of type typ at off whose checksum has been
// verified: it passes a full record's payload to fn, checks a sync mark, or
// ends the replay at a seal (br is positioned just past the record). It
// returns true when the replay ends at this record, with the error to
// return; false when the replay goes on with the next record.
func (rp *replayer) deliver(br *bufio.Reader, off int64, typ uint8, payload []byte, fn func(off int64, payload []byte) error) (bool, error) {
	name := rp.name
	switch {
	case typ == RecordTypeFull:
		if err := fn(off, payload); err != nil {
			if errors.Is(err, format.ErrCorruption) {
				var ce *format.CorruptionError
				if !errors.As(err, &ce) {
					// A record that passed its checksum but does not
					// decode: name the segment and the record's offset.
					err = format.Corruptf(name, off, "record does not decode: %v", err)
				}
				return true, rp.stop(off, err, "record does not decode")
			}
			return true, err
		}
		rp.res.Records++
	case typ == RecordTypeSyncMark && rp.version > versionNoMarks:
		if err := checkSyncMark(payload, off); err != nil {
			return true, rp.stop(off, format.Corruptf(name, off, "%v", err), "%v", err)
		}
		rp.res.SyncMarks++
	case typ == RecordTypeSeal && rp.version > versionNoMarks:
		return true, rp.sealed(br, off, uint32(len(payload)))
	default:
		err := format.Corruptf(name, off, "record with valid checksum has unknown type %d (segment version %d)", typ, rp.version)
		return true, rp.stop(off, err, "unknown record type %d", typ)
	}
	return false, nil
}

// sealed ends a replay at the seal found at off (payload length bytes): a
// seal is the last record, and only zeros may follow it.
func (rp *replayer) sealed(br *bufio.Reader, off int64, length uint32) error {
	if length != 0 {
		err := format.Corruptf(rp.name, off, "seal with a %d-byte payload, want 0", length)
		return rp.stop(off, err, "bad seal")
	}
	end := off + RecordHeaderSize
	nz, err := firstNonZero(br, end)
	if err != nil {
		return fmt.Errorf("wal: read %s: %w", rp.name, err)
	}
	if nz >= 0 {
		err := format.Corruptf(rp.name, nz, "non-zero data at offset %d after the seal at offset %d", nz, off)
		return rp.stop(end, err, "data after the seal")
	}
	rp.res.ValidBytes = end
	rp.res.Sealed = true
	return nil
}

// checkHeader checks a segment header read in full. A damaged header stops
// the replay at offset 0: it returns false and the error to return (nil for
// an all-zero header, a torn write).
func (rp *replayer) checkHeader(hdr []byte, wantSegNum uint64) (bool, error) {
	name := rp.name
	if allZero(hdr) {
		return false, rp.stop(0, nil, "segment header is all zero")
	}
	if m := binary.LittleEndian.Uint64(hdr[0:]); m != Magic {
		return false, rp.stop(0, format.Corruptf(name, 0, "bad WAL magic %#016x", m), "bad magic")
	}
	if got, want := binary.LittleEndian.Uint32(hdr[20:]), crc32.Checksum(hdr[:20], crcTable); got != want {
		return false, rp.stop(0, format.Corruptf(name, 0, "WAL header checksum %#08x, computed %#08x", got, want), "bad header checksum")
	}
	rp.version = binary.LittleEndian.Uint32(hdr[8:])
	rp.res.Version = rp.version
	if rp.version != versionNoMarks && rp.version != Version {
		return false, rp.stop(0, format.Corruptf(name, 0, "unsupported WAL version %d (this build reads 1 and 2)", rp.version), "unsupported version")
	}
	if n := binary.LittleEndian.Uint64(hdr[12:]); n != wantSegNum {
		return false, rp.stop(0, format.Corruptf(name, 0, "WAL header names segment %d, expected %d", n, wantSegNum), "wrong segment number")
	}
	return true, nil
}

// checkSyncMark checks the payload of a sync mark found at offset off: a
// mark cannot record more than what was written before it.
func checkSyncMark(payload []byte, off int64) error {
	if len(payload) != 8 {
		return fmt.Errorf("sync mark with a %d-byte payload, want 8", len(payload))
	}
	if v := binary.LittleEndian.Uint64(payload); v < HeaderSize || v > uint64(off) {
		return fmt.Errorf("sync mark at offset %d records the segment durable through offset %d", off, v)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// firstNonZero reads br to the end and returns the offset of its first
// non-zero byte (start is the offset of br's next byte), or -1.
func firstNonZero(br *bufio.Reader, start int64) (int64, error) {
	off := start
	for {
		b, err := br.Peek(readChunk)
		for i, c := range b {
			if c != 0 {
				return off + int64(i), nil
			}
		}
		off += int64(len(b))
		br.Discard(len(b))
		if err == io.EOF {
			return -1, nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return -1, err
		}
	}
}
