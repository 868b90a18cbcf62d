package mayfly

import "time"

// EventListener receives notifications of the engine's background work.
// Every field is optional. Callbacks run synchronously on the goroutine
// doing the work, some while it holds internal locks, so they must return
// quickly and must not call methods of the DB.
type EventListener struct {
	// FlushBegin and FlushEnd bracket the flush of one memtable.
	FlushBegin func(FlushInfo)
	FlushEnd   func(FlushInfo)
	// CompactionBegin and CompactionEnd bracket a compaction, trivial move
	// or whole-file drop.
	CompactionBegin func(CompactionInfo)
	CompactionEnd   func(CompactionInfo)
	// BackgroundError reports the error that put the database into its
	// error state (see ErrBackground).
	BackgroundError func(error)
	// WriteStallBegin and WriteStallEnd bracket a stall of the write path.
	WriteStallBegin func(StallInfo)
	WriteStallEnd   func(StallInfo)
	// WALCreated and WALDeleted report WAL segments starting and being
	// removed after their data reached an SSTable.
	WALCreated func(WALInfo)
	WALDeleted func(WALInfo)
	// WALRecovered reports that Open's WAL replay dropped data: a torn tail,
	// or with WALRecoveryPointInTime everything after the first damage.
	WALRecovered func(WALRecoveryInfo)
}

// FlushInfo describes a memtable flush.
type FlushInfo struct {
	Table    string // the SSTable written ("sst/000012.sst"); empty if none
	Bytes    uint64
	Rows     uint64
	Duration time.Duration // set on FlushEnd
	Err      error         // set on FlushEnd if the flush failed
}

// CompactionInfo describes a compaction.
type CompactionInfo struct {
	// Kind is why it ran: "l0", "l0merge", "l0split", "level", "drop",
	// "move", "expired", "periodic", "manual" or "shadowed" (the kinds of
	// Metrics.CompactionsByKind, plus drops and moves).
	Kind        string
	OutputLevel int
	Bottom      bool
	InputTables int
	// The fields below are set on CompactionEnd.
	OutputTables       int
	BytesRead          uint64
	BytesWritten       uint64
	ExpiredToTombstone uint64 // expired rows rewritten as tombstones
	ExpiredDropped     uint64 // expired rows removed from disk
	TombstonesDropped  uint64
	Duration           time.Duration
	Err                error
}

// StallInfo describes a write stall.
type StallInfo struct {
	// Reason is "l0" (too many level-0 tables) or "memtables" (flushes
	// behind).
	Reason   string
	Duration time.Duration // set on WriteStallEnd
}

// WALInfo names a WAL segment.
type WALInfo struct {
	Segment string // e.g. "wal/000007.wal"
}

// WALRecoveryInfo describes what Open's WAL replay dropped.
type WALRecoveryInfo struct {
	// Segment and Offset are where replay stopped; Reason says why.
	Segment string
	Offset  int64
	Reason  string
	// Damaged reports damage a crash cannot leave: in bytes a later
	// completed sync had made durable, in a segment that is not the
	// newest, or a record that passes its checksum but does not decode.
	// Only WALRecoveryPointInTime drops such data; otherwise the replay
	// stopped at a torn tail.
	Damaged bool
	// RecordsDropped counts the intact records found after Offset, in the
	// segment and in every later segment dropped; BytesDropped the bytes
	// from Offset to the segment's last non-zero byte plus the records of
	// every later segment dropped.
	RecordsDropped uint64
	BytesDropped   uint64
	// SegmentsDropped lists the later segments dropped whole.
	SegmentsDropped []string
}

func (l *EventListener) walRecovered(i WALRecoveryInfo) {
	if l != nil && l.WALRecovered != nil {
		l.WALRecovered(i)
	}
}

func (l *EventListener) flushBegin(i FlushInfo) {
	if l != nil && l.FlushBegin != nil {
		l.FlushBegin(i)
	}
}

func (l *EventListener) flushEnd(i FlushInfo) {
	if l != nil && l.FlushEnd != nil {
		l.FlushEnd(i)
	}
}

func (l *EventListener) compactionBegin(i CompactionInfo) {
	if l != nil && l.CompactionBegin != nil {
		l.CompactionBegin(i)
	}
}

func (l *EventListener) compactionEnd(i CompactionInfo) {
	if l != nil && l.CompactionEnd != nil {
		l.CompactionEnd(i)
	}
}

func (l *EventListener) backgroundError(err error) {
	if l != nil && l.BackgroundError != nil {
		l.BackgroundError(err)
	}
}

func (l *EventListener) stallBegin(i StallInfo) {
	if l != nil && l.WriteStallBegin != nil {
		l.WriteStallBegin(i)
	}
}

func (l *EventListener) stallEnd(i StallInfo) {
	if l != nil && l.WriteStallEnd != nil {
		l.WriteStallEnd(i)
	}
}

func (l *EventListener) walCreated(name string) {
	if l != nil && l.WALCreated != nil {
		l.WALCreated(WALInfo{Segment: name})
	}
}

func (l *EventListener) walDeleted(name string) {
	if l != nil && l.WALDeleted != nil {
		l.WALDeleted(WALInfo{Segment: name})
	}
}
