package format

// Merge operands are resolved against the versions beneath them by the
// rules of RFC 0010 ("TTL rules for merges"). A key's versions are read
// oldest first into a state: absent, or a value with an optional
// deadline. Value rows, tombstones and deadline rows keep their meaning;
// an operand committed at ts
//
//  1. starts from nothing when the state is absent or its deadline is
//     before ts (expired when the operand committed),
//  2. and then gives the state its own deadline (its expire_ts, or none);
//     otherwise it joins the state, whose deadline it leaves as it is:
//     a window's deadline is fixed by the row that started it;
//  3. so an operand committed after the running deadline starts the next
//     window, and the old window's value is not carried over. Windows are
//     decided by commit times only, never by the reader's clock.
//  4. A reader then judges the resolved state by its deadline, as any row
//     (Row.ExpiredAt): everything folded into an expired window is gone.
//  5. A deadline row sets the deadline of the state beneath it, merged or
//     not (RFC 0008 with the merged state as the value beneath).

// Merger folds merge operands; it is the engine side of a merge operator.
type Merger interface {
	// FullMerge folds operands (oldest first) onto base; hasBase is false
	// when the window starts from nothing. It must not keep or modify its
	// arguments.
	FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error)
	// PartialMerge combines two adjacent operands, older then newer, into
	// one; ok false: they do not combine.
	PartialMerge(key, older, newer []byte) (merged []byte, ok bool)
}

// Window describes the state a chain of versions resolves to, without its
// value: whether it is live (in commit order, before any reader's clock),
// its deadline, and where its value starts.
type Window struct {
	Live        bool
	HasDeadline bool
	Deadline    int64
	// Start is the index (in the newest-first chain) of the row the
	// state's value starts from: a value row or the operand that started
	// the window; -1 when the state is absent.
	Start int
	// FromBase is true when Start is a value row (the operands above it
	// fold onto its value), false when it is an operand (FullMerge
	// without a base).
	FromBase bool
}

// Expired reports whether a state with this window is absent at now.
func (w Window) Expired(now int64) bool { return w.HasDeadline && w.Deadline < now }

// WindowOf resolves the windows of chain, newest first: chain[0] is the
// newest version and the chain ends at a value row or tombstone (the base)
// or at the oldest version there is. Rows below the first value row or
// tombstone are ignored. below is the state beneath the chain's oldest row
// when that row is not a base (Window{} with Live false: nothing, as at the
// bottom of the tree).
func WindowOf(chain []Row, below Window) Window {
	w := below
	w.Start = -1
	if w.Live {
		w.Start = len(chain) // beneath the chain
		w.FromBase = true
	}
	end := len(chain)
	for i, r := range chain {
		if r.Flags&(FlagMerge|FlagDeadline) == 0 {
			end = i + 1
			break
		}
	}
	for i := end - 1; i >= 0; i-- {
		w = w.apply(&chain[i], i)
	}
	return w
}

// apply advances w by one row, i its index in the chain.
func (w Window) apply(r *Row, i int) Window {
	switch {
	case r.Flags&FlagMerge != 0:
		if !w.Live || w.Expired(r.TS) {
			return Window{Live: true, HasDeadline: r.HasExpiry(), Deadline: r.ExpireTS, Start: i}
		}
		return w
	case r.Flags&FlagDeadline != 0:
		if w.Live {
			w.HasDeadline, w.Deadline = r.HasExpiry(), r.ExpireTS
		}
		return w
	case r.Flags&FlagTombstone != 0:
		return Window{Start: -1}
	default:
		return Window{Live: true, HasDeadline: r.HasExpiry(), Deadline: r.ExpireTS, Start: i, FromBase: true}
	}
}

// MergeChain resolves chain (newest first, as for WindowOf, with nothing
// beneath it) into the row a reader sees: the merged value under its
// window's deadline, with the sequence number, key and commit time of the
// newest row. ok is false when the key is absent in commit order; the
// caller still judges the row's expiry at its own time (rule 4). ops is
// scratch space for the operand list (may be nil). The returned value is
// FullMerge's result, or aliases the base row's value when no operand
// applies.
func MergeChain(chain []Row, m Merger, ops [][]byte) (Row, bool, error) {
	w := WindowOf(chain, Window{})
	if !w.Live {
		return Row{}, false, nil
	}
	top := &chain[0]
	out := Row{Key: top.Key, Seq: top.Seq, Flags: FlagHasTS, TS: top.TS}
	if top.Flags&FlagHasTS == 0 {
		out.Flags, out.TS = 0, 0
	}
	if w.HasDeadline {
		out.Flags |= FlagHasExpire
		out.ExpireTS = w.Deadline
	}
	var base []byte
	first := w.Start
	if w.FromBase {
		base, first = chain[w.Start].Value, w.Start-1
	}
	ops = ops[:0]
	for i := first; i >= 0; i-- {
		if chain[i].Flags&FlagMerge != 0 {
			ops = append(ops, chain[i].Value)
		}
	}
	if len(ops) == 0 {
		out.Value = base
		return out, true, nil
	}
	v, err := m.FullMerge(top.Key, base, w.FromBase, ops)
	if err != nil {
		return Row{}, false, err
	}
	out.Value = v
	return out, true, nil
}
