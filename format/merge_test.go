package format

import (
	"encoding/binary"
	"testing"
)

// addMerger is a test operator: operands and values are little-endian
// int64s, summed.
type addMerger struct{ calls int }

func (m *addMerger) FullMerge(_, base []byte, hasBase bool, ops [][]byte) ([]byte, error) {
	m.calls++
	var n int64
	if hasBase {
		n = int64(binary.LittleEndian.Uint64(base))
	}
	for _, o := range ops {
		n += int64(binary.LittleEndian.Uint64(o))
	}
	return binary.LittleEndian.AppendUint64(nil, uint64(n)), nil
}

func (m *addMerger) PartialMerge(_, a, b []byte) ([]byte, bool) {
	return binary.LittleEndian.AppendUint64(nil, binary.LittleEndian.Uint64(a)+binary.LittleEndian.Uint64(b)), true
}

func i64(n int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(n)) }

// op is an operand committed at ts; expire < 0: no TTL.
func op(seq uint64, ts int64, n int64, expire int64) Row {
	r := Row{Key: []byte("k"), Seq: seq, Flags: FlagMerge | FlagHasTS, TS: ts, Value: i64(n)}
	if expire >= 0 {
		r.Flags |= FlagHasExpire
		r.ExpireTS = expire
	}
	return r
}

func val(seq uint64, n int64, expire int64) Row {
	r := Row{Key: []byte("k"), Seq: seq, Value: i64(n)}
	if expire >= 0 {
		r.Flags |= FlagHasExpire | FlagHasTS
		r.ExpireTS = expire
	}
	return r
}

// resolved runs MergeChain and returns the count and deadline (-1: none),
// or ok false.
func resolved(t *testing.T, chain ...Row) (n, deadline int64, ok bool) {
	t.Helper()
	r, ok, err := MergeChain(chain, &addMerger{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0, 0, false
	}
	if r.Seq != chain[0].Seq {
		t.Fatalf("seq %d, want the newest row's %d", r.Seq, chain[0].Seq)
	}
	deadline = -1
	if r.HasExpiry() {
		deadline = r.ExpireTS
	}
	return int64(binary.LittleEndian.Uint64(r.Value)), deadline, true
}

func wantState(t *testing.T, n, d int64, ok bool, wantN, wantD int64) {
	t.Helper()
	if !ok || n != wantN || d != wantD {
		t.Fatalf("state (%d, deadline %d, live %v), want (%d, deadline %d)", n, d, ok, wantN, wantD)
	}
}

// Rule 1: an operand onto a missing, deleted or (at its commit) expired
// base starts from nothing.
func TestMergeRule1FreshStart(t *testing.T) {
	n, d, ok := resolved(t, op(3, 100, 5, -1))
	wantState(t, n, d, ok, 5, -1)
	tomb := Row{Key: []byte("k"), Seq: 2, Flags: FlagTombstone | FlagHasTS, TS: 90}
	n, d, ok = resolved(t, op(3, 100, 5, -1), tomb, val(1, 40, -1))
	wantState(t, n, d, ok, 5, -1)
	// A base whose deadline (99) is before the operand's commit (100).
	n, d, ok = resolved(t, op(3, 100, 5, 200), val(2, 40, 99))
	wantState(t, n, d, ok, 5, 200)
	// At its deadline's own millisecond the base is still live.
	n, d, ok = resolved(t, op(3, 100, 5, 200), val(2, 40, 100))
	wantState(t, n, d, ok, 45, 100)
}

// Rule 2: the window's deadline is the live base's, else that of the
// operand that started it; later operands do not move it.
func TestMergeRule2WindowFixedAtStart(t *testing.T) {
	n, d, ok := resolved(t, op(4, 150, 1, 1150), op(3, 120, 1, 1120), op(2, 100, 1, 1100))
	wantState(t, n, d, ok, 3, 1100)
	n, d, ok = resolved(t, op(3, 120, 1, 1120), val(2, 10, 5000))
	wantState(t, n, d, ok, 11, 5000)
	// A base without a deadline keeps the counter forever, whatever the
	// operands' TTLs say.
	n, d, ok = resolved(t, op(3, 120, 1, 1120), val(2, 10, -1))
	wantState(t, n, d, ok, 11, -1)
}

// Rule 3: an operand committed after the running deadline starts the
// next window; the old window's count is not carried over. An operand at
// the deadline's own millisecond still joins.
func TestMergeRule3NextWindow(t *testing.T) {
	n, d, ok := resolved(t, op(3, 1100, 1, 2100), op(2, 100, 1, 1100))
	wantState(t, n, d, ok, 2, 1100)
	n, d, ok = resolved(t, op(4, 1200, 7, 2200), op(3, 1100, 1, 2100), op(2, 100, 1, 1100))
	wantState(t, n, d, ok, 7, 2200)
	// The same after a base that expired before the operand.
	n, d, ok = resolved(t, op(4, 1200, 7, 2200), op(3, 150, 1, 1150), val(2, 10, 1000))
	wantState(t, n, d, ok, 7, 2200)
}

// Rule 4: the resolved state carries its window's deadline; the row is
// judged by it at read time, with everything folded into it.
func TestMergeRule4ExpiredWindowCountsNothing(t *testing.T) {
	r, ok, err := MergeChain([]Row{op(3, 150, 1, 1150), op(2, 100, 1, 1100)}, &addMerger{}, nil)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if r.ExpiredAt(1100) || !r.ExpiredAt(1101) {
		t.Fatalf("window deadline %d: expired at 1100 %v, at 1101 %v", r.ExpireTS, r.ExpiredAt(1100), r.ExpiredAt(1101))
	}
	w := WindowOf([]Row{op(3, 150, 1, 1150), op(2, 100, 1, 1100)}, Window{})
	if !w.Expired(1101) || w.Expired(1100) {
		t.Fatalf("WindowOf %+v", w)
	}
}

// Rule 5: a deadline row sets the deadline of the merged state beneath
// it, and later operands join the window it set.
func TestMergeRule5DeadlineRowOnMergedState(t *testing.T) {
	dl := Row{Key: []byte("k"), Seq: 3, Flags: FlagDeadline | FlagHasTS | FlagHasExpire, TS: 110, ExpireTS: 5000}
	n, d, ok := resolved(t, dl, op(2, 100, 1, 1100))
	wantState(t, n, d, ok, 1, 5000)
	// The operand at 2000 joins the window extended to 5000.
	n, d, ok = resolved(t, op(4, 2000, 1, 3000), dl, op(2, 100, 1, 1100))
	wantState(t, n, d, ok, 2, 5000)
	// A persist (deadline row without expiry) makes the counter keep.
	persist := Row{Key: []byte("k"), Seq: 3, Flags: FlagDeadline | FlagHasTS, TS: 110}
	n, d, ok = resolved(t, op(4, 9000, 1, 10000), persist, op(2, 100, 1, 1100))
	wantState(t, n, d, ok, 2, -1)
	// A deadline row over nothing leaves nothing.
	if _, _, ok := resolved(t, dl, Row{Key: []byte("k"), Seq: 1, Flags: FlagTombstone}); ok {
		t.Fatal("deadline row over a tombstone resolved to a value")
	}
}

// The value row that ends a chain is its base: older rows are not read,
// and a chain of a base and deadline rows calls no operator.
func TestMergeChainStopsAtBase(t *testing.T) {
	m := &addMerger{}
	r, ok, err := MergeChain([]Row{op(3, 100, 2, -1), val(2, 10, -1), op(1, 50, 99, -1)}, m, nil)
	if err != nil || !ok || binary.LittleEndian.Uint64(r.Value) != 12 || m.calls != 1 {
		t.Fatalf("%v %v %v calls %d", r, ok, err, m.calls)
	}
	dl := Row{Key: []byte("k"), Seq: 3, Flags: FlagDeadline | FlagHasTS | FlagHasExpire, TS: 110, ExpireTS: 5000}
	m.calls = 0
	r, ok, err = MergeChain([]Row{dl, val(2, 10, -1)}, m, nil)
	if err != nil || !ok || binary.LittleEndian.Uint64(r.Value) != 10 || r.ExpireTS != 5000 || m.calls != 0 {
		t.Fatalf("%v %v %v calls %d", r, ok, err, m.calls)
	}
}
