package wal

// The Writer: pending chunks, a background flusher that hands them to the
// log, and the synced appends (WriteSync, Sync, Seal) that write from the
// caller and record what is durable in sync marks.

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/storage"
)

// maxPending is the size of a pending chunk: appends fill a chunk, and the
// flusher hands one chunk to the log per write. Each Writer has two own
// chunks (one filling while the flusher writes the other), mapped outside
// the Go heap (internal/manual) at the first Write and unmapped by Close, so
// they cost their touched pages of resident memory rather than up to twice
// their size under the garbage collector's heap goal; a light writer that
// never fills a chunk touches only the pages it uses. While a write to the
// log is slow and both own chunks are in use, appends go on into spill
// chunks, mapped as they are needed and unmapped once written. An append
// larger than maxPending gets a Go heap chunk of its own, dropped after its
// write.
const maxPending = 512 << 10

// MaxBacklog bounds the bytes appended but not yet handed to the log (the
// chunk being written is not counted): an append that would pass it waits
// for the flusher, unless nothing is pending. It lets commits ride out a
// write to the log that takes milliseconds on a loaded machine instead of
// waiting for it, while a log that cannot keep up at all still holds its
// writers back (RFC 0003, "WAL writer and background flusher").
const MaxBacklog = 8 * maxPending

// gatherBytes ends a flusher's hold early: with a minimum write interval
// set, the flusher writes as soon as this many bytes are pending, without
// waiting for the interval to pass (RFC 0003, "WAL writer and background
// flusher").
const gatherBytes = 32 << 10

// Writer appends records to one segment. Records appended with Write are
// handed to the operating system by a background flusher goroutine, which
// writes what has accumulated, a chunk at a time, each time it runs, so
// that one write system call serves many commits. WriteSync and Sync write
// what is pending from the calling goroutine instead (unless the flusher is
// writing at that moment) and then make everything durable, so that a
// synced commit costs one write and one sync system call and no hand-off to
// the flusher and back (two goroutine wake-ups, each a futex call and a
// thread switch). With a minimum write interval (SetMinWriteInterval), the
// flusher writes at most once per interval unless gatherBytes are pending:
// bytes appended within the interval after its last write wait for the
// interval to end, so that under a steady stream of commits one write
// system call serves more of them, while a commit after a quiet interval is
// written at once. Flush, WriteSync and Close never wait for the interval.
// Only one write to the log is in progress at a time, so records reach it
// in the order they were appended. Write, WriteSync, Flush, Sync and Close
// are safe for concurrent use.
type Writer struct {
	lw storage.LogWriter

	mu       sync.Mutex
	work     *sync.Cond     // to the flusher: bytes are pending, a write ended, or closing
	progress *sync.Cond     // to waiters: a write to lw ended
	syncEnd  *sync.Cond     // to SyncTo callers and Close: a SyncTo's sync ended
	pending  []byte         // the chunk appends go to; nil until the next append
	full     [][]byte       // chunks filled before pending, oldest first, not being written
	backlog  int            // bytes in full and pending
	waits    *atomic.Uint64 // counts the appends that waited at MaxBacklog, if set (CountWaits)
	syncs    *atomic.Uint64 // counts the log's completed Syncs, if set (CountSyncs)
	own      [2][]byte      // the own chunks (nil until needed), freed by Close
	idle     [][]byte       // own chunks in use by nobody
	writing  bool           // a write to lw is in progress (flusher or WriteSync)
	syncing  bool           // a SyncTo is writing and syncing for every caller
	syncWait int            // SyncTo callers waiting for the one syncing
	appended int64          // bytes appended, header included
	written  int64          // bytes handed to lw
	synced   int64          // bytes [0, synced) are durable: the largest target of a completed Sync
	marked   int64          // the value of the last sync mark appended (HeaderSize before the first)
	sealed   bool           // Seal appended the seal: no more appends
	after    *SealSync      // an older segment's seal sync, which every Sync waits for first
	err      error          // sticky: after a failed write the segment's tail is unknown
	closing  bool
	done     chan struct{}

	interval  time.Duration // the flusher's minimum write interval; 0: none
	lastWrite time.Time     // when the last write to lw began
	timer     *time.Timer   // ends a hold (created by the first hold)
	holding   bool          // the flusher is holding pending bytes to gather more
	hurry     bool          // Flush waits: the next write must not be held back
}

// CreateLog creates log name in s for a new segment. Where s can
// preallocate logs (storage.LogPreallocator), the log is preallocated: its
// zero-filled tail reads as the end of the segment (see the package
// documentation), and a synced append does not change the file's size.
func CreateLog(s storage.Storage, name string) (storage.LogWriter, error) {
	return storage.CreateLogPreallocated(s, name)
}

// takeBuf returns an empty chunk of maxPending bytes for appends: an idle
// own chunk, an own chunk mapped now, or, while both own chunks hold bytes
// (one being written, one full), a spill chunk. The caller holds mu.
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
	return manual.NewFor(manual.PurposeWAL, maxPending)[:0]
}

// isOwn reports whether b is one of the own chunks.
func (w *Writer) isOwn(b []byte) bool {
	for _, o := range w.own {
		if o != nil && unsafe.SliceData(o) == unsafe.SliceData(b) {
			return true
		}
	}
	return false
}

// isSpill reports whether b is a spill chunk, mapped by takeBuf and to be
// unmapped once written: a chunk of maxPending bytes that is not an own
// one (a Go heap chunk holds more than maxPending).
func (w *Writer) isSpill(b []byte) bool {
	return b != nil && cap(b) == maxPending && !w.isOwn(b)
}

// recycle takes back a chunk that no longer holds pending bytes: an own
// chunk becomes idle, a spill chunk is unmapped, a one-off Go heap chunk is
// dropped. The caller holds mu.
func (w *Writer) recycle(b []byte) {
	switch {
	case b == nil || cap(b) != maxPending:
	case w.isOwn(b):
		w.idle = append(w.idle, b[:0])
	default:
		manual.FreeFor(manual.PurposeWAL, b)
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
	w.syncEnd = sync.NewCond(&w.mu)
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

// SetMinWriteInterval makes the flusher write at most once per d, unless
// gatherBytes are pending; 0 (the default) lets it write whenever it runs.
// A record appended with Write then reaches the operating system within
// about d of the call (plus scheduling delays), or at once when a Flush,
// WriteSync or Close asks.
func (w *Writer) SetMinWriteInterval(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.interval = max(d, 0)
}

// CountWaits makes every later append that waits at the backlog bound
// (MaxBacklog: the log is not keeping up) add one to c as well.
func (w *Writer) CountWaits(c *atomic.Uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waits = c
}

// CountSyncs makes every later sync of the log that succeeds (a
// WriteSync's, a SyncTo's, a seal's) add one to c as well.
func (w *Writer) CountSyncs(c *atomic.Uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.syncs = c
}

// MinWriteInterval returns the interval SetMinWriteInterval set.
func (w *Writer) MinWriteInterval() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.interval
}

// flushLoop hands appended bytes to the log until Close.
func (w *Writer) flushLoop() {
	defer close(w.done)
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for (w.backlog == 0 || w.writing) && !w.closing {
			w.work.Wait()
		}
		if w.shouldHold() {
			w.hold()
			continue
		}
		for w.writing { // closing: let a WriteSync finish first
			w.work.Wait()
		}
		if w.backlog == 0 || w.err != nil {
			return // closing and drained, or failed
		}
		w.writePending()
		if w.err != nil {
			return
		}
	}
}

// holdFor returns how long the flusher should hold the pending bytes back
// to gather more: the rest of the interval since its last write, or 0 to
// write now. The caller holds mu.
func (w *Writer) holdFor() time.Duration {
	if w.interval == 0 || w.closing || w.hurry || w.backlog >= gatherBytes {
		return 0
	}
	return max(w.interval-time.Since(w.lastWrite), 0)
}

// shouldHold reports whether holdFor is not 0.
func (w *Writer) shouldHold() bool { return w.holdFor() > 0 }

// hold waits until the interval since the last write has passed,
// gatherBytes are pending, or a Flush or Close hurries the flusher. The
// caller (the flusher) holds mu. A timer left over from an earlier hold can
// only end a later one early, and the flusher then holds again for what is
// left.
func (w *Writer) hold() {
	d := w.holdFor()
	w.holding = true
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.endHold)
	} else {
		w.timer.Reset(d)
	}
	for w.holding && w.shouldHold() {
		w.work.Wait()
	}
	if w.holding {
		w.holding = false
		w.timer.Stop()
	}
}

// endHold is the hold timer's function: it wakes a holding flusher.
func (w *Writer) endHold() {
	w.mu.Lock()
	if w.holding {
		w.holding = false
		w.work.Signal()
	}
	w.mu.Unlock()
}

// wake signals the flusher after an append, unless it is holding and the
// pending bytes are still short of gatherBytes (its timer wakes it).
// The caller holds mu.
func (w *Writer) wake() {
	if !w.holding || w.backlog >= gatherBytes {
		w.work.Signal()
	}
}

// writePending hands the oldest pending chunk to lw. The caller holds mu,
// which is released during the write, and no write is in progress.
func (w *Writer) writePending() {
	var buf []byte
	if n := len(w.full); n > 0 {
		buf = w.full[0]
		copy(w.full, w.full[1:])
		w.full[n-1] = nil
		w.full = w.full[:n-1]
	} else {
		buf = w.pending
		w.pending = nil // the next append takes another chunk
	}
	w.backlog -= len(buf)
	if w.backlog == 0 {
		w.hurry = false // this write covers every byte a Flush waits for
	}
	spill := w.isSpill(buf)
	w.writing = true
	if w.interval > 0 {
		w.lastWrite = time.Now()
	}
	after := w.after
	w.mu.Unlock()
	n, err := 0, error(nil)
	if after != nil {
		<-after.written // the older segment's seal goes first (After)
		if after.werr != nil {
			err = fmt.Errorf("an older segment's seal was not written: %w", after.werr)
		}
	}
	if err == nil {
		n, err = w.lw.Write(buf)
	}
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if spill {
		manual.FreeFor(manual.PurposeWAL, buf) // outside mu: nothing else refers to it
	}
	w.mu.Lock()
	w.writing = false
	w.written += int64(n)
	if !spill {
		w.recycle(buf)
	}
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("wal: write failed, segment is no longer writable: %w", err)
	}
	w.progress.Broadcast()
	if w.backlog > 0 || w.closing {
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
	w.wake()
	return nil
}

// Append is Write for records a SyncTo is about to make durable: it does
// not wake the flusher, so that the SyncTo hands them to the log itself
// rather than waiting for the flusher's hand-off (two goroutine wake-ups).
// Until a SyncTo, Flush, Close or a later Write, they stay pending.
func (w *Writer) Append(records []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appendLocked(records)
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
	// Wait while the bytes would take the backlog past MaxBacklog (an
	// oversized write with nothing pending goes through).
	for waited := false; w.err == nil && !w.closing && w.backlog > 0 && w.backlog+size() > MaxBacklog; waited = true {
		if !waited && w.waits != nil {
			w.waits.Add(1)
		}
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
	if len(w.pending) > 0 && len(w.pending)+n > maxPending {
		w.full = append(w.full, w.pending) // full: the bytes go to the next chunk
		w.pending = nil
	}
	if n > maxPending {
		// The bytes get a Go heap chunk of their own, dropped after its
		// write (an empty chunk taken before is given back).
		w.recycle(w.pending)
		w.pending = make([]byte, 0, n)
	} else if w.pending == nil {
		w.pending = w.takeBuf()
	}
	// The bytes fit in the chunk, so append never moves an own or spill
	// chunk to the Go heap.
	if w.synced > w.marked {
		w.pending = appendSyncMark(w.pending, w.synced)
		w.marked = w.synced
	}
	w.pending = append(w.pending, records...)
	w.appended += int64(n)
	w.backlog += n
	return nil
}

// Flush waits until every record appended so far has been handed to the
// operating system (not necessarily to the disk).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.appended
	if w.written < target && !w.hurry {
		w.hurry = true
		w.work.Signal()
	}
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

// SealSync is the background write and sync of a segment sealed by
// SealAsync.
type SealSync struct {
	written chan struct{} // closed once the seal is handed to the log, or that failed
	werr    error         // the write's error, set before written is closed
	done    chan struct{} // closed once the sync ended
	err     error         // the write's or the sync's error, set before done is closed
}

// Wait waits for the sync and returns its error: nil once the segment,
// its seal and (through After) every older segment are durable.
func (s *SealSync) Wait() error {
	<-s.done
	return s.err
}

// SealAsync appends the seal record, which marks the segment finished, and
// returns without waiting for the log: a goroutine it starts hands the seal
// and every record before it to the operating system and then makes them
// durable; the returned SealSync reports when that ends. Later appends fail
// with ErrSealed, as after Seal. The next segment's writer must be given
// the SealSync (After) before anything is appended to it.
func (w *Writer) SealAsync() (*SealSync, error) {
	w.mu.Lock()
	if !w.sealed {
		if err := w.appendLocked(appendTyped(nil, RecordTypeSeal, nil)); err != nil {
			w.mu.Unlock()
			return nil, err
		}
		w.sealed = true
	}
	w.mu.Unlock()
	s := &SealSync{written: make(chan struct{}), done: make(chan struct{})}
	go func() {
		w.mu.Lock()
		target := w.writeLocked()
		s.werr = w.err
		w.mu.Unlock()
		close(s.written)
		s.err = s.werr
		if s.err == nil {
			s.err = w.syncThrough(target)
		}
		close(s.done)
	}()
	return s, nil
}

// After orders w behind s, an older segment's seal: no record of w is
// handed to the log before the seal is (so a crash of the process never
// leaves a record of w after an unsealed older segment), and every Sync
// (WriteSync, Seal, SealAsync's sync) of w waits for s's sync before it
// syncs w, so that a sync mark in w implies that every older segment is
// durable and sealed. If s failed, so does w. Call it before the first
// append; s may be nil.
func (w *Writer) After(s *SealSync) {
	w.mu.Lock()
	w.after = s
	w.mu.Unlock()
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
	target := w.writeLocked()
	w.mu.Unlock()
	return w.syncThrough(target)
}

// writeLocked hands every appended byte to the log from the calling
// goroutine (or waits for the flusher's write in progress) and returns the
// offset appended through. The caller holds mu; w.err reports a failure.
func (w *Writer) writeLocked() int64 {
	target := w.appended
	for w.err == nil && w.written < target {
		if w.writing {
			w.progress.Wait()
			continue
		}
		w.writePending()
	}
	return target
}

// syncThrough makes the bytes before target, which have been handed to the
// log, durable: it waits for an older segment's seal sync (After) first,
// then syncs the log. The caller does not hold mu.
func (w *Writer) syncThrough(target int64) error {
	w.mu.Lock()
	err, after := w.err, w.after
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if after != nil {
		if err := after.Wait(); err != nil {
			return w.stick(fmt.Errorf("wal: an older segment's seal sync failed: %w", err))
		}
	}
	if err := w.lw.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages;
		// nothing written to this segment can be trusted to be durable.
		return w.stick(fmt.Errorf("wal: sync failed, segment is no longer writable: %w", err))
	}
	w.mu.Lock()
	// Every byte before target was written before the sync began, so it is
	// durable now; the next append carries a mark saying so.
	w.synced = max(w.synced, target)
	if w.syncs != nil {
		w.syncs.Add(1)
	}
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
	for w.syncing {
		w.syncEnd.Wait() // its sync uses lw, which is closed below
	}
	w.mu.Unlock()
	<-w.done
	w.mu.Lock()
	if w.timer != nil {
		w.timer.Stop()
	}
	err := w.err
	if err == nil {
		w.err = errors.New("wal: writer is closed")
	}
	// The flusher has exited with nothing pending and no write in
	// progress (or after a failed one, which may leave chunks pending), and
	// every later call fails before it touches a chunk (w.err is set), so
	// nothing refers to the chunks any more: this is their only Free, and a
	// second Close returns above.
	for _, b := range append(w.full, w.pending) {
		w.recycle(b) // spill chunks are unmapped; own ones are freed below
	}
	w.pending, w.full, w.idle, w.backlog = nil, nil, nil, 0
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

// stick makes err the writer's error unless it already has one, and returns
// the error it has: every later call fails with the first failure. The
// caller does not hold mu.
func (w *Writer) stick(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	return w.err
}
