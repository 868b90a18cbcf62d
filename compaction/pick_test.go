package compaction

import (
	"testing"

	"github.com/mayflydb/mayfly/manifest"
)

func ttlTable(num uint64, lo, hi string, rows, ttlRows uint64, minExp, maxExp int64) *Table {
	return &Table{
		Meta: &manifest.FileMeta{Num: num, Size: 1000, NumRows: rows, NumTTLRows: ttlRows, TTLBytes: 1000 * ttlRows / rows,
			MinExpireTS: minExp, MaxExpireTS: maxExp},
		Smallest: []byte(lo), Largest: []byte(hi),
	}
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
// will soon be dropped whole; the file count still applies to those.
func TestL0ByteScore(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts // LBaseMaxBytes 1 MiB, threshold 4, periodic 1 h
	big := func(num uint64, ttl bool, life int64) *Table {
		m := &manifest.FileMeta{Num: num, Size: 600 << 10, NumRows: 1000, CreationTime: now}
		if ttl {
			m.NumTTLRows, m.TTLBytes = 1000, 600<<10
			m.MinExpireTS, m.MaxExpireTS = now+life/2, now+life
		}
		return &Table{Meta: m, Smallest: []byte("a"), Largest: []byte("z")}
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
			s := Scores(&v, &o)
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
