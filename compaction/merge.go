package compaction

import (
	"fmt"

	"github.com/mayflydb/mayfly/format"
)

// Merge operands (rules 6 to 8). When the newest kept version of a stripe
// is a merge operand, or a deadline row above one, the Iterator reads every
// remaining version of the key in its input and foldVersions decides what
// to write for them, stripe by stripe (newest first):
//
//   - The versions a reader of the stripe resolves are the stripe's newest
//     down to its first value row or tombstone (the base); versions of the
//     stripe below the base are shadowed (rule 1).
//   - Rule 8: when the stripe holds its base, or it is the input's oldest
//     stripe and the state beneath the output is known (at the bottom
//     nothing lies beneath; else Config.Below reads it), those versions fold
//     (format.MergeChain) into one value row under the window's deadline
//     (a tombstone when the key is absent), at the newest's sequence
//     number. The row then follows rules 2 and 3 like any other.
//   - Rule 6: otherwise the versions are kept, and two adjacent operands
//     combine (PartialMerge) only when the newer belongs to the older's
//     window: the window the older leaves is known when the state beneath
//     the stripe's versions is (an older stripe of the input that reaches
//     a base, or the bottom); else only when both committed in the same
//     millisecond and the older's own deadline, if any, is not before it,
//     which holds for every state beneath. The combined operand takes the
//     newer's sequence number and the older's commit time and deadline.
//     Operands are never expired by their own expire_ts (it is the
//     deadline of the window they start, which may not be theirs), and a
//     kept operand protects the next kept version like a deadline row
//     (rule 5).
//   - Rule 7: versions of different stripes are never combined; an older
//     stripe only tells a newer one which window its operands join.

// foldScratch is the memory foldVersions reuses from one key to the next.
type foldScratch struct {
	out []format.Row // the rows returned
	ops [][]byte     // format.MergeChain's operand list
}

// foldVersions returns the rows to write for rows, a key's versions newest
// first (the newest is an operand or a deadline row; the slice holds every
// version the input has of the key from there down), stripe giving each
// sequence number's stripe. st counts what it did. The rows returned live
// in sc until its next use; foldVersions may write the state beneath into
// rows' spare capacity (the slot after its last row).
func foldVersions(rows []format.Row, stripe func(uint64) int, bottom bool, beneath func([]byte) (format.Row, bool, error), m format.Merger, st *Stats, sc *foldScratch) ([]format.Row, error) {
	// Cut rows into stripes, newest first. A key's versions rarely span
	// more stripes than the arrays below hold, which then spare the
	// per-key slices an allocation each.
	var (
		groupsBuf, chainsBuf [4][]format.Row
		basedBuf, knownBuf   [4]bool
		belowBuf             [4]format.Window
	)
	groups := groupsBuf[:0]
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && stripe(rows[j].Seq) == stripe(rows[i].Seq) {
			j++
		}
		groups = append(groups, rows[i:j])
		i = j
	}
	// Each group's resolved chain: its newest version down to its base.
	chains := fit(chainsBuf[:], len(groups))
	based := fit(basedBuf[:], len(groups))
	for g, grp := range groups {
		chains[g] = grp
		for i := range grp {
			if grp[i].Flags&(format.FlagMerge|format.FlagDeadline) == 0 {
				chains[g], based[g] = grp[:i+1], true
				st.ShadowedDropped += uint64(len(grp) - i - 1)
				break
			}
		}
	}
	// The oldest group without a base takes the state beneath the output
	// as its base when Config.Below knows it.
	if last := len(groups) - 1; !based[last] && !bottom && beneath != nil {
		base, ok, err := beneath(rows[0].Key)
		if err != nil {
			return nil, err
		}
		if !ok {
			base = format.Row{Key: rows[0].Key, Flags: format.FlagTombstone}
		}
		base.Key = rows[0].Key
		// The last group has no base, so its chain is the tail of rows:
		// the base goes into rows' spare slot, or a copy if there is none.
		chains[last] = append(chains[last], base)
		based[last] = true
	}
	// The window state beneath each group, oldest first: known when an
	// older group reaches a base, or at the bottom.
	below := fit(belowBuf[:], len(groups))
	known := fit(knownBuf[:], len(groups))
	known[len(groups)-1] = bottom
	for g := len(groups) - 1; g > 0; g-- {
		if based[g] || known[g] {
			below[g-1], known[g-1] = format.WindowOf(chains[g], below[g]), true
		}
	}
	out := sc.out[:0]
	defer func() { sc.out = out[:0] }()
	for g, chain := range chains {
		if len(chain) == 1 && based[g] {
			out = append(out, chain[0]) // a base alone: nothing to fold
			continue
		}
		if based[g] || g == len(groups)-1 && bottom {
			if m == nil {
				return nil, fmt.Errorf("compaction: key %q has merge operands and no merge operator is set", chain[0].Key)
			}
			if cap(sc.ops) < len(chain) {
				sc.ops = make([][]byte, 0, 2*len(chain)) // MergeChain's list fits
			}
			r, ok, err := format.MergeChain(chain, m, sc.ops)
			if err != nil {
				return nil, err
			}
			if !ok {
				r = format.Row{Key: chain[0].Key, Seq: chain[0].Seq, Flags: format.FlagTombstone | format.FlagHasTS, TS: chain[0].TS}
			}
			st.MergesFolded++
			out = append(out, r)
			continue
		}
		out = append(out, combineOperands(chain, below[g], known[g], m, st)...)
	}
	return out, nil
}

// fit returns buf[:n] zeroed when n fits in it, else a new slice of n.
func fit[T any](buf []T, n int) []T {
	if n > len(buf) {
		return make([]T, n)
	}
	clear(buf[:n])
	return buf[:n]
}

// combineOperands is rule 6 for chain, a stripe's versions newest first
// with no base among them: adjacent operands of one window combine. w is
// the window beneath the chain when known.
func combineOperands(chain []format.Row, w format.Window, known bool, m format.Merger, st *Stats) []format.Row {
	out := make([]format.Row, 0, len(chain))
	// Oldest first, so that the window each operand leaves is known.
	for i := len(chain) - 1; i >= 0; i-- {
		r := chain[i]
		if n := len(out); n > 0 && m != nil && r.IsMerge() && out[n-1].IsMerge() && sameWindow(&out[n-1], &r, w, known) {
			if v, ok := m.PartialMerge(r.Key, out[n-1].Value, r.Value); ok {
				out[n-1].Seq = r.Seq
				out[n-1].Value = v
				st.OperandsCombined++
				continue
			}
		}
		if known {
			w = format.WindowOf(chain[i:i+1], w)
		}
		out = append(out, r)
	}
	// Back to newest first.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// sameWindow reports whether operand newer joins the window older leaves,
// w being that window when known.
func sameWindow(older, newer *format.Row, w format.Window, known bool) bool {
	if known {
		return w.Live && !w.Expired(newer.TS)
	}
	return newer.TS == older.TS && !older.ExpiredAt(newer.TS)
}
