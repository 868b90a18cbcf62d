package mayfly

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
)

// Limits on what a single write may hold.
const (
	// MaxKeySize is the largest key accepted, in bytes.
	MaxKeySize = 64 << 10
	// MaxValueSize is the largest value accepted, in bytes.
	MaxValueSize = 32 << 20
	// MaxBatchSize is the largest encoded batch accepted, in bytes.
	MaxBatchSize = 128 << 20
)

// defaultObjectReadAhead is Options.ReadAheadSize's default on an object
// store.
const defaultObjectReadAhead = 1 << 20

// DefaultMemtableSize is the MemtableSize used when Options leaves it zero:
// 6 MiB, the size that keeps a bulk load's peak resident memory near that of
// a store with two 4 MiB memtables without raising random writes' write
// amplification (RFC 0003, "Default memtable size"). TTL churn still drops its
// level-0 tables whole: short-lived TTL tables may fill a larger level 0
// while they are forecast to be dropped whole (RFC 0004), and below 16 MiB
// the default level-0 slowdown threshold doubles (the stop threshold triples
// below 8 MiB). Services that ingest in large bursts and care more about
// write amplification than memory can set 16 or 64 MiB.
const DefaultMemtableSize = 6 << 20

// l0StallReferenceMemtable is the memtable size the default level-0 stall
// thresholds (8 and 12 files) are meant for: 16 MiB.
const l0StallReferenceMemtable = 16 << 20

// maxL0StallScale caps l0StallScale.
const maxL0StallScale = 2

// l0StallScale is the factor applied to the default level-0 slowdown
// threshold (l0StopScale to the stop threshold): the reference memtable size over memtable, rounded up,
// between 1 and maxL0StallScale (1 at 16 MiB and above, 2 below). The
// thresholds bound compaction debt, which is bytes, and a level-0 compaction
// into a large base level takes as long whatever the memtable size, while
// the flushes that land during it double as the memtable halves (RFC 0004,
// "Level-0 stall thresholds and the memtable size"). Explicit thresholds
// are used as given.
func l0StallScale(memtable int64) int { return l0ScaleCapped(memtable, maxL0StallScale) }

// maxL0StopScale caps l0StopScale.
const maxL0StopScale = 3

// l0StopScale is the factor applied to the default level-0 stop threshold:
// like l0StallScale but capped at maxL0StopScale (3 below 8 MiB, so 36
// files), so that level 0 holds about as many bytes at the stop with 4-6 MiB
// memtables (144-216 MiB) as with the 16 MiB reference (12 files, 192 MiB),
// and the slowdown between the two thresholds is a long, gentle ramp
// (RFC 0004, "Backpressure").
func l0StopScale(memtable int64) int { return l0ScaleCapped(memtable, maxL0StopScale) }

// l0ScaleCapped is l0StallReferenceMemtable over memtable, rounded up,
// between 1 and limit.
func l0ScaleCapped(memtable int64, limit int64) int {
	if memtable <= 0 || memtable >= l0StallReferenceMemtable {
		return 1
	}
	return int(min(limit, (l0StallReferenceMemtable+memtable-1)/memtable))
}

// MaxBloomBitsPerKey bounds Options.BloomBitsPerKey. 64 bits per key
// already gives a false-positive rate far below one in a billion; larger
// values would only make every table's filter (held in memory while the
// table is open) absurdly large.
const MaxBloomBitsPerKey = 64

// DefaultL0BloomBitsPerKey is the default of Options.L0BloomBitsPerKey
// when Options.BloomBitsPerKey is not larger.
const DefaultL0BloomBitsPerKey = 16

// defaultLocalReadAhead is Options.ReadAheadSize's default for iterators on
// a local directory.
const defaultLocalReadAhead = 256 << 10

// localCompactionReadAhead is the read-ahead window of a compaction's
// iterators on a local directory (sstable.ReaderOptions.CompactionReadAhead).
const localCompactionReadAhead = 64 << 10

// localReadAheadAfter is how many data blocks a local iterator reads one by
// one after a seek before it reads ahead: a short range scan crossing a
// block or two must not fetch and decode a whole window.
const localReadAheadAfter = 4

// DefaultTouchWindow is the default Options.TouchWindow.
const DefaultTouchWindow = time.Second

// DefaultWALMinWriteInterval is the default Options.WALMinWriteInterval.
const DefaultWALMinWriteInterval = 100 * time.Microsecond

// Options configure a database. The zero value of every field means its
// documented default; Open never modifies the caller's Options. A negative
// number is invalid in every field (Open fails with ErrInvalidOptions naming
// it): a feature that can be turned off has a Disable field, and setting
// both it and the value it turns off is invalid too.
type Options struct {
	// DefaultTTL applies to writes whose TTL is the zero value (DefaultTTL()).
	// Zero means writes without an explicit TTL never expire. Negative values
	// are rejected.
	DefaultTTL time.Duration

	// MergeOperator folds the operands DB.Merge, DB.Add and Batch.Merge
	// write (RFC 0010). Default: none, and merge writes fail with
	// ErrNoMergeOperator. Its name is recorded in the manifest by the first
	// Open that sets it; Open fails naming both when a later Open sets an
	// operator of another name, or none, on a database with a recorded name.
	MergeOperator MergeOperator

	// TouchWindow bounds how far Touch and GetEx may leave a key's deadline
	// short of the one asked, to spare a write: when the key's deadline is
	// already within min(TouchWindow, TTL/10) before the deadline asked
	// for, the call writes nothing. The key may then expire up to that
	// much earlier than the last touch asked, in memory and after a crash
	// alike. Expire never coalesces. Default: 1 s (DefaultTouchWindow).
	TouchWindow time.Duration

	// Clock is the source of time for every expiry decision.
	// Default: the system clock, wrapped so that it never runs backwards and
	// never below the highest time this database has recorded. A clock that
	// implements clock.Notifier (clock.Manual does) wakes background work —
	// compaction, whole-table drops, memtable rotation by age — every time
	// it advances, and the database sets no timers of its own for expiries;
	// any other clock is polled about once a second and a timer is set for
	// the next whole-table expiry.
	Clock clock.Clock

	// Storage overrides where the database lives. Default: the local
	// directory given to Open.
	Storage storage.Storage

	// ReadOnly opens the database without changing anything in its
	// location: Open creates no directory and no file (no lock file: it
	// takes no lock), removes nothing and writes no manifest version; the
	// WAL is replayed into memory only. Every storage call that could
	// write is refused (storage.ReadOnly), and DB writes fail with
	// ErrReadOnly. A location that does not exist, or holds no manifest
	// version, table or WAL segment (a directory no writer ever opened),
	// fails with an error wrapping fs.ErrNotExist. A read-only handle runs
	// beside other read-only handles and beside a live writer, in this
	// process or another: it shows the writer's newest manifest version
	// and what its WAL files hold as of Open (or Refresh) — every synced
	// write, and unsynced ones the writer has handed to the file system by
	// then — and starts over from a newer version if the writer replaces
	// the one it is reading. The object cache (ObjectCacheDir), which
	// lives outside the database, is still written.
	ReadOnly bool

	// FollowInterval, with ReadOnly, makes the handle a follower: it runs
	// beside a writer (typically on another machine sharing an object
	// store) and checks every FollowInterval for a newer manifest version
	// — one small GET per interval when nothing changed — loading the
	// tables it lists. A follower sees flushed data; with
	// FollowWAL it also replays the WAL to see recent writes. Default 0: no
	// following. Negative is invalid.
	FollowInterval time.Duration
	// FollowWAL makes a follower tail the WAL, at open and at every poll,
	// so that it also sees writes not yet flushed: it remembers how far it
	// has read each segment and reads only what was uploaded since (on an
	// object store one LIST of the WAL per poll plus one GET per new part).
	// It shows every write the writer uploaded, unsynced ones included.
	FollowWAL bool

	// WALRecovery says what a writer's Open does with damage in the WAL
	// segments it replays. Default WALRecoveryStrict. A read-only handle
	// always reads the WAL strictly.
	WALRecovery WALRecoveryMode

	// ObsoleteFileGracePeriod delays the deletion of SSTables no version
	// needs any more, so that followers still reading an older version are
	// not broken. Default: 0 on a local directory (deleted at once), 1
	// minute on an object store. Negative is invalid.
	ObsoleteFileGracePeriod time.Duration
	// DisableObsoleteFileGrace deletes obsolete SSTables at once on any
	// storage (a grace period of zero where the default is not).
	DisableObsoleteFileGrace bool

	// EventListener receives flush, compaction, stall, WAL and background
	// error events. Default: none.
	EventListener *EventListener

	// ObjectCacheDir, if set, keeps local copies of SSTables in this
	// directory, within ObjectCacheBytes (default 1 GiB): tables are copied
	// when written and on first read, so reads of a database on an object
	// store come from the local disk after the first touch. Default: no
	// disk cache. A negative ObjectCacheBytes is invalid.
	ObjectCacheDir   string
	ObjectCacheBytes int64

	// Logger receives flush, compaction, recovery and corruption events.
	// Default: silent.
	Logger *slog.Logger

	// --- Memtable and write path ---

	// MemtableSize is the size in bytes at which the active memtable is
	// frozen and scheduled for flushing. Default: DefaultMemtableSize
	// (6 MiB). A memtable's rows and its skiplist index live in arena memory
	// outside the Go heap (its size, counted in whole 256 KiB chunks); up to
	// MaxImmutableMemtables full
	// memtables and a quarter of one are alive at once, so write-path memory
	// grows with this size.
	// A larger memtable makes fewer, larger level-0 tables: less level-0
	// compaction for random writes, at the price of that memory (RFC 0004,
	// "Level-0 stall thresholds and the memtable size").
	MemtableSize int64
	// MaxImmutableMemtables is how many frozen memtables may wait for their
	// flush; while that many wait, the active memtable takes writes up to a
	// quarter of MemtableSize, then writes stall until a flush ends.
	// Default: 2.
	MaxImmutableMemtables int
	// MemtableExpiryFraction rotates (freezes and flushes) the active
	// memtable before it is full when it holds rows with an expiry: once
	// the time since the first of them was written reaches this fraction of
	// the time from that write to the earliest deadline among them (and at
	// least one second). The rows then reach a level-0 table before most of
	// them expire, and the table is deleted whole once they all have,
	// instead of expired rows lingering in the WAL segment until the
	// memtable fills. The check runs on every write and, for an idle
	// database, on every compaction scheduler wake-up (at least once a
	// second). With short TTLs the WAL and level 0 then hold about
	// (1 + fraction/2) TTL periods of writes, in about 1 + 1/fraction
	// level-0 tables. Default: 0.25 (RFC 0004, "Memtable rotation by
	// age").
	MemtableExpiryFraction float64
	// DisableAgeRotation turns rotation by age off: memtables rotate only
	// when full.
	DisableAgeRotation bool
	// WALMinWriteInterval is the shortest time between two writes of
	// unsynced WAL bytes to the operating system by the background
	// flusher. Commits that arrive within it after a write are handed over
	// together when it ends, or as soon as 32 KiB have gathered, so a
	// stream of small unsynced writes costs one write system call per
	// interval rather than about one per commit. An unsynced write then
	// reaches the operating system, and survives a crash of the process,
	// within about this interval; a write after a quiet interval, a synced
	// write, FlushWAL and Close are not delayed. Default: 100 µs
	// (DefaultWALMinWriteInterval; RFC 0003, "WAL writer and background
	// flusher").
	WALMinWriteInterval time.Duration
	// DisableWALMinWriteInterval lets the flusher write whenever it runs,
	// so that an unsynced write reaches the operating system as soon as
	// the flusher is scheduled.
	DisableWALMinWriteInterval bool

	// --- SSTables ---

	// BlockSize is the largest uncompressed size of a data block: a block
	// ends before the row that would take it past BlockSize, unless that row
	// alone is larger (it then gets a block of its own size). Default: 4096.
	BlockSize int
	// Compression of data blocks. Default (the zero value,
	// sstable.DefaultCompression): sstable.SnappyCompression;
	// sstable.NoCompression asks for none. A value that is not an
	// sstable.Compression constant is invalid.
	Compression sstable.Compression
	// BloomBitsPerKey sizes each SSTable's bloom filter. Default: 10 (about a
	// 1% false-positive rate). Above MaxBloomBitsPerKey Open fails with
	// ErrInvalidOptions.
	BloomBitsPerKey int
	// L0BloomBitsPerKey sizes the bloom filters of level-0 tables: those a
	// flush writes and those a merge or split within level 0 writes.
	// Default: 16 (about 0.1% false positives), or BloomBitsPerKey when
	// that is larger. A point lookup, and the existence check of a
	// conditional write, probes every level-0 table whose key range holds
	// its key (with random keys, every one) but one table per level below,
	// so level 0 answers most of its probes, and each false positive costs
	// a data-block read. Level 0 holds the fewest keys, so its larger
	// filters cost little memory. Above MaxBloomBitsPerKey Open fails with
	// ErrInvalidOptions; DisableBloomFilters turns these off too.
	L0BloomBitsPerKey int
	// DisableBloomFilters writes SSTables without a bloom filter.
	DisableBloomFilters bool
	// BlockCacheSize is the byte budget of the block cache shared by all
	// SSTables. The index and filter that every open SSTable keeps in
	// memory are charged to it, so cached data blocks get the budget less
	// those (but never less than a quarter of it). Default: 64 MiB.
	BlockCacheSize int64
	// DisableBlockCache turns the block cache (and the charging) off: every
	// read of a data block reaches the table file.
	DisableBlockCache bool
	// TargetFileSize is the size at which compaction output is split into a
	// new SSTable. Default: 8 MiB.
	TargetFileSize int64
	// ReadAheadSize caps the read-ahead of scans (iterators and
	// compactions): an iterator stepping forward through consecutive data
	// blocks of an SSTable reads the blocks ahead of it with one read of
	// 64 KiB, doubling up to ReadAheadSize, instead of one read per block;
	// point lookups never read ahead. Default (0): 1 MiB when the database
	// is on an object store without ObjectCacheDir (there every read is an
	// HTTP request); on a local directory 256 KiB for iterators (one read
	// per window instead of one system call per 4 KiB block, and the next
	// window is decoded on another goroutine) and off for compactions; off
	// on an object store with ObjectCacheDir.
	ReadAheadSize int
	// DisableReadAhead turns read-ahead off for iterators and compactions:
	// every data block is read on its own.
	DisableReadAhead bool

	// --- Compaction (RFC 0004) ---

	// L0CompactionThreshold is the number of level-0 files that triggers a
	// background compaction. Default: 4.
	L0CompactionThreshold int
	// L0SlowdownWritesThreshold is the number of level-0 files at which
	// writes are delayed, to let compaction catch up: from here up to
	// L0StopWritesThreshold, commits are held to a write rate that falls
	// with the square of level 0's distance from this threshold, down to
	// 16 MiB/s one file below the stop threshold (RFC 0004,
	// "Backpressure"); a writer of
	// small rows pays for its bytes, not a fixed delay per commit. A value
	// equal to L0StopWritesThreshold disables the delay. Default: 16 with a
	// MemtableSize below 16 MiB (the default 6 MiB), 8 from 16 MiB up.
	// With a MemtableSize below 64 MiB, short-lived TTL tables (RFC 0004)
	// count as a fraction of a file here and in L0StopWritesThreshold while
	// they are forecast to be dropped whole (compaction.L0Census.StallFiles),
	// and level 0's oldest run of key-disjoint tables (the slices of RFC
	// 0004, "Level-0 slices") counts as one file, as a read probes one of
	// them.
	L0SlowdownWritesThreshold int
	// L0StopWritesThreshold is the number of level-0 files at which writes
	// stall until compaction catches up; it bounds level 0's read
	// amplification. Default: 12 times l0StopScale: 36 with a MemtableSize
	// below 8 MiB (the default 6 MiB), 24 from 8 MiB, 12 from 16 MiB up.
	L0StopWritesThreshold int
	// LBaseMaxBytes is the size target of the base level, the level L0
	// compacts into. Default: 64 MiB.
	LBaseMaxBytes int64
	// LevelSizeRatio is the size ratio between adjacent levels. Level 0
	// also merges its newest tables among themselves, instead of going
	// down, while the base-level tables it overlaps hold more than this
	// many times its bytes, or more than compaction.L0BottomRatio (5)
	// times while the base level is the bottom level (RFC 0004, "Level-0
	// merges"). Default: 10.
	LevelSizeRatio float64
	// ExpiredBytesRatio is the share of a table's bytes that must have
	// expired for the table to be rewritten for that reason alone.
	// Default: 0.25.
	ExpiredBytesRatio float64
	// L0ShadowedRatio compacts level 0 into the base level once this share
	// of the rows that compaction would read is superseded by newer rows:
	// the rows a flush wrote over a counter's state in an older table
	// (RFC 0010, "Space of churning windows"). It keeps counters added to
	// in every memtable, whose windows would otherwise hold each level-0
	// table until its last window ends, at about one row per counter; the
	// compaction writes at most (1-ratio)/ratio bytes per superseded byte
	// it removes. 1 turns it off. Default: 0.25.
	L0ShadowedRatio float64
	// PeriodicCompactionInterval bounds how long expired or deleted data
	// stays on disk: a table whose oldest expiry or tombstone is this old is
	// compacted to the bottom, even with no writes. Default: 1 hour.
	PeriodicCompactionInterval time.Duration
	// DisablePeriodicCompaction turns periodic compaction off: expired and
	// deleted data then leaves the disk only with compactions that other
	// causes start, or ReclaimExpired.
	DisablePeriodicCompaction bool
	// MaxConcurrentCompactions bounds background compactions running at
	// once. Default: 2.
	MaxConcurrentCompactions int
	// CompactionFilters run, in order, on rows during compactions (after
	// the built-in TTL filter). Default: none.
	CompactionFilters []CompactionFilter
	// DisableAutoCompaction turns background compaction off; Compact and
	// ReclaimExpired still work, and writes are never stalled for level 0.
	// Default: false.
	DisableAutoCompaction bool
}

// WriteOptions control a single write.
type WriteOptions struct {
	// Sync makes the write durable (the WAL is fsynced) before the call
	// returns. Concurrent synced writers share one fsync (group commit),
	// which runs without the commit lock: other writes go on meanwhile.
	// The write is visible to reads before its fsync ends.
	//
	// Default false: the call returns once the write is in the WAL buffer
	// and the memtable. A background flusher hands the buffer to the
	// operating system continuously (one write system call serves every
	// commit that arrived meanwhile, at most one per
	// Options.WALMinWriteInterval), so an unsynced write normally survives a
	// crash of the process within that interval (100 µs by default) on a
	// local disk (on an object store, within the S3 backend's
	// FlushInterval, 100 ms by default), and a crash of the machine once a
	// later synced write, a memtable rotation or Close has synced the WAL.
	// Nothing acknowledged with Sync is ever lost.
	Sync bool
}

// WALRecoveryMode is Options.WALRecovery: how Open treats damage in the WAL.
type WALRecoveryMode int

const (
	// WALRecoveryStrict (the default) drops only a torn tail: records at
	// the end of the newest segment written after its last completed sync,
	// which a crash can leave partly written. Open logs, counts
	// (Metrics.WALTornTails, WALRecordsDropped, WALBytesDropped) and
	// reports (EventListener.WALRecovered) what it dropped. Any other
	// damage — in bytes a later sync made durable (the segment's sync marks
	// prove it), in a segment that is not the newest, or a record that
	// passes its checksum but does not decode — fails Open with an error
	// wrapping ErrCorruption that names the segment and offset, and changes
	// nothing.
	WALRecoveryStrict WALRecoveryMode = iota
	// WALRecoveryPointInTime accepts the loss: replay stops at the first
	// damage anywhere and drops everything after it, in that segment and in
	// every later one, so that the database opens at the last intact point
	// of its history (no later write without the earlier ones). Open logs
	// a warning naming the segment and offset, and counts and reports what
	// it dropped as for a torn tail. The dropped segments are deleted with
	// the replayed ones once their surviving rows are flushed, so the next
	// Open starts from the recovered state.
	WALRecoveryPointInTime
)

// Sync is the WriteOptions for a durable write.
var Sync = &WriteOptions{Sync: true}

// NoSync is the WriteOptions for a write that returns before it is durable.
var NoSync = &WriteOptions{}

// withDefaults returns a copy of o with every unset field at its default,
// or an error naming the first invalid field.
func (o *Options) withDefaults() (*Options, error) {
	c := Options{}
	if o != nil {
		c = *o
	}
	if err := c.checkSigns(); err != nil {
		return nil, err
	}
	if c.DefaultTTL > 0 && c.DefaultTTL < time.Millisecond {
		return nil, fmt.Errorf("%w: Options.DefaultTTL %v is below the 1ms resolution", ErrInvalidOptions, c.DefaultTTL)
	}
	if c.TouchWindow == 0 {
		c.TouchWindow = DefaultTouchWindow
	}
	if c.WALRecovery != WALRecoveryStrict && c.WALRecovery != WALRecoveryPointInTime {
		return nil, fmt.Errorf("%w: Options.WALRecovery %d is not a WALRecoveryMode", ErrInvalidOptions, c.WALRecovery)
	}
	if c.FollowInterval > 0 && !c.ReadOnly {
		return nil, fmt.Errorf("%w: Options.FollowInterval needs ReadOnly", ErrInvalidOptions)
	}
	if c.ObjectCacheDir != "" && c.ObjectCacheBytes == 0 {
		c.ObjectCacheBytes = 1 << 30
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MemtableSize == 0 {
		c.MemtableSize = DefaultMemtableSize
	}
	if c.MaxImmutableMemtables == 0 {
		c.MaxImmutableMemtables = 2
	}
	if c.MemtableExpiryFraction == 0 && !c.DisableAgeRotation {
		c.MemtableExpiryFraction = 0.25
	}
	if c.WALMinWriteInterval == 0 && !c.DisableWALMinWriteInterval {
		c.WALMinWriteInterval = DefaultWALMinWriteInterval
	}
	if c.BlockSize == 0 {
		c.BlockSize = 4096
	}
	if !c.Compression.Valid() {
		return nil, fmt.Errorf("%w: Options.Compression %v is not an sstable.Compression", ErrInvalidOptions, c.Compression)
	}
	c.Compression = c.Compression.Resolve()
	if c.BloomBitsPerKey > MaxBloomBitsPerKey {
		return nil, fmt.Errorf("%w: Options.BloomBitsPerKey %d is above %d", ErrInvalidOptions, c.BloomBitsPerKey, MaxBloomBitsPerKey)
	}
	if c.L0BloomBitsPerKey > MaxBloomBitsPerKey {
		return nil, fmt.Errorf("%w: Options.L0BloomBitsPerKey %d is above %d", ErrInvalidOptions, c.L0BloomBitsPerKey, MaxBloomBitsPerKey)
	}
	if c.BloomBitsPerKey == 0 && !c.DisableBloomFilters {
		c.BloomBitsPerKey = 10
	}
	if c.L0BloomBitsPerKey == 0 && !c.DisableBloomFilters {
		c.L0BloomBitsPerKey = max(DefaultL0BloomBitsPerKey, c.BloomBitsPerKey)
	}
	if c.BlockCacheSize == 0 && !c.DisableBlockCache {
		c.BlockCacheSize = 64 << 20
	}
	if c.TargetFileSize == 0 {
		c.TargetFileSize = 8 << 20
	}
	if c.L0SlowdownWritesThreshold == 0 {
		c.L0SlowdownWritesThreshold = 8 * l0StallScale(c.MemtableSize)
	}
	if c.LBaseMaxBytes == 0 {
		c.LBaseMaxBytes = 64 << 20
	}
	if c.LevelSizeRatio == 0 {
		c.LevelSizeRatio = 10
	}
	if c.LevelSizeRatio < 2 {
		return nil, fmt.Errorf("%w: Options.LevelSizeRatio %v is below 2", ErrInvalidOptions, c.LevelSizeRatio)
	}
	if c.ExpiredBytesRatio == 0 {
		c.ExpiredBytesRatio = 0.25
	}
	if c.ExpiredBytesRatio > 1 {
		return nil, fmt.Errorf("%w: Options.ExpiredBytesRatio %v is outside (0, 1]", ErrInvalidOptions, c.ExpiredBytesRatio)
	}
	if c.L0ShadowedRatio == 0 {
		c.L0ShadowedRatio = 0.25
	}
	if c.L0ShadowedRatio > 1 {
		return nil, fmt.Errorf("%w: Options.L0ShadowedRatio %v is outside (0, 1]", ErrInvalidOptions, c.L0ShadowedRatio)
	}
	if c.PeriodicCompactionInterval == 0 && !c.DisablePeriodicCompaction {
		c.PeriodicCompactionInterval = time.Hour
	}
	if c.MaxConcurrentCompactions == 0 {
		c.MaxConcurrentCompactions = 2
	}
	if c.L0CompactionThreshold == 0 {
		c.L0CompactionThreshold = 4
	}
	if c.L0StopWritesThreshold == 0 {
		c.L0StopWritesThreshold = 12 * l0StopScale(c.MemtableSize)
	}
	if c.L0StopWritesThreshold < c.L0CompactionThreshold {
		c.L0StopWritesThreshold = c.L0CompactionThreshold
	}
	if c.L0SlowdownWritesThreshold > c.L0StopWritesThreshold {
		c.L0SlowdownWritesThreshold = c.L0StopWritesThreshold
	}
	return &c, nil
}

// checkSigns refuses a negative value in any numeric field, and a Disable
// field set together with a value it turns off. Every resolved value that
// means "off" is zero.
func (o *Options) checkSigns() error {
	for _, f := range []struct {
		name  string
		value any
		neg   bool
	}{
		{"DefaultTTL", o.DefaultTTL, o.DefaultTTL < 0},
		{"TouchWindow", o.TouchWindow, o.TouchWindow < 0},
		{"FollowInterval", o.FollowInterval, o.FollowInterval < 0},
		{"ObsoleteFileGracePeriod", o.ObsoleteFileGracePeriod, o.ObsoleteFileGracePeriod < 0},
		{"ObjectCacheBytes", o.ObjectCacheBytes, o.ObjectCacheBytes < 0},
		{"MemtableSize", o.MemtableSize, o.MemtableSize < 0},
		{"MaxImmutableMemtables", o.MaxImmutableMemtables, o.MaxImmutableMemtables < 0},
		{"MemtableExpiryFraction", o.MemtableExpiryFraction, o.MemtableExpiryFraction < 0},
		{"WALMinWriteInterval", o.WALMinWriteInterval, o.WALMinWriteInterval < 0},
		{"BlockSize", o.BlockSize, o.BlockSize < 0},
		{"BloomBitsPerKey", o.BloomBitsPerKey, o.BloomBitsPerKey < 0},
		{"L0BloomBitsPerKey", o.L0BloomBitsPerKey, o.L0BloomBitsPerKey < 0},
		{"BlockCacheSize", o.BlockCacheSize, o.BlockCacheSize < 0},
		{"TargetFileSize", o.TargetFileSize, o.TargetFileSize < 0},
		{"ReadAheadSize", o.ReadAheadSize, o.ReadAheadSize < 0},
		{"L0CompactionThreshold", o.L0CompactionThreshold, o.L0CompactionThreshold < 0},
		{"L0SlowdownWritesThreshold", o.L0SlowdownWritesThreshold, o.L0SlowdownWritesThreshold < 0},
		{"L0StopWritesThreshold", o.L0StopWritesThreshold, o.L0StopWritesThreshold < 0},
		{"LBaseMaxBytes", o.LBaseMaxBytes, o.LBaseMaxBytes < 0},
		{"LevelSizeRatio", o.LevelSizeRatio, o.LevelSizeRatio < 0},
		{"ExpiredBytesRatio", o.ExpiredBytesRatio, o.ExpiredBytesRatio < 0},
		{"L0ShadowedRatio", o.L0ShadowedRatio, o.L0ShadowedRatio < 0},
		{"PeriodicCompactionInterval", o.PeriodicCompactionInterval, o.PeriodicCompactionInterval < 0},
		{"MaxConcurrentCompactions", o.MaxConcurrentCompactions, o.MaxConcurrentCompactions < 0},
	} {
		if f.neg {
			return fmt.Errorf("%w: Options.%s %v is negative", ErrInvalidOptions, f.name, f.value)
		}
	}
	for _, d := range []struct {
		flag, field string
		on, set     bool
	}{
		{"DisableObsoleteFileGrace", "ObsoleteFileGracePeriod", o.DisableObsoleteFileGrace, o.ObsoleteFileGracePeriod != 0},
		{"DisableAgeRotation", "MemtableExpiryFraction", o.DisableAgeRotation, o.MemtableExpiryFraction != 0},
		{"DisableWALMinWriteInterval", "WALMinWriteInterval", o.DisableWALMinWriteInterval, o.WALMinWriteInterval != 0},
		{"DisableBloomFilters", "BloomBitsPerKey", o.DisableBloomFilters, o.BloomBitsPerKey != 0},
		{"DisableBloomFilters", "L0BloomBitsPerKey", o.DisableBloomFilters, o.L0BloomBitsPerKey != 0},
		{"DisableBlockCache", "BlockCacheSize", o.DisableBlockCache, o.BlockCacheSize != 0},
		{"DisableReadAhead", "ReadAheadSize", o.DisableReadAhead, o.ReadAheadSize != 0},
		{"DisablePeriodicCompaction", "PeriodicCompactionInterval", o.DisablePeriodicCompaction, o.PeriodicCompactionInterval != 0},
	} {
		if d.on && d.set {
			return fmt.Errorf("%w: Options.%s is set together with Options.%s", ErrInvalidOptions, d.flag, d.field)
		}
	}
	return nil
}

// readTuning is how the SSTable readers of a database read, as the
// backend's traits decide (sstable.ReaderOptions).
type readTuning struct {
	// compactionReadAhead is ReaderOptions.CompactionReadAhead:
	// localCompactionReadAhead by the local default, else 0 (as ReadAhead).
	compactionReadAhead int
	// readAheadAfter is ReaderOptions.ReadAheadAfter: on a local disk an
	// iterator reads ahead only once a scan is long.
	readAheadAfter int
	// independentMisses is ReaderOptions.IndependentMisses: on a local
	// disk a block read is a page-cache copy, so concurrent misses of one
	// block need not share one read.
	independentMisses bool
}

// withStorageDefaults is the second step of withDefaults, taken once the
// storage is open: it sets the defaults of o (a copy withDefaults made)
// that depend on the backend's traits t, and returns how tables are read.
// Every storage-dependent default is resolved here.
func (o *Options) withStorageDefaults(t storage.Traits) readTuning {
	var rt readTuning
	if o.ObsoleteFileGracePeriod == 0 && t.Remote && !o.DisableObsoleteFileGrace {
		o.ObsoleteFileGracePeriod = time.Minute
	}
	switch {
	case o.DisableReadAhead:
	case o.ReadAheadSize == 0 && t.Remote && o.ObjectCacheDir == "":
		o.ReadAheadSize = defaultObjectReadAhead
	case o.ReadAheadSize == 0 && !t.Remote:
		// A local scan saves a system call per block and fetches the next
		// window on another goroutine. Tables are opened with the kernel's
		// readahead off (storage.RandomReadAdviser), so compactions read in
		// windows too, small ones: a compaction holds two per input table.
		o.ReadAheadSize, rt.compactionReadAhead = defaultLocalReadAhead, localCompactionReadAhead
	}
	if !t.Remote {
		rt.readAheadAfter = localReadAheadAfter
		rt.independentMisses = true
	}
	return rt
}
