package mayfly

import (
	"cmp"
	"errors"
	"fmt"
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
// showing a row it has shown unless the writer lost it. Part of the
// handle's follower state; guarded by manifestMu.
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
	t := &db.follow.tail
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
		if l.Reader.Size() > 0 {
			// An empty log is the writer's next segment, created ahead of
			// need: the one before it is still being appended to.
			newest = max(newest, n)
		}
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
//
// Damage before a sync mark in the newest segment is read a second time
// before it is reported: a poll racing the writer can read a page before
// the writer's write to it and a later page after the sync of that write
// and the mark that followed it. A second read sees the first page as
// written, so damage that persists is real.
func (db *DB) tailSegment(s *tailSeg, r storage.ObjectReader, newest bool) (int, uint64, error) {
	if s.mem == nil {
		s.mem = db.newMemtable(s.num)
	}
	records, lastSeq := 0, uint64(0)
	var res wal.ReplayResult
	var err error
	for range 2 {
		res, err = wal.ReplayFrom(r, logName(s.num), s.num, s.off, func(payload []byte) error {
			last, err := db.applyWALRecord(s.mem, payload)
			lastSeq = max(lastSeq, last)
			return err
		})
		if res.ValidBytes >= wal.HeaderSize {
			s.off = res.ValidBytes
		}
		records += res.Records
		db.metrics.walRecordsReplayed.Add(uint64(res.Records))
		if err == nil || !newest || !res.SyncedDamage() {
			break
		}
	}
	if err != nil {
		return records, lastSeq, err
	}
	if res.Torn() {
		empty := s.off == 0 && res.TornOffset == 0
		if !newest && !empty {
			return records, lastSeq, format.Corruptf(logName(s.num), res.TornOffset,
				"torn or damaged WAL record before the newest segment: %s", res.TornReason)
		}
	}
	return records, lastSeq, nil
}
