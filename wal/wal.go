// Package wal reads and writes Mayfly's write-ahead log segments.
//
// A segment is one storage log (the engine names it, e.g. "wal/000007.wal").
// It starts with a fixed header and continues with records until the end of
// the file or an end marker. All integers are little-endian.
//
// Segment header (HeaderSize = 24 bytes):
//
//	 0        8           12                    20          24
//	+---------+-----------+---------------------+-----------+
//	| magic   | version   | segment number      | crc32c    |
//	| 8 bytes | u32 (= 1) | u64                 | u32       |
//	+---------+-----------+---------------------+-----------+
//	                                 crc32c covers bytes 0..20
//
// Record (RecordHeaderSize = 9 bytes, then the payload):
//
//	 0          4          8        9
//	+----------+----------+--------+-------------------------+
//	| crc32c   | length   | type   | payload (length bytes)  |
//	| u32      | u32      | u8     |                         |
//	+----------+----------+--------+-------------------------+
//	           \____________ crc32c covers these ____________/
//
// crc32c is CRC-32 with the Castagnoli polynomial. The only record type is
// 1 (a full record: the payload is one engine batch). length is at most
// MaxRecordSize.
//
// End of segment: a record header of nine zero bytes (or fewer than nine
// zero bytes at the end of the file) marks the end of the records. No real
// record has an all-zero header, because its type byte is never zero. Every
// byte after an end marker must also be zero.
//
// Preallocation: CreateLog asks a backend that can (storage.Local) for a
// preallocated log, whose space is reserved and zero-filled ahead of the
// writes, so that a synced append does not have to commit a file-size
// change. Such a segment is its records followed by zeros to the end of the
// file, which reads as the end marker above. A crash leaves zeros after the
// last record that reached the disk (a clean end), a record partly written
// over zeros (a CRC mismatch: torn), or zeros followed by non-zero bytes
// when pages reached the disk out of order (torn at the zeros). Segments
// are never reused, so the reserved space cannot hold records of an older
// segment.
//
// A segment whose header is all zero, or which is shorter than a header, is
// treated like a torn write at offset 0 (a crash right after the segment
// was created).
//
// # Torn writes
//
// A crash can leave the last records of the newest segment partly written.
// Replay stops at the first record that is truncated, fails its CRC, or
// announces an impossible length, and reports where (TornOffset) instead of
// failing; the caller decides whether that is an acceptable torn tail (the
// newest segment) or corruption (an older, fully synced segment), using
// ReplayResult.TornError for the latter. A record whose CRC is valid but
// whose type is unknown cannot come from a torn write and is reported as
// corruption directly.
package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"unsafe"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/storage"
)

// Magic opens every segment: "MFLYWAL" followed by 0x1a.
const Magic uint64 = 0x1a4c4157594c464d

// Version is the segment format version this package writes and reads.
const Version uint32 = 1

// HeaderSize is the size of the segment header.
const HeaderSize = 24

// RecordHeaderSize is the size of a record header.
const RecordHeaderSize = 9

// MaxRecordSize is the largest payload a record may carry.
const MaxRecordSize = 256 << 20

// RecordTypeFull marks a record whose payload is complete in itself.
const RecordTypeFull uint8 = 1

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// AppendHeader appends the segment header for segment segNum to dst.
func AppendHeader(dst []byte, segNum uint64) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, Magic)
	dst = binary.LittleEndian.AppendUint32(dst, Version)
	dst = binary.LittleEndian.AppendUint64(dst, segNum)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// AppendRecord appends the encoding of one full record carrying payload to
// dst and returns the extended slice. It panics if payload is longer than
// MaxRecordSize; callers bound batch sizes before they get here.
func AppendRecord(dst, payload []byte) []byte {
	if len(payload) > MaxRecordSize {
		panic(fmt.Sprintf("wal: record of %d bytes exceeds MaxRecordSize", len(payload)))
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // crc, filled in below
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, RecordTypeFull)
	dst = append(dst, payload...)
	crc := crc32.Checksum(dst[start+4:], crcTable)
	binary.LittleEndian.PutUint32(dst[start:], crc)
	return dst
}

// RecordLen returns the encoded size of a record carrying n payload bytes.
func RecordLen(n int) int { return RecordHeaderSize + n }

// maxPending bounds the bytes appended but not yet handed to the log; an
// Append beyond it waits for the flusher. Each Writer has two buffers of
// maxPending bytes (one filling while the flusher writes the other),
// mapped outside the Go heap (internal/manual) at the first Write and
// unmapped by Close, so they cost their touched pages of resident memory
// rather than up to twice their size under the garbage collector's heap
// goal; a light writer that never fills a buffer touches only the pages it
// uses. A single write larger than maxPending into an empty buffer gets a
// Go heap buffer of its own, dropped after its write.
//
// On a loaded 2-core machine (load average 7-8) a million-row fillrandom
// or fillbatch waited for the flusher 20-63 times (20-175 ms in all) at
// 1 MiB, the previous bound, 106-172 times (73-164 ms) at 512 KiB and
// 326-431 times (129-311 ms) at 256 KiB: 512 KiB keeps the waits near
// those of 1 MiB for half the heap (docs/benchmarks.md, "WAL and
// filter-builder heap").
const maxPending = 512 << 10

// Writer appends records to one segment. Records appended with Write are
// handed to the operating system by a background flusher goroutine, which
// writes whatever has accumulated each time it runs, so that one write
// system call serves many commits. WriteSync and Sync write what is pending
// from the calling goroutine instead (unless the flusher is writing at that
// moment) and then make everything durable, so that a synced commit costs
// one write and one sync system call and no hand-off to the flusher and back
// (two goroutine wake-ups, each a futex call and a thread switch). Only one
// write to the log is in progress at a time, so records reach it in the
// order they were appended. Write, WriteSync, Flush, Sync and Close are
// safe for concurrent use.
type Writer struct {
	lw storage.LogWriter

	mu       sync.Mutex
	work     *sync.Cond // to the flusher: bytes are pending, a write ended, or closing
	progress *sync.Cond // to waiters: a write to lw ended
	pending  []byte     // appended, not yet written; nil until the next append
	own      [2][]byte  // the manual buffers (nil until needed), freed by Close
	idle     [][]byte   // own buffers in use by nobody
	writing  bool       // a write to lw is in progress (flusher or WriteSync)
	appended int64      // bytes appended, header included
	written  int64      // bytes handed to lw
	err      error      // sticky: after a failed write the segment's tail is unknown
	closing  bool
	done     chan struct{}
}

// CreateLog creates log name in s for a new segment. Where s can
// preallocate logs (storage.LogPreallocator), the log is preallocated: its
// zero-filled tail reads as the end of the segment (see the package
// documentation), and a synced append does not change the file's size.
func CreateLog(s storage.Storage, name string) (storage.LogWriter, error) {
	if p, ok := s.(storage.LogPreallocator); ok {
		return p.CreatePreallocatedLog(name)
	}
	return s.CreateLog(name)
}

// takeBuf returns an empty buffer of maxPending bytes for appends: an idle
// own buffer, or a newly mapped one. It is called only while pending is nil,
// when at most one own buffer (the one being written) is in use, so one of
// the two is idle or not yet mapped. The caller holds mu.
func (w *Writer) takeBuf() []byte {
	if n := len(w.idle); n > 0 {
		b := w.idle[n-1]
		w.idle[n-1] = nil
		w.idle = w.idle[:n-1]
		return b[:0]
	}
	for i, b := range w.own {
		if b == nil {
			w.own[i] = manual.NewFor(manual.PurposeWAL, maxPending)
			return w.own[i][:0]
		}
	}
	panic("wal: both pending buffers in use") // see above: cannot happen
}

// recycle takes back a buffer that no longer holds pending bytes: an own
// buffer becomes idle, a one-off Go heap buffer is dropped. The caller
// holds mu.
func (w *Writer) recycle(b []byte) {
	if b == nil || cap(b) != maxPending {
		return
	}
	for _, o := range w.own {
		if o != nil && unsafe.SliceData(o) == unsafe.SliceData(b) {
			w.idle = append(w.idle, b[:0])
			return
		}
	}
}

// NewWriter writes the header of segment segNum to lw, a freshly created
// log, and returns a Writer appending to it. The header is not synced until
// the first Sync.
func NewWriter(lw storage.LogWriter, segNum uint64) (*Writer, error) {
	// The pending buffers are mapped at the first Write: a DB that only
	// reads keeps an open segment and need not hold them.
	w := &Writer{lw: lw, done: make(chan struct{})}
	w.idle = make([][]byte, 0, len(w.own))
	w.work = sync.NewCond(&w.mu)
	w.progress = sync.NewCond(&w.mu)
	hdr := AppendHeader(make([]byte, 0, HeaderSize), segNum)
	n, err := lw.Write(hdr)
	if err == nil && n != len(hdr) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return nil, fmt.Errorf("wal: write segment header: %w", err)
	}
	w.appended, w.written = int64(n), int64(n)
	go w.flushLoop()
	return w, nil
}

// flushLoop hands appended bytes to the log until Close.
func (w *Writer) flushLoop() {
	defer close(w.done)
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for (len(w.pending) == 0 || w.writing) && !w.closing {
			w.work.Wait()
		}
		for w.writing { // closing: let a WriteSync finish first
			w.work.Wait()
		}
		if len(w.pending) == 0 || w.err != nil {
			return // closing and drained, or failed
		}
		w.writePending()
		if w.err != nil {
			return
		}
	}
}

// writePending hands the pending bytes to lw. The caller holds mu, which
// is released during the write, and no write is in progress.
func (w *Writer) writePending() {
	buf := w.pending
	w.pending = nil // the next append takes the other buffer
	w.writing = true
	w.mu.Unlock()
	n, err := w.lw.Write(buf)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	w.mu.Lock()
	w.writing = false
	w.written += int64(n)
	w.recycle(buf)
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("wal: write failed, segment is no longer writable: %w", err)
	}
	w.progress.Broadcast()
	if len(w.pending) > 0 || w.closing {
		w.work.Signal() // bytes appended during the write, or Close waiting
	}
}

// Write appends already-encoded records (one or more AppendRecord outputs,
// concatenated). It returns once they are queued for the flusher, which
// hands them to the operating system moments later; use Sync for
// durability. After a failed write or Sync every later call fails: the
// caller must start a new segment.
func (w *Writer) Write(records []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.appendLocked(records); err != nil {
		return err
	}
	w.work.Signal()
	return nil
}

// appendLocked appends records to the pending bytes; the caller holds mu.
func (w *Writer) appendLocked(records []byte) error {
	// Wait while the records would take the pending buffer past
	// maxPending (an oversized write into an empty buffer goes through).
	for w.err == nil && !w.closing && len(w.pending) > 0 && len(w.pending)+len(records) > maxPending {
		w.progress.Wait()
	}
	if w.err != nil {
		return w.err
	}
	if w.closing {
		return errors.New("wal: writer is closed")
	}
	if len(records) > maxPending {
		// The wait left pending empty: the records get a Go heap buffer
		// of their own, dropped after its write.
		w.recycle(w.pending)
		w.pending = append(make([]byte, 0, len(records)), records...)
	} else {
		if w.pending == nil {
			w.pending = w.takeBuf()
		}
		// The wait guarantees the records fit, so append never moves an
		// own buffer to the Go heap.
		w.pending = append(w.pending, records...)
	}
	w.appended += int64(len(records))
	return nil
}

// Flush waits until every record appended so far has been handed to the
// operating system (not necessarily to the disk).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.appended
	for w.err == nil && w.written < target {
		w.progress.Wait()
	}
	return w.err
}

// Sync makes every record appended so far durable.
func (w *Writer) Sync() error { return w.WriteSync(nil) }

// WriteSync appends records (already encoded, as for Write; nil for none)
// and makes them and every record appended before them durable. It writes
// the pending bytes to the log itself rather than waiting for the flusher,
// unless the flusher is writing, in which case it waits for that write and
// writes what is left. The error is sticky as for Write.
func (w *Writer) WriteSync(records []byte) error {
	w.mu.Lock()
	if len(records) > 0 {
		if err := w.appendLocked(records); err != nil {
			w.mu.Unlock()
			return err
		}
	}
	target := w.appended
	for w.err == nil && w.written < target {
		if w.writing {
			w.progress.Wait()
			continue
		}
		w.writePending()
	}
	err := w.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if err := w.lw.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages;
		// nothing written to this segment can be trusted to be durable.
		w.mu.Lock()
		if w.err == nil {
			w.err = fmt.Errorf("wal: sync failed, segment is no longer writable: %w", err)
		}
		err = w.err
		w.mu.Unlock()
		return err
	}
	return nil
}

// Size returns the number of bytes appended to the segment, header included.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appended
}

// Close hands every appended record to the operating system, stops the
// flusher and closes the underlying log, without syncing it.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return errors.New("wal: writer is closed")
	}
	w.closing = true
	w.work.Signal()
	w.progress.Broadcast()
	w.mu.Unlock()
	<-w.done
	w.mu.Lock()
	err := w.err
	if err == nil {
		w.err = errors.New("wal: writer is closed")
	}
	// The flusher has exited with nothing pending and no write in
	// progress (or after a failed one), and every later call fails before
	// it touches a buffer (w.err is set), so nothing refers to the own
	// buffers any more: this is their only Free, and a second Close
	// returns above.
	w.pending, w.idle = nil, nil
	for i, b := range w.own {
		manual.FreeFor(manual.PurposeWAL, b)
		w.own[i] = nil
	}
	w.mu.Unlock()
	if cerr := w.lw.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReplayResult describes what Replay read.
type ReplayResult struct {
	// Records is the number of intact records passed to fn.
	Records int
	// ValidBytes is the offset just past the last intact record (or past the
	// header when there are none; 0 if the header itself is missing).
	ValidBytes int64
	// FileSize is the size of the segment as read.
	FileSize int64
	// TornOffset is the offset of the first record that could not be read,
	// or -1 if the segment ended cleanly.
	TornOffset int64
	// TornReason says what was wrong at TornOffset.
	TornReason string
}

// Torn reports whether replay stopped at a damaged or incomplete record.
func (r ReplayResult) Torn() bool { return r.TornOffset >= 0 }

// TornError returns a corruption error naming segment name and TornOffset,
// or nil if the segment ended cleanly. Use it when a torn tail is not
// acceptable, i.e. for every segment but the newest.
func (r ReplayResult) TornError(name string) error {
	if r.TornOffset < 0 {
		return nil
	}
	return format.Corruptf(name, r.TornOffset, "torn or damaged WAL record (%d bytes of %d valid): %s",
		r.ValidBytes, r.FileSize, r.TornReason)
}

// readChunk is the read-ahead size used by Replay.
const readChunk = 256 << 10

// Replay reads segment name from s, checks that its header names segment
// wantSegNum, and calls fn with the payload of each intact record in order.
// The payload aliases a buffer that is valid only during the call.
//
// A bad header returns a corruption error at offset 0, except that a
// segment shorter than the header, or with an all-zero header, yields zero
// records with TornOffset 0. A torn or damaged record stops the replay and
// is reported in the result with a nil error (see the package
// documentation). An error returned by fn stops the replay and is returned
// as is, with the result so far.
func Replay(s storage.Storage, name string, wantSegNum uint64, fn func(payload []byte) error) (ReplayResult, error) {
	res := ReplayResult{TornOffset: -1}
	r, err := s.Open(name)
	if err != nil {
		return res, err
	}
	defer r.Close()
	size := r.Size()
	res.FileSize = size
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), readChunk)

	torn := func(off int64, format string, args ...any) (ReplayResult, error) {
		res.TornOffset = off
		res.TornReason = fmt.Sprintf(format, args...)
		return res, nil
	}

	if size < HeaderSize {
		return torn(0, "segment of %d bytes is shorter than its %d-byte header", size, HeaderSize)
	}
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return res, fmt.Errorf("wal: read header of %s: %w", name, err)
	}
	if allZero(hdr[:]) {
		return torn(0, "segment header is all zero")
	}
	if m := binary.LittleEndian.Uint64(hdr[0:]); m != Magic {
		return res, format.Corruptf(name, 0, "bad WAL magic %#016x", m)
	}
	if got, want := binary.LittleEndian.Uint32(hdr[20:]), crc32.Checksum(hdr[:20], crcTable); got != want {
		return res, format.Corruptf(name, 0, "WAL header checksum %#08x, computed %#08x", got, want)
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != Version {
		return res, format.Corruptf(name, 0, "unsupported WAL version %d", v)
	}
	if n := binary.LittleEndian.Uint64(hdr[12:]); n != wantSegNum {
		return res, format.Corruptf(name, 0, "WAL header names segment %d, expected %d", n, wantSegNum)
	}

	off := int64(HeaderSize)
	res.ValidBytes = off
	var rh [RecordHeaderSize]byte
	var payload []byte
	for off < size {
		remain := size - off
		if remain < RecordHeaderSize {
			n, err := io.ReadFull(br, rh[:remain])
			if err != nil {
				return res, fmt.Errorf("wal: read %s at offset %d: %w", name, off, err)
			}
			if allZero(rh[:n]) {
				return res, nil // zero padding shorter than a header
			}
			return torn(off, "truncated record header (%d of %d bytes)", remain, RecordHeaderSize)
		}
		if _, err := io.ReadFull(br, rh[:]); err != nil {
			return res, fmt.Errorf("wal: read %s at offset %d: %w", name, off, err)
		}
		if allZero(rh[:]) {
			// End marker: the rest must be zero padding.
			nz, err := firstNonZero(br, off+RecordHeaderSize)
			if err != nil {
				return res, fmt.Errorf("wal: read %s: %w", name, err)
			}
			if nz >= 0 {
				return torn(off, "end marker at offset %d followed by non-zero data at offset %d", off, nz)
			}
			return res, nil
		}
		crc := binary.LittleEndian.Uint32(rh[0:])
		length := binary.LittleEndian.Uint32(rh[4:])
		typ := rh[8]
		if length > MaxRecordSize {
			return torn(off, "record length %d exceeds the maximum %d", length, MaxRecordSize)
		}
		if int64(length) > remain-RecordHeaderSize {
			return torn(off, "record of %d bytes truncated: only %d bytes remain", length, remain-RecordHeaderSize)
		}
		if cap(payload) < int(length) {
			payload = make([]byte, length)
		}
		payload = payload[:length]
		if _, err := io.ReadFull(br, payload); err != nil {
			return res, fmt.Errorf("wal: read %s at offset %d: %w", name, off, err)
		}
		sum := crc32.Update(crc32.Checksum(rh[4:], crcTable), crcTable, payload)
		if sum != crc {
			return torn(off, "record checksum %#08x, computed %#08x", crc, sum)
		}
		if typ != RecordTypeFull {
			return res, format.Corruptf(name, off, "record with valid checksum has unknown type %d", typ)
		}
		if err := fn(payload); err != nil {
			if errors.Is(err, format.ErrCorruption) {
				var ce *format.CorruptionError
				if !errors.As(err, &ce) {
					// A record that passed its checksum but does not decode:
					// name the segment and the record's offset.
					return res, format.Corruptf(name, off, "record does not decode: %v", err)
				}
			}
			return res, err
		}
		off += RecordHeaderSize + int64(length)
		res.Records++
		res.ValidBytes = off
	}
	return res, nil
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
