package compaction

import (
	"slices"
	"testing"
)

// baseTables returns bottom-level tables of size bytes each, one per pair
// of letters in bounds ("ab", "cd", ...: table i spans bounds[i][0] to
// bounds[i][1]), numbered from 100.
func baseTables(size uint64, bounds ...string) []*Table {
	var out []*Table
	for i, b := range bounds {
		out = append(out, sizedTable(uint64(100+i), b[:1], b[1:], size, 0))
	}
	return out
}

func TestSliceCuts(t *testing.T) {
	o := testPickerOpts // LBaseMaxBytes 1 MiB: slices of 128 KiB
	const k = 1 << 10
	cases := []struct {
		name string
		over []*Table
		want []string
	}{
		{"at most two slices' worth: no split", baseTables(64*k, "ab", "cd", "ef", "gh"), nil},
		{"a cut where a group reaches a slice", baseTables(64*k, "ab", "cd", "ef", "gh", "ij", "kl"), []string{"e", "i"}},
		{"a last group under half a slice joins the one before",
			append(baseTables(300*k, "ab", "cd"), sizedTable(102, "e", "f", 50*k, 0)), []string{"c"}},
		{"one table larger than a slice is a group of its own", baseTables(600*k, "ab", "cd"), []string{"c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, cut := range sliceCuts(c.over, &o) {
				got = append(got, string(cut))
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("cuts %q, want %q", got, c.want)
			}
		})
	}
}

// TestPickL0Split: a level 0 due to go down into a base level it overlaps
// for more than two slices' worth is first split, into level 0, at the
// base tables' boundaries; over less, it goes down whole.
func TestPickL0Split(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts
	const k = 1 << 10
	l0 := func() []*Table {
		// Large enough that the base tables below hold under L0BottomRatio
		// times level 0's bytes, so it goes down rather than merging.
		return []*Table{sizedTable(5, "a", "z", 200*k, now), sizedTable(4, "a", "z", 200*k, now),
			sizedTable(3, "a", "z", 200*k, now), sizedTable(2, "a", "z", 200*k, now)}
	}
	p := pickKind(t, &o, now, l0(), baseTables(300*k, "ab", "cd", "ef", "gh"), KindL0Split)
	if p.OutputLevel != 0 || len(p.Inputs) != 1 || !slices.Equal(tableNums(p.Inputs[0].Tables), []uint64{5, 4, 3, 2}) {
		t.Fatalf("split of %v into level %d, want all of level 0 into level 0", tableNums(p.Tables()), p.OutputLevel)
	}
	if got := [][]byte{[]byte("c"), []byte("e"), []byte("g")}; !slices.EqualFunc(p.Cuts, got, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("cuts %q, want %q", p.Cuts, got)
	}
	if p.Bottom {
		t.Fatal("a split over the base level is bottom")
	}
	// The expired-bytes pick of level 0 splits it the same way.
	expiring := ttlTable(6, "a", "z", 10, 9, now-500, now+500)
	pickKind(t, &o, now, []*Table{expiring}, baseTables(300*k, "ab", "cd", "ef", "gh"), KindL0Split)
	p = pickKind(t, &o, now, l0(), baseTables(100*k, "ab", "cd"), KindL0)
	if len(p.Inputs) != 2 || len(p.Inputs[0].Tables) != 4 || len(p.Inputs[1].Tables) != 2 {
		t.Fatalf("picked %v, want all of level 0 with both base tables", tableNums(p.Tables()))
	}
}

// TestPickL0Slices: once level 0's oldest tables are key-disjoint slices
// over a base level worth splitting, they go down one at a time, the
// oldest that can first, each with the base tables beneath it only, while
// the newer tables above them wait or merge among themselves.
func TestPickL0Slices(t *testing.T) {
	const now = 10_000_000
	o := testPickerOpts
	const k = 1 << 10
	compacting := func(t *Table) *Table { t.Compacting = true; return t }
	flush := func(num uint64) *Table { return sizedTable(num, "a", "z", 100*k, now) }
	// Slices 2 ("a".."d") and 3 ("e".."z"), 3 the older.
	sl := func() []*Table {
		return []*Table{sizedTable(2, "a", "d", 100*k, now), sizedTable(3, "e", "z", 100*k, now)}
	}
	base := func() []*Table { return baseTables(300*k, "ab", "cd", "ef", "gh") }
	cases := []struct {
		name   string
		l0     func() []*Table
		base   func() []*Table
		kind   Kind
		inputs [][]uint64 // per input level, the tables
	}{
		{name: "the oldest slice goes with the base tables beneath it",
			l0: func() []*Table { return append([]*Table{flush(9), flush(8)}, sl()...) }, base: base,
			kind: KindL0, inputs: [][]uint64{{3}, {102, 103}}},
		{name: "the next slice while the oldest is going down",
			l0: func() []*Table { s := sl(); compacting(s[1]); return append([]*Table{flush(9)}, s...) }, base: base,
			kind: KindL0, inputs: [][]uint64{{2}, {100, 101}}},
		{name: "a slice whose base tables are busy waits; another goes",
			l0:   func() []*Table { return append([]*Table{flush(9)}, sl()...) },
			base: func() []*Table { b := base(); compacting(b[3]); return b },
			kind: KindL0, inputs: [][]uint64{{2}, {100, 101}}},
		{name: "a slice over no base table moves",
			l0: func() []*Table {
				return []*Table{flush(9), sizedTable(2, "a", "b", 100*k, now), sizedTable(3, "x", "z", 100*k, now)}
			},
			base: func() []*Table { return baseTables(300*k, "cd", "ef", "gh", "ij") },
			kind: KindMove, inputs: [][]uint64{{3}}},
		{name: "both slices busy: the newer tables merge among themselves",
			l0: func() []*Table {
				s := sl()
				compacting(s[0])
				compacting(s[1])
				return append([]*Table{flush(14), flush(13), flush(12), flush(11), flush(10), flush(9)}, s...)
			}, base: base,
			kind: KindL0Merge, inputs: [][]uint64{{14, 13, 12, 11, 10, 9}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pickKind(t, &o, now, c.l0(), c.base(), c.kind)
			var got [][]uint64
			for _, in := range p.Inputs {
				got = append(got, tableNums(in.Tables))
			}
			if !slices.EqualFunc(got, c.inputs, slices.Equal) {
				t.Fatalf("inputs %v, want %v", got, c.inputs)
			}
		})
	}
	t.Run("nothing can go and few newer tables: none", func(t *testing.T) {
		s := sl()
		compacting(s[0])
		compacting(s[1])
		var v Levels
		v[0], v[Bottom] = append([]*Table{flush(9)}, s...), base()
		if p := PickAuto(&v, &o, &Env{Now: now}); p != nil {
			t.Fatalf("picked %+v while the slices are going down", p)
		}
	})
	t.Run("over a small base level, disjoint tables go down together", func(t *testing.T) {
		p := pickKind(t, &o, now, append([]*Table{flush(9), flush(8), flush(7)}, sl()...), baseTables(100*k, "ab", "ef"), KindL0)
		if len(p.Inputs[0].Tables) != 5 {
			t.Fatalf("level-0 inputs %v, want all five", tableNums(p.Inputs[0].Tables))
		}
	})
}
