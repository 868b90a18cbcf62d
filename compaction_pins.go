package mayfly

import (
	"slices"

	"github.com/mayflydb/mayfly/manifest"
)

// What a running compaction holds.
//
// A compaction reads its inputs and, besides them, two things of the read
// state it starts in: the deadline sources above its inputs (memtables and
// tables holding deadline rows or merge operands, deadline_above.go) and,
// when it takes the state beneath its merge operands (compactionBeneath),
// the levels below its output. It holds references on exactly those, and
// on its inputs, for as long as it runs, and not on the whole read state:
// a read state pins every memtable and every table of its version, so a
// compaction of tens of seconds would keep the arena of each memtable
// flushed meanwhile and the file of each table other compactions replaced
// meanwhile, memory and disk the database no longer needs (RFC 0004,
// "What a compaction holds").

// compactionPins is the references a compaction holds; release drops them.
type compactionPins struct {
	src    *deadlineSources
	below  *readState   // its version lists only the levels below the output that are read
	tables []*tableFile // the inputs and the deadline source tables
}

// pinCompactionReads takes the references compaction j holds while it runs
// (see above) from the current read state.
func (db *DB) pinCompactionReads(j *compactionJob) (*compactionPins, error) {
	rs, err := db.loadReadState()
	if err != nil {
		return nil, err
	}
	defer rs.release()
	src := compactionDeadlineSources(rs, j)
	p := &compactionPins{src: src, tables: slices.Concat(src.tables, j.tables())}
	var below [manifest.NumLevels][]*tableFile
	if beneathRead(j.Pick) && db.opts.MergeOperator != nil {
		for l := j.OutputLevel + 1; l < len(below); l++ {
			below[l] = slices.Clone(rs.v.levels[l])
		}
	}
	p.below = &readState{v: newVersion(below)}
	for _, m := range src.mems {
		m.Ref()
	}
	for _, t := range p.tables {
		t.ref()
	}
	return p, nil
}

// release drops the references pinCompactionReads took.
func (p *compactionPins) release() {
	p.below.v.unref()
	for _, m := range p.src.mems {
		m.Unref()
	}
	for _, t := range p.tables {
		t.unref()
	}
}
