package mayfly

import (
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/storage"
)

// metricsCounters are the engine's running counts.
type metricsCounters struct {
	rowsWritten, batchesCommitted          atomic.Uint64
	batchesHelped                          atomic.Uint64
	gets, rowsRead, expiredOnRead          atomic.Uint64
	touchesCoalesced, condReadFailures     atomic.Uint64
	condGroupsProven, condGroupsDrained    atomic.Uint64
	bloomNegatives, bloomFalsePositives    atomic.Uint64
	walBytes, walSyncs                     atomic.Uint64
	walSegmentsCreated, walRecordsReplayed atomic.Uint64
	walTornTails, walBacklogWaits          atomic.Uint64
	walRecordsDropped, walBytesDropped     atomic.Uint64
	flushes, flushBytes                    atomic.Uint64
	compactions                            atomic.Uint64
	compactionBytesRead                    atomic.Uint64
	compactionBytesWritten                 atomic.Uint64
	expiredToTombstone, expiredDropped     atomic.Uint64
	tombstonesDropped                      atomic.Uint64
	tablesDeleted, manifestWrites          atomic.Uint64
	stalls, stallNanos                     atomic.Uint64
	slowdowns, slowdownNanos               atomic.Uint64
	wholeFileDrops, wholeFileDropBytes     atomic.Uint64
	trivialMoves                           atomic.Uint64
	filterRemoved, filterChanged           atomic.Uint64
	compactionsByKind                      [compaction.NumKinds]atomic.Uint64
	followRefreshes                        atomic.Uint64
	mergesFolded, operandsCombined         atomic.Uint64
	mergeReads, mergeCacheHits             atomic.Uint64
	flushMemoHits                          atomic.Uint64 // states a flush took from the previous one's memo (flush_memo.go)
}

// LevelMetrics describes one level of the tree.
type LevelMetrics struct {
	Files int    // number of SSTables
	Bytes uint64 // their total size
	Rows  uint64 // rows they hold, tombstones included
	// TTLRows is how many of those rows carry an expiry.
	TTLRows uint64
	// Tombstones is how many of those rows are tombstones.
	Tombstones uint64
	// Score is the level's compaction score (L0: files over the trigger;
	// other levels: bytes over the size target); >= 1 means compaction is
	// due. TargetBytes is the size target (0 for L0 and unused levels).
	Score       float64
	TargetBytes int64
	// ExpiredBytes estimates the bytes in this level whose rows have
	// expired but are still on disk.
	ExpiredBytes uint64
}

// Metrics is a point-in-time picture of the database's state and activity
// since Open.
type Metrics struct {
	// MemtableBytes is the size of the active memtable; ImmutableMemtables
	// and ImmutableBytes describe the ones awaiting flush (records and
	// skiplist nodes, both in the arena).
	MemtableBytes      int64
	ImmutableMemtables int
	ImmutableBytes     int64
	// Levels holds per-level figures, level 0 first.
	Levels [manifest.NumLevels]LevelMetrics

	RowsWritten      uint64 // rows committed (puts and deletes)
	BatchesCommitted uint64 // batches committed (each Put is one)
	// BatchesAppliedByOthers counts logged batches that another writer
	// inserted into the memtable because their own writer had not started
	// (a group's leader for its members, or a writer waiting for its
	// publication behind them; RFC 0003, "Group commit").
	BatchesAppliedByOthers uint64
	Gets                   uint64 // point lookups served
	// RowsRead counts live rows returned by Get and iterators. An open
	// iterator adds its rows in batches of up to 256, and the rest when it
	// is closed.
	RowsRead uint64
	// ExpiredOnRead counts rows a read found but hid because they had expired.
	ExpiredOnRead uint64
	// TouchesCoalesced counts Touch and GetEx calls that wrote nothing
	// because the key's deadline was already within the touch window of
	// the one asked (Options.TouchWindow).
	TouchesCoalesced uint64
	// ConditionsFailedOnRead counts single-key conditional calls (Put-
	// IfAbsent, GetDel, Expire, ...) whose condition a read before the
	// commit pipeline already found false: they returned without writing
	// or waiting for the pipeline.
	ConditionsFailedOnRead uint64
	// CondGroupsProven counts commit groups with conditions that went
	// through the pipeline as blind ones do, every condition evaluated on
	// its call's read before the pipeline, proven current by the table of
	// recent writes; CondGroupsDrained those that waited for every earlier
	// batch to be applied first (RFC 0009, "Single-key calls").
	CondGroupsProven, CondGroupsDrained uint64
	// BloomNegatives counts table lookups a bloom filter skipped;
	// BloomFalsePositives those it let through that found nothing.
	BloomNegatives, BloomFalsePositives uint64

	WALBytes           uint64 // bytes appended to the WAL
	WALSyncs           uint64 // WAL fsyncs (synced commits share them; a rotation's seal and Close sync too)
	WALSegmentsCreated uint64
	// WALBacklogWaits counts the commits that waited for the WAL's
	// flusher because its backlog of unwritten records reached its bound
	// (wal.MaxBacklog): the log is not keeping up (RFC 0003, "WAL writer
	// and background flusher"). Below the bound commits do not wait for
	// the log.
	WALBacklogWaits    uint64
	WALRecordsReplayed uint64 // records recovered at Open
	WALTornTails       uint64 // torn tail records dropped at Open
	// WALRecordsDropped and WALBytesDropped count what Open's WAL recovery
	// dropped (a torn tail, or with WALRecoveryPointInTime everything after
	// the first damage): intact records found after the point where replay
	// stopped, and bytes from that point to the last non-zero byte of each
	// segment dropped.
	WALRecordsDropped, WALBytesDropped uint64

	Flushes, FlushBytes uint64
	// Compactions counts compactions that rewrote data, and
	// CompactionsByKind splits them by reason ("l0", "level", "expired",
	// "periodic", "manual", "shadowed", "l0merge", "l0split").
	Compactions       uint64
	CompactionsByKind map[string]uint64
	// TrivialMoves counts tables moved down a level without a rewrite.
	TrivialMoves uint64
	// WholeFileDrops counts tables deleted unread because every row had
	// expired; WholeFileDropBytes their size.
	WholeFileDrops, WholeFileDropBytes uint64
	// FilterRemoved and FilterChanged count rows user compaction filters
	// removed or rewrote.
	FilterRemoved, FilterChanged uint64
	CompactionBytesRead          uint64
	// CompactionBytesWritten is what compactions wrote; with FlushBytes it
	// gives the write amplification (see WriteAmplification).
	CompactionBytesWritten uint64
	// ExpiredToTombstone counts expired rows a flush or compaction rewrote
	// as tombstones; ExpiredDropped those dropped at the bottom level.
	ExpiredToTombstone, ExpiredDropped uint64
	TombstonesDropped                  uint64
	TablesDeleted                      uint64
	ManifestWrites                     uint64

	WriteStalls    uint64        // times a write waited for flush/compaction
	WriteStallTime time.Duration // total time writes spent stalled
	// WriteSlowdowns counts commits delayed because level 0 passed
	// L0SlowdownWritesThreshold; WriteSlowdownTime the time they waited.
	WriteSlowdowns    uint64
	WriteSlowdownTime time.Duration
	// MergesFolded counts the keys whose merge operands a flush or
	// compaction folded, with the state beneath them, into one value row
	// (or a tombstone); MergeOperandsCombined the operands it combined
	// into an older operand of the same window instead (RFC 0010).
	MergesFolded, MergeOperandsCombined uint64
	// MergeReads counts point reads (Get and the calls built on it) that
	// resolved a key holding merge operands; MergeCacheHits those the
	// resolved-counter cache answered without reading the operands.
	MergeReads, MergeCacheHits uint64
	// RunningCompactions is the number of compactions in progress.
	RunningCompactions int
	// FollowRefreshes counts the times a follower loaded a newer view.
	FollowRefreshes uint64
	// ObjectCacheHits, ObjectCacheMisses and ObjectCacheBytes describe the
	// local disk cache of SSTables (Options.ObjectCacheDir).
	ObjectCacheHits, ObjectCacheMisses uint64
	ObjectCacheBytes                   int64
	// Storage holds the storage backend's request counters by name (for
	// the S3 backend: put, get, range_get, list, delete, head, bytes_in,
	// bytes_out, retries), or nil for backends without any.
	Storage map[string]uint64

	BlockCacheHits, BlockCacheMisses uint64
	BlockCacheBytes                  int64
	OpenSnapshots                    int

	// Memory breaks down the memory held outside the Go heap (memtable
	// arenas, block cache slabs, table indexes, write buffers), for the
	// whole process; see MemoryMetrics.
	Memory MemoryMetrics
}

// WriteAmplification returns bytes written to SSTables (flushes plus
// compactions) per byte flushed, or 0 before the first flush.
func (m *Metrics) WriteAmplification() float64 {
	if m.FlushBytes == 0 {
		return 0
	}
	return float64(m.FlushBytes+m.CompactionBytesWritten) / float64(m.FlushBytes)
}

// DiskBytes returns the total size of the live SSTables.
func (m *Metrics) DiskBytes() uint64 {
	var n uint64
	for _, l := range m.Levels {
		n += l.Bytes
	}
	return n
}

// Metrics returns the current metrics.
func (db *DB) Metrics() Metrics {
	c := &db.metrics
	m := Metrics{
		RowsWritten: c.rowsWritten.Load(), BatchesCommitted: c.batchesCommitted.Load(), BatchesAppliedByOthers: c.batchesHelped.Load(),
		Gets: c.gets.Load(), RowsRead: c.rowsRead.Load(), ExpiredOnRead: c.expiredOnRead.Load(),
		TouchesCoalesced: c.touchesCoalesced.Load(), ConditionsFailedOnRead: c.condReadFailures.Load(),
		CondGroupsProven: c.condGroupsProven.Load(), CondGroupsDrained: c.condGroupsDrained.Load(),
		BloomNegatives: c.bloomNegatives.Load(), BloomFalsePositives: c.bloomFalsePositives.Load(),
		WALBytes: c.walBytes.Load(), WALSyncs: c.walSyncs.Load(),
		WALSegmentsCreated: c.walSegmentsCreated.Load(), WALRecordsReplayed: c.walRecordsReplayed.Load(),
		WALBacklogWaits:   c.walBacklogWaits.Load(),
		WALTornTails:      c.walTornTails.Load(),
		WALRecordsDropped: c.walRecordsDropped.Load(), WALBytesDropped: c.walBytesDropped.Load(),
		Flushes: c.flushes.Load(), FlushBytes: c.flushBytes.Load(),
		Compactions: c.compactions.Load(), CompactionBytesRead: c.compactionBytesRead.Load(),
		CompactionBytesWritten: c.compactionBytesWritten.Load(),
		ExpiredToTombstone:     c.expiredToTombstone.Load(), ExpiredDropped: c.expiredDropped.Load(),
		TombstonesDropped: c.tombstonesDropped.Load(), TablesDeleted: c.tablesDeleted.Load(),
		ManifestWrites: c.manifestWrites.Load(),
		WriteStalls:    c.stalls.Load(), WriteStallTime: time.Duration(c.stallNanos.Load()),
		WriteSlowdowns: c.slowdowns.Load(), WriteSlowdownTime: time.Duration(c.slowdownNanos.Load()),
		TrivialMoves:   c.trivialMoves.Load(),
		WholeFileDrops: c.wholeFileDrops.Load(), WholeFileDropBytes: c.wholeFileDropBytes.Load(),
		FilterRemoved: c.filterRemoved.Load(), FilterChanged: c.filterChanged.Load(),
		CompactionsByKind: make(map[string]uint64),
		FollowRefreshes:   c.followRefreshes.Load(),
		MergesFolded:      c.mergesFolded.Load(), MergeOperandsCombined: c.operandsCombined.Load(),
		MergeReads: c.mergeReads.Load(), MergeCacheHits: c.mergeCacheHits.Load(),
		Memory: MemoryUsage(),
	}
	if oc := db.objectCache; oc != nil {
		m.ObjectCacheHits, m.ObjectCacheMisses, m.ObjectCacheBytes = oc.Metrics()
	}
	if rm, ok := storage.As[storage.RequestMetrics](db.backend); ok {
		m.Storage = rm.RequestCounts().Counters()
	}
	for k := range c.compactionsByKind {
		if n := c.compactionsByKind[k].Load(); n > 0 {
			m.CompactionsByKind[compaction.Kind(k).String()] = n
		}
	}
	if db.cache != nil {
		cm := db.cache.Metrics()
		m.BlockCacheHits, m.BlockCacheMisses, m.BlockCacheBytes = cm.Hits, cm.Misses, cm.SizeBytes
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mem != nil {
		m.MemtableBytes = db.mem.Size()
	}
	m.ImmutableMemtables = len(db.imm)
	for _, im := range db.imm {
		m.ImmutableBytes += im.MemoryBytes()
	}
	m.OpenSnapshots = len(db.snapshots)
	m.RunningCompactions = db.runningCompactions
	if db.current != nil {
		lv := db.pickerLevels()
		po := db.pickerOpts()
		now := db.clock.NowMillis()
		scores := compaction.Scores(lv, po, now)
		targets, _ := compaction.Targets(lv, po)
		for l := range m.Levels {
			m.Levels[l].Score = scores[l]
			m.Levels[l].TargetBytes = targets[l]
			for _, t := range lv[l] {
				m.Levels[l].ExpiredBytes += compaction.ExpiredBytes(t.Meta, now)
			}
		}
		for l, lvl := range db.current.levels {
			for _, t := range lvl {
				lm := &m.Levels[l]
				lm.Files++
				lm.Bytes += t.Meta.Size
				lm.Rows += t.Meta.NumRows
				lm.TTLRows += t.Meta.NumTTLRows
				lm.Tombstones += t.Meta.NumTombstones
			}
		}
	}
	return m
}
