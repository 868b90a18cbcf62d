package compaction

import "testing"

// shadowTable is a level-0 table of rows TTL rows expiring after now
// (short-lived: no file-count or expiry pick takes it) over keys a-z,
// superseding shadows rows of older tables.
func shadowTable(num, rows, shadows uint64) *Table {
	const now = 10_000_000
	t := ttlTable(num, "a", "z", rows, rows, now+5_000, now+9_000)
	t.Meta.CreationTime = now
	t.Shadows = shadows
	return t
}

// TestPickShadowed: level 0's tables are compacted into the base level
// once the rows they supersede reach ShadowedRatio of the rows the
// compaction reads; a count against rows no longer in the input (a table
// dropped since) is capped and triggers nothing; 0 and 1 disable the pick.
func TestPickShadowed(t *testing.T) {
	const now = 10_000_000
	cases := []struct {
		name  string
		ratio float64
		v     func() *Levels
		want  bool
	}{
		{name: "a newer table superseding the older", ratio: 0.25, want: true, v: func() *Levels {
			var v Levels
			v[0] = []*Table{shadowTable(2, 100, 99), shadowTable(1, 100, 0)}
			return &v
		}},
		{name: "over a base-level table", ratio: 0.25, want: true, v: func() *Levels {
			var v Levels
			v[0] = []*Table{shadowTable(2, 100, 99)}
			v[Bottom] = []*Table{shadowTable(1, 100, 0)}
			return &v
		}},
		{name: "below the ratio", ratio: 0.25, v: func() *Levels {
			var v Levels
			v[0] = []*Table{shadowTable(2, 100, 40), shadowTable(1, 100, 0)}
			return &v
		}},
		{name: "the superseded table is gone", ratio: 0.25, v: func() *Levels {
			var v Levels
			v[0] = []*Table{shadowTable(2, 100, 99)}
			return &v
		}},
		{name: "capped at the older tables' rows", ratio: 0.25, v: func() *Levels {
			var v Levels
			v[0] = []*Table{shadowTable(2, 100, 99), shadowTable(1, 20, 0)}
			return &v // 20 of 120 rows superseded at most
		}},
		{name: "ratio 0 disables", v: func() *Levels {
			var v Levels
			v[0] = []*Table{shadowTable(2, 100, 99), shadowTable(1, 100, 0)}
			return &v
		}},
		{name: "ratio 1 disables", ratio: 1, v: func() *Levels {
			var v Levels
			v[0] = []*Table{shadowTable(2, 100, 99), shadowTable(1, 100, 0)}
			return &v
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testPickerOpts
			o.ShadowedRatio = c.ratio
			v := c.v()
			p := PickAuto(v, &o, &Env{Now: now})
			if !c.want {
				if p != nil {
					t.Fatalf("PickAuto = %v of %d tables, want nothing", p.Kind, len(p.Tables()))
				}
				return
			}
			if p == nil || p.Kind != KindShadowed || p.OutputLevel != Bottom || !p.Bottom {
				t.Fatalf("PickAuto = %+v, want a shadowed compaction into the bottom", p)
			}
			var in, all int
			for l := range v {
				all += len(v[l])
			}
			in = len(p.Tables())
			if in != all {
				t.Fatalf("the pick reads %d tables, want all %d", in, all)
			}
		})
	}
}
