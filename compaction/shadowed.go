package compaction

// Superseded rows in level 0 (RFC 0010, "Space of churning windows").
//
// A flush folds a counter's operands onto the state found in the tables
// beneath (rule 8) and writes one value row for the key; the key's row in
// the older table is then superseded, though it expires only with its
// window. When the same counters are added to in every memtable, each
// level-0 table holds nearly every counter, and every table but the newest
// is mostly superseded rows that a whole-file drop removes only once the
// last window in it ends. Table statistics cannot tell such tables from
// tables of distinct keys over the same key range; the flush can, since
// it looked each folded key up beneath: it counts the lookups that found a
// state (Table.Shadows). pickShadowed compacts level 0 when those counts
// say that enough of what the compaction reads is superseded.

// pickShadowed returns the level-0 compaction (pickL0) when the rows of
// older tables that level 0's tables supersede are at least
// o.ShadowedRatio of the rows it reads, or nil. A table's count is
// capped at the rows of the older tables the compaction reads, so a count
// left over from a table dropped since (whole, or by an earlier
// compaction) cannot trigger one. Each such compaction removes at least
// that share of what it reads, which bounds the bytes it writes per
// superseded byte removed by (1 - ShadowedRatio) / ShadowedRatio. A
// ratio of 0 or 1 (or more) disables the pick.
func pickShadowed(v *Levels, o *PickerOptions, env *Env) *Pick {
	if o.ShadowedRatio <= 0 || o.ShadowedRatio >= 1 || len(v[0]) == 0 {
		return nil
	}
	var shadows uint64
	for _, t := range v[0] {
		shadows += t.Shadows
	}
	if shadows == 0 {
		return nil
	}
	_, base := Targets(v, o)
	lo, hi := keyRange(v[0])
	// Oldest first: the base level's overlapping tables, then level 0
	// from its oldest table up.
	var older, superseded uint64
	for _, t := range overlapping(v[base], lo, hi) {
		older += t.Meta.NumRows
	}
	for i := len(v[0]) - 1; i >= 0; i-- {
		m := v[0][i]
		superseded += min(m.Shadows, older)
		older += m.Meta.NumRows
	}
	if float64(superseded) < o.ShadowedRatio*float64(older) {
		return nil
	}
	p := pickL0(v, o, env, false)
	if p != nil && p.Kind == KindL0 {
		p.Kind = KindShadowed
	}
	return p
}
