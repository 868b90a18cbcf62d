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
