package mayfly

import (
	"math"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/memtable"
)

// Deadline rows above a flush or compaction (compaction rule 5).
//
// A deadline row sets the deadline of the value beneath it, whose own
// expire_ts then no longer counts. A flush or compaction that reads the
// value but not the deadline row (it lies in newer data: a newer memtable
// or a table of an upper level) must not treat the value as expired by its
// own deadline. deadlineAbove builds the check it asks, per key, for an
// expired newest version: does any of the newer sources that hold deadline
// rows hold a version of that key? Sources without deadline rows are left
// out, so a database that never changed a deadline pays nothing; a filter
// false positive only keeps an expired row a little longer. A merge operand
// applies to the value beneath it as a deadline row does, so sources
// holding operands count too (RFC 0010).
//
// Sources are the ones present when the flush or compaction starts. A
// deadline row committed later cannot apply to a row it treats as expired:
// a deadline row is written only over a live value, its commit time is no
// earlier than the compaction's Now (the clock never runs backwards), and a
// row expired at Now was not live then.

// deadlineSources are the newer memtables and tables holding deadline rows.
// A compaction takes only those whose deadline rows may have committed by
// the latest deadline among its inputs (reach): a deadline row applies only
// to a value live when it committed, so a later one cannot apply to any
// input row. The picker's deadlineReaches uses the same bound, so a table
// it rewrites for expired bytes is never kept unchanged by a source it did
// not count (which would pick it again and again).
type deadlineSources struct {
	mems   []*memtable.Memtable
	tables []*tableFile
	reach  int64 // math.MaxInt64: every source counts
}

// check reports whether a version of key may exist in the sources.
func (s *deadlineSources) check(key []byte) bool {
	for _, m := range s.mems {
		if _, ok := m.Get(key, format.MaxSeq); ok {
			return true
		}
	}
	for _, t := range s.tables {
		if !t.Meta.Overlaps(key, key) {
			continue
		}
		if ok, err := t.reader.MayContain(key); ok || err != nil {
			return true // an unreadable filter: assume the key is there
		}
	}
	return false
}

// fn returns the check as a Config.DeadlineAbove, or nil if no source
// holds a deadline row.
func (s *deadlineSources) fn() func([]byte) bool {
	if len(s.mems) == 0 && len(s.tables) == 0 {
		return nil
	}
	return s.check
}

func (s *deadlineSources) addMem(m *memtable.Memtable) {
	if ts, ok := m.DeadlineMinTS(); ok && ts <= s.reach {
		s.mems = append(s.mems, m)
	}
}

func (s *deadlineSources) addTable(t *tableFile, lo, hi []byte) {
	if t.Meta.RowFeatures&(format.FlagDeadline|format.FlagMerge) != 0 && t.Meta.MinTS <= s.reach && t.Meta.Overlaps(lo, hi) {
		s.tables = append(s.tables, t)
	}
}

// flushDeadlineSources returns the sources above memtable m, the oldest
// frozen one: every newer memtable of rs.
func flushDeadlineSources(rs *readState, m *memtable.Memtable) *deadlineSources {
	s := &deadlineSources{reach: math.MaxInt64}
	s.addMem(rs.mem)
	for _, im := range rs.imm {
		if im != m {
			s.addMem(im)
		}
	}
	return s
}

// compactionDeadlineSources returns the sources above compaction j's
// inputs in rs: every memtable and every table that is not an input, of
// level 0 (newer than its level-0 inputs) and of each level above the last
// input level, each if it overlaps the inputs' key range [j.Lo, j.Hi] and
// its deadline rows are early enough to reach an input row. A table of an
// input level that is not an input counts as well: the input tables of a
// deeper level may reach past the key range of that level's inputs, under
// such a table, which is newer than they are. (It holds no key of its own
// level's inputs, whose key ranges it does not overlap, so it asks nothing
// more of them.)
func compactionDeadlineSources(rs *readState, j *compactionJob) *deadlineSources {
	s := &deadlineSources{reach: math.MinInt64}
	last := 0
	isInput := map[*tableFile]bool{}
	var newestL0 uint64 // the largest sequence number of a level-0 input
	for i, in := range j.Inputs {
		last = max(last, in.Level)
		for _, t := range j.inputs[i] {
			isInput[t] = true
			if in.Level == 0 {
				newestL0 = max(newestL0, t.Meta.LargestSeq)
			}
			if t.Meta.NumTTLRows > 0 {
				s.reach = max(s.reach, t.Meta.MaxExpireTS)
			}
			if t.Meta.RowFeatures&format.FlagMerge != 0 {
				// Operands fold into values whose deadline is their
				// window's, which no table statistic bounds (it may come
				// from the state beneath): every source counts.
				s.reach = math.MaxInt64
			}
		}
	}
	s.addMem(rs.mem)
	for _, m := range rs.imm {
		s.addMem(m)
	}
	// Level 0 always: its tables that are not inputs may be newer. Those
	// older than the level-0 inputs (below a level-0 merge's run) are not
	// above them.
	for l := range max(last, 1) {
		for _, t := range rs.v.levels[l] {
			if !isInput[t] && (l > 0 || t.Meta.LargestSeq > newestL0) {
				s.addTable(t, j.Lo, j.Hi)
			}
		}
	}
	return s
}
