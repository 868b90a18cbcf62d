package compaction

import (
	"bytes"
	"slices"

	"github.com/mayflydb/mayfly/format"
)

// PickAuto returns the most urgent background compaction, or nil when
// nothing needs doing or everything that does conflicts with a running one.
// Order: whole-file drops (a manifest edit that only shrinks the levels, so
// it comes before anything that would read those tables), level scores >= 1
// (highest first), superseded rows in level 0 (pickShadowed), expired
// bytes, periodic compaction.
func PickAuto(v *Levels, o *PickerOptions, env *Env) *Pick {
	if p := PickDrops(v, env); p != nil {
		return p
	}
	scores := Scores(v, o, env.Now)
	levels := make([]int, 0, Bottom)
	for l := 0; l < Bottom; l++ {
		if scores[l] >= 1 {
			levels = append(levels, l)
		}
	}
	slices.SortStableFunc(levels, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return 0
	})
	for _, l := range levels {
		var p *Pick
		if l == 0 {
			p = pickL0(v, o, env, true)
		} else {
			p = pickLevel(v, l, env)
		}
		if p != nil {
			p.Score = scores[l]
			return p
		}
	}
	if p := pickShadowed(v, o, env); p != nil {
		return p
	}
	if p := pickExpired(v, o, env); p != nil {
		return p
	}
	return pickPeriodic(v, o, env)
}

// pickL0 moves the level-0 tables that can go down without a rewrite
// (pickL0Move) or, when there are none, compacts every level-0 table into
// the base level; with merge, a merge within level 0 (pickL0Merge) comes
// before the latter. A level 0 that would rewrite more than two slices'
// worth of the base level is split into slices instead, and its slices
// then go down one at a time (slice.go). The expired-bytes and
// superseded-rows picks pass merge false: they compact level 0 to drop or
// fold rows against the base level.
func pickL0(v *Levels, o *PickerOptions, env *Env, merge bool) *Pick {
	if len(v[0]) == 0 {
		return nil
	}
	if sl := l0Slices(v[0]); len(sl) >= 2 && sliceWorthIt(v, o) {
		return pickL0Slice(v, o, sl, env, merge)
	}
	for i, t := range v[0] {
		// Newer L0 tables must not pass older ones still being compacted;
		// they may merge among themselves meanwhile.
		if t.Compacting {
			if merge && i >= ShortLivedL0Limit(o) {
				return pickL0Merge(v, o, v[0][:i], env)
			}
			return nil
		}
	}
	_, base := Targets(v, o)
	if p := pickL0Move(v, o, base, env); p != nil {
		return p
	}
	lo, hi := keyRange(v[0])
	p := &Pick{Kind: KindL0, Inputs: []Input{{Level: 0, Tables: slices.Clone(v[0])}}, OutputLevel: base}
	over := overlapping(v[base], lo, hi)
	if merge && mergeFirst(v, o, over, base) {
		if m := pickL0Merge(v, o, v[0], env); m != nil {
			return m
		}
	}
	if cuts := sliceCuts(over, o); cuts != nil {
		return finish(v, &Pick{Kind: KindL0Split, Inputs: p.Inputs, OutputLevel: 0, Cuts: cuts}, env)
	}
	if anyCompacting(over) {
		return nil
	}
	if len(over) > 0 {
		p.Inputs = append(p.Inputs, Input{Level: base, Tables: over})
	}
	return finish(v, p, env)
}

// mergeFirst reports whether level 0 should merge among itself before it
// goes to base, the base level, whose tables over it overlaps. A level-0
// compaction into the base level reads and rewrites every base table its
// key range overlaps; when those hold more than LevelSizeRatio times level
// 0's bytes (random keys over a base level much larger than a few
// flushes), each flushed byte would cost more than a level's fanout of
// rewriting. So level 0 goes down once its bytes reach the base overlap
// over LevelSizeRatio, or LBaseMaxBytes, and merges until then (RFC 0004,
// "Level-0 merges"). While the base level is the bottom level, the bound is
// the base overlap over L0BottomRatio instead (when that is the smaller
// ratio), counting only the bytes of rows that may overwrite a base row,
// and level 0 as a whole goes down at the base overlap over
// L0NewKeyRatio: see L0BottomRatio and L0NewKeyRatio.
func mergeFirst(v *Levels, o *PickerOptions, over []*Table, base int) bool {
	if o.LevelSizeRatio <= 0 {
		return false
	}
	l0Bytes := tableBytes(v[0])
	if l0Bytes >= o.LBaseMaxBytes {
		return false
	}
	overBytes := float64(tableBytes(over))
	if base != Bottom {
		return overBytes > o.LevelSizeRatio*float64(l0Bytes)
	}
	ratio := min(o.LevelSizeRatio, L0BottomRatio)
	return overBytes > ratio*overwritingBytes(v[0]) && overBytes > L0NewKeyRatio*float64(l0Bytes)
}

// overwritingBytes estimates the bytes of the rows of tables that may
// overwrite a row beneath: each table's bytes less the share of its rows
// known to be their key's first version (Table.NewKeys).
func overwritingBytes(tables []*Table) float64 {
	var b float64
	for _, t := range tables {
		size := float64(t.Meta.Size)
		if rows := t.Meta.NumRows; rows > 0 && t.NewKeys > 0 {
			size *= 1 - float64(min(t.NewKeys, rows))/float64(rows)
		}
		b += size
	}
	return b
}

// L0BottomRatio replaces LevelSizeRatio in mergeFirst while the base level
// is the bottom level (a database under LevelSizeRatio times
// LBaseMaxBytes): level 0 merges among itself until its bytes reach the
// base overlap over this ratio. Rows in the bottom level are not compacted
// further, so a descent's cost is its rewrite of the base tables beneath
// level 0, paid again by every descent; fewer, larger descents pay it less
// often, for the merges' rewrites of level 0's own, smaller bytes. The
// ratio's lower bound is space: a row level 0 holds over an older version
// in the base level counts twice on disk, so level 0 adds at most
// 1/L0BottomRatio of the base bytes it overlaps (RFC 0004, "Level-0
// merges", on the bottom level).
const L0BottomRatio = 5

// L0NewKeyRatio bounds level 0 while the base level is the bottom level
// when its rows are new keys: rows a conditional insert proved to be their
// key's first version (Table.NewKeys) overwrite nothing, so they add no
// space amplification, and L0BottomRatio counts only the others. Level 0
// then merges among itself until its bytes reach the base overlap over
// this ratio, which makes each descent carry as many bytes as it rewrites
// (RFC 0004, "Level-0 merges", on new keys).
const L0NewKeyRatio = 1

// pickL0Merge returns a compaction into one level-0 table of a run of the
// tables in newest (a prefix of level 0, none of it being compacted), or
// nil if fewer than two qualify. pickL0 asks for one
// when mergeFirst says so, and when ShortLivedL0Limit tables have gathered
// above older level-0 tables being compacted into the base level (newest
// is then those tables), so that flushes made meanwhile do not pile up
// into the write slowdown; sooner, the merges would only add to the bytes
// a load writes.
//
// The run merged is the newest table and each older one while it is at
// most twice the run's bytes so far (at least two tables), so that a large
// merged table is not rewritten for every few flushes; it stops before a
// short-lived table, which waits for its whole-file drop. A contiguous run
// from the newest keeps level 0 ordered: for every key, the run's versions
// are newer than those of the older tables left below it, and the output,
// whose largest sequence number is the run's, sorts before them. The
// output is one table (the engine does not split it), so each merge takes
// at least one file off level 0's count.
func pickL0Merge(v *Levels, o *PickerOptions, newest []*Table, env *Env) *Pick {
	var run []*Table
	var runBytes int64
	for _, t := range newest {
		if shortLived(t.Meta, o) || len(run) >= 2 && int64(t.Meta.Size) > 2*runBytes {
			break
		}
		run = append(run, t)
		runBytes += int64(t.Meta.Size)
	}
	if len(run) < 2 {
		return nil
	}
	p := finish(v, &Pick{Kind: KindL0Merge, Inputs: []Input{{Level: 0, Tables: run}}, OutputLevel: 0}, env)
	if p != nil && p.Bottom && anyOverlap(v[0][len(run):], p.Lo, p.Hi) {
		p.Bottom = false // older level-0 tables lie beneath the output
	}
	return p
}

// pickL0Move returns a trivial move into the base level of every level-0
// table that overlaps no other level-0 table and no base-level table, or nil
// if there is none. Sequential ingest (a bulk load, an append-only key
// space) writes such tables, and rewriting them would only copy bytes: with
// small memtables level 0 fills after a few flushes, and the rewrite then
// competes with flushing for the CPU. Overlapping tables are left to the
// level-0 compaction, which has to read them all anyway.
//
// The move is safe: a moved table shadows nothing wrongly, since no other
// level-0 table holds its keys, the levels between 0 and the base are empty
// (Targets), and the base level stays sorted and disjoint because every
// moved table is disjoint from its tables and from the other moved ones.
// Tables with expired bytes are left to the rewrite, which drops those
// rows, unless the table is short-lived (shortLived): it will be dropped
// whole from the base level as well.
func pickL0Move(v *Levels, o *PickerOptions, base int, env *Env) *Pick {
	var move []*Table
	l0 := v[0]
	for i, t := range l0 {
		lo, hi := t.Meta.SmallestUserKey(), t.Meta.LargestUserKey()
		if anyOverlap(l0[:i], lo, hi) || anyOverlap(l0[i+1:], lo, hi) || anyOverlap(v[base], lo, hi) {
			continue
		}
		if ExpiredBytes(t.Meta, env.Now) > 0 && !shortLived(t.Meta, o) {
			continue
		}
		move = append(move, t)
	}
	if len(move) == 0 {
		return nil
	}
	return finish(v, &Pick{Kind: KindMove, Inputs: []Input{{Level: 0, Tables: move}}, OutputLevel: base}, env)
}

// pickLevel compacts one table of level l (round-robin by key) with what it
// overlaps in level l+1, or moves it down when it overlaps nothing there.
func pickLevel(v *Levels, l int, env *Env) *Pick {
	files := v[l]
	if len(files) == 0 {
		return nil
	}
	start := 0
	if env.Cursor != nil && env.Cursor[l] != nil {
		start, _ = slices.BinarySearchFunc(files, env.Cursor[l], func(t *Table, k []byte) int {
			if bytes.Compare(t.Meta.SmallestUserKey(), k) <= 0 {
				return -1
			}
			return 1
		})
	}
	for i := range files {
		t := files[(start+i)%len(files)]
		if t.Compacting {
			continue
		}
		over := overlapping(v[l+1], t.Meta.SmallestUserKey(), t.Meta.LargestUserKey())
		if anyCompacting(over) {
			continue
		}
		p := &Pick{Kind: KindLevel, Inputs: []Input{{Level: l, Tables: []*Table{t}}}, OutputLevel: l + 1}
		if len(over) > 0 {
			p.Inputs = append(p.Inputs, Input{Level: l + 1, Tables: over})
		} else if ExpiredBytes(t.Meta, env.Now) == 0 {
			p.Kind = KindMove
		}
		if p = finish(v, p, env); p != nil {
			return p
		}
	}
	return nil
}

// PickDrops returns the tables that can be deleted without being read:
// every row a TTL row expired at env.Now, nothing older beneath them, and
// no deadline row above that may still apply to one of their rows
// (deadlineReaches).
func PickDrops(v *Levels, env *Env) *Pick {
	var p *Pick
	for l := range v {
		var tables []*Table
		for i, t := range v[l] {
			if t.Compacting || !AllExpired(t.Meta, env.Now) {
				continue
			}
			lo, hi := t.Meta.SmallestUserKey(), t.Meta.LargestUserKey()
			if l == 0 && anyOverlap(v[0][i+1:], lo, hi) {
				continue // an older L0 table may hold older versions
			}
			if !nothingBelow(v, l, lo, hi) || deadlineReaches(v, l, i, env) {
				continue
			}
			tables = append(tables, t)
		}
		if len(tables) > 0 {
			if p == nil {
				p = &Pick{Kind: KindDrop, Bottom: true}
			}
			p.Inputs = append(p.Inputs, Input{Level: l, Tables: tables})
		}
	}
	return p
}

// deadlineReaches reports whether a deadline row in data newer than table
// i of level l (a memtable, a newer level-0 table, a table of an upper
// level) may apply to one of its rows, whose own deadlines then no longer
// count. A deadline row is written only over a live value, so it can apply
// to a row of the table only if it committed no later than the table's
// latest deadline; the check compares that with the earliest commit time
// among the deadline rows of each newer source (a table's MinTS bounds it
// from below; a compaction that drops an older deadline row under a newer
// one keeps the older commit time, compaction rule 4). A merge operand
// reaches the same rows: it joins only a value live when it committed.
func deadlineReaches(v *Levels, l, i int, env *Env) bool {
	t := v[l][i].Meta
	if env.MemDeadlines && env.MemDeadlineMinTS <= t.MaxExpireTS {
		return true
	}
	lo, hi := t.SmallestUserKey(), t.LargestUserKey()
	for above := 0; above <= l; above++ {
		tables := v[above]
		if above == l {
			if l != 0 {
				break
			}
			tables = tables[:i] // newer level-0 tables
		}
		for _, u := range tables {
			m := u.Meta
			if m.RowFeatures&(format.FlagDeadline|format.FlagMerge) != 0 && m.MinTS <= t.MaxExpireTS && m.Overlaps(lo, hi) {
				return true
			}
		}
	}
	return false
}

// NextDropTS returns the earliest time after now at which a table not
// being compacted becomes all expired (its max_expire_ts + 1), the moment
// PickDrops may first take it; ok is false when no table will. A scheduler
// that wakes then removes whole expired tables when they expire instead of
// at its next periodic pass. Tables already all expired are left out: they
// are dropped at once or blocked (a snapshot, an overlapping older table),
// and a wake-up at a past time would only spin.
func NextDropTS(v *Levels, now int64) (ts int64, ok bool) {
	for l := range v {
		for _, t := range v[l] {
			m := t.Meta
			if t.Compacting || m.NumRows == 0 || m.NumTTLRows != m.NumRows || m.MaxExpireTS < now {
				continue
			}
			if at := m.MaxExpireTS + 1; !ok || at < ts {
				ts, ok = at, true
			}
		}
	}
	return ts, ok
}

// pickExpired rewrites the table with the most expired bytes, if they are at
// least ExpiredBytesRatio of it, into the next level (the bottom level
// rewrites into itself). A table a deadline row above may reach is left
// alone: the rewrite would have to keep the rows that deadline row needs
// (compaction rule 5) and would find the same expired bytes again.
func pickExpired(v *Levels, o *PickerOptions, env *Env) *Pick {
	var best *Table
	bestLevel := -1
	var bestBytes uint64
	for l := range v {
		for i, t := range v[l] {
			if t.Compacting {
				continue
			}
			eb := ExpiredBytes(t.Meta, env.Now)
			if float64(eb) < o.ExpiredBytesRatio*float64(t.Meta.Size) || eb <= bestBytes {
				continue
			}
			if awaitsDrop(v, l, t, o) || deadlineReaches(v, l, i, env) {
				continue
			}
			best, bestLevel, bestBytes = t, l, eb
		}
	}
	if best == nil {
		return nil
	}
	switch {
	case bestLevel == 0:
		p := pickL0(v, o, env, false)
		if p != nil && p.Kind != KindL0Split { // a split stays one: its output is level 0's slices
			p.Kind = KindExpired
		}
		return p
	case bestLevel == Bottom:
		return finish(v, &Pick{Kind: KindExpired, Inputs: []Input{{Level: Bottom, Tables: []*Table{best}}}, OutputLevel: Bottom}, env)
	}
	over := overlapping(v[bestLevel+1], best.Meta.SmallestUserKey(), best.Meta.LargestUserKey())
	if anyCompacting(over) {
		return nil
	}
	p := &Pick{Kind: KindExpired, Inputs: []Input{{Level: bestLevel, Tables: []*Table{best}}}, OutputLevel: bestLevel + 1}
	if len(over) > 0 {
		p.Inputs = append(p.Inputs, Input{Level: bestLevel + 1, Tables: over})
	}
	return finish(v, p, env)
}

// awaitsDrop reports whether table t of level l is better left for a
// whole-file drop than rewritten for its expired bytes: every row is a TTL
// row, nothing lies beneath it in larger levels, and its expiries span at
// most the periodic compaction interval. Such a table leaves the disk
// unread once its last row expires, no later than its first expiry plus the
// interval — the reclamation bound periodic compaction gives anyway —
// while a rewrite would copy its live rows only to drop them a little later.
// (An older overlapping level-0 table may still block the drop; periodic
// compaction then keeps the bound.)
func awaitsDrop(v *Levels, l int, t *Table, o *PickerOptions) bool {
	m := t.Meta
	return o.PeriodicIntervalMillis > 0 && m.NumRows > 0 && m.NumTTLRows == m.NumRows &&
		m.MaxExpireTS-m.MinExpireTS <= o.PeriodicIntervalMillis && nothingBelow(v, l, t.Meta.SmallestUserKey(), t.Meta.LargestUserKey())
}

// pickPeriodic compacts to the bottom the due table whose reclaimable data
// is oldest (RFC 0004: due when its earliest expiry or tombstone is at least
// the periodic interval old).
func pickPeriodic(v *Levels, o *PickerOptions, env *Env) *Pick {
	if o.PeriodicIntervalMillis <= 0 {
		return nil
	}
	var due []struct {
		level int
		t     *Table
		ts    int64
	}
	for l := range v {
		for i, t := range v[l] {
			ts, ok := ReclaimTS(t.Meta)
			if !ok || t.Compacting || ts > env.Now-o.PeriodicIntervalMillis {
				continue
			}
			if deadlineReaches(v, l, i, env) {
				// A deadline row or merge operand above may need its
				// expired rows: a rewrite would keep them, and the table
				// would stay due (as for pickExpired).
				continue
			}
			if env.OldestSnapshotTime != 0 && t.Meta.CompactedTime >= env.OldestSnapshotTime {
				continue // kept for a snapshot; retry once it closes
			}
			due = append(due, struct {
				level int
				t     *Table
				ts    int64
			}{l, t, ts})
		}
	}
	slices.SortFunc(due, func(a, b struct {
		level int
		t     *Table
		ts    int64
	}) int {
		switch {
		case a.ts < b.ts:
			return -1
		case a.ts > b.ts:
			return 1
		}
		return 0
	})
	for _, d := range due {
		if p := ToBottom(v, d.level, d.t, env); p != nil {
			p.Kind = KindPeriodic
			return p
		}
	}
	return nil
}

// ToBottom returns a compaction of table t (at level) down to the bottom
// level: t, plus every table of every larger level overlapping its key
// range, widened until stable. For a level-0 table all overlapping level-0
// tables join too. Nil if a needed table is being compacted.
func ToBottom(v *Levels, level int, t *Table, env *Env) *Pick {
	lo, hi := t.Meta.SmallestUserKey(), t.Meta.LargestUserKey()
	from := level + 1
	if level == 0 {
		from = 0
	}
	for {
		var inputs []Input
		nlo, nhi := lo, hi
		if level > 0 {
			inputs = append(inputs, Input{Level: level, Tables: []*Table{t}})
		}
		for l := from; l < NumLevels; l++ {
			over := overlapping(v[l], lo, hi)
			if len(over) == 0 {
				continue
			}
			inputs = append(inputs, Input{Level: l, Tables: over})
			olo, ohi := keyRange(over)
			if bytes.Compare(olo, nlo) < 0 {
				nlo = olo
			}
			if bytes.Compare(ohi, nhi) > 0 {
				nhi = ohi
			}
		}
		if bytes.Equal(nlo, lo) && bytes.Equal(nhi, hi) {
			return finish(v, &Pick{Kind: KindManual, Inputs: inputs, OutputLevel: Bottom}, env)
		}
		lo, hi = nlo, nhi
	}
}

// PickRange returns a compaction into level out (1 to Bottom) of every
// table of levels 0 to out overlapping [lo, hi] (nil bounds open), widened
// until stable across those levels. Tables of deeper levels stay where they
// are: they hold older data than every input, so the output may lie above
// them. Nil if no table of levels 0 to out overlaps the range or a needed
// table is being compacted.
func PickRange(v *Levels, lo, hi []byte, out int, env *Env) *Pick {
	for {
		var inputs []Input
		nlo, nhi := lo, hi
		for l := 0; l <= out; l++ {
			over := overlapping(v[l], lo, hi)
			if len(over) == 0 {
				continue
			}
			inputs = append(inputs, Input{Level: l, Tables: over})
			olo, ohi := keyRange(over)
			if nlo != nil && bytes.Compare(olo, nlo) < 0 {
				nlo = olo
			}
			if nhi != nil && bytes.Compare(ohi, nhi) > 0 {
				nhi = ohi
			}
		}
		if bytes.Equal(nlo, lo) && bytes.Equal(nhi, hi) {
			if len(inputs) == 0 {
				return nil
			}
			return finish(v, &Pick{Kind: KindManual, Inputs: inputs, OutputLevel: out}, env)
		}
		lo, hi = nlo, nhi
	}
}

// finish fills in the key range and the bottom flag, and rejects a pick that
// touches a table being compacted or writes into a key range another
// compaction is writing in the same level.
func finish(v *Levels, p *Pick, env *Env) *Pick {
	all := p.Tables()
	if len(all) == 0 || anyCompacting(all) {
		return nil
	}
	p.Lo, p.Hi = keyRange(all)
	for _, r := range env.Running {
		if r.OutputLevel == p.OutputLevel && bytes.Compare(r.Lo, p.Hi) <= 0 && bytes.Compare(p.Lo, r.Hi) <= 0 {
			return nil
		}
	}
	p.Bottom = nothingBelow(v, p.OutputLevel, p.Lo, p.Hi)
	return p
}

// nothingBelow reports whether no table in a level larger than l overlaps
// [lo, hi].
func nothingBelow(v *Levels, l int, lo, hi []byte) bool {
	for below := l + 1; below < NumLevels; below++ {
		if anyOverlap(v[below], lo, hi) {
			return false
		}
	}
	return true
}

func overlapping(tables []*Table, lo, hi []byte) []*Table {
	var out []*Table
	for _, t := range tables {
		if t.Meta.Overlaps(lo, hi) {
			out = append(out, t)
		}
	}
	return out
}

// AnyOverlap reports whether any table of any level overlaps [lo, hi].
func AnyOverlap(v *Levels, lo, hi []byte) bool { return OverlapThrough(v, Bottom, lo, hi) }

// OverlapThrough reports whether any table of levels 0 to last overlaps
// [lo, hi].
func OverlapThrough(v *Levels, last int, lo, hi []byte) bool {
	for l := 0; l <= last; l++ {
		if anyOverlap(v[l], lo, hi) {
			return true
		}
	}
	return false
}

func anyOverlap(tables []*Table, lo, hi []byte) bool {
	for _, t := range tables {
		if t.Meta.Overlaps(lo, hi) {
			return true
		}
	}
	return false
}

func anyCompacting(tables []*Table) bool {
	for _, t := range tables {
		if t.Compacting {
			return true
		}
	}
	return false
}

// tableBytes returns the bytes of tables.
func tableBytes(tables []*Table) int64 {
	var n int64
	for _, t := range tables {
		n += int64(t.Meta.Size)
	}
	return n
}

func keyRange(tables []*Table) (lo, hi []byte) {
	for i, t := range tables {
		if s := t.Meta.SmallestUserKey(); i == 0 || bytes.Compare(s, lo) < 0 {
			lo = s
		}
		if l := t.Meta.LargestUserKey(); i == 0 || bytes.Compare(l, hi) > 0 {
			hi = l
		}
	}
	return lo, hi
}
