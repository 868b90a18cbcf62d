package crash

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mayflydb/mayfly"
)

// mut is one write of a batch as the model sees it.
type mut struct {
	Key string `json:"k"`
	Del bool   `json:"d,omitempty"`
	Val string `json:"v,omitempty"`
	// Expires says the row has a deadline, known to lie in [ExpLo, ExpHi]
	// (Unix ms; equal when the writer knows it exactly).
	Expires bool  `json:"e,omitempty"`
	ExpLo   int64 `json:"lo,omitempty"`
	ExpHi   int64 `json:"hi,omitempty"`
}

// opStatus is what the writer learnt about an operation.
type opStatus int

const (
	// pending: started, never answered (the process died) — may or may not
	// have happened.
	pending opStatus = iota
	// acked: the call returned nil.
	acked
	// failed: the call returned an error that does not say the write was
	// refused — it may or may not have happened.
	failed
	// refused: the call returned ErrBackground after an earlier call had
	// returned it, or ErrClosed: the database refused it up front, so it
	// must not have happened. (The write that meets the failure returns
	// ErrBackground too, but may have been logged: failed.)
	refused
)

func (s opStatus) String() string {
	return [...]string{"pending", "acked", "failed", "refused"}[s]
}

// op is one atomic write (a single put or delete is a batch of one).
type op struct {
	ID     int      `json:"id"`
	Kind   string   `json:"kind"`
	Muts   []mut    `json:"muts"`
	Sync   bool     `json:"sync,omitempty"`
	Status opStatus `json:"-"`
	Err    error    `json:"-"`
}

func (o *op) String() string {
	s := fmt.Sprintf("op %d %s sync=%v %s", o.ID, o.Kind, o.Sync, o.Status)
	if o.Err != nil {
		s += fmt.Sprintf(" (%v)", o.Err)
	}
	return s
}

// uncertain reports whether the op may or may not have been applied.
func (o *op) uncertain() bool { return o.Status == pending || o.Status == failed }

// statusOf classifies the error a write returned.
func statusOf(err error) opStatus {
	switch {
	case err == nil:
		return acked
	case errors.Is(err, mayfly.ErrBackground), errors.Is(err, mayfly.ErrClosed):
		return refused
	}
	return failed
}

// row is the model's state of one key.
type row struct {
	Present bool
	Val     string
	Expires bool
	ExpLo   int64
	ExpHi   int64
}

func (r row) String() string {
	if !r.Present {
		return "absent"
	}
	if !r.Expires {
		return fmt.Sprintf("%q (no expiry)", r.Val)
	}
	if r.ExpLo == r.ExpHi {
		return fmt.Sprintf("%q (expires %d)", r.Val, r.ExpLo)
	}
	return fmt.Sprintf("%q (expires in [%d, %d])", r.Val, r.ExpLo, r.ExpHi)
}

func (m mut) row() row {
	if m.Del {
		return row{}
	}
	return row{Present: true, Val: m.Val, Expires: m.Expires, ExpLo: m.ExpLo, ExpHi: m.ExpHi}
}

// obs is what a read of one key returned.
type obs struct {
	Found    bool
	Val      string
	Expires  bool
	Deadline int64 // Unix ms, exact
}

func (o obs) String() string {
	if !o.Found {
		return "not found"
	}
	if !o.Expires {
		return fmt.Sprintf("%q (no expiry)", o.Val)
	}
	return fmt.Sprintf("%q (expires %d)", o.Val, o.Deadline)
}

// asRow turns an observation into the model state it proves.
func (o obs) asRow() row {
	if !o.Found {
		return row{}
	}
	return row{Present: true, Val: o.Val, Expires: o.Expires, ExpLo: o.Deadline, ExpHi: o.Deadline}
}

// matches reports whether reading a key in state r at time now may return o.
// A row is visible while now <= deadline.
func (r row) matches(o obs, now int64) bool {
	if !r.Present {
		return !o.Found
	}
	if r.Expires && r.ExpHi < now {
		return !o.Found // surely expired
	}
	if !o.Found {
		return r.Expires && r.ExpLo < now // perhaps expired
	}
	if o.Val != r.Val || o.Expires != r.Expires {
		return false
	}
	return !r.Expires || (o.Deadline >= r.ExpLo && o.Deadline <= r.ExpHi)
}

// verdict is the outcome of checking a recovered state.
type verdict struct {
	OK       bool
	Prefix   int   // a prefix length that explains the state
	Included []int // uncertain ops (indexes) it includes
	Problems []string
}

// maxUncertain bounds the subsets of uncertain ops the checker tries.
const maxUncertain = 14

// checkState decides whether observed (read at time now) is the state that
// base plus some prefix ops[:p] leaves, with lo <= p <= hi: every acked op
// below p applied, every refused op skipped, any choice for the uncertain
// ones (each applied whole or not at all). observed must cover every key in
// base and in ops[:hi].
func checkState(base map[string]row, ops []*op, lo, hi int, observed map[string]obs, now int64) verdict {
	if hi > len(ops) {
		hi = len(ops)
	}
	if lo > hi {
		lo = hi
	}
	// Values are unique to the op that writes them, so an uncertain op
	// whose value is visible must be included, and one with only puts, none
	// visible nor possibly expired, is equivalent to excluded (were it
	// applied, a later write would have to hide every key it wrote). Only
	// the rest — ops with deletes or expiring puts — need both choices.
	forced := map[int]bool{}
	var unc []int
	for i := range hi {
		if !ops[i].uncertain() {
			continue
		}
		visible, free := false, false
		for _, m := range ops[i].Muts {
			o := observed[m.Key]
			switch {
			case m.Del || (m.Expires && m.ExpLo < now):
				free = true
			case o.Found && o.Val == m.Val:
				visible = true
			}
		}
		switch {
		case visible:
			forced[i] = true
		case free:
			unc = append(unc, i)
		default:
			forced[i] = false
		}
	}
	if len(unc) > maxUncertain {
		return verdict{Problems: []string{fmt.Sprintf("checker: %d uncertain operations with deletes or expired rows, more than %d", len(unc), maxUncertain)}}
	}
	bestMism, bestP, bestMask := -1, 0, 0
	for mask := 0; mask < 1<<len(unc); mask++ {
		include := func(i int) bool {
			switch ops[i].Status {
			case acked:
				return true
			case refused:
				return false
			}
			if f, ok := forced[i]; ok {
				return f
			}
			j, _ := slices.BinarySearch(unc, i)
			return mask&(1<<j) != 0
		}
		state := make(map[string]row, len(observed))
		mism := 0
		for k, o := range observed {
			r := base[k]
			state[k] = r
			if !r.matches(o, now) {
				mism++
			}
		}
		for p := 0; p <= hi; p++ {
			if p >= lo {
				if mism == 0 {
					v := verdict{OK: true, Prefix: p}
					for i := range p {
						if ops[i].uncertain() && include(i) {
							v.Included = append(v.Included, i)
						}
					}
					return v
				}
				if bestMism < 0 || mism < bestMism {
					bestMism, bestP, bestMask = mism, p, mask
				}
			}
			if p == hi {
				break
			}
			if !include(p) {
				continue
			}
			for _, m := range ops[p].Muts {
				o, ok := observed[m.Key]
				if !ok {
					panic("checkState: key " + m.Key + " not observed")
				}
				if !state[m.Key].matches(o, now) {
					mism--
				}
				state[m.Key] = m.row()
				if !state[m.Key].matches(o, now) {
					mism++
				}
			}
		}
	}
	return verdict{Problems: explain(base, ops, lo, hi, observed, now, bestP, bestMask, unc, forced)}
}

// explain describes why the closest candidate state differs from observed.
func explain(base map[string]row, ops []*op, lo, hi int, observed map[string]obs, now int64, p, mask int, unc []int, forced map[int]bool) []string {
	state := make(map[string]row, len(observed))
	writer := map[string]int{} // key -> index of the op that set its state
	for k := range observed {
		state[k] = base[k]
		writer[k] = -1
	}
	for i := range p {
		inc := ops[i].Status == acked
		if f, ok := forced[i]; ok {
			inc = f
		} else if ops[i].uncertain() {
			j, _ := slices.BinarySearch(unc, i)
			inc = mask&(1<<j) != 0
		}
		if !inc {
			continue
		}
		for _, m := range ops[i].Muts {
			state[m.Key] = m.row()
			writer[m.Key] = i
		}
	}
	var probs []string
	probs = append(probs, fmt.Sprintf("no prefix in [%d, %d] of %d operations explains the recovered state; closest is prefix %d:", lo, hi, len(ops), p))
	keys := make([]string, 0, len(observed))
	for k := range observed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Which op wrote each observed value, if any.
	valueOp := map[string]int{}
	for i := range hi {
		for _, m := range ops[i].Muts {
			if !m.Del {
				valueOp[m.Key+"\x00"+m.Val] = i
			}
		}
	}
	n := 0
	for _, k := range keys {
		o := observed[k]
		if state[k].matches(o, now) {
			continue
		}
		n++
		if n > 12 {
			continue
		}
		line := fmt.Sprintf("  key %q: recovered %s, want %s", k, o, state[k])
		if w := writer[k]; w >= 0 {
			line += fmt.Sprintf(" [from %s]", ops[w])
		}
		if o.Found {
			if i, ok := valueOp[k+"\x00"+o.Val]; ok {
				line += fmt.Sprintf(" [recovered value is from %s]", ops[i])
			} else if b, ok := base[k]; !ok || b.Val != o.Val {
				line += " [VALUE NEVER WRITTEN]"
			}
		}
		probs = append(probs, line)
	}
	if n > 12 {
		probs = append(probs, fmt.Sprintf("  ... and %d more keys", n-12))
	}
	// Missing durable writes and partly visible batches, said plainly.
	for i := range hi {
		o := ops[i]
		shown, hidden := 0, 0
		for _, m := range o.Muts {
			if m.Del || overwrittenLater(ops, i, hi, m.Key) {
				continue
			}
			if m.row().matches(observed[m.Key], now) && observed[m.Key].Found {
				shown++
			} else {
				hidden++
			}
		}
		switch {
		case shown > 0 && hidden > 0:
			probs = append(probs, fmt.Sprintf("  BATCH PARTLY VISIBLE: %s: %d of %d writes visible", o, shown, shown+hidden))
		case hidden > 0 && i < lo && o.Status == acked:
			probs = append(probs, fmt.Sprintf("  DURABLE WRITE LOST: %s", o))
		case shown > 0 && o.Status == refused:
			probs = append(probs, fmt.Sprintf("  REFUSED WRITE APPLIED: %s", o))
		}
	}
	return probs
}

func overwrittenLater(ops []*op, i, hi int, key string) bool {
	for j := i + 1; j < hi; j++ {
		for _, m := range ops[j].Muts {
			if m.Key == key {
				return true
			}
		}
	}
	return false
}

// snapshotReader is what observe needs from a DB.
type snapshotReader interface {
	NewSnapshot() (*mayfly.Snapshot, error)
}

// observe reads every key of universe through one snapshot and scans the
// whole database. It returns the observations, the snapshot's time, and
// problems: keys the scan found that are not in universe, and reads that
// disagree with each other.
func observe(db snapshotReader, universe map[string]bool) (map[string]obs, int64, []string, error) {
	s, err := db.NewSnapshot()
	if err != nil {
		return nil, 0, nil, err
	}
	defer s.Close()
	now := s.Time().UnixMilli()
	out := make(map[string]obs, len(universe))
	var probs []string
	for k := range universe {
		v, err := s.Get([]byte(k))
		if errors.Is(err, mayfly.ErrNotFound) {
			out[k] = obs{}
			if _, _, err := s.TTL([]byte(k)); !errors.Is(err, mayfly.ErrNotFound) {
				probs = append(probs, fmt.Sprintf("key %q: Get says not found, TTL says %v", k, err))
			}
			continue
		}
		if err != nil {
			return nil, 0, nil, fmt.Errorf("Get(%q): %w", k, err)
		}
		d, expires, err := s.TTL([]byte(k))
		if err != nil {
			return nil, 0, nil, fmt.Errorf("TTL(%q) after a Get found it: %w", k, err)
		}
		o := obs{Found: true, Val: string(v), Expires: expires}
		if expires {
			o.Deadline = now + d.Milliseconds()
		}
		out[k] = o
	}
	it, err := s.NewIter(nil)
	if err != nil {
		return nil, 0, nil, err
	}
	defer it.Close()
	seen := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := string(it.Key())
		o, known := out[k]
		switch {
		case !known:
			probs = append(probs, fmt.Sprintf("VALUE NEVER WRITTEN: scan found key %q = %q, which no write touched", k, it.Value()))
		case !o.Found:
			probs = append(probs, fmt.Sprintf("scan found key %q = %q, Get says not found", k, it.Value()))
		case o.Val != string(it.Value()):
			probs = append(probs, fmt.Sprintf("scan found key %q = %q, Get says %q", k, it.Value(), o.Val))
		default:
			seen++
		}
	}
	if err := it.Error(); err != nil {
		return nil, 0, nil, fmt.Errorf("scan: %w", err)
	}
	found := 0
	for _, o := range out {
		if o.Found {
			found++
		}
	}
	if seen != found {
		probs = append(probs, fmt.Sprintf("scan returned %d known keys, Get found %d", seen, found))
	}
	return out, now, probs, nil
}

// universeOf returns every key of base and of ops, plus extra.
func universeOf(base map[string]row, ops []*op, extra ...string) map[string]bool {
	u := make(map[string]bool, len(base)+len(ops))
	for k := range base {
		u[k] = true
	}
	for _, o := range ops {
		for _, m := range o.Muts {
			u[m.Key] = true
		}
	}
	for _, k := range extra {
		u[k] = true
	}
	return u
}

func joinProblems(p []string) string { return strings.Join(p, "\n") }
