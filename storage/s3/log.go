package s3

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mayflydb/mayfly/storage"
)

// CreateLog implements storage.Storage. It fails with an error wrapping
// storage.ErrExists if an object or a log of that name exists. The log
// exists (empty) once CreateLog returns: its first part is written then.
func (s *Store) CreateLog(name string) (storage.LogWriter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	_, err := s.client.HeadObject(s.ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key(name))})
	switch {
	case err == nil:
		return nil, s.wrap("create log", name, errExists)
	case !isNotFound(err):
		return nil, s.wrap("create log", name, err)
	}
	if err := s.putIfAbsent(s.key(partName(name, 1)), nil); err != nil {
		return nil, s.wrap("create log", name, err)
	}
	w := &logWriter{s: s, name: name, nextPart: 2}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logs == nil {
		return nil, errors.New("mayfly/s3: store is closed")
	}
	s.logs[w] = struct{}{}
	return w, nil
}

// logWriter buffers a log's writes and uploads them as parts.
//
// Uploads are serialized by upMu and each takes the whole buffer, so once
// an upload that began after a Write has succeeded, that Write's bytes are
// stored. The flush timer runs only while the buffer holds bytes, so an
// idle log sends no requests.
type logWriter struct {
	s    *Store
	name string

	upMu     sync.Mutex // held for a whole upload
	nextPart int64      // guarded by upMu

	mu     sync.Mutex
	buf    []byte
	err    error // sticky: the log can no longer be written
	closed bool
	timer  *time.Timer // pending flush of buf; nil when none
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, fmt.Errorf("mayfly/s3: write to closed log %s", w.name)
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return 0, err
	}
	w.buf = append(w.buf, p...)
	full := len(w.buf) >= w.s.cfg.FlushBytes
	if !full && w.timer == nil && len(w.buf) > 0 {
		w.timer = time.AfterFunc(w.s.cfg.FlushInterval, w.onTimer)
	}
	w.mu.Unlock()
	if full {
		if err := w.flush(); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

func (w *logWriter) onTimer() {
	w.mu.Lock()
	w.timer = nil
	idle := w.closed || len(w.buf) == 0 || w.err != nil
	w.mu.Unlock()
	if !idle {
		w.flush() // an error is sticky and reported by the next call
	}
}

func (w *logWriter) stopTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// flush uploads the buffer, if it holds anything, as the next part.
func (w *logWriter) flush() error {
	w.upMu.Lock()
	defer w.upMu.Unlock()
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	data := w.buf
	w.buf = nil
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.mu.Unlock()
	if len(data) == 0 {
		return nil
	}
	n := w.nextPart
	err := w.s.putIfAbsent(w.s.key(partName(w.name, n)), data)
	if err == nil {
		w.nextPart++
		return nil
	}
	if errors.Is(err, storage.ErrExists) {
		err = fmt.Errorf("mayfly/s3: log %s: part %d exists: %w", w.name, n, ErrFenced)
	} else {
		// The part may or may not be stored: the log's tail is unknown.
		err = fmt.Errorf("mayfly/s3: log %s: upload of part %d failed, the log is no longer writable: %w", w.name, n, err)
	}
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	return err
}

// Sync uploads everything written so far and returns once it is stored.
// With nothing new written it sends no request.
func (w *logWriter) Sync() error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return fmt.Errorf("mayfly/s3: sync of closed log %s", w.name)
	}
	return w.flush()
}

// Close uploads the bytes still buffered (as a local file's written bytes
// stay readable after close) and releases the writer. It reports an error
// only if buffered bytes could not be stored.
func (w *logWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fmt.Errorf("mayfly/s3: log %s closed twice", w.name)
	}
	w.closed = true
	pending := len(w.buf) > 0
	w.mu.Unlock()
	w.stopTimer()
	var err error
	if pending {
		err = w.flush()
	}
	w.s.mu.Lock()
	delete(w.s.logs, w)
	w.s.mu.Unlock()
	return err
}

// maxFenceRounds bounds FenceLog's jump-ahead rounds against a writer that
// keeps adding parts; the jump doubles each round, so the bound is never
// reached by a writer that uploads fewer than 2^maxFenceRounds parts per
// round trip.
const maxFenceRounds = 16

// FenceLog fences log name: it writes empty parts (If-None-Match: *) so that
// the log's current writer, in any process, fails its next upload and from
// then on returns errors wrapping ErrFenced. Bytes the writer stored before
// the fence stay readable; none can follow it. Readers skip fence parts
// (they are empty). It returns an error wrapping storage.ErrNotExist if
// there is no such log.
//
// A new writer of a database should fence the newest WAL segment it finds
// before replaying it, so that the old writer can acknowledge nothing more
// that replay would miss.
//
// An idle log is fenced with one PUT at its next part number. A writer that
// keeps syncing could win that number every time, so after a loss the fence
// jumps ahead: it claims a part k numbers beyond the newest it knows of,
// which the writer, uploading one part at a time, cannot reach first unless
// it uploads k parts in one round trip (k doubles after each loss), and then
// fills the gap below with empty parts, newest first. The first number the
// writer already holds ends the fill: the writer uploads parts in order, so
// every number below it is the writer's too. No gap is left, so readers,
// which stop at the first gap, see the whole log; the writer meets the
// fence at the first number it does not hold.
func (s *Store) FenceLog(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	parts, err := s.listFenceParts(name)
	if err != nil {
		return s.wrap("fence", name, err)
	}
	if len(parts) == 0 {
		return fmt.Errorf("mayfly/s3: fence %s: no such log: %w", name, storage.ErrNotExist)
	}
	newest := parts[len(parts)-1].n // the writer holds every part up to here
	won, err := s.claimPart(name, newest+1)
	if err != nil || won {
		return err
	}
	newest++
	for round, jump := 0, int64(4); round < maxFenceRounds; round, jump = round+1, jump*2 {
		target := newest + jump
		won, err := s.claimPart(name, target)
		if err != nil {
			return err
		}
		if !won {
			// The writer passed the jump: start again above its newest part.
			if fenceTestHook != nil {
				fenceTestHook("lost")
			}
			if parts, err = s.listFenceParts(name); err != nil {
				return s.wrap("fence", name, err)
			}
			if len(parts) == 0 {
				return fmt.Errorf("mayfly/s3: fence %s: the log was removed: %w", name, storage.ErrNotExist)
			}
			newest = max(target, parts[len(parts)-1].n)
			continue
		}
		for n := target - 1; n > newest; n-- {
			won, err := s.claimPart(name, n)
			if err != nil {
				return err
			}
			if !won {
				break // the writer holds n, hence every part below it
			}
		}
		return nil
	}
	return fmt.Errorf("mayfly/s3: fence %s: the log kept growing over %d rounds", name, maxFenceRounds)
}

// fenceTestHook, when set (by tests), runs after each LIST of FenceLog
// ("listed") and after each lost jump-ahead claim ("lost"), to let a test's
// writer race the fence deterministically.
var fenceTestHook func(event string)

func (s *Store) listFenceParts(name string) ([]partInfo, error) {
	parts, err := s.listParts(name)
	if err == nil && fenceTestHook != nil {
		fenceTestHook("listed")
	}
	return parts, err
}

// claimPart writes an empty part n of log name if no part n exists. It
// reports whether it wrote it.
func (s *Store) claimPart(name string, n int64) (bool, error) {
	err := s.putIfAbsent(s.key(partName(name, n)), nil)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrExists):
		return false, nil
	default:
		return false, s.wrap("fence", name, err)
	}
}
