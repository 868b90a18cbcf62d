package compaction

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// sumMerger sums little-endian int64 operands.
type sumMerger struct{}

func (sumMerger) FullMerge(_, base []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	var n int64
	if hasBase {
		n = int64(binary.LittleEndian.Uint64(base))
	}
	for _, o := range ops {
		n += int64(binary.LittleEndian.Uint64(o))
	}
	return num(n), nil
}

func (sumMerger) PartialMerge(_, a, b []byte) ([]byte, bool) {
	return num(int64(binary.LittleEndian.Uint64(a) + binary.LittleEndian.Uint64(b))), true
}

func num(n int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(n)) }

// mop is operand +n of key committed at ts with window deadline expire.
func mop(key string, seq uint64, ts, expire, n int64) format.Row {
	return format.Row{Key: []byte(key), Seq: seq, Flags: format.FlagMerge | ttlFlags, TS: ts, ExpireTS: expire, Value: num(n)}
}

// counter is the value row a fold writes: n under deadline expire, with the
// newest version's seq and ts.
func counter(key string, seq uint64, ts, expire, n int64) format.Row {
	return format.Row{Key: []byte(key), Seq: seq, Flags: ttlFlags, TS: ts, ExpireTS: expire, Value: num(n)}
}

// TestIteratorMergeRules: compaction rules 6 to 8, one case (or more) per
// rule, with the value and deadline each output row must carry.
func TestIteratorMergeRules(t *testing.T) {
	const now = 1000
	tests := []struct {
		name  string
		in    []format.Row
		cfg   Config
		want  []format.Row
		stats Stats
	}{
		{
			name:  "rule 8: operands fold into the base in the input",
			in:    []format.Row{mop("a", 4, 300, 1300, 2), mop("a", 3, 200, 1200, 1), val("a", 2, "\x0a\x00\x00\x00\x00\x00\x00\x00"), val("a", 1, "old")},
			cfg:   Config{Now: now},
			want:  []format.Row{{Key: []byte("a"), Seq: 4, Flags: format.FlagHasTS, TS: 300, Value: num(13)}},
			stats: Stats{RowsIn: 4, RowsOut: 1, MergesFolded: 1, ShadowedDropped: 1},
		},
		{
			name:  "rule 8: a version met twice (two inputs) counts once",
			in:    []format.Row{mop("a", 3, 300, 1300, 2), mop("a", 3, 300, 1300, 2), mop("a", 2, 200, 1200, 1)},
			cfg:   Config{Now: now, Bottom: true},
			want:  []format.Row{counter("a", 3, 300, 1200, 3)},
			stats: Stats{RowsIn: 3, RowsOut: 1, MergesFolded: 1},
		},
		{
			name:  "rule 8: a value row at an operand's sequence number (a folded twin) takes its place",
			in:    []format.Row{mop("a", 4, 400, 1400, 5), mop("a", 3, 300, 1300, 2), counter("a", 3, 300, 1200, 30), mop("a", 2, 200, 1200, 1)},
			cfg:   Config{Now: now},
			want:  []format.Row{counter("a", 4, 400, 1200, 35)},
			stats: Stats{RowsIn: 4, RowsOut: 1, MergesFolded: 1, ShadowedDropped: 1},
		},
		{
			name:  "rule 8: at the bottom operands fold from nothing under the first one's deadline",
			in:    []format.Row{mop("a", 3, 300, 1300, 2), mop("a", 2, 200, 1200, 1)},
			cfg:   Config{Now: now, Bottom: true},
			want:  []format.Row{counter("a", 3, 300, 1200, 3)},
			stats: Stats{RowsIn: 2, RowsOut: 1, MergesFolded: 1},
		},
		{
			name:  "rule 8: an ended window folds into an expired row and leaves at the bottom",
			in:    []format.Row{mop("a", 3, 300, 999, 2), mop("a", 2, 200, 999, 1)},
			cfg:   Config{Now: now, Bottom: true},
			stats: Stats{RowsIn: 2, MergesFolded: 1, ExpiredDropped: 1},
		},
		{
			name: "rule 8: operands fold onto the state beneath the output (Below)",
			in:   []format.Row{mop("a", 3, 300, 1300, 2), mop("a", 2, 200, 1200, 1)},
			cfg: Config{Now: now, Below: func(k []byte) (format.Row, bool, error) {
				return format.Row{Key: k, Seq: 1, Flags: ttlFlags, TS: 5, ExpireTS: 5000, Value: num(10)}, true, nil
			}},
			want:  []format.Row{counter("a", 3, 300, 5000, 13)},
			stats: Stats{RowsIn: 2, RowsOut: 1, MergesFolded: 1},
		},
		{
			name: "rule 8: with nothing beneath (Below), operands fold from nothing",
			in:   []format.Row{mop("a", 3, 300, 1300, 2), mop("a", 2, 200, 1200, 1)},
			cfg: Config{Now: now, Below: func(k []byte) (format.Row, bool, error) {
				return format.Row{}, false, nil
			}},
			want:  []format.Row{counter("a", 3, 300, 1200, 3)},
			stats: Stats{RowsIn: 2, RowsOut: 1, MergesFolded: 1},
		},
		{
			name:  "rule 6: without the base, operands of one millisecond combine, others stay",
			in:    []format.Row{mop("a", 4, 300, 1300, 4), mop("a", 3, 200, 1200, 2), mop("a", 2, 200, 1200, 1)},
			cfg:   Config{Now: now},
			want:  []format.Row{mop("a", 4, 300, 1300, 4), {Key: []byte("a"), Seq: 3, Flags: format.FlagMerge | ttlFlags, TS: 200, ExpireTS: 1200, Value: num(3)}},
			stats: Stats{RowsIn: 3, RowsOut: 2, OperandsCombined: 1},
		},
		{
			name:  "rule 6: operands are never expired by their own deadline",
			in:    []format.Row{mop("a", 3, 300, 500, 4), mop("a", 2, 200, 400, 1)},
			cfg:   Config{Now: now},
			want:  []format.Row{mop("a", 3, 300, 500, 4), mop("a", 2, 200, 400, 1)},
			stats: Stats{RowsIn: 2, RowsOut: 2},
		},
		{
			name:  "rule 6 and 5: the expired base beneath an unfolded operand keeps its value",
			in:    []format.Row{mop("a", 3, 300, 1300, 4), ttl("a", 2, 999, "v")},
			cfg:   Config{Now: now, Snapshots: []uint64{2}},
			want:  []format.Row{mop("a", 3, 300, 1300, 4), ttl("a", 2, 999, "v")},
			stats: Stats{RowsIn: 2, RowsOut: 2, ExpiredKept: 1},
		},
		{
			name: "rule 7: stripes are not combined; an older stripe's base tells the window",
			// Stripe (2, inf): ops at 1500 and 1100; stripe [0, 2]: a
			// value with deadline 1200. The op at 1100 joins the value's
			// window, the one at 1500 starts the next: they do not combine,
			// and the older stripe folds on its own.
			in:    []format.Row{mop("a", 4, 1500, 2500, 4), mop("a", 3, 1100, 2100, 2), ttl("a", 2, 1200, "\x01\x00\x00\x00\x00\x00\x00\x00"), val("a", 1, "x")},
			cfg:   Config{Now: now, Snapshots: []uint64{2}},
			want:  []format.Row{mop("a", 4, 1500, 2500, 4), mop("a", 3, 1100, 2100, 2), ttl("a", 2, 1200, "\x01\x00\x00\x00\x00\x00\x00\x00")},
			stats: Stats{RowsIn: 4, RowsOut: 3, ShadowedDropped: 1},
		},
		{
			name:  "rule 7: with the window known from the older stripe, same-window operands combine",
			in:    []format.Row{mop("a", 4, 1150, 2150, 4), mop("a", 3, 1100, 2100, 2), ttl("a", 2, 1200, "\x01\x00\x00\x00\x00\x00\x00\x00")},
			cfg:   Config{Now: now, Snapshots: []uint64{2}},
			want:  []format.Row{{Key: []byte("a"), Seq: 4, Flags: format.FlagMerge | ttlFlags, TS: 1100, ExpireTS: 2100, Value: num(6)}, ttl("a", 2, 1200, "\x01\x00\x00\x00\x00\x00\x00\x00")},
			stats: Stats{RowsIn: 3, RowsOut: 2, OperandsCombined: 1},
		},
		{
			name:  "rule 4 with operands: a deadline row above operands folds with them",
			in:    []format.Row{dl("a", 4, 5000), mop("a", 3, 300, 1300, 2), val("a", 2, "\x01\x00\x00\x00\x00\x00\x00\x00")},
			cfg:   Config{Now: now},
			want:  []format.Row{{Key: []byte("a"), Seq: 4, Flags: ttlFlags, TS: 500, ExpireTS: 5000, Value: num(3)}},
			stats: Stats{RowsIn: 3, RowsOut: 1, MergesFolded: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Merger = sumMerger{}
			got, st := drain(t, newScratchIter(tc.in), tc.cfg)
			if !rowsEqual(got, tc.want) {
				t.Errorf("output mismatch\ngot:\n%swant:\n%s", fmtRows(got), fmtRows(tc.want))
			}
			if st != tc.stats {
				t.Errorf("stats = %+v\nwant    %+v", st, tc.stats)
			}
		})
	}
}

// Without a merge operator an operand fails the compaction rather than
// being written as something else.
func TestIteratorMergeNeedsOperator(t *testing.T) {
	ci := NewIterator(newScratchIter([]format.Row{mop("a", 2, 1, 2, 1), val("a", 1, "v")}), Config{Now: 1})
	for ci.Next() {
	}
	if ci.Error() == nil {
		t.Fatal("no error for an operand without a merge operator")
	}
}

// TestIteratorMergeRandomized: for random versions of one key (values,
// tombstones, deadline rows and operands with random TTLs, commit times
// rising with sequence numbers), random snapshots, compaction time, bottom
// or a state beneath (known to the compaction through Below, or not), every
// reader the compaction must serve (at each snapshot and at the latest
// state, at any time from Now on) resolves the output as it resolves the
// input.
func TestIteratorMergeRandomized(t *testing.T) {
	iters := 20000
	if testing.Short() {
		iters = 3000
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x3e29e))
	for i := range iters {
		in, cfg, below := genMergeCase(rng)
		out, _ := drain(t, newScratchIter(in), cfg)
		reads := append(slices.Clone(cfg.Snapshots), format.MaxSeq)
		for _, s := range reads {
			for _, at := range []int64{cfg.Now, cfg.Now + 50, cfg.Now + 400, cfg.Now + 1<<40} {
				want := readState(t, in, below, s, at)
				got := readState(t, out, below, s, at)
				if got != want {
					t.Fatalf("case %d (seed %d): read at seq %d, time %d: output %q, input %q\ncfg %+v below %v\ninput:\n%soutput:\n%s",
						i, seed, s, at, got, want, cfg, below != nil, fmtRows(in), fmtRows(out))
				}
			}
		}
	}
}

// genMergeCase returns the versions of key "a" (newest first), the config
// and the state beneath the input a reader sees (nil: nothing).
func genMergeCase(rng *rand.Rand) ([]format.Row, Config, *format.Row) {
	n := 1 + rng.IntN(10)
	var below *format.Row
	bottom := rng.IntN(3) == 0
	if !bottom && rng.IntN(2) == 0 {
		b := format.Row{Key: []byte("a"), Seq: 1, Flags: format.FlagHasTS, TS: 0, Value: num(int64(rng.IntN(100)))}
		if rng.IntN(2) == 0 {
			b.Flags |= format.FlagHasExpire
			b.ExpireTS = int64(rng.IntN(600))
		}
		below = &b
	}
	// Oldest first, so that deadline rows go only onto a live state.
	var rows []format.Row
	ts := int64(0)
	w := format.Window{}
	if below != nil {
		w = format.WindowOf([]format.Row{*below}, format.Window{})
	}
	for i := range n {
		ts += int64(rng.IntN(150))
		r := format.Row{Key: []byte("a"), Seq: uint64(10 + i), Flags: format.FlagHasTS, TS: ts}
		ttl := func() {
			if rng.IntN(3) > 0 {
				r.Flags |= format.FlagHasExpire
				r.ExpireTS = ts + int64(rng.IntN(400)) - 50
			}
		}
		switch k := rng.IntN(10); {
		case k < 5:
			r.Flags |= format.FlagMerge
			r.Value = num(int64(1 + rng.IntN(9)))
			ttl()
		case k < 7:
			r.Value = num(int64(100 + rng.IntN(100)))
			ttl()
		case k < 8:
			r.Flags |= format.FlagTombstone
		default:
			if !w.Live || w.Expired(ts) {
				r.Flags |= format.FlagTombstone
				break
			}
			r.Flags |= format.FlagDeadline
			ttl()
		}
		rows = append(rows, r)
		w = format.WindowOf(rows[len(rows)-1:], w)
	}
	slices.Reverse(rows)
	cfg := Config{Now: ts/2 + int64(rng.IntN(int(ts/2)+200)), Bottom: bottom, Merger: sumMerger{}}
	for _, r := range rows {
		if rng.IntN(4) == 0 {
			cfg.Snapshots = append(cfg.Snapshots, r.Seq)
		}
	}
	slices.Sort(cfg.Snapshots)
	if below != nil && rng.IntN(2) == 0 {
		b := *below
		cfg.Below = func([]byte) (format.Row, bool, error) { return b, true, nil }
	} else if below == nil && !bottom && rng.IntN(2) == 0 {
		cfg.Below = func([]byte) (format.Row, bool, error) { return format.Row{}, false, nil }
	}
	return rows, cfg, below
}

// readState is what a reader at sequence number seq and time at sees of
// key "a" in rows (newest first) over the state beneath: the count and
// deadline, or "absent".
func readState(t *testing.T, rows []format.Row, below *format.Row, seq uint64, at int64) string {
	t.Helper()
	var chain []format.Row
	for _, r := range rows {
		if r.Seq <= seq {
			chain = append(chain, r)
		}
	}
	if below != nil {
		chain = append(chain, *below)
	}
	if len(chain) == 0 {
		return "absent"
	}
	r, ok, err := format.MergeChain(chain, sumMerger{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || r.ExpiredAt(at) {
		return "absent"
	}
	d := "none"
	if r.HasExpiry() {
		d = fmt.Sprint(r.ExpireTS)
	}
	return fmt.Sprintf("%d until %s", int64(binary.LittleEndian.Uint64(r.Value)), d)
}
