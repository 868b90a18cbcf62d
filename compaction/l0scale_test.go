package compaction

import (
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
)

// shortLivedL0 returns n level-0 tables over the whole key space, newest
// first, the newest created at now and each older one gap ms earlier, each
// holding TTL rows that expire from ttl-1000 to ttl ms after its creation.
func shortLivedL0(n int, now, gap, ttl int64) []*Table {
	ts := make([]*Table, n)
	for i := range ts {
		c := now - int64(i)*gap
		m := &manifest.FileMeta{Num: uint64(n - i), TableStats: format.TableStats{Size: 1 << 20, NumRows: 100, NumTTLRows: 100, TTLBytes: 1 << 20,
			CreationTime: c, MinExpireTS: c + ttl - 1000, MaxExpireTS: c + ttl}}
		ts[i] = &Table{Meta: withKeys(m, "a", "z")}
	}
	return ts
}

// TestShortLivedScale: the short-lived level-0 allowance grows as the
// memtable shrinks below the 64 MiB reference (a TTL stream then makes more
// tables per TTL), up to MaxShortLivedScale times.
func TestShortLivedScale(t *testing.T) {
	o := testPickerOpts
	o.L0SlowdownWritesThreshold = 8
	for _, c := range []struct {
		memtable int64
		scale    int
	}{
		{0, 1}, {256 << 20, 1}, {64 << 20, 1}, {48 << 20, 2}, {32 << 20, 2}, {16 << 20, 4}, {12 << 20, 6}, {8 << 20, 8}, {6 << 20, 11}, {4 << 20, 16}, {2 << 20, 16}, {64 << 10, 16},
	} {
		o.MemtableSize = c.memtable
		if s := ShortLivedScale(&o); s != c.scale {
			t.Errorf("memtable %d: scale %d, want %d", c.memtable, s, c.scale)
		}
	}
}

// TestShortLivedL0LimitScaled: with 16 MiB memtables and a 5 s TTL stream
// making a table every 250 ms (about 21 alive per TTL), level 0 holds 6 to
// 20 short-lived tables without a compaction (they wait for their drops),
// its score counting them against 24 (ShortLivedL0Limit 6 times 4). At a
// rate whose tables per TTL would pass even 16 times the limit, 96 (one per
// 20 ms, 4.8 s TTL), for
// tables of an hour's TTL, or for tables created in the same millisecond,
// there is no larger allowance: 6 compact as with the reference memtable.
// Four tables that are not short-lived trigger at L0CompactionThreshold.
func TestShortLivedL0LimitScaled(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts
	o.L0SlowdownWritesThreshold = 8
	o.MemtableSize = 16 << 20
	level0 := func(tables []*Table) *Levels {
		var v Levels
		v[0] = tables
		return &v
	}
	for _, n := range []int{6, 8, 12, 20} {
		v := level0(shortLivedL0(n, now, 250, 5_000))
		if p := PickAuto(v, &o, &Env{Now: now}); p != nil {
			t.Fatalf("%d short-lived tables: picked %v (L0 score %.2f), want nothing", n, p.Kind, Scores(v, &o, now)[0])
		}
		if got, want := Scores(v, &o, now)[0], float64(n)/24; got != want {
			t.Fatalf("%d short-lived tables: L0 score %.3f, want %.3f", n, got, want)
		}
	}
	isL0 := func(p *Pick, n int) bool { return p != nil && p.Kind == KindL0 && len(p.Inputs[0].Tables) == n }
	for _, c := range []struct {
		name     string
		gap, ttl int64
	}{
		{"more than 96 tables per TTL", 20, 4_800},
		{"1 h TTL", 500, 3_600_000},
		{"created together", 0, 5_000},
	} {
		if p := PickAuto(level0(shortLivedL0(6, now, c.gap, c.ttl)), &o, &Env{Now: now}); !isL0(p, 6) {
			t.Fatalf("6 tables, %s: picked %+v, want an L0 compaction of all 6", c.name, p)
		}
	}
	l0 := shortLivedL0(10, now, 250, 5_000)
	for i := range 4 {
		l0[i].Meta.MaxExpireTS = now + 7_200_000
	}
	if p := PickAuto(level0(l0), &o, &Env{Now: now}); !isL0(p, 10) {
		t.Fatalf("4 long-lived of 10 tables: picked %+v, want an L0 compaction of all 10", p)
	}
}

// TestL0StallFiles: the write path counts short-lived level-0 tables as
// 1/Scale of a file while they are expected to leave by drops, others
// whole, and takes the larger count; at the reference memtable size, or for
// tables of an hour's TTL, it is the plain file count.
func TestL0StallFiles(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts
	o.L0SlowdownWritesThreshold = 8
	for _, c := range []struct {
		memtable         int64
		short, long      int
		ttl              int64
		wantScale, wantN int
	}{
		{64 << 20, 10, 0, 5_000, 1, 10},
		{64 << 20, 0, 10, 5_000, 1, 10},
		{16 << 20, 10, 0, 5_000, 4, 3},
		{16 << 20, 20, 0, 5_000, 4, 5},
		{16 << 20, 25, 0, 6_500, 5, 5},   // over 24, but 27 forecast: the scale the forecast needs
		{16 << 20, 25, 0, 60_000, 1, 25}, // 264 files forecast: more than 16 times the limit
		{16 << 20, 8, 2, 5_000, 4, 3},
		{16 << 20, 6, 4, 2_500, 4, 4},
		{16 << 20, 2, 8, 5_000, 5, 8}, // 29 files forecast: scale 5, the 8 others count whole
		{16 << 20, 10, 0, 3_600_000, 1, 10},
		{32 << 20, 9, 0, 2_500, 2, 5},
	} {
		o.MemtableSize = c.memtable
		var census L0Census
		for _, tb := range shortLivedL0(c.short, now, 250, c.ttl) {
			census.Add(tb.Meta, &o)
		}
		for range c.long {
			census.Add(&manifest.FileMeta{TableStats: format.TableStats{NumRows: 10, CreationTime: now}}, &o)
		}
		if s, n := census.Scale(&o, now), census.StallFiles(&o, now); s != c.wantScale || n != c.wantN {
			t.Errorf("memtable %d, %d short-lived + %d other files, TTL %d ms: scale %d, stall files %d; want %d, %d",
				c.memtable, c.short, c.long, c.ttl, s, n, c.wantScale, c.wantN)
		}
	}
}
