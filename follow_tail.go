package mayfly

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
)

// walTail is where a read-only handle stands in the WAL: for each segment
// at or above its manifest's MinLogNum, how far it has replayed (always a
// record boundary) and the memtable holding the rows replayed so far. A
// poll lists the segments once and reads, from each, only the bytes past
// its offset, so a poll of an unchanged WAL reads nothing (on an object
// store: one LIST, no GET).
//
// Rows leave the tail only when a newer manifest version's MinLogNum is
// above their segment: its tables then hold them. A segment that vanishes
// from the listing (the writer flushed it, or a new writer collected it
// after a takeover) keeps its rows until then, so the handle never stops
// showing a row it has shown unless the writer lost it. Guarded by
// manifestMu.
type walTail struct {
	segs []*tailSeg // by segment number
	// forceList makes the next poll LIST the manifest versions: a segment
	// vanished, so the writer has likely written versions since.
	forceList bool
}

type tailSeg struct {
	num uint64
	off int64              // bytes replayed: 0, or a record boundary past the header
	mem *memtable.Memtable // holds a reference of the tail's
}

// release drops the tail's references on its memtables and forgets them.
func (t *walTail) release() {
	for _, s := range t.segs {
		if s.mem != nil {
			s.mem.Unref()
		}
	}
	t.segs = nil
}

// memtables returns the tail's non-empty memtables, oldest first. The tail
// keeps its own reference on each; a caller that keeps them takes its own.
func (t *walTail) memtables() []*memtable.Memtable {
	var out []*memtable.Memtable
	for _, s := range t.segs {
		if s.mem != nil && !s.mem.Empty() {
			out = append(out, s.mem)
		}
	}
	return out
}

// tailWAL drops the rows of segments below minLog, then replays what was
// appended to the WAL since the last call. It reports whether the rows the
// handle shows changed and the highest sequence number replayed.
func (db *DB) tailWAL(minLog, lastSeq uint64) (bool, uint64, error) {
	t := &db.tail
	changed := false
	t.segs = slices.DeleteFunc(t.segs, func(s *tailSeg) bool {
		drop := s.num < minLog
		changed = changed || (drop && s.mem != nil && !s.mem.Empty())
		if drop && s.mem != nil {
			s.mem.Unref() // the tail's reference; read states may hold others
		}
		return drop
	})
	logs, err := storage.ListLogs(db.store, "wal")
	if err != nil {
		return changed, lastSeq, err
	}
	defer func() {
		for _, l := range logs {
			if l.Reader != nil {
				l.Reader.Close()
			}
		}
	}()
	listed := make(map[uint64]storage.ObjectReader)
	newest := uint64(0)
	for _, l := range logs {
		n, ok := parseNum(l.Name, "wal", ".wal")
		if !ok || n < minLog || l.Reader == nil {
			continue
		}
		listed[n] = l.Reader
		newest = max(newest, n)
		if !slices.ContainsFunc(t.segs, func(s *tailSeg) bool { return s.num == n }) {
			t.segs = append(t.segs, &tailSeg{num: n})
		}
	}
	slices.SortFunc(t.segs, func(a, b *tailSeg) int { return cmp.Compare(a.num, b.num) })
	for _, s := range t.segs {
		r, ok := listed[s.num]
		if !ok || r.Size() < s.off {
			// Flushed or collected (its rows stay until the manifest that
			// covers them is loaded), or replaced under us.
			t.forceList = true
			continue
		}
		if r.Size() == s.off {
			continue
		}
		n, seq, err := db.tailSegment(s, r, s.num == newest)
		changed = changed || n > 0
		lastSeq = max(lastSeq, seq)
		if err != nil {
			if errors.Is(err, storage.ErrNotExist) {
				t.forceList = true // deleted while we read it
				continue
			}
			return changed, lastSeq, fmt.Errorf("mayfly: follow %s: %w", logName(s.num), err)
		}
	}
	return changed, lastSeq, nil
}

// tailSegment replays segment s from s.off to the end of r into s.mem and
// advances s.off past the last whole record. A torn record is where the
// writer is still appending if s is the newest segment (the next poll reads
// it again from s.off); anywhere else it is corruption. It returns the
// number of records replayed and the highest sequence number among them.
func (db *DB) tailSegment(s *tailSeg, r storage.ObjectReader, newest bool) (int, uint64, error) {
	base := max(s.off, wal.HeaderSize)
	src := r
	if s.off > 0 {
		// Replay from s.off: the segment's header (determined by its
		// number, and checked when s.off was 0) followed by the new bytes.
		src = &splicedReader{head: wal.AppendHeader(nil, s.num), rest: io.NewSectionReader(r, s.off, r.Size()-s.off)}
	}
	if s.mem == nil {
		s.mem = db.newMemtable(s.num)
	}
	pos, lastSeq := base, uint64(0)
	res, err := wal.Replay(readerStore{src}, logName(s.num), s.num, func(payload []byte) error {
		br, err := format.NewBatchReader(payload)
		if err != nil {
			return err
		}
		h := br.Header()
		db.clock.Observe(h.CommitTS)
		if h.Count > 0 {
			if err := s.mem.ApplyBatch(payload); err != nil {
				return err
			}
			lastSeq = max(lastSeq, h.Seq+uint64(h.Count)-1)
		}
		pos += int64(wal.RecordLen(len(payload)))
		return nil
	})
	if res.ValidBytes >= wal.HeaderSize {
		s.off = pos
	}
	db.metrics.walRecordsReplayed.Add(uint64(res.Records))
	if err != nil {
		return res.Records, lastSeq, err
	}
	if res.Torn() {
		empty := s.off == 0 && res.TornOffset == 0
		if !newest && !empty {
			at := res.TornOffset
			if at >= wal.HeaderSize {
				at += base - wal.HeaderSize // spliced offset to segment offset
			}
			return res.Records, lastSeq, format.Corruptf(logName(s.num), at,
				"torn or damaged WAL record before the newest segment: %s", res.TornReason)
		}
	}
	return res.Records, lastSeq, nil
}

// splicedReader presents head followed by rest.
type splicedReader struct {
	head []byte
	rest *io.SectionReader
}

func (r *splicedReader) Size() int64  { return int64(len(r.head)) + r.rest.Size() }
func (r *splicedReader) Close() error { return nil }

func (r *splicedReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if off < int64(len(r.head)) {
		n = copy(p, r.head[off:])
		if n == len(p) {
			return n, nil
		}
	}
	m, err := r.rest.ReadAt(p[n:], off+int64(n)-int64(len(r.head)))
	return n + m, err
}

// readerStore lets wal.Replay read one reader: Open returns it, whatever
// the name. Replay calls nothing else.
type readerStore struct{ r storage.ObjectReader }

func (s readerStore) Open(string) (storage.ObjectReader, error) { return keepOpen{s.r}, nil }

// keepOpen leaves closing the reader to its owner.
type keepOpen struct{ storage.ObjectReader }

func (keepOpen) Close() error { return nil }

func (readerStore) Create(string) (storage.ObjectWriter, error) { return nil, errReaderStore }
func (readerStore) PutIfAbsent(string, []byte) error            { return errReaderStore }
func (readerStore) List(string) ([]string, error)               { return nil, errReaderStore }
func (readerStore) Remove(string) error                         { return errReaderStore }
func (readerStore) CreateLog(string) (storage.LogWriter, error) { return nil, errReaderStore }
func (readerStore) Lock(bool) (io.Closer, error)                { return nil, errReaderStore }
func (readerStore) Close() error                                { return nil }

var errReaderStore = errors.New("mayfly: internal: reader-only storage")
