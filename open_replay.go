package mayfly

import (
	"errors"
	"fmt"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/wal"
)

// The second stage of a writer's Open: replay the WAL segments the loaded
// manifest version does not cover into memtables, which the third stage
// (open_flush.go) writes out as tables. A read-only handle replays the WAL
// through its tail instead (follow_tail.go), which later polls continue.

// replayWAL replays segs into new memtables of at most
// Options.MemtableSize each, oldest first, raising lastSeq past every row
// and the clock past every commit. The memtables are unpublished and the
// caller owns one reference on each; on error none is returned.
func (db *DB) replayWAL(segs []uint64) ([]*memtable.Memtable, error) {
	mem := db.newMemtable(0)
	var recovered []*memtable.Memtable
	err := db.replayLogs(segs, func(payload []byte) error {
		last, err := db.applyWALRecord(mem, payload)
		if err != nil {
			return err
		}
		db.lastSeq = max(db.lastSeq, last)
		if mem.Size() >= db.opts.MemtableSize {
			recovered = append(recovered, mem)
			mem = db.newMemtable(0)
		}
		return nil
	})
	if err == nil && !mem.Empty() {
		recovered, mem = append(recovered, mem), nil
	}
	if mem != nil {
		mem.Unref()
	}
	if err != nil {
		unrefAll(recovered)
		return nil, err
	}
	return recovered, nil
}

// applyWALRecord applies the batch a replayed WAL record carries to mem,
// raising the clock floor to its commit time, and returns its last
// sequence number (0 for an empty batch, which applies nothing).
func (db *DB) applyWALRecord(mem *memtable.Memtable, payload []byte) (uint64, error) {
	br, err := format.NewBatchReader(payload)
	if err != nil {
		return 0, err
	}
	h := br.Header()
	db.clock.Observe(h.CommitTS)
	if h.Count == 0 {
		return 0, nil
	}
	if err := mem.ApplyBatch(payload); err != nil {
		return 0, err
	}
	return h.Seq + uint64(h.Count) - 1, nil
}

// unrefAll drops one reference on each non-nil memtable of ms.
func unrefAll(ms []*memtable.Memtable) {
	for _, m := range ms {
		if m != nil {
			m.Unref()
		}
	}
}

// replayLogs replays the WAL segments segs, in order, passing the payload
// of each intact record to apply, and handles where a replay stopped
// according to Options.WALRecovery:
//
//   - A torn tail (the newest segment, no sync mark after the damage) is
//     dropped in either mode, as is a segment whose header was never
//     written and that holds nothing.
//   - A version 2 segment that is not the newest and ends without its
//     seal, cut short or torn, is the log's torn tail if no later segment
//     holds a sync mark: the rest of it and every later segment are
//     dropped, in either mode (wal package, "Seals"). If a later segment
//     holds one, it is damage.
//   - Any other damage fails with the replay's corruption error in strict
//     mode. With WALRecoveryPointInTime replay ends there: the rest of that
//     segment and every later segment are dropped.
//
// Every drop is logged, counted and reported to the EventListener.
func (db *DB) replayLogs(segs []uint64, apply func(payload []byte) error) error {
	pointInTime := db.opts.WALRecovery == WALRecoveryPointInTime
	if pointInTime {
		// A record that passes its CRC but does not decode must not leave
		// part of its batch behind when replay stops there.
		apply = checkedApply(apply)
	}
	for i, seg := range segs {
		name := logName(seg)
		res, err := wal.Replay(db.store, name, seg, apply)
		db.metrics.walRecordsReplayed.Add(uint64(res.Records))
		unsealed := false
		if err == nil && !res.Torn() {
			if i == len(segs)-1 || res.Sealed || res.Version < wal.Version {
				continue
			}
			unsealed = true
			res.TornOffset = res.ValidBytes
			res.TornReason = fmt.Sprintf("segment ends at offset %d without its seal, but later segments exist", res.ValidBytes)
		}
		// A segment that holds no record and whose header is missing or
		// torn was being created when something failed, or was created
		// ahead of need: it never held data and may lie anywhere in the
		// sequence. One that holds no byte at all is not even reported.
		empty := res.Records == 0 && res.TornOffset == 0 && res.LostRecords == 0
		if err == nil && empty && res.LostBytes == 0 {
			continue
		}
		if err == nil && (i == len(segs)-1 || empty) {
			db.dropWAL(WALRecoveryInfo{Segment: name, Offset: res.TornOffset, Reason: res.TornReason,
				RecordsDropped: uint64(res.LostRecords), BytesDropped: uint64(res.LostBytes)})
			db.metrics.walTornTails.Add(1)
			continue
		}
		if err == nil && res.Version == wal.Version {
			// An older segment without its seal: the log's torn tail
			// unless a later sync proves it was durable (wal package,
			// "Seals").
			tail, terr := db.olderSegmentTail(segs[i+1:], name, &res, unsealed)
			if terr != nil || tail {
				return terr
			}
			if unsealed {
				err = format.Corruptf(name, res.ValidBytes, "%s", res.TornReason)
			}
		}
		if err == nil {
			err = res.TornError(name) // damage in a segment a rotation synced
		}
		if !pointInTime || res.TornOffset < 0 || !errors.Is(err, format.ErrCorruption) {
			if errors.Is(err, format.ErrCorruption) && res.TornOffset >= 0 {
				return fmt.Errorf("mayfly: replay %s: %w; Options.WALRecovery = WALRecoveryPointInTime opens the database as of that point, "+
					"dropping the rest of the segment (%d intact records in %d bytes) and %d later segments",
					name, err, res.LostRecords, res.LostBytes, len(segs)-1-i)
			}
			return fmt.Errorf("mayfly: replay %s: %w", name, err)
		}
		info := WALRecoveryInfo{Segment: name, Offset: res.TornOffset, Reason: err.Error(), Damaged: true,
			RecordsDropped: uint64(res.LostRecords), BytesDropped: uint64(res.LostBytes)}
		for _, later := range segs[i+1:] {
			records, bytes, err := countLog(db, later)
			if err != nil {
				return fmt.Errorf("mayfly: read %s to drop it: %w", logName(later), err)
			}
			info.RecordsDropped += records
			info.BytesDropped += bytes
			info.SegmentsDropped = append(info.SegmentsDropped, logName(later))
		}
		db.dropWAL(info)
		return nil
	}
	return nil
}

// dropWAL logs, counts and reports data dropped by WAL recovery.
func (db *DB) dropWAL(info WALRecoveryInfo) {
	msg := "mayfly: dropped torn record at the WAL tail"
	if info.Damaged {
		msg = "mayfly: WALRecoveryPointInTime dropped the WAL from damaged data on"
	}
	db.log.Warn(msg, "file", info.Segment, "offset", info.Offset, "reason", info.Reason,
		"recordsDropped", info.RecordsDropped, "bytesDropped", info.BytesDropped, "segmentsDropped", info.SegmentsDropped)
	db.metrics.walRecordsDropped.Add(info.RecordsDropped)
	db.metrics.walBytesDropped.Add(info.BytesDropped)
	db.opts.EventListener.walRecovered(info)
}

// countLog counts the records and bytes of segment seg, which a
// point-in-time recovery drops whole: the intact records and the bytes up
// to the last non-zero byte, whatever damage it holds.
func countLog(db *DB, seg uint64) (records, bytes uint64, err error) {
	res, err := wal.Replay(db.store, logName(seg), seg, func([]byte) error { return nil })
	if err != nil && (!errors.Is(err, format.ErrCorruption) || res.TornOffset < 0) {
		return 0, 0, err
	}
	records, bytes = droppedBy(res)
	return records, bytes, nil
}

// droppedBy returns what dropping a whole segment whose replay gave res
// loses: its intact records and the bytes up to its last non-zero byte.
func droppedBy(res wal.ReplayResult) (records, bytes uint64) {
	valid := max(res.ValidBytes-wal.HeaderSize, 0)
	if res.TornOffset == 0 {
		valid = 0 // the header itself is damaged: all of it is lost bytes
	}
	return uint64(res.Records + res.LostRecords), uint64(valid + res.LostBytes)
}

// checkedApply returns apply preceded by a full decode of the batch, so
// that a batch that does not decode is refused before any of its rows is
// applied.
func checkedApply(apply func(payload []byte) error) func(payload []byte) error {
	return func(payload []byte) error {
		br, err := format.NewBatchReader(payload)
		if err != nil {
			return err
		}
		var r format.Row
		for {
			ok, err := br.Next(&r)
			if err != nil {
				return err
			}
			if !ok {
				return apply(payload)
			}
		}
	}
}

// olderSegmentTail handles segment name, older than the newest, whose
// replay res stopped at a tear or, unsealed, at its clean end. It reads the
// later segments; if none holds a sync mark, no sync completed after
// name's tail was written, so that tail is where the log ends: it drops the
// rest of name and the later segments (reported and counted as a torn
// tail, unless the later segments never held a byte and name ends
// cleanly: nothing is lost) and returns true. If one holds a mark it
// returns false, and res's reason names that segment.
func (db *DB) olderSegmentTail(later []uint64, name string, res *wal.ReplayResult, unsealed bool) (bool, error) {
	info := WALRecoveryInfo{Segment: name, Offset: res.TornOffset,
		RecordsDropped: uint64(res.LostRecords), BytesDropped: uint64(res.LostBytes)}
	started := false
	for _, seg := range later {
		lres, err := wal.Replay(db.store, logName(seg), seg, func([]byte) error { return nil })
		if err != nil && (!errors.Is(err, format.ErrCorruption) || lres.TornOffset < 0) {
			return false, fmt.Errorf("mayfly: read %s: %w", logName(seg), err)
		}
		if lres.HasSyncMark() {
			res.TornReason += fmt.Sprintf("; the later segment %s holds a sync mark, so a sync completed after this segment was durable", logName(seg))
			return false, nil
		}
		records, bytes := droppedBy(lres)
		started = started || lres.Version != 0 || bytes > 0
		info.RecordsDropped += records
		info.BytesDropped += bytes
		info.SegmentsDropped = append(info.SegmentsDropped, logName(seg))
	}
	if unsealed && !started {
		return true, nil // the later segments were created ahead of need and never used
	}
	info.Reason = res.TornReason + "; no later segment holds a sync mark: this is the torn tail of the log"
	db.dropWAL(info)
	db.metrics.walTornTails.Add(1)
	return true, nil
}
