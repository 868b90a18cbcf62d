package mayfly

import (
	"bytes"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/sstable"
)

// tableFile is a live SSTable: its manifest entry and an open reader. It is
// reference-counted by the versions that list it; when the last one lets go
// the reader closes, and the file is deleted if no version will ever list it
// again (obsolete).
type tableFile struct {
	// Meta is the manifest entry: key bounds and statistics.
	Meta *manifest.FileMeta
	// compacting is set while a compaction reads the table; guarded by
	// DB.mu. The picker sees it as compaction.Table.Compacting.
	compacting bool
	db         *DB
	reader     *sstable.Reader
	refs       atomic.Int32
	obsolete   atomic.Bool

	// shadows is compaction.Table.Shadows: the rows of older tables this
	// table's rows supersede, counted by the flush that wrote it; 0 for
	// tables written by compactions and for tables opened from the
	// manifest (the count is not recorded on disk).
	shadows uint64
	// newKeys is compaction.Table.NewKeys: how many of the table's rows
	// are their key's first version, counted when a flush or a merge
	// within level 0 wrote it; 0 for other tables and for tables opened
	// from the manifest (the count is not recorded on disk).
	newKeys uint64
}

func (t *tableFile) ref() { t.refs.Add(1) }

func (t *tableFile) unref() {
	if t.refs.Add(-1) != 0 {
		return
	}
	t.reader.Close()
	if t.obsolete.Load() {
		t.db.deleteObsoleteTable(t.Meta.Num)
	}
}

// newTableFile wraps reader r of the table meta describes. It refuses
// bounds that are not internal keys, which the read path and the picker
// take the user keys of.
func newTableFile(db *DB, meta *manifest.FileMeta, r *sstable.Reader) (*tableFile, error) {
	if _, _, _, ok := format.SplitInternalKey(meta.Smallest); !ok {
		return nil, fmt.Errorf("%w: manifest entry for table %d has a bad smallest key", ErrCorruption, meta.Num)
	}
	if _, _, _, ok := format.SplitInternalKey(meta.Largest); !ok {
		return nil, fmt.Errorf("%w: manifest entry for table %d has a bad largest key", ErrCorruption, meta.Num)
	}
	return &tableFile{Meta: meta, db: db, reader: r}, nil
}

// version is an immutable set of live tables per level. Level 0 is ordered
// newest first (by largest sequence number); other levels are sorted by key
// and do not overlap. A version holds a reference on each of its tables and
// is itself reference-counted by readers.
type version struct {
	levels [manifest.NumLevels][]*tableFile
	refs   atomic.Int32
}

func newVersion(levels [manifest.NumLevels][]*tableFile) *version {
	v := &version{levels: levels}
	sortLevels(&v.levels)
	for _, lvl := range v.levels {
		for _, t := range lvl {
			t.ref()
		}
	}
	v.refs.Store(1)
	return v
}

// sortLevels puts level 0 newest first and the other levels in key order.
func sortLevels(levels *[manifest.NumLevels][]*tableFile) {
	slices.SortFunc(levels[0], func(a, b *tableFile) int {
		switch {
		case a.Meta.LargestSeq > b.Meta.LargestSeq:
			return -1
		case a.Meta.LargestSeq < b.Meta.LargestSeq:
			return 1
		}
		return 0
	})
	for l := 1; l < manifest.NumLevels; l++ {
		slices.SortFunc(levels[l], func(a, b *tableFile) int { return bytes.Compare(a.Meta.SmallestUserKey(), b.Meta.SmallestUserKey()) })
	}
}

func (v *version) ref() { v.refs.Add(1) }

func (v *version) unref() {
	if v.refs.Add(-1) != 0 {
		return
	}
	for _, lvl := range v.levels {
		for _, t := range lvl {
			t.unref()
		}
	}
}

// files returns every table of the version.
func (v *version) files() []*tableFile {
	var out []*tableFile
	for _, lvl := range v.levels {
		out = append(out, lvl...)
	}
	return out
}

// findInLevel returns the table of sorted level l that may hold ukey.
func (v *version) findInLevel(l int, ukey []byte) *tableFile {
	files := v.levels[l]
	i, _ := slices.BinarySearchFunc(files, ukey, func(t *tableFile, k []byte) int {
		return bytes.Compare(t.Meta.LargestUserKey(), k)
	})
	if i < len(files) && bytes.Compare(files[i].Meta.SmallestUserKey(), ukey) <= 0 {
		return files[i]
	}
	return nil
}

// versionEdit describes the difference between two versions.
type versionEdit struct {
	added   []addedTable
	deleted map[uint64]bool
	// minLogNum, when non-zero, records that WAL segments below it are
	// fully flushed.
	minLogNum uint64
}

type addedTable struct {
	level int
	table *tableFile
}

// apply returns the levels of v with e applied.
func (e *versionEdit) apply(v *version) [manifest.NumLevels][]*tableFile {
	var levels [manifest.NumLevels][]*tableFile
	for l, lvl := range v.levels {
		for _, t := range lvl {
			if !e.deleted[t.Meta.Num] {
				levels[l] = append(levels[l], t)
			}
		}
	}
	for _, a := range e.added {
		levels[a.level] = append(levels[a.level], a.table)
	}
	sortLevels(&levels)
	return levels
}
