package mayfly

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
)

// Object names. No name is a folder prefix of another.
func tableName(num uint64) string { return fmt.Sprintf("sst/%06d.sst", num) }
func logName(num uint64) string   { return fmt.Sprintf("wal/%06d.wal", num) }

// parseNum extracts the number from "dir/NNNNNN.ext"; ok is false for names
// Mayfly did not write.
func parseNum(name, dir, ext string) (uint64, bool) {
	s, found := strings.CutPrefix(name, dir+"/")
	if !found {
		return 0, false
	}
	s, found = strings.CutSuffix(s, ext)
	if !found {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// recover loads the newest manifest, opens its tables, replays the WAL
// segments it does not cover and, unless read-only, flushes what they held
// and starts a fresh WAL segment.
func (db *DB) recover() error {
	st, num, skipped, err := manifest.Load(db.store)
	if err != nil {
		if errors.Is(err, ErrCorruption) {
			return fmt.Errorf("mayfly: load manifest: %w; %s", err, repairHint)
		}
		return fmt.Errorf("mayfly: load manifest: %w", err)
	}
	if len(skipped) > 0 {
		// Versions are created atomically, so an unreadable newest version
		// is damage, not a torn write. Falling back to an older one would
		// forget tables and WAL segments the newer one accounted for (and
		// orphan cleanup would then delete live data), so refuse to open.
		return fmt.Errorf("mayfly: newest manifest version is unreadable: %w; %s", errors.Join(skipped...), repairHint)
	}
	if st == nil && db.opts.ReadOnly {
		if err := db.checkDatabase(); err != nil {
			return err
		}
	}
	if st == nil {
		if err := db.checkNoManifestNeeded(); err != nil {
			return err
		}
		st = &manifest.State{NextFileNum: 1}
	}
	db.manifestNum = num
	db.nextFileNum = max(st.NextFileNum, 1)
	db.lastSeq = st.LastSeq
	db.minLogNum = st.MinLogNum
	db.clock.Observe(st.ClockHWM)

	levels, err := db.openTables(st)
	if err != nil {
		return err
	}
	db.current = newVersion(levels)

	// A read-only handle allocates no number, and its manifestNum must stay
	// the version it loaded (Refresh and openReadOnly look above it).
	if !db.opts.ReadOnly {
		if err := db.scanFileNumbers(); err != nil {
			return err
		}
	}
	segs, err := db.logSegments(st.MinLogNum)
	if err != nil {
		return err
	}
	if err := checkFirstLogSegment(st, num, segs); err != nil {
		return err
	}
	db.epoch = st.WriterEpoch
	// A writer claims the database (takeOver writes a manifest version)
	// only once the WAL has replayed without an error, so that an Open
	// refused for damage changes nothing. On a lock-free backend the claim
	// must come first: it stops a previous writer, whose segments are
	// complete only after it.
	lockFree := db.traits.LockFree
	claimFirst := !db.opts.ReadOnly && lockFree
	if claimFirst {
		if segs, err = db.takeOver(st.MinLogNum); err != nil {
			return err
		}
	}
	if db.opts.ReadOnly {
		// A read-only handle replays the WAL through its tail (below), which
		// later polls continue from; a follower without FollowWAL sees
		// flushed data only.
		segs = nil
	}
	mem := db.newMemtable(0)
	var recovered []*memtable.Memtable
	defer func() {
		// The replayed memtables were never published: on success their
		// rows are in tables (each is released after its flush below), on
		// failure they are dropped.
		for _, m := range recovered {
			if m != nil {
				m.Unref()
			}
		}
		if mem != nil {
			mem.Unref()
		}
	}()
	err = db.replayLogs(segs, func(payload []byte) error {
		br, err := format.NewBatchReader(payload)
		if err != nil {
			return err
		}
		h := br.Header()
		db.clock.Observe(h.CommitTS)
		if h.Count == 0 {
			return nil
		}
		if err := mem.ApplyBatch(payload); err != nil {
			return err
		}
		db.lastSeq = max(db.lastSeq, h.Seq+uint64(h.Count)-1)
		if mem.Size() >= db.opts.MemtableSize {
			recovered = append(recovered, mem)
			mem = db.newMemtable(0)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !mem.Empty() {
		recovered, mem = append(recovered, mem), nil
	}
	if !db.opts.ReadOnly && !claimFirst {
		// The directory is locked: no other writer can add a segment, so
		// the claim finds the segments replayed above.
		if _, err := db.takeOver(st.MinLogNum); err != nil {
			return err
		}
	}
	if !db.opts.ReadOnly {
		db.removeOrphanTables()
	}
	db.visibleSeq.Store(db.lastSeq)

	if db.opts.ReadOnly {
		if db.opts.FollowWAL || db.opts.FollowInterval <= 0 {
			_, lastSeq, err := db.tailWAL(db.minLogNum, db.lastSeq)
			if err != nil {
				return err
			}
			db.lastSeq = lastSeq
			db.visibleSeq.Store(lastSeq)
		}
		db.setMemtables(db.newMemtable(0), db.tail.memtables())
		db.publishReadState()
		return nil
	}

	// Flush what the WAL held, then record that its segments are obsolete.
	var edit versionEdit
	for i, m := range recovered {
		t, err := db.writeL0(m, false)
		if err != nil {
			return err
		}
		m.Unref() // flushed: free its arena before replaying the next
		recovered[i] = nil
		if t != nil {
			edit.added = append(edit.added, addedTable{level: 0, table: t})
		}
	}
	// Record that the replayed segments are obsolete before creating the
	// next one: a crash in between must not leave a torn old segment
	// followed by a newer one.
	num = db.allocFileNum()
	edit.minLogNum = num
	if err := db.logAndApply(&edit); err != nil {
		db.discardTables(tablesOf(edit.added), err)
		return err
	}
	if !lockFree {
		// On a lock-free backend the replayed segments carry the fences
		// that stop a previous writer; they stay (below MinLogNum they are
		// never replayed again).
		for _, seg := range segs {
			db.removeQuietly(logName(seg))
		}
	}
	w, err := db.createLogSegment(num)
	if err != nil {
		return err
	}
	db.logWriter, db.logNum, db.mem = w, num, db.newMemtable(num)
	db.mu.Lock()
	db.publishReadState()
	db.mu.Unlock()
	// Every segment below num is now flushed or never held an acknowledged
	// row: collect what a previous writer left behind.
	db.walGC.first = num
	db.collectWAL()
	return nil
}

func tablesOf(added []addedTable) []*tableFile {
	out := make([]*tableFile, len(added))
	for i, a := range added {
		out[i] = a.table
	}
	return out
}

// repairHint ends the errors of an Open that found the manifest missing or
// unreadable.
const repairHint = "run `mayfly repair DIR` (mayfly.Repair) to rebuild the manifest from the tables and WAL, " +
	"which moves what it cannot read aside under lost/"

// checkNoManifestNeeded is called when no manifest version exists. That is
// a new database only if there is no table and no WAL segment either: the
// first Open writes a manifest version before it creates any file. A table
// or segment without a manifest means the manifest was lost, and opening an
// empty database over them would drop (and, as orphans, delete) their rows,
// so Open fails with an error wrapping ErrCorruption that names the
// manifest directory and one of the files, and changes nothing.
func (db *DB) checkNoManifestNeeded() error {
	for _, dir := range []struct{ name, ext string }{{"sst", ".sst"}, {"wal", ".wal"}} {
		names, err := db.store.List(dir.name)
		if err != nil {
			return err
		}
		var found []string
		for _, name := range names {
			if _, ok := parseNum(name, dir.name, dir.ext); ok {
				found = append(found, name)
			}
		}
		if len(found) > 0 {
			return format.Corruptf(manifest.Dir, 0, "no manifest version, but %s/ holds %d files (%s first): the manifest is lost; %s",
				dir.name, len(found), found[0], repairHint)
		}
	}
	return nil
}

// checkFirstLogSegment refuses a manifest version whose first unflushed
// WAL segment (MinLogNum) is gone while later segments exist. A writer
// names MinLogNum only after creating that segment or before creating any
// later one, and removes a segment only once a manifest version places it
// below MinLogNum; so the state means that a newer manifest version, which
// flushed and collected the segment, was lost (or that the segment itself
// was), and a manifest this old would forget tables and delete them as
// orphans.
func checkFirstLogSegment(st *manifest.State, version uint64, segs []uint64) error {
	if st.MinLogNum == 0 || len(segs) == 0 || segs[0] == st.MinLogNum {
		return nil
	}
	return format.Corruptf(manifest.Dir, 0,
		"version %d says unflushed writes start in WAL segment %s, which is missing while the later segment %s exists "+
			"(a newer manifest version or that segment was lost); %s", version, logName(st.MinLogNum), logName(segs[0]), repairHint)
}

// scanFileNumbers raises nextFileNum and manifestNum past every file
// present, so that no number is ever reused — not even the number of a
// leftover table or an unreadable manifest version.
func (db *DB) scanFileNumbers() error {
	for _, dir := range []struct{ name, ext string }{{"wal", ".wal"}, {"sst", ".sst"}} {
		names, err := db.store.List(dir.name)
		if err != nil {
			return err
		}
		for _, name := range names {
			if n, ok := parseNum(name, dir.name, dir.ext); ok && n >= db.nextFileNum {
				db.nextFileNum = n + 1
			}
		}
	}
	names, err := db.store.List(manifest.Dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if v, ok := manifest.ParseVersionName(name); ok && v > db.manifestNum {
			db.manifestNum = v
		}
	}
	// Through wrappers (the object cache) to the backend: on S3 this is
	// what aborts abandoned multipart uploads.
	if t, ok := storage.As[storage.TempRemover](db.store); ok {
		for _, dir := range []string{"sst", "wal", manifest.Dir} {
			if err := t.RemoveTemps(dir); err != nil {
				db.log.Warn("mayfly: removing temporary files", "dir", dir, "err", err)
			}
		}
	}
	return nil
}

// logSegments returns the numbers of the WAL segments at or above minLog,
// in numeric order.
func (db *DB) logSegments(minLog uint64) ([]uint64, error) {
	names, err := db.store.List("wal")
	if err != nil {
		return nil, err
	}
	var segs []uint64
	for _, name := range names {
		if n, ok := parseNum(name, "wal", ".wal"); ok && n >= minLog {
			segs = append(segs, n)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// takeOver makes this handle the only writer: it writes a manifest version
// with a higher writer epoch (a previous writer's next manifest write then
// fails) and, on backends without locks, fences the WAL segments a previous
// writer may still be appending to.
func (db *DB) takeOver(minLog uint64) ([]uint64, error) {
	db.epoch++
	db.visibleSeq.Store(db.lastSeq)
	if db.traits.LockFree {
		// A writer we fence may still create a few files under numbers from
		// its own counter before it notices; leave it room so that no number
		// is ever used by both.
		db.nextFileNum += fencedWriterGap
	}
	if err := db.logAndApply(&versionEdit{}); err != nil {
		return nil, err
	}
	// List after the claim: a previous writer may have started a segment
	// before it could see the new version, but not after.
	segs, err := db.logSegments(minLog)
	if err != nil {
		return nil, err
	}
	if f, ok := storage.As[storage.LogFencer](db.store); ok && db.traits.LockFree {
		for _, seg := range segs {
			err := f.FenceLog(logName(seg))
			if err != nil && !errors.Is(err, storage.ErrNotExist) {
				return nil, fmt.Errorf("mayfly: fence %s: %w", logName(seg), err)
			}
		}
	}
	return segs, nil
}

// checkFenced returns ErrFenced if a newer manifest version than ours
// exists: another writer has taken over. It costs one LIST, so it runs only
// on lock-free backends, when a new WAL segment starts. manifestMu is held
// across the LIST: a version this DB wrote after reading manifestNum must
// not be taken for another writer's.
func (db *DB) checkFenced() error {
	db.manifestMu.Lock()
	defer db.manifestMu.Unlock()
	return db.checkFencedAbove(db.manifestNum)
}

// checkFencedAbove returns ErrFenced if a manifest version above mine
// exists, on lock-free backends (a local directory is locked instead).
func (db *DB) checkFencedAbove(mine uint64) error {
	if !db.traits.LockFree {
		return nil
	}
	names, err := db.store.List(manifest.Dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if v, ok := manifest.ParseVersionName(name); ok && v > mine {
			return fmt.Errorf("mayfly: manifest version %d was written by another writer: %w", v, ErrFenced)
		}
	}
	return nil
}

// openTableParallelism bounds the tables opened at once at Open: on an
// object store each open costs round trips (footer, index, filter).
const openTableParallelism = 8

// openTables opens every table the manifest lists, several at a time.
func (db *DB) openTables(st *manifest.State) ([manifest.NumLevels][]*tableFile, error) {
	var levels [manifest.NumLevels][]*tableFile
	var g errgroup.Group
	g.SetLimit(openTableParallelism)
	for l, metas := range st.Levels {
		levels[l] = make([]*tableFile, len(metas))
		for i, m := range metas {
			g.Go(func() error {
				t, err := db.openTable(m)
				levels[l][i] = t
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		for _, lvl := range levels {
			for _, t := range lvl {
				if t != nil {
					t.reader.Close()
				}
			}
		}
		return levels, err
	}
	return levels, nil
}

// openTable opens the reader for a manifest entry.
func (db *DB) openTable(m *manifest.FileMeta) (*tableFile, error) {
	f, err := db.store.Open(tableName(m.Num))
	if errors.Is(err, storage.ErrNotExist) {
		// The manifest lists it, so it must exist: a missing table is lost
		// data. The error matches both ErrCorruption and ErrNotExist.
		return nil, fmt.Errorf("mayfly: open table listed in manifest: %w: %w",
			format.Corruptf(tableName(m.Num), 0, "table listed in the manifest does not exist; restore it, or "+
				"run `mayfly repair DIR` (mayfly.Repair) to rebuild the manifest from the tables that remain"), err)
	}
	if err != nil {
		return nil, fmt.Errorf("mayfly: open table listed in manifest: %w", err)
	}
	r, err := sstable.Open(f, sstable.ReaderOptions{Cache: db.cache, FileNum: m.Num, Name: tableName(m.Num),
		ReadAhead: db.opts.ReadAheadSize, CompactionReadAhead: db.compactionReadAhead, ReadAheadAfter: db.readAheadAfter,
		IndependentMisses: db.localTables})
	if err != nil {
		f.Close()
		return nil, err
	}
	// The file must be the table the manifest describes, not another valid
	// table put in its place.
	if p := r.Properties(); p.Size != m.Size || p.NumRows != m.NumRows ||
		!bytes.Equal(p.Smallest, m.Smallest) || !bytes.Equal(p.Largest, m.Largest) {
		r.Close()
		return nil, format.Corruptf(tableName(m.Num), 0,
			"table does not match its manifest entry (size %d/%d, rows %d/%d)", p.Size, m.Size, p.NumRows, m.NumRows)
	}
	t, err := newTableFile(db, m, r)
	if err != nil {
		r.Close()
		return nil, err
	}
	return t, nil
}

// fencedWriterGap is how far a writer taking over a lock-free location
// moves the file-number counter past the previous writer's.
const fencedWriterGap = 1 << 20

// createLogSegment creates WAL segment num. On failure it removes whatever
// it created, so that no empty segment is left between two others.
func (db *DB) createLogSegment(num uint64) (*wal.Writer, error) {
	lw, err := wal.CreateLog(db.store, logName(num))
	if err != nil {
		db.removeQuietly(logName(num))
		return nil, err
	}
	w, err := wal.NewWriter(lw, num)
	if err != nil {
		lw.Close()
		db.removeQuietly(logName(num))
		return nil, err
	}
	db.metrics.walSegmentsCreated.Add(1)
	db.opts.EventListener.walCreated(logName(num))
	return w, nil
}

// removeOrphanTables deletes SSTables no version lists: leftovers of a
// flush or compaction that crashed before its manifest was written. It runs
// only after a manifest version was read (or, for a new database, after
// checkNoManifestNeeded found no table), so a table is deleted only when a
// readable manifest proves it unreferenced.
func (db *DB) removeOrphanTables() {
	names, err := db.store.List("sst")
	if err != nil {
		return
	}
	live := make(map[uint64]bool)
	for _, t := range db.current.files() {
		live[t.Meta.Num] = true
	}
	for _, name := range names {
		if n, ok := parseNum(name, "sst", ".sst"); ok && !live[n] {
			db.log.Info("mayfly: removing orphan table", "file", name)
			db.deleteObsoleteTable(n)
		}
	}
}

func (db *DB) removeQuietly(name string) {
	if err := db.store.Remove(name); err != nil && !errors.Is(err, storage.ErrNotExist) {
		db.log.Warn("mayfly: remove failed", "file", name, "err", err)
	}
}

// deleteObsoleteTable deletes a table no version needs, at once or, with
// Options.ObsoleteFileGracePeriod, once the grace period has passed (so
// followers reading an older version keep working).
func (db *DB) deleteObsoleteTable(num uint64) {
	if g := db.opts.ObsoleteFileGracePeriod; g > 0 {
		db.graceMu.Lock()
		db.graceDeletes = append(db.graceDeletes, graceDelete{name: tableName(num), after: time.Now().Add(g)})
		db.graceMu.Unlock()
		return
	}
	db.removeQuietly(tableName(num))
	db.metrics.tablesDeleted.Add(1)
}

// graceDelete is a file to delete once its grace period has passed. The
// list lives in memory: what a crash forgets, the next Open removes as an
// orphan.
type graceDelete struct {
	name  string
	after time.Time
}

// sweepGraceDeletes deletes the files whose grace period has passed. What
// is still pending at Close is left for the next writer's Open, which
// removes such files as orphans (again after the grace period).
func (db *DB) sweepGraceDeletes() {
	now := time.Now()
	db.graceMu.Lock()
	var due []string
	keep := db.graceDeletes[:0]
	for _, g := range db.graceDeletes {
		if now.After(g.after) {
			due = append(due, g.name)
		} else {
			keep = append(keep, g)
		}
	}
	db.graceDeletes = keep
	db.graceMu.Unlock()
	for _, name := range due {
		db.removeQuietly(name)
		db.metrics.tablesDeleted.Add(1)
	}
	if db.walGC.due(db.clock.NowMillis()) {
		db.collectWAL()
	}
}
