// Package mayfly is an embedded LSM-tree key-value store in which every row
// can carry a time-to-live.
//
// Writes go to a write-ahead log and an in-memory table, which is flushed to
// immutable, sorted SSTables; compaction merges them in the background. A row
// written with a TTL is visible until its deadline, invisible from one
// millisecond after it, and its bytes leave the disk as compaction rewrites
// the files that hold it. Expiry never uncovers an older version of a key.
//
// A DB is safe for concurrent use by many goroutines.
package mayfly

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/diskcache"
	"github.com/mayflydb/mayfly/wal"
)

// memPoolChunks is how many arena chunks (memtable.ChunkSize) a database keeps
// between memtables: -1, as many as one memtable holds. Pooled chunks stay
// resident; a smaller pool maps the rest of every memtable's chunks on the
// commit path (RFC 0003, "Chunk recycling"). Beside this limit the pool
// keeps no chunk while the live memtables and the pool already hold two
// memtables' worth (memtable.Pool).
const memPoolChunks = -1

// DB is an open database. Open one with Open and release it with Close.
type DB struct {
	opts  *Options
	log   *slog.Logger
	store storage.Storage
	// backend is store without the read-only guard (storage.ReadOnly) a
	// read-only handle reads through: where Metrics finds the backend's
	// request counts (storage.RequestMetrics).
	backend storage.Storage
	// traits are the backend's (storage.TraitsOf), resolved once by Open:
	// Remote sets defaults (Options.withStorageDefaults), LockFree makes
	// writers fence each other instead of relying on Lock.
	traits storage.Traits
	// objectCache is the disk cache of SSTables (Options.ObjectCacheDir)
	// that store reads through, or nil.
	objectCache *diskcache.Cache

	ownsFS  bool
	lock    io.Closer
	clock   *clock.Monotonic
	cache   *sstable.Cache
	metrics metricsCounters
	// compactionReadAhead is sstable.ReaderOptions.CompactionReadAhead
	// (readTuning).
	compactionReadAhead int
	// readAheadAfter is sstable.ReaderOptions.ReadAheadAfter: on a local
	// directory an iterator reads ahead only once a scan is long.
	readAheadAfter int
	// localTables is sstable.ReaderOptions.IndependentMisses: tables in a
	// local directory, where a block read is a page-cache copy, so
	// concurrent misses of one block need not share one read.
	localTables bool
	// memPool recycles the arena chunks (records and index) of released
	// memtables (up to one memtable's worth, memPoolChunks) for new ones
	// (newMemtable); Close empties it.
	memPool *memtable.Pool

	// Commit pipeline (db_write.go). commitMu is held by the leader of a
	// commit group; it also guards logWriter, logNum and lastSeq, the last
	// sequence number logged. queueMu guards queue, spareQueue and leading
	// (a leader is running or promoted). pub orders the logged batches'
	// publication (db_write_publish.go).
	commitMu   sync.Mutex
	queueMu    sync.Mutex
	queue      []*commitWaiter
	spareQueue []*commitWaiter
	leading    bool
	// committers counts the calls inside commit and procs is GOMAXPROCS
	// at Open: a waiter spins on its processor only while every committer
	// can have one (commitWaiter.await).
	committers atomic.Int32
	procs      int32
	pub        publishQueue
	logWriter  *wal.Writer
	logNum     uint64
	walRot     walRotation // the spare segment and running seal syncs (db_wal.go)
	walBuf     []byte
	condOv     condOverlay  // the leader's condition state (cond_eval.go)
	recent     recentWrites // writes logged by key hash (cond_recent.go)
	lastSeq    uint64
	slowdown   slowdownState // level-0 write delay (db_write_slowdown.go)
	room       roomGrant     // the last go-ahead (db_write_room.go)
	// roomEpoch is raised, under mu, by a background error and by Close:
	// both revoke db.room.
	roomEpoch atomic.Uint64
	// visibleSeq is the highest sequence number up to which every batch is
	// fully applied; readers see rows up to it.
	visibleSeq atomic.Uint64

	// manifestMu serialises version changes (flush, compaction) and the
	// manifest writes that record them.
	manifestMu  sync.Mutex
	manifestNum uint64
	minLogNum   uint64      // WAL segments below it are flushed
	epoch       uint64      // writer epoch recorded in our manifest versions
	mergeName   string      // merge operator name recorded in our manifest versions
	mergeCache  *mergeCache // resolved counters (merge_cache.go); nil without an operator
	flushMemo   *flushMemo  // states the last flush left (flush_memo.go); flushLoop alone uses it

	// mu guards the fields below; cond is signalled whenever a flush or
	// compaction finishes or the DB closes.
	mu          sync.Mutex
	cond        *sync.Cond
	mem         *memtable.Memtable
	imm         []*memtable.Memtable // oldest first
	current     *version
	nextFileNum uint64
	snapshots   map[*Snapshot]struct{}
	closed      bool
	bgErr       error

	// Compaction scheduling state, guarded by mu.
	running            []compaction.InProgress
	runningCompactions int
	manualCompactions  int // > 0 pauses background picking
	cursor             [compaction.NumLevels][]byte
	idleRequested      uint64 // generation asked for by WaitForCompactions
	idleSeen           uint64 // generation at which the scheduler found nothing
	filters            []compaction.Filter

	readState atomic.Pointer[readState]

	flushKick chan struct{}
	compKick  chan struct{}
	bgDone    sync.WaitGroup
	closing   chan struct{}
	// closeCtx is cancelled by Close, ending running compactions early.
	closeCtx     context.Context
	closeCancel  context.CancelFunc
	follow       *follower // a read-only handle's state; nil for a writer
	walGC        walGC     // a writer's collection of old WAL segments
	graceMu      sync.Mutex
	graceDeletes []graceDelete
	obsolete     obsoleteFiles // a writer's removal of obsolete files
	// manualWG counts Compact/ReclaimExpired calls in progress; Close
	// waits for them.
	manualWG sync.WaitGroup
}

// Open opens the database in directory dir, creating it if it does not exist.
// opts may be nil for the documented defaults. A directory already open for
// writing by another process or another DB in this process fails with an
// error wrapping ErrLocked. With Options.ReadOnly nothing is created or
// written (see ReadOnly): a location holding no database fails with an
// error wrapping fs.ErrNotExist.
func Open(dir string, opts *Options) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	db := &DB{
		opts:      o,
		procs:     int32(runtime.GOMAXPROCS(0)),
		log:       o.Logger,
		snapshots: make(map[*Snapshot]struct{}),
		flushKick: make(chan struct{}, 1),
		compKick:  make(chan struct{}, 1),
		closing:   make(chan struct{}),
		memPool:   memtable.NewPool(o.MemtableSize, memPoolChunks),
	}
	db.cond = sync.NewCond(&db.mu)
	db.closeCtx, db.closeCancel = context.WithCancel(context.Background())
	for _, f := range o.CompactionFilters {
		db.filters = append(db.filters, filterAdapter{f})
	}
	if o.Storage != nil {
		db.store = o.Storage
	} else {
		st, err := openLocation(db.closeCtx, dir, o.ReadOnly)
		if err != nil {
			return nil, fmt.Errorf("mayfly: open %s: %w", dir, err)
		}
		db.store, db.ownsFS = st, true
	}
	if o.ObjectCacheDir != "" {
		cache, err := diskcache.New(db.store, o.ObjectCacheDir, o.ObjectCacheBytes, nil)
		if err != nil {
			db.closeStore()
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		db.store, db.objectCache = cache, cache
	}
	db.traits = storage.TraitsOf(db.store)
	if _, fences := storage.As[storage.LogFencer](db.store); db.traits.LockFree && !fences {
		db.closeStore()
		return nil, fmt.Errorf("%w: Options.Storage is lock-free (storage.Traits) but fences no log (storage.LogFencer)", ErrInvalidOptions)
	}
	db.backend = db.store
	if o.ReadOnly {
		// Every write a bug might attempt is refused, not performed.
		db.store = storage.ReadOnly(db.store)
	}
	rt := o.withStorageDefaults(db.traits)
	db.compactionReadAhead, db.readAheadAfter, db.localTables = rt.compactionReadAhead, rt.readAheadAfter, rt.independentMisses
	src := o.Clock
	if src == nil {
		db.clock = clock.NewSystem()
	} else {
		db.clock = clock.NewMonotonic(src.NowMillis)
	}
	if o.BlockCacheSize > 0 {
		db.cache = sstable.NewCache(o.BlockCacheSize)
	}
	// A read-only handle takes no lock: it changes nothing, so it needs no
	// exclusion, and it reads beside a live writer (openReadOnly).
	var lock io.Closer = nopCloser{}
	if !o.ReadOnly {
		lock, err = db.store.Lock(true)
	}
	if err != nil {
		db.closeStore()
		return nil, fmt.Errorf("mayfly: open %s: %w", dir, err)
	}
	db.lock = lock
	load := db.recover
	if o.ReadOnly {
		db.follow = newFollower(o)
		load = db.openReadOnly
	}
	if err := load(); err != nil {
		if errors.Is(err, errNoDatabase) {
			err = fmt.Errorf("mayfly: open %s: %w", dir, err)
		}
		db.mu.Lock()
		db.closed = true
		db.publishReadState()
		db.releaseMemtables()
		db.mu.Unlock()
		db.follow.release()
		db.memPool.Close()
		db.releaseVersion()
		db.lock.Close()
		db.closeStore()
		return nil, err
	}
	if !o.ReadOnly {
		db.startObsoleteLoop()
		db.bgDone.Add(2)
		go db.flushLoop()
		go db.compactionLoop()
		db.maybeScheduleCompaction()
	} else if o.FollowInterval > 0 {
		db.bgDone.Add(1)
		go db.followLoop()
	}
	return db, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

func (db *DB) closeStore() {
	if db.ownsFS {
		db.store.Close()
	}
}

func (db *DB) releaseVersion() {
	if db.current != nil {
		db.current.unref()
		db.current = nil
	}
}

// Close syncs the WAL, stops background work (cancelling running
// compactions, which leave the database as it was) and releases every
// resource. Unflushed writes stay in the WAL and are recovered by the next
// Open. Snapshots return ErrClosed afterwards; so does an iterator still
// open, whose every move returns false, and whose Close releases what it
// pinned. Close returns ErrClosed if called twice.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	db.closed = true
	db.roomEpoch.Add(1)
	db.cond.Broadcast()
	db.mu.Unlock()
	close(db.closing)
	db.closeCancel()
	db.bgDone.Wait()
	db.manualWG.Wait()

	var errs []error
	db.commitMu.Lock()
	// Writers still applying their batches finish before the memtables go;
	// a failure among them is the background error, reported by those
	// writers.
	_ = db.pub.wait()
	if db.logWriter != nil {
		// After a failed write the WAL writer's error is sticky: Sync and
		// Close report the same failure, which Close reports once.
		serr := db.logWriter.Sync()
		cerr := db.logWriter.Close()
		if serr != nil && errors.Is(cerr, serr) {
			cerr = nil
		}
		errs = append(errs, serr, cerr)
		db.logWriter = nil
	}
	errs = append(errs, db.closeWALRotation())
	db.commitMu.Unlock()

	db.manifestMu.Lock()
	db.mu.Lock()
	db.publishReadState() // closed: retires the read state
	db.releaseVersion()
	db.releaseMemtables()
	db.mu.Unlock()
	db.follow.release()
	db.manifestMu.Unlock()
	// The tables the last version held are queued by now; tables an open
	// iterator still holds are removed inline when it lets go.
	db.stopObsoleteLoop()
	// Memtables an open iterator still holds free their chunks when it
	// lets go; the pool keeps nothing past here.
	db.memPool.Close()
	// Cached blocks live outside the Go heap: give them back (blocks that
	// open iterators hold are freed when those release them).
	db.cache.Close()
	errs = append(errs, db.lock.Close())
	if db.ownsFS {
		errs = append(errs, db.store.Close())
	}
	return errors.Join(errs...)
}

// readState is what a read needs: the memtables and a version. The DB
// publishes a new one whenever any of them changes; readers take a
// reference without locking. A read state holds a reference on its version
// and on each of its memtables, dropped when its own last reference is
// released: rows a reader got from it (which may alias a memtable's
// off-heap arena) are valid until the reader calls release, and no longer.
type readState struct {
	refs atomic.Int32
	mem  *memtable.Memtable
	imm  []*memtable.Memtable // newest first
	v    *version
}

func (rs *readState) release() {
	if rs.refs.Add(-1) == 0 {
		rs.v.unref()
		rs.mem.Unref()
		for _, m := range rs.imm {
			m.Unref()
		}
	}
}

// loadReadStateSeq returns the current read state and the visible sequence
// number as one consistent pair: every row with a sequence number up to seq
// is in the state's memtables or tables. (Loading the sequence first could
// pair it with a state installed later, after a compaction dropped a version
// the sequence number should still see.)
func (db *DB) loadReadStateSeq() (*readState, uint64, error) {
	for {
		rs, err := db.loadReadState()
		if err != nil {
			return nil, 0, err
		}
		seq := db.visibleSeq.Load()
		if db.readState.Load() == rs {
			return rs, seq, nil
		}
		rs.release() // a rotation or compaction raced us; take the new state
	}
}

// loadReadState returns the current read state with a reference the caller
// must release.
func (db *DB) loadReadState() (*readState, error) {
	for {
		rs := db.readState.Load()
		if rs == nil {
			return nil, ErrClosed
		}
		n := rs.refs.Load()
		if n <= 0 {
			continue // being retired: a newer one is already published
		}
		if rs.refs.CompareAndSwap(n, n+1) {
			return rs, nil
		}
	}
}

// publishReadState replaces the read state after mem, imm or current
// changed. The caller holds db.mu.
func (db *DB) publishReadState() {
	var next *readState
	if !db.closed {
		next = &readState{mem: db.mem, v: db.current}
		next.imm = make([]*memtable.Memtable, len(db.imm))
		for i, m := range db.imm {
			next.imm[len(db.imm)-1-i] = m
			m.Ref()
		}
		next.mem.Ref()
		next.v.ref()
		next.refs.Store(1)
	}
	if old := db.readState.Swap(next); old != nil {
		old.release()
	}
}

// newMemtable returns an empty memtable for WAL segment logNum whose arena
// comes from the DB's chunk pool, with a whole-key filter sized for
// MemtableSize.
func (db *DB) newMemtable(logNum uint64) *memtable.Memtable {
	return memtable.NewFiltered(logNum, db.memPool, db.opts.MemtableSize)
}

// setMemtables makes mem the active memtable and imm (oldest first) the
// frozen ones of a read-only handle, which are its tail's. The DB takes a
// reference on each memtable of imm and adopts the one New gave mem; it drops
// its references on the memtables it held before. The caller holds db.mu
// and publishes a read state afterwards.
func (db *DB) setMemtables(mem *memtable.Memtable, imm []*memtable.Memtable) {
	for _, m := range imm {
		m.Ref()
	}
	db.releaseMemtables()
	db.mem, db.imm = mem, imm
}

// releaseMemtables drops the DB's references on its memtables (their arenas
// are freed once no read state or flush holds them either) and forgets
// them. The caller holds db.mu.
func (db *DB) releaseMemtables() {
	if db.mem != nil {
		db.mem.Unref()
		db.mem = nil
	}
	for _, m := range db.imm {
		m.Unref()
	}
	db.imm = nil
}

// allocFileNum returns a new, unused file number.
func (db *DB) allocFileNum() uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := db.nextFileNum
	db.nextFileNum++
	return n
}

// setBackgroundError puts the DB in its error state (the first error is
// kept: later writes return it) and returns err wrapped in ErrBackground,
// so that the write that met the failure reports it as later writes do.
func (db *DB) setBackgroundError(err error) error {
	wrapped := fmt.Errorf("%w: %w", ErrBackground, err)
	db.mu.Lock()
	if db.bgErr == nil {
		db.bgErr = wrapped
		db.roomEpoch.Add(1)
		db.log.Error("mayfly: background error; writes are refused until reopen", "err", err)
		db.opts.EventListener.backgroundError(db.bgErr)
	}
	db.cond.Broadcast()
	db.mu.Unlock()
	return wrapped
}
