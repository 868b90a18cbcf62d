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
//	| 8 bytes | u32 (= 2) | u64                 | u32       |
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
// crc32c is CRC-32 with the Castagnoli polynomial. length is at most
// MaxRecordSize. Record types:
//
//   - 1, a full record: the payload is one engine batch.
//   - 2, a sync mark (version 2 only): the payload is 8 bytes, a u64, the
//     segment offset through which the segment was durable (the end of the
//     last completed Sync) when the mark was appended.
//   - 3, a seal (version 2 only): an empty payload. It ends a segment the
//     writer finished (Writer.Seal, at a rotation, before the next segment
//     is created); only zero bytes may follow it.
//
// Sync mark (SyncMarkSize = 17 bytes):
//
//	 0          4            8        9                     17
//	+----------+------------+--------+----------------------+
//	| crc32c   | length = 8 | type=2 | synced offset u64    |
//	+----------+------------+--------+----------------------+
//
// The Writer appends a mark in front of the first record appended after a
// Sync that made records durable (not for a Sync of the header alone). A
// segment written without Sync has no marks; a synced commit pays one mark
// per sync group.
// A mark's value is at most its own offset. Version 1 segments (no marks)
// are still read; a mark in a version 1 segment is corruption.
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
// # Torn writes and damage
//
// A crash can leave the last records of the newest segment partly written,
// in any order of pages, but only in bytes written after the last
// completed Sync: the bytes a completed Sync covered are on disk. Replay
// stops at the first record that is truncated, fails its CRC, or announces
// an impossible length (or at non-zero bytes after an end marker), at
// offset X. It then scans the rest of the segment byte by byte for intact
// records (ReplayResult.LostRecords, LostBytes) and sync marks. A valid
// mark with a value above X proves that a Sync completed after the bytes at
// X were written, so they were durable: that is damage (bit rot, tampering),
// not a crash, and Replay returns a corruption error at X. Otherwise Replay
// reports a torn record (TornOffset) instead of failing; the caller decides
// whether that is an acceptable torn tail (the newest segment) or
// corruption (an older, fully synced segment), using ReplayResult.TornError
// for the latter. A record whose CRC is valid but whose type is unknown, or
// a sync mark of the wrong length or an impossible value, cannot come from
// a torn write and is reported as corruption directly.
//
// Damage inside the last sync group of a segment has no mark after it and
// reads as a torn tail.
//
// # Seals
//
// A rotation seals the old segment (and syncs the seal) before it creates
// the next one, so every version 2 segment that has a successor ends in a
// seal (ReplayResult.Sealed). An older segment without one was cut short
// after it was written — at a record boundary, which no checksum shows —
// and the engine refuses it; the newest segment is never sealed while it
// is written to.
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

// Version is the segment format version this package writes. Replay reads
// versions 1 (no sync marks) and 2.
const Version uint32 = 2

// versionNoMarks is the first version, which has no sync marks.
const versionNoMarks uint32 = 1

// HeaderSize is the size of the segment header.
const HeaderSize = 24

// RecordHeaderSize is the size of a record header.
const RecordHeaderSize = 9

// MaxRecordSize is the largest payload a record may carry.
const MaxRecordSize = 256 << 20

// RecordTypeFull marks a record whose payload is complete in itself.
const RecordTypeFull uint8 = 1

// RecordTypeSyncMark marks a sync mark: its 8-byte payload is the offset
// through which the segment was durable when the mark was appended.
const RecordTypeSyncMark uint8 = 2

// SyncMarkSize is the encoded size of a sync mark.
const SyncMarkSize = RecordHeaderSize + 8

// RecordTypeSeal marks a seal: the end of a segment its writer finished.
const RecordTypeSeal uint8 = 3

// ErrSealed is returned by an append to a sealed segment.
var ErrSealed = errors.New("wal: segment is sealed")

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
	return appendTyped(dst, RecordTypeFull, payload)
}

// appendSyncMark appends a sync mark recording that the segment was durable
// through offset synced.
func appendSyncMark(dst []byte, synced int64) []byte {
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], uint64(synced))
	return appendTyped(dst, RecordTypeSyncMark, v[:])
}

// appendTyped appends a record of type typ carrying payload to dst.
func appendTyped(dst []byte, typ uint8, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // crc, filled in below
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, typ)
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
// Go heap buffer of its own, dropped after its write. A smaller bound makes
// bulk loads wait for the flusher more often (RFC 0003, "WAL writer and
// background flusher").
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
	synced   int64      // bytes [0, synced) are durable: the largest target of a completed Sync
	marked   int64      // the value of the last sync mark appended (HeaderSize before the first)
	sealed   bool       // Seal appended the seal: no more appends
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
	w.synced, w.marked = int64(n), int64(n) // a Sync of the header alone needs no mark
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

// appendLocked appends records to the pending bytes, preceded by a sync
// mark if a Sync that made records durable completed since the last mark;
// the caller holds mu.
func (w *Writer) appendLocked(records []byte) error {
	size := func() int {
		if w.synced > w.marked {
			return SyncMarkSize + len(records)
		}
		return len(records)
	}
	// Wait while the bytes would take the pending buffer past maxPending
	// (an oversized write into an empty buffer goes through).
	for w.err == nil && !w.closing && len(w.pending) > 0 && len(w.pending)+size() > maxPending {
		w.progress.Wait()
	}
	if w.err != nil {
		return w.err
	}
	if w.closing {
		return errors.New("wal: writer is closed")
	}
	if w.sealed {
		return ErrSealed
	}
	n := size()
	if n > maxPending {
		// The wait left pending empty: the bytes get a Go heap buffer of
		// their own, dropped after its write.
		w.recycle(w.pending)
		w.pending = make([]byte, 0, n)
	} else if w.pending == nil {
		w.pending = w.takeBuf()
	}
	// The wait guarantees the bytes fit, so append never moves an own
	// buffer to the Go heap.
	if w.synced > w.marked {
		w.pending = appendSyncMark(w.pending, w.synced)
		w.marked = w.synced
	}
	w.pending = append(w.pending, records...)
	w.appended += int64(n)
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
func (w *Writer) WriteSync(records []byte) error { return w.writeSync(records, false) }

// Seal appends the seal record, which marks the segment finished, and makes
// it and every record before it durable. Every later append fails with
// ErrSealed; Sync, Flush and Close still work. Sealing a sealed segment
// only syncs it.
func (w *Writer) Seal() error {
	w.mu.Lock()
	sealed := w.sealed
	w.mu.Unlock()
	if sealed {
		return w.Sync()
	}
	return w.writeSync(appendTyped(nil, RecordTypeSeal, nil), true)
}

// Sealed reports whether Seal has sealed the segment.
func (w *Writer) Sealed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sealed
}

// writeSync is WriteSync; with seal, records is the seal, after which the
// segment takes no more appends.
func (w *Writer) writeSync(records []byte, seal bool) error {
	w.mu.Lock()
	if len(records) > 0 {
		if err := w.appendLocked(records); err != nil {
			w.mu.Unlock()
			return err
		}
	}
	w.sealed = w.sealed || seal
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
	w.mu.Lock()
	// Every byte before target was written before the sync began, so it is
	// durable now; the next append carries a mark saying so.
	w.synced = max(w.synced, target)
	w.mu.Unlock()
	return nil
}

// Size returns the number of bytes appended to the segment, header included.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appended
}

// Close hands every appended record to the operating system, stops the
// flusher and closes the underlying log, without syncing it. It appends no
// sync mark: a write that fails there would leave a torn record at the end
// of a segment that a rotation already made older than the newest.
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

func (rp *replayer) run(wantSegNum uint64, start int64, fn func(off int64, payload []byte) error) error {
	size := rp.res.FileSize
	name := rp.name
	if start > 0 && (start < HeaderSize || start > size) {
		return fmt.Errorf("wal: replay %s from offset %d: not a record boundary of a %d-byte segment", name, start, size)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(rp.r, start, size-start), readChunk)
	if start == 0 {
		if size < HeaderSize {
			return rp.stop(0, nil, "segment of %d bytes is shorter than its %d-byte header", size, HeaderSize)
		}
		var hdr [HeaderSize]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return fmt.Errorf("wal: read header of %s: %w", name, err)
		}
		if ok, err := rp.checkHeader(hdr[:], wantSegNum); !ok {
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
					return rp.stop(off, err, "record does not decode")
				}
				return err
			}
			rp.res.Records++
		case typ == RecordTypeSyncMark && rp.version > versionNoMarks:
			if err := checkSyncMark(payload, off); err != nil {
				return rp.stop(off, format.Corruptf(name, off, "%v", err), "%v", err)
			}
		case typ == RecordTypeSeal && rp.version > versionNoMarks:
			return rp.sealed(br, off, length)
		default:
			err := format.Corruptf(name, off, "record with valid checksum has unknown type %d (segment version %d)", typ, rp.version)
			return rp.stop(off, err, "unknown record type %d", typ)
		}
		off += RecordHeaderSize + int64(length)
		rp.res.ValidBytes = off
	}
	return nil
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
