package mayfly

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/merge"
	"github.com/mayflydb/mayfly/manifest"
)

// bottomLevel is the last level of the tree.
const bottomLevel = compaction.Bottom

// compactionCheckPeriod is how often, in real time, the scheduler looks for
// due periodic compactions when nothing else wakes it.
const compactionCheckPeriod = time.Second

func (db *DB) maybeScheduleCompaction() { db.kickCompaction() }

// compactionLoop schedules background compactions: on every kick (a flush,
// a finished compaction, a clock advance, a timer tick, the next table
// expiring whole) it starts as many compactions as the picker finds and the
// concurrency limit allows.
func (db *DB) compactionLoop() {
	defer db.bgDone.Done()
	var g errgroup.Group
	g.SetLimit(db.opts.MaxConcurrentCompactions)
	defer g.Wait()
	ticker := time.NewTicker(compactionCheckPeriod)
	defer ticker.Stop()
	var advanced <-chan struct{}
	if n, ok := db.opts.Clock.(clock.Notifier); ok {
		advanced = n.Notify()
	}
	// A clock.Notifier sends on advanced before every change of its
	// reading, so it wakes the loop at every expiry already; any other
	// clock gets a timer for the next whole-table expiry.
	var dropTimer *time.Timer
	var dropDue <-chan time.Time
	if advanced == nil {
		dropTimer = time.NewTimer(time.Hour)
		dropTimer.Stop()
		defer dropTimer.Stop()
		dropDue = dropTimer.C
	}
	for {
		select {
		case <-db.closing:
			return
		case <-db.compKick:
		case <-ticker.C:
			db.sweepGraceDeletes()
		case <-advanced:
		case <-dropDue:
		}
		db.scheduleCompactions(&g)
		if dropTimer != nil {
			if d, ok := db.nextDropWait(); ok {
				dropTimer.Reset(d)
			} else {
				dropTimer.Stop()
			}
		}
	}
}

// nextDropWait returns how long, by the DB's clock, until the next table
// becomes all expired and may be dropped whole (compaction.NextDropTS).
// Without it a drop would wait for the next flush, compaction or the 1 s
// tick, and under a short-TTL stream that wait is table bytes on disk
// (RFC 0004, "Scores and picking").
func (db *DB) nextDropWait() (time.Duration, bool) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed || db.current == nil {
		return 0, false
	}
	now := db.clock.NowMillis()
	ts, ok := compaction.NextDropTS(db.pickerLevels(), now)
	return time.Duration(ts-now) * time.Millisecond, ok
}

// scheduleCompactions starts background compactions until the picker has
// nothing more or the limit is reached.
func (db *DB) scheduleCompactions(g *errgroup.Group) {
	// The WaitForCompactions requests made before this pass's age check:
	// only those may learn from it that nothing is due. A request made
	// after it (the clock advanced since, say) needs a pass that checks
	// the memtable's age again.
	db.mu.Lock()
	gen := db.idleRequested
	db.mu.Unlock()
	db.maybeRotateByAge()
	for {
		db.mu.Lock()
		if db.closed || db.bgErr != nil || db.opts.DisableAutoCompaction || db.manualCompactions > 0 {
			db.markCompactionIdle(gen)
			db.mu.Unlock()
			return
		}
		if db.runningCompactions >= db.opts.MaxConcurrentCompactions {
			db.mu.Unlock()
			return
		}
		env := db.pickerEnv()
		p := compaction.PickAuto(db.pickerLevels(), db.pickerOpts(), env)
		if p == nil {
			db.markCompactionIdle(gen)
			db.mu.Unlock()
			return
		}
		j := db.startPick(p)
		db.mu.Unlock()
		g.Go(func() error {
			err := db.runPick(db.closeCtx, j, env.Now)
			db.finishPick(j, err)
			db.kickCompaction()
			return nil
		})
	}
}

// markCompactionIdle records that the scheduler found nothing to do for
// the requests up to generation gen (those made before the pass began).
// The caller holds db.mu.
func (db *DB) markCompactionIdle(gen uint64) {
	// With a frozen memtable waiting, the flush's own wake-up of the
	// scheduler is the pass that may declare idleness.
	if db.runningCompactions == 0 && len(db.imm) == 0 && gen > db.idleSeen {
		db.idleSeen = gen
		db.cond.Broadcast()
	}
}

// WaitForCompactions blocks until no flush or background compaction is
// running and none is due at the clock's current time, and the tables they
// replaced that no reader holds are removed. It is how a test with a
// manual clock, or a tool, lets the compactor catch up. It returns ctx's
// error if ctx ends first, and the background error if one occurs.
func (db *DB) WaitForCompactions(ctx context.Context) error {
	if err := db.waitCompactionsIdle(ctx); err != nil {
		return err
	}
	db.waitObsoleteRemoved()
	return nil
}

func (db *DB) waitCompactionsIdle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		db.mu.Lock()
		db.cond.Broadcast()
		db.mu.Unlock()
	})
	defer stop()
	db.mu.Lock()
	defer db.mu.Unlock()
	db.idleRequested++
	gen := db.idleRequested
	for {
		switch {
		case db.closed:
			return ErrClosed
		case db.bgErr != nil:
			return db.bgErr
		case ctx.Err() != nil:
			return ctx.Err()
		case len(db.imm) == 0 && db.idleSeen >= gen:
			return nil
		}
		if len(db.imm) > 0 {
			db.kickFlush()
		}
		db.kickCompaction()
		db.cond.Wait()
	}
}

// compactionJob is a pick together with the engine's tables it names:
// inputs[i] holds the tableFiles of Pick.Inputs[i], in the same order.
type compactionJob struct {
	*compaction.Pick
	inputs [][]*tableFile
}

// tables returns every input table.
func (j *compactionJob) tables() []*tableFile {
	var out []*tableFile
	for _, in := range j.inputs {
		out = append(out, in...)
	}
	return out
}

// startPick maps a pick of db.pickerLevels() back to the current version's
// tables and marks them as being compacted. Caller holds db.mu, and has held
// it since the pick was made, so every table it names is in db.current at
// the level its input gives.
func (db *DB) startPick(p *compaction.Pick) *compactionJob {
	j := &compactionJob{Pick: p, inputs: make([][]*tableFile, len(p.Inputs))}
	for i, in := range p.Inputs {
		byMeta := make(map[*manifest.FileMeta]*tableFile, len(db.current.levels[in.Level]))
		for _, t := range db.current.levels[in.Level] {
			byMeta[t.Meta] = t
		}
		for _, pt := range in.Tables {
			t := byMeta[pt.Meta]
			if t == nil {
				panic(fmt.Sprintf("mayfly: picked table %d is not in level %d of the current version", pt.Meta.Num, in.Level))
			}
			t.compacting = true
			j.inputs[i] = append(j.inputs[i], t)
		}
	}
	db.running = append(db.running, compaction.InProgress{OutputLevel: p.OutputLevel, Lo: p.Lo, Hi: p.Hi})
	db.runningCompactions++
	if p.Kind == compaction.KindLevel || p.Kind == compaction.KindMove {
		l := p.Inputs[0].Level
		db.cursor[l] = p.Inputs[0].Tables[0].Meta.LargestUserKey()
	}
	return j
}

// finishPick undoes startPick and records a failure.
func (db *DB) finishPick(p *compactionJob, err error) {
	db.mu.Lock()
	for _, t := range p.tables() {
		t.compacting = false
	}
	for i, r := range db.running {
		if r.OutputLevel == p.OutputLevel && bytes.Equal(r.Lo, p.Lo) && bytes.Equal(r.Hi, p.Hi) {
			db.running = append(db.running[:i], db.running[i+1:]...)
			break
		}
	}
	db.runningCompactions--
	db.cond.Broadcast()
	db.mu.Unlock()
	if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		db.setBackgroundError(fmt.Errorf("compaction: %w", err))
	}
}

// pickerLevels presents the current version to the picker: each table's
// manifest entry and compacting flag, level by level in the version's
// order. Caller holds db.mu.
func (db *DB) pickerLevels() *compaction.Levels {
	var lv compaction.Levels
	for l, lvl := range db.current.levels {
		views := make([]compaction.Table, len(lvl))
		lv[l] = make([]*compaction.Table, len(lvl))
		for i, t := range lvl {
			views[i] = compaction.Table{Meta: t.Meta, Compacting: t.compacting, Shadows: t.shadows, NewKeys: t.newKeys}
			lv[l][i] = &views[i]
		}
	}
	return &lv
}

func (db *DB) pickerOpts() *compaction.PickerOptions {
	o := db.pickerOptsValue()
	return &o
}

func (db *DB) pickerOptsValue() compaction.PickerOptions {
	return compaction.PickerOptions{
		L0CompactionThreshold:     db.opts.L0CompactionThreshold,
		L0SlowdownWritesThreshold: db.opts.L0SlowdownWritesThreshold,
		LBaseMaxBytes:             db.opts.LBaseMaxBytes,
		LevelSizeRatio:            db.opts.LevelSizeRatio,
		ExpiredBytesRatio:         db.opts.ExpiredBytesRatio,
		ShadowedRatio:             db.opts.L0ShadowedRatio,
		PeriodicIntervalMillis:    db.opts.PeriodicCompactionInterval.Milliseconds(),
		MemtableSize:              db.opts.MemtableSize,
	}
}

// l0StallFiles is level 0's file count as the write path's slowdown and
// stop thresholds see it (compaction.L0Census.StallFiles: short-lived
// tables count for less with memtables smaller than the reference size
// while they are expected to leave by whole-file drops). With short-lived
// tables the count depends on the clock: clockBound is then set and now is
// the reading it was taken at. Caller holds db.mu.
func (db *DB) l0StallFiles() (files int, clockBound bool, now int64) {
	o := db.pickerOptsValue()
	var c compaction.L0Census
	l0 := db.current.levels[0]
	// A run of slices counts as one file: a read probes one of them.
	if n := compaction.SliceRun(l0, func(t *tableFile) *manifest.FileMeta { return t.Meta }); n >= 2 {
		l0 = l0[:len(l0)-n+1]
	}
	for _, t := range l0 {
		c.Add(t.Meta, &o)
	}
	if c.ShortLived == 0 {
		return c.Files, false, 0 // no clock read on the write path without TTL tables
	}
	now = db.clock.NowMillis()
	return c.StallFiles(&o, now), true, now
}

// pickerEnv captures the compaction clock. Caller holds db.mu.
func (db *DB) pickerEnv() *compaction.Env {
	now := db.clock.NowMillis()
	oldest := int64(0)
	for s := range db.snapshots {
		if oldest == 0 || s.now < oldest {
			oldest = s.now
		}
	}
	if oldest != 0 {
		now = min(now, oldest)
	}
	env := &compaction.Env{Now: now, OldestSnapshotTime: oldest, Running: db.running, Cursor: &db.cursor}
	for i := -1; i < len(db.imm); i++ {
		m := db.mem
		if i >= 0 {
			m = db.imm[i]
		}
		if m == nil {
			continue
		}
		if ts, ok := m.DeadlineMinTS(); ok && (!env.MemDeadlines || ts < env.MemDeadlineMinTS) {
			env.MemDeadlines, env.MemDeadlineMinTS = true, ts
		}
	}
	return env
}

// snapshotSeqs returns the open snapshots' sequence numbers, ascending.
// Caller holds db.mu.
func (db *DB) snapshotSeqs() []uint64 {
	seqs := make([]uint64, 0, len(db.snapshots))
	for s := range db.snapshots {
		seqs = append(seqs, s.seq)
	}
	slices.Sort(seqs)
	return seqs
}

// runPick executes a compaction. now is the compaction clock it was picked
// at.
func (db *DB) runPick(ctx context.Context, j *compactionJob, now int64) (err error) {
	start := time.Now()
	p, inputs := j.Pick, j.tables()
	info := CompactionInfo{Kind: p.Kind.String(), OutputLevel: p.OutputLevel, Bottom: p.Bottom, InputTables: len(inputs)}
	ev := db.opts.EventListener
	ev.compactionBegin(info)
	defer func() {
		info.Duration, info.Err = time.Since(start), err
		ev.compactionEnd(info)
	}()
	edit := &versionEdit{deleted: make(map[uint64]bool)}
	for _, t := range inputs {
		edit.deleted[t.Meta.Num] = true
	}
	switch p.Kind {
	case compaction.KindDrop:
		if err := db.logAndApply(edit); err != nil {
			return err
		}
		var n, rows uint64
		for _, t := range inputs {
			n += t.Meta.Size
			rows += t.Meta.NumRows
		}
		info.ExpiredDropped = rows
		db.metrics.wholeFileDrops.Add(uint64(len(inputs)))
		db.metrics.wholeFileDropBytes.Add(n)
		db.metrics.expiredDropped.Add(rows)
		db.log.Info("mayfly: dropped expired tables", "tables", len(inputs), "bytes", n)
		return nil
	case compaction.KindMove:
		for _, t := range inputs {
			edit.added = append(edit.added, addedTable{level: p.OutputLevel, table: t})
		}
		if err := db.logAndApply(edit); err != nil {
			return err
		}
		db.metrics.trivialMoves.Add(uint64(len(inputs)))
		return nil
	}

	var inBytes uint64
	for _, t := range inputs {
		inBytes += t.Meta.Size
	}
	pins, err := db.pinCompactionReads(j)
	if err != nil {
		return err
	}
	m := merge.New(compactionIters(j)...)
	defer func() {
		m.Close()
		pins.release() // after the inputs' iterators are closed
	}()
	db.mu.Lock()
	seqs := db.snapshotSeqs()
	db.mu.Unlock()
	ci := compaction.NewIterator(&ctxIterator{Iterator: m, ctx: ctx}, compaction.Config{
		Snapshots: seqs, Now: now, Bottom: p.Bottom, Level: p.OutputLevel, Filters: db.filters,
		DeadlineAbove: pins.src.fn(), Merger: db.merger(), Below: db.compactionBeneath(pins.below, p),
	})
	splitAt := db.opts.TargetFileSize
	switch p.Kind {
	case compaction.KindL0Merge:
		splitAt = 0 // one table: a merge must take files off level 0
	case compaction.KindL0Split:
		splitAt = 0 // one table per slice: cut at p.Cuts only
	}
	outs, err := db.writeTables(ci, db.bloomBits(p.OutputLevel), splitAt, p.Cuts, nil)
	if err != nil {
		return err
	}
	var outBytes uint64
	for _, t := range outs {
		edit.added = append(edit.added, addedTable{level: p.OutputLevel, table: t})
		outBytes += t.Meta.Size
	}
	if p.OutputLevel == 0 {
		carryNewKeys(p.Inputs, outs)
	}
	if err := db.logAndApply(edit); err != nil {
		db.discardTables(outs, err)
		return err
	}
	s := ci.Stats()
	info.OutputTables, info.BytesRead, info.BytesWritten = len(outs), inBytes, outBytes
	info.ExpiredToTombstone, info.ExpiredDropped, info.TombstonesDropped = s.ExpiredToTombstone, s.ExpiredDropped, s.TombstonesDropped
	db.metrics.compactions.Add(1)
	db.metrics.compactionsByKind[p.Kind].Add(1)
	db.metrics.compactionBytesRead.Add(inBytes)
	db.metrics.compactionBytesWritten.Add(outBytes)
	db.metrics.filterRemoved.Add(s.FilterRemoved)
	db.metrics.filterChanged.Add(s.FilterChanged)
	db.log.Info("mayfly: compacted", "kind", p.Kind.String(), "outputLevel", p.OutputLevel,
		"bottom", p.Bottom, "inputs", len(inputs), "outputs", len(outs),
		"bytesIn", inBytes, "bytesOut", outBytes, "expiredToTombstone", s.ExpiredToTombstone,
		"expiredDropped", s.ExpiredDropped, "tombstonesDropped", s.TombstonesDropped,
		"duration", time.Since(start))
	return nil
}

// runManual waits until pick(levels, env) returns a compaction that does not
// conflict with running ones, then runs it. Background scheduling is paused
// meanwhile. pick returning nil with ok == false means nothing to do.
func (db *DB) runManual(ctx context.Context, pick func(*compaction.Levels, *compaction.Env) (*compaction.Pick, bool)) error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	db.manualWG.Add(1)
	db.mu.Unlock()
	defer db.manualWG.Done()
	// Close cancels the work in progress.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopOnClose := context.AfterFunc(db.closeCtx, cancel)
	defer stopOnClose()
	stop := context.AfterFunc(ctx, func() {
		db.mu.Lock()
		db.cond.Broadcast()
		db.mu.Unlock()
	})
	defer stop()
	db.mu.Lock()
	db.manualCompactions++
	var p *compaction.Pick
	var env *compaction.Env
	for {
		if db.closed {
			db.manualCompactions--
			db.mu.Unlock()
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			db.manualCompactions--
			db.mu.Unlock()
			return err
		}
		env = db.pickerEnv()
		var more bool
		p, more = pick(db.pickerLevels(), env)
		if p != nil || !more {
			break
		}
		db.cond.Wait() // a running compaction holds a table we need
	}
	if p == nil {
		db.manualCompactions--
		db.mu.Unlock()
		return nil
	}
	j := db.startPick(p)
	db.mu.Unlock()
	err := db.runPick(ctx, j, env.Now)
	db.finishPickManual(j)
	db.kickCompaction()
	if err != nil && db.closeCtx.Err() != nil {
		return ErrClosed
	}
	return err
}

func (db *DB) finishPickManual(j *compactionJob) {
	db.finishPick(j, nil)
	db.mu.Lock()
	db.manualCompactions--
	db.cond.Broadcast()
	db.mu.Unlock()
}

// Compact flushes the memtable and rewrites every table holding keys in
// [lo, hi] (nil bounds are open), widened to whole tables, into the bottom
// level, running the compaction filters: shadowed versions go, expired rows
// and tombstones with nothing beneath them are dropped. It returns when the
// result is durable and the tables it replaced that no reader holds are
// removed, or early with ctx's error, leaving the database as it was. It is
// CompactWith with nil CompactOptions.
func (db *DB) Compact(ctx context.Context, lo, hi []byte) error {
	return db.CompactWith(ctx, lo, hi, nil)
}

// CompactOptions control a manual compaction (DB.CompactWith). The zero
// value, like nil, compacts into the bottom level.
type CompactOptions struct {
	// OutputLevel is the level the compaction writes into, 1 to
	// MaxOutputLevel; 0 means MaxOutputLevel, the bottom. Any other value
	// is refused with ErrInvalidOptions. The inputs are the tables of
	// levels 0 to OutputLevel holding keys of the range; tables of deeper
	// levels are neither read nor moved, and while any of them overlaps
	// the output, tombstones and the expiry tombstones of expired rows are
	// kept (they may shadow rows beneath).
	OutputLevel int
}

// MaxOutputLevel is the deepest level of the tree, the largest
// CompactOptions.OutputLevel.
const MaxOutputLevel = bottomLevel

// CompactWith is Compact with options: it flushes the memtable and rewrites
// every table of levels 0 to opts.OutputLevel holding keys in [lo, hi] (nil
// bounds are open), widened to whole tables, into that level, running the
// compaction filters. Apart from what the filters change, every key reads
// the same afterwards. An inverted range or an invalid level fails with
// ErrInvalidOptions and changes nothing; a read-only handle fails with ErrReadOnly. It returns when the result is
// durable, or early with ctx's error, leaving the database as it was.
func (db *DB) CompactWith(ctx context.Context, lo, hi []byte, opts *CompactOptions) error {
	out := bottomLevel
	if opts != nil && opts.OutputLevel != 0 {
		out = opts.OutputLevel
	}
	if out < 1 || out > bottomLevel {
		return fmt.Errorf("%w: CompactOptions.OutputLevel %d is outside 1 to %d", ErrInvalidOptions, opts.OutputLevel, bottomLevel)
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if lo != nil && hi != nil && bytes.Compare(lo, hi) > 0 {
		return fmt.Errorf("%w: Compact range [%q, %q] is inverted", ErrInvalidOptions, lo, hi)
	}
	if err := db.Flush(); err != nil {
		return err
	}
	err := db.runManual(ctx, func(v *compaction.Levels, env *compaction.Env) (*compaction.Pick, bool) {
		if p := compaction.PickRange(v, lo, hi, out, env); p != nil {
			return p, true
		}
		// Either nothing above the output overlaps the range, or a needed
		// table is busy.
		return nil, compaction.OverlapThrough(v, out, lo, hi)
	})
	if err != nil {
		return err
	}
	// What it replaced is gone on return, also when a background
	// compaction did the work while this call waited for its tables.
	db.waitObsoleteRemoved()
	return nil
}

// ReclaimExpired removes expired data from disk now: tables whose rows have
// all expired are dropped without being read, and every table whose
// properties say it holds expired rows or tombstones is compacted to the
// bottom with what lies beneath it. Its cost follows the expired data, not
// the size of the database. Data an open snapshot can still read is kept.
func (db *DB) ReclaimExpired(ctx context.Context) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := db.Flush(); err != nil {
		return err
	}
	err := db.runManual(ctx, func(v *compaction.Levels, env *compaction.Env) (*compaction.Pick, bool) {
		p := compaction.PickDrops(v, env)
		return p, false
	})
	if err != nil {
		return err
	}
	// The candidates are fixed up front, so the work is bounded even if
	// some data must stay for a snapshot.
	db.mu.Lock()
	now := db.pickerEnv().Now
	var candidates []uint64
	for _, lvl := range db.current.levels {
		for _, t := range lvl {
			if (t.Meta.NumTTLRows > 0 && t.Meta.MinExpireTS < now) || t.Meta.NumTombstones > 0 {
				candidates = append(candidates, t.Meta.Num)
			}
		}
	}
	db.mu.Unlock()
	for _, num := range candidates {
		err := db.runManual(ctx, func(v *compaction.Levels, env *compaction.Env) (*compaction.Pick, bool) {
			for l := range v {
				for _, t := range v[l] {
					if t.Meta.Num != num {
						continue
					}
					if t.Compacting {
						return nil, true
					}
					p := compaction.ToBottom(v, l, t, env)
					return p, p == nil
				}
			}
			return nil, false // already compacted away
		})
		if err != nil {
			return err
		}
	}
	// A background compaction may have dropped or rewritten candidates
	// while this call looked: their removal is done on return too.
	db.waitObsoleteRemoved()
	return nil
}

// ctxIterator ends a compaction's input when its context is done.
type ctxIterator struct {
	*merge.Iterator
	ctx   context.Context
	steps int
	err   error
}

func (c *ctxIterator) Next() bool {
	c.steps++
	if c.steps%1024 == 0 {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			return false
		}
	}
	return c.Iterator.Next()
}

func (c *ctxIterator) First() bool {
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return false
	}
	return c.Iterator.First()
}

func (c *ctxIterator) Error() error {
	if c.err != nil {
		return c.err
	}
	return c.Iterator.Error()
}

// compactionIters returns the iterators a compaction of j merges: one per
// level-0 table, and one levelIter per input of a sorted level, which opens
// its tables one at a time.
//
// Why not one iterator per table everywhere: each table iterator reads its
// own copy of the table's index block (sstable.Reader.NewCompactionIter)
// and, once the merge positions it, its first read-ahead window, and holds
// both until the compaction ends, so a compaction into a base level of many
// overlapping tables would hold all their index copies for its whole run; a
// levelIter holds those of the table it reads, and frees each when it moves
// past it (RFC 0004, "Reading the inputs").
func compactionIters(j *compactionJob) []format.Iterator {
	var iters []format.Iterator
	for i, in := range j.Inputs {
		tables := j.inputs[i]
		if in.Level > 0 && len(tables) > 1 && sortedDisjoint(tables) {
			l := newLevelIter(tables, nil, nil)
			l.compaction = true
			iters = append(iters, l)
			continue
		}
		for _, t := range tables {
			iters = append(iters, t.reader.NewCompactionIter())
		}
	}
	return iters
}

// sortedDisjoint reports whether tables are sorted by key and share no user
// key, as a levelIter needs. The tables of a level >= 1 always are; a pick
// whose are not is merged table by table.
func sortedDisjoint(tables []*tableFile) bool {
	for i := 1; i < len(tables); i++ {
		if bytes.Compare(tables[i-1].Meta.LargestUserKey(), tables[i].Meta.SmallestUserKey()) >= 0 {
			return false
		}
	}
	return true
}
