package wal

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// scanWindow is how many bytes scanLost holds at a time.
const scanWindow = 1 << 20

// scanLost fills the Lost fields and SyncedThrough of rp.res from the
// bytes [from, size) of the segment, after replay stopped at from. It
// resynchronises byte by byte: at every offset past from where an intact
// record starts (a full record or, in a version 2 segment, a sync mark, with
// a plausible length and a valid CRC) it counts the record and continues
// after it. A CRC is 32 bits, so a false match in damaged bytes is possible
// but improbable; it only ever adds to what is reported as lost, or, for a
// mark, refuses a segment a loss-accepting recovery can still open. It runs
// only when replay found damage.
func (rp *replayer) scanLost(from int64) error {
	size := rp.res.FileSize
	end := from // just past the last non-zero byte
	var buf []byte
	var base int64 // segment offset of buf[0]
	// window returns the bytes [p, p+n) if they fit in a window, reading
	// them if needed, or nil.
	window := func(p int64, n int) ([]byte, error) {
		if n > scanWindow || p+int64(n) > size {
			return nil, nil
		}
		if p < base || p+int64(n) > base+int64(len(buf)) {
			if buf == nil {
				buf = make([]byte, scanWindow)
			}
			buf = buf[:min(int64(scanWindow), size-p)]
			if _, err := rp.r.ReadAt(buf, p); err != nil && err != io.EOF {
				return nil, err
			}
			base = p
		}
		return buf[p-base : p-base+int64(n)], nil
	}
	for p := from; p < size; {
		b, err := window(p, int(min(RecordHeaderSize, size-p)))
		if err != nil {
			return err
		}
		if b[0] != 0 {
			end = p + 1
		}
		if p == from || len(b) < RecordHeaderSize {
			p++
			continue
		}
		n, ok, err := rp.recordAt(p, b, window)
		if err != nil {
			return err
		}
		if !ok {
			p++
			continue
		}
		end = p + n
		p += n
	}
	rp.res.LostBytes = end - from
	return nil
}

// recordAt checks whether an intact record starts at offset p, whose first
// RecordHeaderSize bytes are hdr, and if so counts it and returns its size.
func (rp *replayer) recordAt(p int64, hdr []byte, window func(int64, int) ([]byte, error)) (int64, bool, error) {
	// Read hdr before window reuses its bytes.
	crc, length, typ := binary.LittleEndian.Uint32(hdr[0:]), int64(binary.LittleEndian.Uint32(hdr[4:])), hdr[8]
	switch {
	case typ == RecordTypeFull && length <= MaxRecordSize:
	case typ == RecordTypeSyncMark && length == 8 && rp.version > versionNoMarks:
	default:
		return 0, false, nil
	}
	n := RecordHeaderSize + length
	if p+n > rp.res.FileSize {
		return 0, false, nil
	}
	rec, err := window(p, int(n))
	if err != nil {
		return 0, false, err
	}
	var sum uint32
	if rec != nil {
		sum = crc32.Checksum(rec[4:], crcTable)
	} else if sum, err = crcAt(rp.r, p+4, n-4); err != nil {
		return 0, false, err
	}
	if sum != crc {
		return 0, false, nil
	}
	if typ == RecordTypeSyncMark {
		v, err := window(p+RecordHeaderSize, 8)
		if err != nil {
			return 0, false, err
		}
		rp.res.SyncedThrough = max(rp.res.SyncedThrough, int64(binary.LittleEndian.Uint64(v)))
	} else {
		rp.res.LostRecords++
	}
	return n, true, nil
}

// crcAt returns the CRC of the n bytes of r at offset off, read in chunks.
func crcAt(r io.ReaderAt, off, n int64) (uint32, error) {
	var sum uint32
	buf := make([]byte, min(n, readChunk))
	for n > 0 {
		b := buf[:min(n, int64(len(buf)))]
		if _, err := r.ReadAt(b, off); err != nil && err != io.EOF {
			return 0, err
		}
		sum = crc32.Update(sum, crcTable, b)
		off += int64(len(b))
		n -= int64(len(b))
	}
	return sum, nil
}
