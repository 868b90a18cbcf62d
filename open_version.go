package mayfly

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
)

// The first stage of Open, for a writer and a read-only handle alike: load
// the newest manifest version and open the tables it lists, refusing a
// version that cannot be the newest one a writer wrote.

// repairHint ends the errors of an Open that found the manifest missing or
// unreadable.
const repairHint = "run `mayfly repair DIR` (mayfly.Repair) to rebuild the manifest from the tables and WAL, " +
	"which moves what it cannot read aside under lost/"

// loadVersion loads the newest manifest version into the DB (counters,
// clock high-water mark, writer epoch, and current, the version of its
// opened tables) and returns it with its number. A location without any
// version is a new database, which gets an empty state, unless tables or
// WAL segments show that the manifest was lost; a read-only handle refuses
// a location holding none of them (errNoDatabase).
func (db *DB) loadVersion() (*manifest.State, uint64, error) {
	st, num, skipped, err := manifest.Load(db.store)
	if err != nil {
		if errors.Is(err, ErrCorruption) {
			return nil, 0, fmt.Errorf("mayfly: load manifest: %w; %s", err, repairHint)
		}
		return nil, 0, fmt.Errorf("mayfly: load manifest: %w", err)
	}
	if len(skipped) > 0 {
		// Versions are created atomically, so an unreadable newest version
		// is damage, not a torn write. Falling back to an older one would
		// forget tables and WAL segments the newer one accounted for (and
		// orphan cleanup would then delete live data), so refuse to open.
		return nil, 0, fmt.Errorf("mayfly: newest manifest version is unreadable: %w; %s", errors.Join(skipped...), repairHint)
	}
	if st == nil {
		if db.opts.ReadOnly {
			if err := db.checkManifestMoved(); err != nil {
				return nil, 0, err
			}
		}
		if err := db.checkNoManifestNeeded(); err != nil {
			return nil, 0, err
		}
		if db.opts.ReadOnly {
			// No version, no table, no WAL segment: a writer's Open writes
			// a manifest version before anything else, so even a database
			// never written to has one. This is not a database.
			return nil, 0, errNoDatabase
		}
		st = &manifest.State{NextFileNum: 1}
	}
	if err := db.checkMergeOperator(st.MergeOperator); err != nil {
		return nil, 0, err
	}
	db.manifestNum = num
	db.nextFileNum = max(st.NextFileNum, 1)
	db.lastSeq = st.LastSeq
	db.minLogNum = st.MinLogNum
	db.epoch = st.WriterEpoch
	db.clock.Observe(st.ClockHWM)

	levels, err := db.openTables(st)
	if err != nil {
		return nil, 0, err
	}
	db.current = newVersion(levels)
	return st, num, nil
}

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

// unflushedSegments lists the WAL segments at or above st.MinLogNum and
// refuses them if the first one is missing (checkFirstLogSegment); version
// is the number of the manifest version st was loaded from.
func (db *DB) unflushedSegments(st *manifest.State, version uint64) ([]uint64, error) {
	segs, err := db.logSegments(st.MinLogNum)
	if err != nil {
		return nil, err
	}
	if err := checkFirstLogSegment(st, version, segs); err != nil {
		return nil, err
	}
	return segs, nil
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
	newest, err := db.newestManifestVersion()
	if err != nil {
		return err
	}
	db.manifestNum = max(db.manifestNum, newest)
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
	if a, ok := f.(storage.RandomReadAdviser); ok {
		a.AdviseRandomReads() // blocks are read one by one or in read-ahead windows
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
