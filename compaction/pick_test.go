package compaction

import (
	"slices"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
)

func ttlTable(num uint64, lo, hi string, rows, ttlRows uint64, minExp, maxExp int64) *Table {
	return &Table{
		Meta: withKeys(&manifest.FileMeta{Num: num, TableStats: format.TableStats{Size: 1000, NumRows: rows, NumTTLRows: ttlRows, TTLBytes: 1000 * ttlRows / rows,
			MinExpireTS: minExp, MaxExpireTS: maxExp}}, lo, hi),
	}
}

// withKeys sets m's key bounds to user keys lo and hi and returns m.
func withKeys(m *manifest.FileMeta, lo, hi string) *manifest.FileMeta {
	m.Smallest = format.AppendInternalKey(nil, &format.Row{Key: []byte(lo), Seq: 2})
	m.Largest = format.AppendInternalKey(nil, &format.Row{Key: []byte(hi), Seq: 1})
	return m
}

// sizedTable is a table of 10 rows and size bytes over user keys lo to hi,
// created at now.
func sizedTable(num uint64, lo, hi string, size uint64, now int64) *Table {
	return &Table{Meta: withKeys(&manifest.FileMeta{Num: num, TableStats: format.TableStats{Size: size, NumRows: 10, CreationTime: now}}, lo, hi)}
}

// tableNums returns the file numbers of ts, in order.
func tableNums(ts []*Table) (out []uint64) {
	for _, t := range ts {
		out = append(out, t.Meta.Num)
	}
	return out
}

// pickKind runs PickAuto over level 0 and the bottom level and fails
// unless it picks a compaction of the kind given.
func pickKind(t *testing.T, o *PickerOptions, now int64, l0, bottom []*Table, kind Kind) *Pick {
	t.Helper()
	var v Levels
	v[0], v[Bottom] = l0, bottom
	p := PickAuto(&v, o, &Env{Now: now})
	if p == nil || p.Kind != kind {
		t.Fatalf("picked %+v, want kind %v", p, kind)
	}
	return p
}

var testPickerOpts = PickerOptions{L0CompactionThreshold: 4, LBaseMaxBytes: 1 << 20, LevelSizeRatio: 10,
	ExpiredBytesRatio: 0.25, PeriodicIntervalMillis: 3_600_000}

// TestPickAutoTTLTables: a table of TTL rows only, half expired, with nothing
// beneath it waits for its whole-file drop instead of being rewritten; it is
// dropped, before any size compaction, once every row has expired. With
// other rows in it, something beneath it, or a wide expiry span, the
// expired-bytes rewrite still happens.
func TestPickAutoTTLTables(t *testing.T) {
	const now = 10_000_000
	half := func() *Table { return ttlTable(1, "a", "z", 10, 10, now-500, now+500) }
	cases := []struct {
		name string
		v    func() *Levels
		want Kind
		none bool
	}{
		{name: "TTL-only half expired waits", none: true, v: func() *Levels {
			var v Levels
			v[0] = []*Table{half()}
			return &v
		}},
		{name: "a non-TTL row makes it a rewrite", want: KindExpired, v: func() *Levels {
			var v Levels
			v[0] = []*Table{ttlTable(1, "a", "z", 10, 9, now-500, now+500)}
			return &v
		}},
		{name: "an overlapping table beneath makes it a rewrite", want: KindExpired, v: func() *Levels {
			var v Levels
			v[0] = []*Table{half()}
			v[Bottom] = []*Table{ttlTable(2, "m", "n", 10, 0, 0, 0)}
			return &v
		}},
		{name: "an expiry span over the periodic interval makes it a rewrite", want: KindExpired, v: func() *Levels {
			var v Levels
			v[0] = []*Table{ttlTable(1, "a", "z", 10, 10, now-3_000_000, now+1_000_000)}
			return &v
		}},
		{name: "drops come before L0 compaction", want: KindDrop, v: func() *Levels {
			var v Levels
			v[0] = []*Table{half(), half(), half(), ttlTable(4, "a", "z", 10, 10, now-900, now-100)}
			return &v
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := PickAuto(c.v(), &testPickerOpts, &Env{Now: now})
			switch {
			case c.none && p != nil:
				t.Fatalf("picked %v, want nothing", p.Kind)
			case !c.none && (p == nil || p.Kind != c.want):
				t.Fatalf("picked %+v, want kind %v", p, c.want)
			}
		})
	}
}

// TestL0ByteScore: level-0 tables under the file-count threshold but over
// the base level's byte target are compacted into the base level (a bulk
// load into large memtables), unless they are short-lived TTL tables that
// will soon be dropped whole; the file count still applies to those, at
// ShortLivedL0Limit (here, with no slowdown threshold, the plain threshold:
// TestL0FileCountShortLived covers the default limit).
func TestL0ByteScore(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts // LBaseMaxBytes 1 MiB, threshold 4, periodic 1 h
	big := func(num uint64, ttl bool, life int64) *Table {
		m := &manifest.FileMeta{Num: num, TableStats: format.TableStats{Size: 600 << 10, NumRows: 1000, CreationTime: now}}
		if ttl {
			m.NumTTLRows, m.TTLBytes = 1000, 600<<10
			m.MinExpireTS, m.MaxExpireTS = now+life/2, now+life
		}
		return &Table{Meta: withKeys(m, "a", "z")}
	}
	env := &Env{Now: now}
	cases := []struct {
		name   string
		tables []*Table
		wantL0 bool
	}{
		{"one table under the byte target", []*Table{big(1, false, 0)}, false},
		{"two tables over the byte target", []*Table{big(2, false, 0), big(1, false, 0)}, true},
		{"short-lived TTL tables wait for their drop", []*Table{big(2, true, 5_000), big(1, true, 5_000)}, false},
		{"long-lived TTL tables count", []*Table{big(2, true, 7_200_000), big(1, true, 7_200_000)}, true},
		{"short-lived tables still count by number", []*Table{big(4, true, 5_000), big(3, true, 5_000), big(2, true, 5_000), big(1, true, 5_000)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v Levels
			v[0] = c.tables
			s := Scores(&v, &o, now)
			if got := s[0] >= 1; got != c.wantL0 {
				t.Fatalf("L0 score %.2f, want >= 1: %v", s[0], c.wantL0)
			}
			p := PickAuto(&v, &o, env)
			if c.wantL0 && (p == nil || p.Kind != KindL0) {
				t.Fatalf("picked %+v, want an L0 compaction", p)
			}
			if !c.wantL0 && p != nil && p.Kind == KindL0 {
				t.Fatalf("picked an L0 compaction with score %.2f", s[0])
			}
		})
	}
}

// TestL0FileCountShortLived: short-lived TTL tables do not trigger a
// level-0 compaction at L0CompactionThreshold files, so a TTL stream whose
// memtables rotate faster than the TTL keeps its whole-file drops; they do
// at ShortLivedL0Limit (midway to the slowdown threshold), before writes
// slow down. Tables that are not short-lived keep the old trigger, and a
// level-0 compaction takes every level-0 table, short-lived ones included.
func TestL0FileCountShortLived(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts
	o.L0SlowdownWritesThreshold = 8
	if got := ShortLivedL0Limit(&o); got != 6 {
		t.Fatalf("ShortLivedL0Limit = %d, want 6", got)
	}
	tbl := func(num uint64, short bool) *Table {
		m := &manifest.FileMeta{Num: num, TableStats: format.TableStats{Size: 1 << 10, NumRows: 100, NumTTLRows: 100, TTLBytes: 1 << 10,
			CreationTime: now, MinExpireTS: now + 2_000, MaxExpireTS: now + 5_000}}
		if !short {
			m.MinExpireTS, m.MaxExpireTS = now+2_000, now+7_200_000
		}
		return &Table{Meta: withKeys(m, "a", "z")}
	}
	level0 := func(short, long int) []*Table {
		var ts []*Table
		num := uint64(short + long)
		for range long {
			ts = append(ts, tbl(num, false))
			num--
		}
		for range short {
			ts = append(ts, tbl(num, true))
			num--
		}
		return ts
	}
	cases := []struct {
		name        string
		short, long int
		wantL0      bool
	}{
		{"four short-lived tables wait for their drops", 4, 0, false},
		{"five short-lived tables wait for their drops", 5, 0, false},
		{"six short-lived tables reach the limit", 6, 0, true},
		{"four long-lived tables trigger as before", 0, 4, true},
		{"three long-lived and two short-lived tables wait", 2, 3, false},
		{"four long-lived tables take the short-lived ones along", 2, 4, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v Levels
			v[0] = level0(c.short, c.long)
			p := PickAuto(&v, &o, &Env{Now: now})
			if !c.wantL0 {
				if p != nil {
					t.Fatalf("picked %v (L0 score %.2f), want nothing", p.Kind, Scores(&v, &o, now)[0])
				}
				return
			}
			if p == nil || p.Kind != KindL0 {
				t.Fatalf("picked %+v, want an L0 compaction", p)
			}
			if n := len(p.Inputs[0].Tables); p.Inputs[0].Level != 0 || n != len(v[0]) {
				t.Fatalf("L0 compaction takes %d tables of level %d, want all %d of level 0", n, p.Inputs[0].Level, len(v[0]))
			}
		})
	}
	// Without a slowdown threshold the limit is the plain threshold.
	if got := ShortLivedL0Limit(&testPickerOpts); got != 4 {
		t.Fatalf("ShortLivedL0Limit without a slowdown threshold = %d, want 4", got)
	}
}

// TestNextDropTS: the scheduler's next wake-up for whole-file drops is the
// earliest max_expire_ts + 1 among all-TTL tables not yet expired; tables
// with other rows, already expired or being compacted do not set it.
func TestNextDropTS(t *testing.T) {
	const now = 10_000_000
	var v Levels
	if _, ok := NextDropTS(&v, now); ok {
		t.Fatal("an empty tree has a next drop")
	}
	v[0] = []*Table{
		ttlTable(5, "a", "z", 10, 10, now+100, now+4_000),
		ttlTable(4, "a", "z", 10, 9, now+100, now+1_000), // a row without expiry
		ttlTable(3, "a", "z", 10, 10, now-900, now-1),    // expired: drop now or blocked
		ttlTable(2, "a", "z", 10, 10, now-900, now+2_500),
	}
	v[Bottom] = []*Table{ttlTable(1, "a", "b", 10, 10, now, now+3_000)}
	if ts, ok := NextDropTS(&v, now); !ok || ts != now+2_501 {
		t.Fatalf("NextDropTS = %d, %v; want %d", ts, ok, now+2_501)
	}
	v[0][3].Compacting = true
	if ts, ok := NextDropTS(&v, now); !ok || ts != now+3_001 {
		t.Fatalf("NextDropTS with the first table busy = %d, %v; want %d", ts, ok, now+3_001)
	}
	// At its max_expire_ts a table is not yet expired: the wake-up is the
	// millisecond after.
	if ts, ok := NextDropTS(&v, now+3_000); !ok || ts != now+3_001 {
		t.Fatalf("NextDropTS at max_expire_ts = %d, %v; want %d", ts, ok, now+3_001)
	}
	if !AllExpired(v[Bottom][0].Meta, now+3_001) || AllExpired(v[Bottom][0].Meta, now+3_000) {
		t.Fatal("NextDropTS disagrees with AllExpired")
	}
}

// TestPickL0Move: level-0 tables that overlap no other level-0 table and
// no base-level table go down by a trivial move (sequential ingest), all in
// one pick; overlapping ones, and those with expired bytes that are not
// short-lived, are left to the level-0 rewrite, which runs once nothing is
// left to move.
func TestPickL0Move(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts // threshold 4
	tbl := func(num uint64, lo, hi string) *Table { return sizedTable(num, lo, hi, 1000, now) }
	nums := tableNums
	cases := []struct {
		name  string
		l0    []*Table // newest first
		base  []*Table // the bottom level, the base of a small tree
		kind  Kind
		moved []uint64
	}{
		{name: "disjoint tables all move", kind: KindMove, moved: []uint64{4, 3, 2, 1},
			l0: []*Table{tbl(4, "g", "h"), tbl(3, "e", "f"), tbl(2, "c", "d"), tbl(1, "a", "b")}},
		{name: "disjoint from the base level too", kind: KindMove, moved: []uint64{5, 4, 3, 2},
			l0:   []*Table{tbl(5, "g", "h"), tbl(4, "e", "f"), tbl(3, "c", "d"), tbl(2, "a", "b")},
			base: []*Table{tbl(1, "m", "z")}},
		{name: "overlapping pairs stay, the rest moves", kind: KindMove, moved: []uint64{4, 1},
			l0: []*Table{tbl(4, "x", "y"), tbl(3, "c", "f"), tbl(2, "d", "e"), tbl(1, "a", "b")}},
		{name: "a table overlapping the base level stays", kind: KindMove, moved: []uint64{4, 3, 2},
			l0:   []*Table{tbl(5, "n", "o"), tbl(4, "g", "h"), tbl(3, "e", "f"), tbl(2, "a", "b")},
			base: []*Table{tbl(1, "m", "z")}},
		{name: "nothing to move: a rewrite", kind: KindL0,
			l0: []*Table{tbl(4, "a", "z"), tbl(3, "a", "z"), tbl(2, "a", "z"), tbl(1, "a", "z")}},
		{name: "nothing disjoint from the base level: a rewrite", kind: KindL0,
			l0:   []*Table{tbl(5, "a", "b"), tbl(4, "c", "d"), tbl(3, "e", "f"), tbl(2, "g", "h")},
			base: []*Table{tbl(1, "a", "z")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pickKind(t, &o, now, c.l0, c.base, c.kind)
			if p.Inputs[0].Level != 0 || p.OutputLevel != Bottom {
				t.Fatalf("pick from level %d to %d, want 0 to the base level %d", p.Inputs[0].Level, p.OutputLevel, Bottom)
			}
			if c.kind == KindL0 {
				if len(p.Inputs[0].Tables) != len(c.l0) {
					t.Fatalf("rewrite takes %v, want every level-0 table", nums(p.Inputs[0].Tables))
				}
				return
			}
			if len(p.Inputs) != 1 || !slices.Equal(nums(p.Inputs[0].Tables), c.moved) {
				t.Fatalf("moved %v, want %v", nums(p.Tables()), c.moved)
			}
		})
	}

	// Expired bytes: a table with some expired rows is rewritten to drop
	// them unless it is short-lived and will be dropped whole.
	ttl := func(num uint64, lo, hi string, maxExp int64) *Table {
		m := &manifest.FileMeta{Num: num, TableStats: format.TableStats{Size: 1000, NumRows: 10, NumTTLRows: 10, TTLBytes: 1000,
			CreationTime: now - 2_000, MinExpireTS: now - 1_000, MaxExpireTS: maxExp}}
		return &Table{Meta: withKeys(m, lo, hi)}
	}
	long, short := ttl(2, "c", "d", now+2_000_000), ttl(1, "a", "b", now+1_000)
	long.Meta.CreationTime = now - 2_000_000 // expiries over an hour after creation
	long.Meta.TTLBytes = 1 << 20             // enough for a whole expired byte
	if ExpiredBytes(long.Meta, now) == 0 || ExpiredBytes(short.Meta, now) == 0 {
		t.Fatal("test tables hold no expired bytes")
	}
	var v Levels
	v[0] = []*Table{tbl(4, "g", "h"), tbl(3, "e", "f"), long, short}
	p := PickAuto(&v, &o, &Env{Now: now})
	if p == nil || p.Kind != KindMove || !slices.Equal(nums(p.Tables()), []uint64{4, 3, 1}) {
		t.Fatalf("picked %+v, want a move of tables 4, 3 and the short-lived 1", p)
	}

	// A running compaction writing into the base level over the same keys
	// holds the move back.
	v = Levels{}
	v[0] = []*Table{tbl(2, "c", "d"), tbl(1, "a", "b")}
	v[0][0].Meta.Size, v[0][1].Meta.Size = 1<<20, 1<<20 // over the byte target
	env := &Env{Now: now, Running: []InProgress{{OutputLevel: Bottom, Lo: []byte("a"), Hi: []byte("z")}}}
	if p := PickAuto(&v, &o, env); p != nil {
		t.Fatalf("picked %+v while a compaction writes the same range of the base level", p)
	}
}

// TestPickL0Merge: a level-0 compaction merges level 0's newest tables
// into one level-0 table while the base level it overlaps holds more than
// L0BottomRatio times level 0's bytes (the base level being the bottom
// level here) and level 0 is under LBaseMaxBytes,
// or while older level-0 tables are being compacted into the base level;
// the run stops before a table more than twice its bytes so far and before
// a short-lived table, and a run of fewer than two tables goes to the base
// level instead. The output is bottom only when nothing older overlaps it.
func TestPickL0Merge(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts // threshold 4, ratio 10, LBaseMaxBytes 1 MiB
	tbl := func(num uint64, lo, hi string, size uint64) *Table { return sizedTable(num, lo, hi, size, now) }
	short := func(num uint64, size uint64) *Table {
		t := tbl(num, "a", "z", size)
		t.Meta.NumTTLRows, t.Meta.MinExpireTS, t.Meta.MaxExpireTS = 10, now+1000, now+2000
		return t
	}
	base := func(size uint64) []*Table { return []*Table{tbl(1, "a", "z", size)} }
	compacting := func(t *Table) *Table { t.Compacting = true; return t }
	nums := tableNums
	cases := []struct {
		name   string
		l0     []*Table // newest first
		base   []*Table
		kind   Kind
		run    []uint64 // KindL0Merge: the tables merged
		bottom bool
	}{
		{name: "small level 0 over a large base level merges",
			l0:   []*Table{tbl(5, "a", "z", 1000), tbl(4, "a", "z", 1000), tbl(3, "a", "z", 1000), tbl(2, "a", "z", 1000)},
			base: base(50_000), kind: KindL0Merge, run: []uint64{5, 4, 3, 2}},
		{name: "bottom level as base, at most L0BottomRatio times level 0: into the base",
			l0:   []*Table{tbl(5, "a", "z", 1000), tbl(4, "a", "z", 1000), tbl(3, "a", "z", 1000), tbl(2, "a", "z", 1000)},
			base: base(20_000), kind: KindL0},
		{name: "bottom level as base, over L0BottomRatio times level 0: merges",
			l0:   []*Table{tbl(5, "a", "z", 1000), tbl(4, "a", "z", 1000), tbl(3, "a", "z", 1000), tbl(2, "a", "z", 1000)},
			base: base(20_001), kind: KindL0Merge, run: []uint64{5, 4, 3, 2}},
		{name: "level 0 at LBaseMaxBytes: into the base",
			l0:   []*Table{tbl(5, "a", "z", 300_000), tbl(4, "a", "z", 300_000), tbl(3, "a", "z", 300_000), tbl(2, "a", "z", 300_000)},
			base: base(100 << 20), kind: KindL0},
		{name: "a large older table is left out of the run",
			l0:   []*Table{tbl(6, "a", "z", 1000), tbl(5, "a", "z", 1000), tbl(4, "a", "z", 1000), tbl(3, "a", "z", 6001), tbl(2, "a", "z", 1000)},
			base: base(1 << 20), kind: KindL0Merge, run: []uint64{6, 5, 4}},
		{name: "an older table up to twice the run joins it",
			l0:   []*Table{tbl(5, "a", "z", 1000), tbl(4, "a", "z", 1000), tbl(3, "a", "z", 1000), tbl(2, "a", "z", 6000)},
			base: base(1 << 20), kind: KindL0Merge, run: []uint64{5, 4, 3, 2}},
		{name: "the run stops before a short-lived table",
			l0:   []*Table{tbl(7, "a", "z", 1000), tbl(6, "a", "z", 1000), short(5, 1000), tbl(4, "a", "z", 1000), tbl(3, "a", "z", 1000)},
			base: base(1 << 20), kind: KindL0Merge, run: []uint64{7, 6}},
		{name: "a run of one: into the base",
			l0:   []*Table{tbl(7, "a", "z", 1000), short(6, 1000), tbl(5, "a", "z", 1000), tbl(4, "a", "z", 1000), tbl(3, "a", "z", 1000), tbl(2, "a", "z", 1000)},
			base: base(1 << 20), kind: KindL0},
		{name: "nothing older beneath the run: bottom",
			l0:   []*Table{tbl(6, "a", "b", 1000), tbl(5, "a", "b", 1000), tbl(4, "a", "b", 1000), tbl(3, "m", "z", 6001), tbl(2, "m", "z", 1000)},
			base: []*Table{tbl(1, "n", "z", 1<<20)}, kind: KindL0Merge, run: []uint64{6, 5, 4}, bottom: true},
		{name: "older tables being compacted into the base: the newer ones merge",
			l0:   []*Table{tbl(6, "a", "z", 1000), tbl(5, "a", "z", 1000), tbl(4, "a", "z", 1000), tbl(3, "a", "z", 1000), compacting(tbl(2, "a", "z", 1000))},
			base: []*Table{compacting(tbl(1, "a", "z", 1000))}, kind: KindL0Merge, run: []uint64{6, 5, 4, 3}},
		{name: "an older level-0 table beneath the run: not bottom",
			l0:   []*Table{tbl(6, "a", "b", 1000), tbl(5, "a", "b", 1000), tbl(4, "a", "b", 1000), tbl(3, "a", "z", 6001)},
			base: []*Table{tbl(1, "n", "z", 1<<20)}, kind: KindL0Merge, run: []uint64{6, 5, 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pickKind(t, &o, now, c.l0, c.base, c.kind)
			if c.kind != KindL0Merge {
				return
			}
			if p.OutputLevel != 0 || len(p.Inputs) != 1 || !slices.Equal(nums(p.Inputs[0].Tables), c.run) {
				t.Fatalf("merge of %v into level %d, want %v into level 0", nums(p.Tables()), p.OutputLevel, c.run)
			}
			if p.Bottom != c.bottom {
				t.Fatalf("bottom = %v, want %v", p.Bottom, c.bottom)
			}
		})
	}

	// Above tables being compacted, a merge waits for ShortLivedL0Limit
	// tables (6 with a slowdown threshold of 8).
	busy := o
	busy.L0SlowdownWritesThreshold = 8
	above := func(n int) (l0 []*Table) {
		for i := range n {
			l0 = append(l0, tbl(uint64(100-i), "a", "z", 1000))
		}
		return append(l0, compacting(tbl(2, "a", "z", 1000)))
	}
	if p := PickAuto(&Levels{0: above(5), Bottom: []*Table{compacting(tbl(1, "a", "z", 1000))}}, &busy, &Env{Now: now}); p != nil {
		t.Fatalf("five tables above a busy level 0: picked %+v, want nothing", p)
	}
	pickKind(t, &busy, now, above(6), []*Table{compacting(tbl(1, "a", "z", 1000))}, KindL0Merge)

	// The expired-bytes pick compacts level 0 into the base level, where
	// its expired rows can go, never into a merge within level 0.
	expired := tbl(3, "a", "z", 1000)
	expired.Meta.NumTTLRows, expired.Meta.TTLBytes = 10, 1000
	expired.Meta.MinExpireTS, expired.Meta.MaxExpireTS = now-5_000_000, now+5_000_000 // half expired, not short-lived
	var v Levels
	v[0], v[Bottom] = []*Table{tbl(4, "a", "z", 1000), expired}, base(1<<20)
	if p := PickAuto(&v, &o, &Env{Now: now}); p == nil || p.Kind != KindExpired || p.OutputLevel != Bottom || len(p.Inputs) != 2 {
		t.Fatalf("expired level-0 rows: picked %+v, want an expired-bytes compaction of level 0 into the base level", p)
	}
}

// TestPickL0MergeAboveBottom: over a base level that is not the bottom
// level, level 0 goes down once the base tables it overlaps hold at most
// LevelSizeRatio times its bytes, as L0BottomRatio applies to a bottom base
// level only; over more, it merges.
func TestPickL0MergeAboveBottom(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts // ratio 10, LBaseMaxBytes 1 MiB: base level 5 over a 10 MiB bottom
	l0 := func() []*Table {
		return []*Table{sizedTable(5, "a", "z", 1000, now), sizedTable(4, "a", "z", 1000, now),
			sizedTable(3, "a", "z", 1000, now), sizedTable(2, "a", "z", 1000, now)}
	}
	for _, c := range []struct {
		baseBytes uint64
		kind      Kind
	}{{40_000, KindL0}, {40_001, KindL0Merge}} {
		var v Levels
		v[0] = l0()
		v[Bottom-1] = []*Table{sizedTable(10, "a", "z", c.baseBytes, now)}
		v[Bottom] = []*Table{sizedTable(20, "a", "z", 10<<20, now)}
		if _, base := Targets(&v, &o); base != Bottom-1 {
			t.Fatalf("base level %d, want %d", base, Bottom-1)
		}
		p := PickAuto(&v, &o, &Env{Now: now})
		if p == nil || p.Kind != c.kind {
			t.Fatalf("base level of %d bytes under 4000 in level 0: picked %+v, want kind %v", c.baseBytes, p, c.kind)
		}
		if c.kind == KindL0 && p.OutputLevel != Bottom-1 {
			t.Fatalf("level 0 went to level %d, want %d", p.OutputLevel, Bottom-1)
		}
	}
}

// TestPickL0MergeNewKeys: over a bottom base level, the rows level 0
// knows to be new keys (Table.NewKeys) do not count toward the
// L0BottomRatio bound, and level 0 as a whole goes down at the base
// overlap over L0NewKeyRatio; above a deeper level they change nothing.
func TestPickL0MergeNewKeys(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts                   // ratio 10, LBaseMaxBytes 1 MiB
	l0 := func(newKeys uint64) []*Table { // 4000 bytes, 10 rows a table
		var ts []*Table
		for num := uint64(5); num >= 2; num-- {
			tb := sizedTable(num, "a", "z", 1000, now)
			tb.NewKeys = newKeys
			ts = append(ts, tb)
		}
		return ts
	}
	for _, c := range []struct {
		newKeys, baseBytes uint64
		kind               Kind
	}{
		{10, 4000, KindL0}, // all new: down at L0NewKeyRatio (1) times level 0
		{10, 4001, KindL0Merge},
		{20, 4001, KindL0Merge}, // a count above the rows counts as all of them
		{5, 10_000, KindL0},     // half new: L0BottomRatio times the other 2000 bytes
		{5, 10_001, KindL0Merge},
		{0, 20_000, KindL0}, // none: as without the count
		{0, 20_001, KindL0Merge},
	} {
		var v Levels
		v[0] = l0(c.newKeys)
		v[Bottom] = []*Table{sizedTable(1, "a", "z", c.baseBytes, now)}
		p := PickAuto(&v, &o, &Env{Now: now})
		if p == nil || p.Kind != c.kind {
			t.Errorf("%d of 10 rows new in each table, base level of %d bytes under 4000: picked %+v, want kind %v",
				c.newKeys, c.baseBytes, p, c.kind)
		}
	}
	// Above a deeper level, LevelSizeRatio applies to all of level 0.
	var v Levels
	v[0] = l0(10)
	v[Bottom-1] = []*Table{sizedTable(10, "a", "z", 40_000, now)}
	v[Bottom] = []*Table{sizedTable(20, "a", "z", 10<<20, now)}
	if p := PickAuto(&v, &o, &Env{Now: now}); p == nil || p.Kind != KindL0 || p.OutputLevel != Bottom-1 {
		t.Fatalf("new keys over a base level above the bottom: picked %+v, want level 0 into level %d", p, Bottom-1)
	}
}
