package compaction

import "github.com/mayflydb/mayfly/manifest"

// Level-0 slices (RFC 0004, "Level-0 slices"). A level-0 compaction into
// the base level rewrites every base table level 0 overlaps, and flushes of
// random keys overlap them all: with the whole database in the base level,
// each such compaction wrote a second copy of it while the first was still
// live. When that copy would exceed twice L0SliceBytes, level 0 is first
// split into key-disjoint slices cut at base-table boundaries (a
// KindL0Split, written to level 0), and the slices then go down one at a
// time, each rewriting only the base tables beneath it.

// L0SliceBytes is the base-level bytes one level-0 slice overlaps: a
// level-0 compaction into the base level that would rewrite more than
// twice this many is split first (sliceCuts). An eighth of LBaseMaxBytes,
// so that a base level at its target goes down in eight slices, and a
// small database, whose base level is its bottom, is split too (RFC 0004,
// "Level-0 slices", on the size).
func L0SliceBytes(o *PickerOptions) int64 { return o.LBaseMaxBytes / 8 }

// sliceCuts returns the user keys at which to cut level 0 into slices
// that each overlap about L0SliceBytes of over, the base tables level 0
// overlaps (sorted by key), or nil when over holds at most twice that.
// Each cut is the smallest key of a base table, so the slices' base
// overlaps are disjoint and every base table is rewritten by one slice
// only; a last group under half a slice joins the one before it.
func sliceCuts(over []*Table, o *PickerOptions) [][]byte {
	size := L0SliceBytes(o)
	if size <= 0 || tableBytes(over) <= 2*size {
		return nil
	}
	var cuts [][]byte
	var group int64
	for _, t := range over {
		if group >= size {
			cuts = append(cuts, t.Meta.SmallestUserKey())
			group = 0
		}
		group += int64(t.Meta.Size)
	}
	if len(cuts) > 0 && group < size/2 {
		cuts = cuts[:len(cuts)-1]
	}
	if len(cuts) == 0 {
		return nil
	}
	return cuts
}

// sliceWorthIt reports whether level 0 as a whole overlaps more than twice
// L0SliceBytes of the base level, as when sliceCuts splits it: its slices
// then go down one at a time (pickL0Slice). Below that, key-disjoint
// level-0 tables go down together, so that a base table several of them
// overlap is rewritten once.
func sliceWorthIt(v *Levels, o *PickerOptions) bool {
	_, base := Targets(v, o)
	lo, hi := keyRange(v[0])
	return tableBytes(overlapping(v[base], lo, hi)) > 2*L0SliceBytes(o)
}

// l0Slices returns the longest run of level 0's oldest tables (a suffix of
// l0, which is newest first) that are pairwise key-disjoint, as a split
// leaves them. Flushes of random keys each span the key space, so without
// a split the run is the oldest table alone.
func l0Slices(l0 []*Table) []*Table {
	return l0[len(l0)-SliceRun(l0, func(t *Table) *manifest.FileMeta { return t.Meta }):]
}

// SliceRun is the length of l0Slices for a level 0 of any element type
// (newest first; meta gives each table's metadata). A run of slices is one
// sublevel: a key is in one slice at most, so a read probes one of them,
// and the engine's write stalls count the run as one file. Scores counts
// every file: key-disjoint flushes of sequential keys must still trigger
// their moves.
func SliceRun[T any](l0 []T, meta func(T) *manifest.FileMeta) int {
	start := len(l0)
	for start > 0 {
		lo, hi := meta(l0[start-1]).SmallestUserKey(), meta(l0[start-1]).LargestUserKey()
		overlaps := false
		for _, u := range l0[start:] {
			if meta(u).Overlaps(lo, hi) {
				overlaps = true
				break
			}
		}
		if overlaps {
			break
		}
		start--
	}
	return len(l0) - start
}

// slicesWaiting reports whether level 0 holds slices that go down one at a
// time (l0Slices, sliceWorthIt) and one of them is not going down yet: the
// split was made because level 0 was due to go down, so its slices keep
// level 0's score at 1 until they have, however few files they are.
func slicesWaiting(v *Levels, o *PickerOptions) bool {
	sl := l0Slices(v[0])
	if len(sl) < 2 || !sliceWorthIt(v, o) {
		return false
	}
	for _, t := range sl {
		if !t.Compacting {
			return true
		}
	}
	return false
}

// pickL0Slice compacts one of the slices sl (l0Slices, at least two) into
// the base level with the base tables it overlaps, or moves it there when
// it overlaps none; the oldest that can go first. One slice may go alone:
// no older level-0 table overlaps it (the slices are disjoint and the
// oldest), so every level-0 table left above its keys is newer. While no
// slice can go, the tables above the slices wait, as above a level-0
// compaction, and with merge may merge among themselves
// (pickL0Merge) once ShortLivedL0Limit of them have gathered.
func pickL0Slice(v *Levels, o *PickerOptions, sl []*Table, env *Env, merge bool) *Pick {
	_, base := Targets(v, o)
	for i := len(sl) - 1; i >= 0; i-- {
		t := sl[i]
		if t.Compacting {
			continue
		}
		over := overlapping(v[base], t.Meta.SmallestUserKey(), t.Meta.LargestUserKey())
		if anyCompacting(over) {
			continue
		}
		in := []Input{{Level: 0, Tables: []*Table{t}}}
		kind := KindMove
		if len(over) > 0 || ExpiredBytes(t.Meta, env.Now) > 0 && !shortLived(t.Meta, o) {
			kind = KindL0
		}
		if len(over) > 0 {
			in = append(in, Input{Level: base, Tables: over})
		}
		if p := finish(v, &Pick{Kind: kind, Inputs: in, OutputLevel: base}, env); p != nil {
			return p
		}
	}
	newer := v[0][:len(v[0])-len(sl)]
	for i, t := range newer {
		if t.Compacting {
			newer = newer[:i]
			break
		}
	}
	if merge && len(newer) >= ShortLivedL0Limit(o) {
		return pickL0Merge(v, o, newer, env)
	}
	return nil
}
