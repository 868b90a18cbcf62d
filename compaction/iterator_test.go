package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/memtable"
)

// ---------------------------------------------------------------------------
// Row constructors.

const ttlFlags = format.FlagHasTS | format.FlagHasExpire

func val(key string, seq uint64, v string) format.Row {
	return format.Row{Key: []byte(key), Seq: seq, Value: []byte(v)}
}

func del(key string, seq uint64) format.Row {
	return format.Row{Key: []byte(key), Seq: seq, Flags: format.FlagTombstone}
}

func ttl(key string, seq uint64, expire int64, v string) format.Row {
	return format.Row{Key: []byte(key), Seq: seq, Flags: ttlFlags, TS: expire - 10, ExpireTS: expire, Value: []byte(v)}
}

// dl is a deadline row setting key's deadline to expire (committed at 500).
func dl(key string, seq uint64, expire int64) format.Row {
	return format.Row{Key: []byte(key), Seq: seq, Flags: format.FlagDeadline | ttlFlags, TS: 500, ExpireTS: expire}
}

// persist is a deadline row removing key's deadline (committed at 500).
func persist(key string, seq uint64) format.Row {
	return format.Row{Key: []byte(key), Seq: seq, Flags: format.FlagDeadline | format.FlagHasTS, TS: 500}
}

// folded is value v under the deadline row dl(key, seq, expire).
func folded(key string, seq uint64, expire int64, v string) format.Row {
	return format.Row{Key: []byte(key), Seq: seq, Flags: ttlFlags, TS: 500, ExpireTS: expire, Value: []byte(v)}
}

// expiredTomb is the tombstone an expired row becomes: same key and seq, no
// value, no expiry, and ts = the deadline it expired at (every expired row
// in the table tests expires at now-1 = 999).
func expiredTomb(key string, seq uint64) format.Row {
	return format.Row{Key: []byte(key), Seq: seq, Flags: format.FlagTombstone | format.FlagHasTS, TS: 999}
}

func cloneRow(r *format.Row) format.Row {
	c := *r
	if r.Key != nil {
		c.Key = append([]byte{}, r.Key...)
	} else {
		c.Key = []byte{}
	}
	if r.Value != nil {
		c.Value = append([]byte(nil), r.Value...)
	}
	return c
}

func fmtRow(r format.Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q@%d", r.Key, r.Seq)
	if r.IsTombstone() {
		b.WriteString(" DEL")
	} else if r.IsDeadline() {
		b.WriteString(" DEADLINE")
	} else {
		fmt.Fprintf(&b, "=%q", r.Value)
	}
	if r.Flags&format.FlagHasTS != 0 {
		fmt.Fprintf(&b, " ts=%d", r.TS)
	}
	if r.HasExpiry() {
		fmt.Fprintf(&b, " exp=%d", r.ExpireTS)
	}
	if r.Flags&^format.KnownFlags != 0 {
		fmt.Fprintf(&b, " flags=%#x", r.Flags)
	}
	return b.String()
}

func fmtRows(rows []format.Row) string {
	if len(rows) == 0 {
		return "  (none)\n"
	}
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("  " + fmtRow(r) + "\n")
	}
	return b.String()
}

// rowEqual compares every attribute a compaction must preserve. TS and
// ExpireTS only matter when their flags announce them, but an expired row
// turned tombstone must not keep the flags, so flags are compared exactly.
func rowEqual(a, b format.Row) bool {
	if !bytes.Equal(a.Key, b.Key) || a.Seq != b.Seq || a.Flags != b.Flags {
		return false
	}
	if a.Flags&format.FlagHasTS != 0 && a.TS != b.TS {
		return false
	}
	if a.Flags&format.FlagHasExpire != 0 && a.ExpireTS != b.ExpireTS {
		return false
	}
	if a.IsTombstone() {
		return len(a.Value) == 0 && len(b.Value) == 0
	}
	return bytes.Equal(a.Value, b.Value)
}

func rowsEqual(a, b []format.Row) bool {
	return slices.EqualFunc(a, b, rowEqual)
}

// ---------------------------------------------------------------------------
// Inputs.

// memInput loads rows into a memtable and returns an iterator over it, the
// way a flush feeds the compaction iterator.
func memInput(rows []format.Row) format.Iterator {
	m := memtable.New(1)
	for i := range rows {
		m.Add(&rows[i])
	}
	return m.NewIter()
}

// scratchIter is an iterator over sorted rows whose Row memory is valid only
// until the next positioning call, strictly: every positioning call
// scribbles over the previous row's key and value bytes. An Iterator that kept input memory past the
// next input positioning call would emit garbage.
type scratchIter struct {
	rows []format.Row
	pos  int
	key  []byte
	val  []byte
	row  format.Row
	err  error // returned once pos reaches failAt
	fail int
}

func newScratchIter(rows []format.Row) *scratchIter {
	s := slices.Clone(rows)
	slices.SortStableFunc(s, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
	return &scratchIter{rows: s, pos: -1, fail: -1}
}

func (it *scratchIter) load() bool {
	for i := range it.key {
		it.key[i] = '#'
	}
	for i := range it.val {
		it.val[i] = '#'
	}
	if it.fail >= 0 && it.pos >= it.fail {
		it.err = errors.New("scratchIter: injected failure")
		it.pos = len(it.rows)
	}
	if it.pos < 0 || it.pos >= len(it.rows) {
		it.row = format.Row{Key: []byte("#garbage#"), Seq: 999999, Value: []byte("#garbage#")}
		return false
	}
	// Fresh buffers each time, the old ones scribbled above: memory from an
	// earlier row is garbage even if the new row has the same key.
	r := it.rows[it.pos]
	it.key = append([]byte(nil), r.Key...)
	it.val = append([]byte(nil), r.Value...)
	it.row = r
	it.row.Key = it.key
	if r.Value != nil {
		it.row.Value = it.val
	}
	return true
}

func (it *scratchIter) SeekGE(key []byte) bool {
	it.pos = 0
	for it.pos < len(it.rows) && bytes.Compare(it.rows[it.pos].Key, key) < 0 {
		it.pos++
	}
	return it.load()
}

func (it *scratchIter) SeekLT(key []byte) bool {
	it.pos = len(it.rows) - 1
	for it.pos >= 0 && bytes.Compare(it.rows[it.pos].Key, key) >= 0 {
		it.pos--
	}
	return it.load()
}

func (it *scratchIter) First() bool { it.pos = 0; return it.load() }
func (it *scratchIter) Last() bool  { it.pos = len(it.rows) - 1; return it.load() }

func (it *scratchIter) Next() bool {
	if it.Valid() {
		it.pos++
	}
	return it.load()
}

func (it *scratchIter) Prev() bool {
	if it.Valid() {
		it.pos--
	}
	return it.load()
}

func (it *scratchIter) Valid() bool               { return it.pos >= 0 && it.pos < len(it.rows) }
func (it *scratchIter) Row() *format.Row          { return &it.row }
func (it *scratchIter) Error() error              { return it.err }
func (it *scratchIter) Close() error              { return it.err }
func (it *scratchIter) failAt(n int) *scratchIter { it.fail = n; return it }

// drain runs the compaction iterator to the end and returns deep copies of
// its output rows.
func drain(t *testing.T, in format.Iterator, cfg Config) ([]format.Row, Stats) {
	t.Helper()
	ci := NewIterator(in, cfg)
	var out []format.Row
	for ci.Next() {
		out = append(out, cloneRow(ci.Row()))
	}
	if err := ci.Error(); err != nil {
		t.Fatalf("compaction iterator error: %v", err)
	}
	// Exhausted stays exhausted and does not disturb the counts.
	st := ci.Stats()
	if ci.Next() || ci.Next() {
		t.Fatalf("Next returned true after exhaustion")
	}
	if st2 := ci.Stats(); st2 != st {
		t.Fatalf("stats changed after exhaustion: %+v -> %+v", st, st2)
	}
	return out, st
}

// ---------------------------------------------------------------------------
// Table-driven rules.

func TestIteratorRules(t *testing.T) {
	const now = 1000
	tests := []struct {
		name  string
		in    []format.Row
		cfg   Config
		want  []format.Row
		stats Stats
	}{
		{
			name:  "empty input",
			cfg:   Config{Now: now},
			stats: Stats{},
		},
		{
			name:  "empty input at bottom with snapshots",
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{1, 5}},
			stats: Stats{},
		},
		{
			name:  "single value kept",
			in:    []format.Row{val("a", 1, "v1")},
			cfg:   Config{Now: now},
			want:  []format.Row{val("a", 1, "v1")},
			stats: Stats{RowsIn: 1, RowsOut: 1},
		},
		{
			name:  "newest version kept, shadowed versions dropped",
			in:    []format.Row{val("a", 5, "a5"), val("a", 3, "a3"), val("a", 1, "a1"), val("b", 4, "b4"), val("b", 2, "b2")},
			cfg:   Config{Now: now},
			want:  []format.Row{val("a", 5, "a5"), val("b", 4, "b4")},
			stats: Stats{RowsIn: 5, RowsOut: 2, ShadowedDropped: 3},
		},
		{
			name:  "newest version kept at bottom too",
			in:    []format.Row{val("a", 5, "a5"), del("a", 3), val("a", 1, "a1")},
			cfg:   Config{Now: now, Bottom: true},
			want:  []format.Row{val("a", 5, "a5")},
			stats: Stats{RowsIn: 3, RowsOut: 1, ShadowedDropped: 2},
		},
		{
			name: "snapshot stripes keep the newest version per stripe",
			// Stripes: (4,inf) = {5}; (2,4] = {4,3}; [0,2] = {2,1}.
			in:    []format.Row{val("a", 5, "a5"), val("a", 4, "a4"), val("a", 3, "a3"), val("a", 2, "a2"), val("a", 1, "a1")},
			cfg:   Config{Now: now, Snapshots: []uint64{2, 4}},
			want:  []format.Row{val("a", 5, "a5"), val("a", 4, "a4"), val("a", 2, "a2")},
			stats: Stats{RowsIn: 5, RowsOut: 3, ShadowedDropped: 2},
		},
		{
			name:  "snapshot between versions keeps both",
			in:    []format.Row{val("a", 7, "a7"), val("a", 3, "a3")},
			cfg:   Config{Now: now, Snapshots: []uint64{5}},
			want:  []format.Row{val("a", 7, "a7"), val("a", 3, "a3")},
			stats: Stats{RowsIn: 2, RowsOut: 2},
		},
		{
			name:  "snapshot above every row: one stripe",
			in:    []format.Row{val("a", 7, "a7"), val("a", 3, "a3")},
			cfg:   Config{Now: now, Snapshots: []uint64{100}},
			want:  []format.Row{val("a", 7, "a7")},
			stats: Stats{RowsIn: 2, RowsOut: 1, ShadowedDropped: 1},
		},
		{
			name:  "snapshot below every row: one stripe",
			in:    []format.Row{val("a", 7, "a7"), val("a", 3, "a3")},
			cfg:   Config{Now: now, Snapshots: []uint64{1}},
			want:  []format.Row{val("a", 7, "a7")},
			stats: Stats{RowsIn: 2, RowsOut: 1, ShadowedDropped: 1},
		},
		{
			name:  "duplicate snapshot seqs",
			in:    []format.Row{val("a", 7, "a7"), val("a", 5, "a5"), val("a", 3, "a3")},
			cfg:   Config{Now: now, Snapshots: []uint64{5, 5, 5}},
			want:  []format.Row{val("a", 7, "a7"), val("a", 5, "a5")},
			stats: Stats{RowsIn: 3, RowsOut: 2, ShadowedDropped: 1},
		},
		{
			name:  "stripes are per key",
			in:    []format.Row{val("a", 6, "a6"), val("a", 1, "a1"), val("b", 5, "b5"), val("b", 4, "b4"), val("c", 2, "c2")},
			cfg:   Config{Now: now, Snapshots: []uint64{3}},
			want:  []format.Row{val("a", 6, "a6"), val("a", 1, "a1"), val("b", 5, "b5"), val("c", 2, "c2")},
			stats: Stats{RowsIn: 5, RowsOut: 4, ShadowedDropped: 1},
		},
		{
			name: "expired newest above bottom becomes tombstone, older shadowed",
			in:   []format.Row{ttl("a", 5, now-1, "new"), val("a", 3, "old")},
			cfg:  Config{Now: now},
			// The older value must not become the newest row for "a".
			want:  []format.Row{expiredTomb("a", 5)},
			stats: Stats{RowsIn: 2, RowsOut: 1, ExpiredToTombstone: 1, ShadowedDropped: 1},
		},
		{
			name:  "expired newest above bottom, nothing older: tombstone kept",
			in:    []format.Row{ttl("a", 5, now-1, "new")},
			cfg:   Config{Now: now},
			want:  []format.Row{expiredTomb("a", 5)},
			stats: Stats{RowsIn: 1, RowsOut: 1, ExpiredToTombstone: 1},
		},
		{
			name:  "expired newest above bottom, older version in a snapshot stripe kept",
			in:    []format.Row{ttl("a", 5, now-1, "new"), val("a", 3, "old")},
			cfg:   Config{Now: now, Snapshots: []uint64{4}},
			want:  []format.Row{expiredTomb("a", 5), val("a", 3, "old")},
			stats: Stats{RowsIn: 2, RowsOut: 2, ExpiredToTombstone: 1},
		},
		{
			name:  "expired at bottom, nothing older: dropped",
			in:    []format.Row{ttl("a", 5, now-1, "new")},
			cfg:   Config{Now: now, Bottom: true},
			stats: Stats{RowsIn: 1, ExpiredDropped: 1},
		},
		{
			name:  "expired at bottom, older version shadowed: both dropped, no resurrection",
			in:    []format.Row{ttl("a", 5, now-1, "new"), val("a", 3, "old")},
			cfg:   Config{Now: now, Bottom: true},
			stats: Stats{RowsIn: 2, ExpiredDropped: 1, ShadowedDropped: 1},
		},
		{
			name:  "expired at bottom, older version kept by snapshot: tombstone kept",
			in:    []format.Row{ttl("a", 5, now-1, "new"), val("a", 3, "old")},
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{3}},
			want:  []format.Row{expiredTomb("a", 5), val("a", 3, "old")},
			stats: Stats{RowsIn: 2, RowsOut: 2, ExpiredToTombstone: 1},
		},
		{
			name:  "expired at bottom, older kept version also expired: both dropped",
			in:    []format.Row{ttl("a", 5, now-1, "new"), ttl("a", 3, now-5, "old")},
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{3}},
			stats: Stats{RowsIn: 2, ExpiredDropped: 2},
		},
		{
			name:  "tombstone at bottom, nothing older: dropped",
			in:    []format.Row{del("a", 5)},
			cfg:   Config{Now: now, Bottom: true},
			stats: Stats{RowsIn: 1, TombstonesDropped: 1},
		},
		{
			name:  "tombstone at bottom, older versions shadowed: all dropped",
			in:    []format.Row{del("a", 5), val("a", 4, "a4"), ttl("a", 2, now+100, "a2")},
			cfg:   Config{Now: now, Bottom: true},
			stats: Stats{RowsIn: 3, TombstonesDropped: 1, ShadowedDropped: 2},
		},
		{
			name:  "tombstone at bottom, older version kept by snapshot: tombstone kept",
			in:    []format.Row{del("a", 5), val("a", 3, "a3")},
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{4}},
			want:  []format.Row{del("a", 5), val("a", 3, "a3")},
			stats: Stats{RowsIn: 2, RowsOut: 2},
		},
		{
			name:  "tombstone above bottom, nothing older: kept",
			in:    []format.Row{del("a", 5)},
			cfg:   Config{Now: now},
			want:  []format.Row{del("a", 5)},
			stats: Stats{RowsIn: 1, RowsOut: 1},
		},
		{
			name:  "tombstone above bottom, older shadowed: tombstone kept",
			in:    []format.Row{del("a", 5), val("a", 3, "a3")},
			cfg:   Config{Now: now},
			want:  []format.Row{del("a", 5)},
			stats: Stats{RowsIn: 2, RowsOut: 1, ShadowedDropped: 1},
		},
		{
			name:  "visible at now == expire_ts: unchanged",
			in:    []format.Row{ttl("a", 5, now, "v"), val("a", 3, "old")},
			cfg:   Config{Now: now},
			want:  []format.Row{ttl("a", 5, now, "v")},
			stats: Stats{RowsIn: 2, RowsOut: 1, ShadowedDropped: 1},
		},
		{
			name:  "visible at now == expire_ts at bottom: unchanged",
			in:    []format.Row{ttl("a", 5, now, "v")},
			cfg:   Config{Now: now, Bottom: true},
			want:  []format.Row{ttl("a", 5, now, "v")},
			stats: Stats{RowsIn: 1, RowsOut: 1},
		},
		{
			name:  "expired at now == expire_ts+1",
			in:    []format.Row{ttl("a", 5, now-1, "v"), val("a", 3, "old")},
			cfg:   Config{Now: now},
			want:  []format.Row{expiredTomb("a", 5)},
			stats: Stats{RowsIn: 2, RowsOut: 1, ExpiredToTombstone: 1, ShadowedDropped: 1},
		},
		{
			name:  "expired at now == expire_ts+1 at bottom",
			in:    []format.Row{ttl("a", 5, now-1, "v")},
			cfg:   Config{Now: now, Bottom: true},
			stats: Stats{RowsIn: 1, ExpiredDropped: 1},
		},
		{
			name: "expire-only row (no ts) expires too",
			in: []format.Row{
				{Key: []byte("a"), Seq: 5, Flags: format.FlagHasExpire, ExpireTS: now - 1, Value: []byte("v")},
				{Key: []byte("b"), Seq: 4, Flags: format.FlagHasExpire, ExpireTS: now, Value: []byte("w")},
			},
			cfg: Config{Now: now},
			want: []format.Row{
				expiredTomb("a", 5),
				{Key: []byte("b"), Seq: 4, Flags: format.FlagHasExpire, ExpireTS: now, Value: []byte("w")},
			},
			stats: Stats{RowsIn: 2, RowsOut: 2, ExpiredToTombstone: 1},
		},
		{
			name: "ts without expiry never expires",
			in: []format.Row{
				{Key: []byte("a"), Seq: 5, Flags: format.FlagHasTS, TS: 1, ExpireTS: 1, Value: []byte("v")},
			},
			cfg:   Config{Now: math.MaxInt64, Bottom: true},
			want:  []format.Row{{Key: []byte("a"), Seq: 5, Flags: format.FlagHasTS, TS: 1, Value: []byte("v")}},
			stats: Stats{RowsIn: 1, RowsOut: 1},
		},
		{
			name:  "rows without expiry never expire",
			in:    []format.Row{val("a", 5, "a5"), val("a", 1, "a1"), val("b", 2, "b2")},
			cfg:   Config{Now: math.MaxInt64, Bottom: true, Snapshots: []uint64{3}},
			want:  []format.Row{val("a", 5, "a5"), val("a", 1, "a1"), val("b", 2, "b2")},
			stats: Stats{RowsIn: 3, RowsOut: 3},
		},
		{
			name:  "unexpired ttl rows keep ts and expiry",
			in:    []format.Row{ttl("a", 9, now+50, "a9"), ttl("a", 4, now+1, "a4"), ttl("b", 3, now+7, "b3")},
			cfg:   Config{Now: now, Snapshots: []uint64{5}, Bottom: true},
			want:  []format.Row{ttl("a", 9, now+50, "a9"), ttl("a", 4, now+1, "a4"), ttl("b", 3, now+7, "b3")},
			stats: Stats{RowsIn: 3, RowsOut: 3},
		},
		{
			name: "expired row in an older stripe under a live row",
			in:   []format.Row{val("a", 5, "a5"), ttl("a", 3, now-1, "a3"), val("a", 1, "a1")},
			cfg:  Config{Now: now, Snapshots: []uint64{3}},
			// Snapshot 3 must not see a1: the expired row stays as a tombstone.
			want:  []format.Row{val("a", 5, "a5"), expiredTomb("a", 3)},
			stats: Stats{RowsIn: 3, RowsOut: 2, ExpiredToTombstone: 1, ShadowedDropped: 1},
		},
		{
			name: "KeepExpired emits an expired row as it is",
			in:   []format.Row{val("a", 5, "a5"), ttl("a", 3, now-1, "a3"), val("a", 1, "a1"), ttl("b", 2, now-1, "b2")},
			cfg:  Config{Now: now, Snapshots: []uint64{3}, KeepExpired: true},
			// a3 still hides a1 from snapshot 3; not counted as a tombstone.
			want:  []format.Row{val("a", 5, "a5"), ttl("a", 3, now-1, "a3"), ttl("b", 2, now-1, "b2")},
			stats: Stats{RowsIn: 4, RowsOut: 3, ShadowedDropped: 1},
		},
		{
			name:  "KeepExpired at bottom still drops expired rows",
			in:    []format.Row{ttl("a", 3, now-1, "a3"), val("a", 1, "a1"), ttl("b", 2, now-1, "b2"), ttl("c", 2, now+1, "c2")},
			cfg:   Config{Now: now, Bottom: true, KeepExpired: true},
			want:  []format.Row{ttl("c", 2, now+1, "c2")},
			stats: Stats{RowsIn: 4, RowsOut: 1, ExpiredDropped: 2, ShadowedDropped: 1},
		},
		{
			name:  "expired row in an older stripe under a live row, at bottom",
			in:    []format.Row{val("a", 5, "a5"), ttl("a", 3, now-1, "a3"), val("a", 1, "a1")},
			cfg:   Config{Now: now, Snapshots: []uint64{3}, Bottom: true},
			want:  []format.Row{val("a", 5, "a5")},
			stats: Stats{RowsIn: 3, RowsOut: 1, ExpiredDropped: 1, ShadowedDropped: 1},
		},
		{
			name: "multiple pending tombstones across stripes, older value kept",
			in: []format.Row{
				del("a", 7), val("a", 6, "a6"),
				ttl("a", 5, now-1, "a5"),
				del("a", 3),
				val("a", 1, "a1"),
			},
			cfg: Config{Now: now, Bottom: true, Snapshots: []uint64{2, 4, 6}},
			// Stripes: {7} {6,5} {3} {1}.
			want:  []format.Row{del("a", 7), val("a", 6, "a6"), del("a", 3), val("a", 1, "a1")},
			stats: Stats{RowsIn: 5, RowsOut: 4, ShadowedDropped: 1},
		},
		{
			name: "consecutive pending tombstones across stripes flushed by older value",
			in: []format.Row{
				del("a", 7),
				ttl("a", 5, now-1, "a5"),
				del("a", 3), val("a", 2, "a2shadowed"),
				val("a", 1, "a1"),
			},
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{1, 4, 6}},
			want:  []format.Row{del("a", 7), expiredTomb("a", 5), del("a", 3), val("a", 1, "a1")},
			stats: Stats{RowsIn: 5, RowsOut: 4, ExpiredToTombstone: 1, ShadowedDropped: 1},
		},
		{
			name: "multiple pending tombstones across stripes, nothing older: all dropped",
			in: []format.Row{
				del("a", 7),
				ttl("a", 5, now-1, "a5"), val("a", 4, "a4"),
				del("a", 1),
			},
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{2, 6}},
			stats: Stats{RowsIn: 4, TombstonesDropped: 2, ExpiredDropped: 1, ShadowedDropped: 1},
		},
		{
			name: "trailing tombstones under a kept value dropped at bottom",
			in: []format.Row{
				del("a", 7), val("a", 5, "a5"), del("a", 3), ttl("a", 1, now-1, "a1"),
			},
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{2, 4, 6}},
			want:  []format.Row{del("a", 7), val("a", 5, "a5")},
			stats: Stats{RowsIn: 4, RowsOut: 2, TombstonesDropped: 1, ExpiredDropped: 1},
		},
		{
			name: "multiple tombstones across stripes above bottom all kept",
			in: []format.Row{
				del("a", 7), ttl("a", 5, now-1, "a5"), del("a", 3), ttl("a", 1, now-1, "a1"),
			},
			cfg:   Config{Now: now, Snapshots: []uint64{2, 4, 6}},
			want:  []format.Row{del("a", 7), expiredTomb("a", 5), del("a", 3), expiredTomb("a", 1)},
			stats: Stats{RowsIn: 4, RowsOut: 4, ExpiredToTombstone: 2},
		},
		{
			name: "pending tombstones do not leak into the next key",
			in: []format.Row{
				del("a", 9), ttl("a", 8, now-1, "a8"),
				val("b", 2, "b2"),
				del("c", 7),
			},
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{8}},
			want:  []format.Row{val("b", 2, "b2")},
			stats: Stats{RowsIn: 4, RowsOut: 1, TombstonesDropped: 2, ExpiredDropped: 1},
		},
		{
			name: "empty user key",
			in: []format.Row{
				del("", 9), val("", 4, "e4"), val("", 2, "e2"),
				val("a", 3, "a3"),
			},
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{5}},
			want:  []format.Row{del("", 9), val("", 4, "e4"), val("a", 3, "a3")},
			stats: Stats{RowsIn: 4, RowsOut: 3, ShadowedDropped: 1},
		},
		{
			name:  "rule 4: a deadline row folds into the value beneath",
			in:    []format.Row{dl("a", 5, 2000), val("a", 3, "v")},
			cfg:   Config{Now: now},
			want:  []format.Row{folded("a", 5, 2000, "v")},
			stats: Stats{RowsIn: 2, RowsOut: 1, DeadlinesFolded: 1},
		},
		{
			name:  "rule 4: a later deadline keeps a value its own expiry would drop",
			in:    []format.Row{dl("a", 5, 2000), ttl("a", 3, now-1, "v")},
			cfg:   Config{Now: now, Bottom: true},
			want:  []format.Row{folded("a", 5, 2000, "v")},
			stats: Stats{RowsIn: 2, RowsOut: 1, DeadlinesFolded: 1},
		},
		{
			name:  "rule 4: an earlier deadline expires the folded row",
			in:    []format.Row{dl("a", 5, now-1), val("a", 3, "v")},
			cfg:   Config{Now: now},
			want:  []format.Row{expiredTomb("a", 5)},
			stats: Stats{RowsIn: 2, RowsOut: 1, DeadlinesFolded: 1, ExpiredToTombstone: 1},
		},
		{
			name:  "rule 4: persist folds into a value that no longer expires",
			in:    []format.Row{persist("a", 5), ttl("a", 3, now-1, "v")},
			cfg:   Config{Now: now},
			want:  []format.Row{{Key: []byte("a"), Seq: 5, Flags: format.FlagHasTS, TS: 500, Value: []byte("v")}},
			stats: Stats{RowsIn: 2, RowsOut: 1, DeadlinesFolded: 1},
		},
		{
			name:  "rule 4: of stacked deadline rows the newest decides",
			in:    []format.Row{dl("a", 7, 3000), dl("a", 6, 1500), val("a", 2, "v")},
			cfg:   Config{Now: now},
			want:  []format.Row{folded("a", 7, 3000, "v")},
			stats: Stats{RowsIn: 3, RowsOut: 1, DeadlinesFolded: 1, ShadowedDropped: 1},
		},
		{
			name:  "rule 4: a deadline row over a tombstone folds into a tombstone",
			in:    []format.Row{dl("a", 5, 2000), del("a", 3), val("a", 1, "old")},
			cfg:   Config{Now: now},
			want:  []format.Row{{Key: []byte("a"), Seq: 5, Flags: format.FlagTombstone | format.FlagHasTS, TS: 500}},
			stats: Stats{RowsIn: 3, RowsOut: 1, DeadlinesFolded: 1, ShadowedDropped: 1},
		},
		{
			name:  "rule 4: a deadline row over a tombstone at the bottom: both dropped",
			in:    []format.Row{dl("a", 5, 2000), del("a", 3)},
			cfg:   Config{Now: now, Bottom: true},
			stats: Stats{RowsIn: 2, DeadlinesFolded: 1, TombstonesDropped: 1},
		},
		{
			name:  "rule 4: a deadline row with nothing beneath is kept above the bottom",
			in:    []format.Row{dl("a", 5, 2000), val("b", 4, "b")},
			cfg:   Config{Now: now},
			want:  []format.Row{dl("a", 5, 2000), val("b", 4, "b")},
			stats: Stats{RowsIn: 2, RowsOut: 2},
		},
		{
			name:  "rule 4: a deadline row with nothing beneath is dropped at the bottom",
			in:    []format.Row{val("0", 9, "z"), dl("a", 5, 2000), dl("b", 4, 2000)},
			cfg:   Config{Now: now, Bottom: true},
			want:  []format.Row{val("0", 9, "z")},
			stats: Stats{RowsIn: 3, RowsOut: 1, DeadlinesDropped: 2},
		},
		{
			name:  "rule 5: a snapshot between keeps both, the value unchanged though expired",
			in:    []format.Row{dl("a", 5, 2000), ttl("a", 3, now-1, "v")},
			cfg:   Config{Now: now, Bottom: true, Snapshots: []uint64{4}},
			want:  []format.Row{dl("a", 5, 2000), ttl("a", 3, now-1, "v")},
			stats: Stats{RowsIn: 2, RowsOut: 2, ExpiredKept: 1},
		},
		{
			name:  "rule 5: an expired deadline row kept alone becomes a tombstone and protects nothing",
			in:    []format.Row{dl("a", 5, now-1), ttl("a", 3, now-1, "v")},
			cfg:   Config{Now: now, Snapshots: []uint64{4}},
			want:  []format.Row{expiredTomb("a", 5), expiredTomb("a", 3)},
			stats: Stats{RowsIn: 2, RowsOut: 2, ExpiredToTombstone: 2},
		},
		{
			name: "rule 5: a deadline row above the input keeps the newest version",
			in:   []format.Row{ttl("a", 3, now-1, "v"), val("a", 1, "old"), ttl("b", 2, now-1, "w")},
			cfg: Config{Now: now, Bottom: true, DeadlineAbove: func(k []byte) bool {
				return string(k) == "a"
			}},
			want:  []format.Row{ttl("a", 3, now-1, "v")},
			stats: Stats{RowsIn: 3, RowsOut: 1, ExpiredKept: 1, ShadowedDropped: 1, ExpiredDropped: 1},
		},
		{
			name: "many keys mixed",
			in: []format.Row{
				val("k1", 20, "k1-20"), val("k1", 10, "k1-10"),
				del("k2", 19), val("k2", 11, "k2-11"),
				ttl("k3", 18, now-1, "k3-18"), val("k3", 12, "k3-12"),
				ttl("k4", 17, now, "k4-17"), del("k4", 13),
				del("k5", 16),
			},
			cfg: Config{Now: now, Bottom: true, Snapshots: []uint64{15}},
			want: []format.Row{
				val("k1", 20, "k1-20"), val("k1", 10, "k1-10"),
				del("k2", 19), val("k2", 11, "k2-11"),
				expiredTomb("k3", 18), val("k3", 12, "k3-12"),
				ttl("k4", 17, now, "k4-17"),
			},
			stats: Stats{RowsIn: 9, RowsOut: 7, ExpiredToTombstone: 1, TombstonesDropped: 2},
		},
	}
	for _, tc := range tests {
		for _, input := range []struct {
			name string
			mk   func([]format.Row) format.Iterator
		}{
			{"memtable", memInput},
			{"scratch", func(r []format.Row) format.Iterator { return newScratchIter(r) }},
		} {
			t.Run(tc.name+"/"+input.name, func(t *testing.T) {
				got, st := drain(t, input.mk(tc.in), tc.cfg)
				if !rowsEqual(got, tc.want) {
					t.Errorf("output mismatch\ngot:\n%swant:\n%s", fmtRows(got), fmtRows(tc.want))
				}
				if st != tc.stats {
					t.Errorf("stats = %+v\nwant    %+v", st, tc.stats)
				}
				checkInvariants(t, tc.in, got, st, tc.cfg, nil)
			})
		}
	}
}

// An input error ends the output and is reported by Error.
func TestIteratorInputError(t *testing.T) {
	in := []format.Row{val("a", 3, "a3"), val("b", 2, "b2"), val("c", 1, "c1")}
	ci := NewIterator(newScratchIter(in).failAt(1), Config{Now: 1})
	var got []format.Row
	for ci.Next() {
		got = append(got, cloneRow(ci.Row()))
	}
	if ci.Error() == nil {
		t.Fatalf("Error() = nil after input failure")
	}
	if !rowsEqual(got, in[:1]) {
		t.Fatalf("got rows before failure:\n%swant:\n%s", fmtRows(got), fmtRows(in[:1]))
	}
}

// Rows emitted must not be disturbed by reading on: a caller that holds a
// row until the next Next (e.g. to write it) sees stable bytes.
func TestIteratorRowStableUntilNext(t *testing.T) {
	in := []format.Row{del("a", 9), val("a", 4, "a4"), val("b", 3, "b3")}
	cfg := Config{Now: 1, Bottom: true, Snapshots: []uint64{5}}
	ci := NewIterator(newScratchIter(in), cfg)
	var got []format.Row
	for ci.Next() {
		r := ci.Row()
		snap := cloneRow(r)
		if !rowEqual(snap, cloneRow(ci.Row())) {
			t.Fatalf("Row changed between calls")
		}
		got = append(got, snap)
	}
	want := []format.Row{del("a", 9), val("a", 4, "a4"), val("b", 3, "b3")}
	if !rowsEqual(got, want) {
		t.Fatalf("got:\n%swant:\n%s", fmtRows(got), fmtRows(want))
	}
}

// ---------------------------------------------------------------------------
// Reference model and invariants.

// visible returns the value a reader at sequence seq and time now sees for
// key in rows (any order): the newest version with Seq <= seq, absent if
// there is none, it is a tombstone, or it has expired at now.
func visible(rows []format.Row, key []byte, seq uint64, now int64) (string, bool) {
	// newest returns the newest version of key at or below seq.
	newest := func(seq uint64) *format.Row {
		var best *format.Row
		for i := range rows {
			r := &rows[i]
			if !bytes.Equal(r.Key, key) || r.Seq > seq {
				continue
			}
			if best == nil || r.Seq > best.Seq {
				best = r
			}
		}
		return best
	}
	best := newest(seq)
	if best != nil && best.IsDeadline() {
		// The value beneath the deadline row, under its deadline.
		v := best
		for v != nil && v.IsDeadline() && v.Seq > 0 {
			v = newest(v.Seq - 1)
		}
		if v != nil && v.IsDeadline() {
			v = nil
		}
		r, ok := format.Resolve(best, v)
		if !ok {
			return "", false
		}
		best = &r
	}
	if best == nil || !best.LiveAt(now) {
		return "", false
	}
	return string(best.Value), true
}

// model computes the expected output and stats from the package rules,
// independently of the Iterator's streaming implementation.
func model(in []format.Row, cfg Config) ([]format.Row, Stats) {
	rows := slices.Clone(in)
	slices.SortStableFunc(rows, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
	stripe := func(seq uint64) int {
		i, _ := slices.BinarySearch(cfg.Snapshots, seq)
		return i
	}
	var st Stats
	var out []format.Row
	st.RowsIn = uint64(len(rows))
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && bytes.Equal(rows[j].Key, rows[i].Key) {
			j++
		}
		type kept struct {
			row     format.Row
			expired bool
		}
		var ks []kept
		group := rows[i:j]
		needValue := false // rule 5: the next kept version resolves a deadline row
		for g := 0; g < len(group); {
			// The versions of one stripe: group[g:h].
			s := stripe(group[g].Seq)
			h := g
			for h < len(group) && stripe(group[h].Seq) == s {
				h++
			}
			r := group[g]
			st.ShadowedDropped += uint64(h - g - 1)
			if r.IsDeadline() {
				// Rule 4: fold into the first non-deadline row of the stripe.
				v := -1
				for x := g + 1; x < h; x++ {
					if !group[x].IsDeadline() {
						v = x
						break
					}
				}
				switch {
				case v >= 0:
					st.DeadlinesFolded++
					st.ShadowedDropped--
					f, ok := format.Resolve(&group[g], &group[v])
					if !ok {
						f = format.Row{Key: r.Key, Seq: r.Seq, Flags: format.FlagTombstone | format.FlagHasTS, TS: r.TS}
					}
					r = f
				case h == len(group) && cfg.Bottom:
					st.DeadlinesDropped++
					g = h
					continue
				}
			}
			protect := needValue || len(ks) == 0 && cfg.DeadlineAbove != nil && cfg.DeadlineAbove(r.Key)
			needValue = false
			k := kept{row: r}
			if r.ExpiredAt(cfg.Now) {
				if protect {
					st.ExpiredKept++
				} else {
					k = kept{row: format.Row{Key: r.Key, Seq: r.Seq, Flags: format.FlagTombstone | format.FlagHasTS, TS: r.ExpireTS}, expired: true}
				}
			}
			needValue = k.row.IsDeadline()
			ks = append(ks, k)
			g = h
		}
		if cfg.Bottom {
			for len(ks) > 0 && ks[len(ks)-1].row.IsTombstone() {
				if ks[len(ks)-1].expired {
					st.ExpiredDropped++
				} else {
					st.TombstonesDropped++
				}
				ks = ks[:len(ks)-1]
			}
		}
		for _, k := range ks {
			if k.expired {
				st.ExpiredToTombstone++
			}
			out = append(out, k.row)
		}
		i = j
	}
	st.RowsOut = uint64(len(out))
	return out, st
}

// checkInvariants checks properties every compaction output must have.
// below holds rows older than every input row that exist beneath a non-bottom
// output (nil at the bottom); reads consult them in both views.
func checkInvariants(t *testing.T, in, out []format.Row, st Stats, cfg Config, below []format.Row) {
	t.Helper()
	fail := func(format_ string, args ...any) {
		t.Helper()
		t.Errorf("%s\ncfg: %+v\ninput:\n%sbelow:\n%soutput:\n%s",
			fmt.Sprintf(format_, args...), cfg, fmtRows(in), fmtRows(below), fmtRows(out))
	}

	// Stats account for every input row.
	if st.RowsIn != uint64(len(in)) || st.RowsOut != uint64(len(out)) {
		fail("stats rows in/out = %d/%d, want %d/%d", st.RowsIn, st.RowsOut, len(in), len(out))
	}
	if st.RowsIn != st.RowsOut+st.ShadowedDropped+st.ExpiredDropped+st.TombstonesDropped+st.DeadlinesFolded+st.DeadlinesDropped {
		fail("stats do not add up: %+v", st)
	}
	if !cfg.Bottom && (st.ExpiredDropped != 0 || st.TombstonesDropped != 0) {
		fail("dropped tombstones above the bottom: %+v", st)
	}

	// Output order: user key ascending, seq descending, no duplicates.
	for i := 1; i < len(out); i++ {
		if format.CompareRows(&out[i-1], &out[i]) >= 0 {
			fail("output out of order at %d: %s then %s", i, fmtRow(out[i-1]), fmtRow(out[i]))
		}
	}

	// Each output row is an input row, or the tombstone of an expired one,
	// or a deadline row folded (checked by the reads below). An expired row
	// may be kept as it is for a deadline row (rule 5), as often as the
	// stats say.
	expiredTombs, expiredKept := 0, 0
	for _, o := range out {
		idx := slices.IndexFunc(in, func(r format.Row) bool { return bytes.Equal(r.Key, o.Key) && r.Seq == o.Seq })
		if idx < 0 {
			fail("output row %s not in input", fmtRow(o))
			continue
		}
		src := in[idx]
		keptExpired := cfg.KeepExpired && !cfg.Bottom
		if src.IsDeadline() && !rowEqual(o, src) {
			if o.HasValue() && o.ExpiredAt(cfg.Now) && !keptExpired {
				expiredKept++ // a folded row kept for a deadline row above
			}
			continue
		}
		if src.ExpiredAt(cfg.Now) && !keptExpired && rowEqual(o, src) {
			expiredKept++
			continue
		}
		switch {
		case src.ExpiredAt(cfg.Now) && keptExpired:
			if !rowEqual(o, src) {
				fail("expired row %s emitted as %s, want it unchanged (KeepExpired)", fmtRow(src), fmtRow(o))
			}
		case src.ExpiredAt(cfg.Now):
			want := format.Row{Key: src.Key, Seq: src.Seq, Flags: format.FlagTombstone | format.FlagHasTS, TS: src.ExpireTS}
			if !rowEqual(o, want) || o.Value != nil {
				fail("expired row %s emitted as %s, want a tombstone with ts = its deadline", fmtRow(src), fmtRow(o))
			}
			if !src.IsTombstone() {
				expiredTombs++
			}
		case !rowEqual(o, src):
			fail("row %s emitted as %s", fmtRow(src), fmtRow(o))
		}
		if o.ExpiredAt(cfg.Now) && !keptExpired {
			fail("output row %s is expired at now=%d", fmtRow(o), cfg.Now)
		}
	}
	if uint64(expiredTombs) > st.ExpiredToTombstone {
		fail("%d expired rows emitted as tombstones, stats say %d", expiredTombs, st.ExpiredToTombstone)
	}
	if uint64(expiredKept) != st.ExpiredKept {
		fail("%d expired rows kept as they are, stats say %d", expiredKept, st.ExpiredKept)
	}

	// At most one row per key per stripe; at the bottom the oldest row of a
	// key is never a tombstone.
	stripe := func(seq uint64) int { i, _ := slices.BinarySearch(cfg.Snapshots, seq); return i }
	for i := range out {
		newKey := i == 0 || !bytes.Equal(out[i-1].Key, out[i].Key)
		if !newKey && stripe(out[i-1].Seq) == stripe(out[i].Seq) {
			fail("two rows of one stripe kept: %s, %s", fmtRow(out[i-1]), fmtRow(out[i]))
		}
		lastOfKey := i == len(out)-1 || !bytes.Equal(out[i+1].Key, out[i].Key)
		if cfg.Bottom && lastOfKey && out[i].IsTombstone() {
			fail("bottom output ends key with tombstone %s", fmtRow(out[i]))
		}
	}

	// Reads agree: for every key, every snapshot and the latest view, at
	// Now and any later time.
	keys := map[string]bool{}
	for _, r := range in {
		keys[string(r.Key)] = true
	}
	for _, r := range below {
		keys[string(r.Key)] = true
	}
	inView := append(slices.Clone(in), below...)
	outView := append(slices.Clone(out), below...)
	seqs := append(slices.Clone(cfg.Snapshots), format.MaxSeq)
	for _, r := range in {
		seqs = append(seqs, r.Seq) // the latest view, whatever max seq is
	}
	isSnap := func(s uint64) bool { return s == format.MaxSeq || slices.Contains(cfg.Snapshots, s) }
	times := []int64{cfg.Now, cfg.Now + 1, cfg.Now + 5, cfg.Now + 1000}
	var maxSeq uint64
	for _, r := range in {
		maxSeq = max(maxSeq, r.Seq)
	}
	for k := range keys {
		for _, s := range seqs {
			if !isSnap(s) && s != maxSeq {
				continue
			}
			for _, now := range times {
				wv, wok := visible(inView, []byte(k), s, now)
				gv, gok := visible(outView, []byte(k), s, now)
				if wv != gv || wok != gok {
					fail("read %q at seq %d now %d: input view %q,%v; output view %q,%v", k, s, now, wv, wok, gv, gok)
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Randomized.

type randCase struct {
	in    []format.Row
	below []format.Row
	cfg   Config
}

func genCase(rng *rand.Rand) randCase {
	const now0 = 100
	keys := []string{"", "a", "b", "c", "d"}[:1+rng.IntN(5)]
	// Input seqs are unique and above baseSeq; rows below the output (for
	// non-bottom compactions) use seqs 1..baseSeq.
	const baseSeq = 5
	n := rng.IntN(25)
	seqs := rng.Perm(n + rng.IntN(10))[:n]
	var c randCase
	c.cfg.Now = now0 + int64(rng.IntN(5))
	c.cfg.Bottom = rng.IntN(2) == 0
	mkRow := func(key string, seq uint64) format.Row {
		switch rng.IntN(6) {
		case 4:
			return dl(key, seq, c.cfg.Now+int64(rng.IntN(7))-3)
		case 5:
			return persist(key, seq)
		case 0:
			return del(key, seq)
		case 1:
			// Expiry around Now, so both sides of the boundary occur.
			return ttl(key, seq, c.cfg.Now+int64(rng.IntN(7))-3, fmt.Sprintf("%s%d", key, seq))
		case 2:
			return format.Row{Key: []byte(key), Seq: seq, Flags: format.FlagHasExpire,
				ExpireTS: c.cfg.Now + int64(rng.IntN(7)) - 3, Value: []byte(fmt.Sprintf("%s%d", key, seq))}
		default:
			return val(key, seq, fmt.Sprintf("%s%d", key, seq))
		}
	}
	for _, s := range seqs {
		c.in = append(c.in, mkRow(keys[rng.IntN(len(keys))], uint64(baseSeq+1+s)))
	}
	if !c.cfg.Bottom {
		for _, k := range keys {
			if rng.IntN(3) > 0 {
				c.below = append(c.below, mkRow(k, uint64(1+rng.IntN(baseSeq))))
			}
		}
	}
	// Snapshots anywhere from below the oldest row to above the newest,
	// ascending, occasionally duplicated.
	ns := rng.IntN(6)
	top := baseSeq + 1 + n + 12
	for range ns {
		c.cfg.Snapshots = append(c.cfg.Snapshots, uint64(rng.IntN(top)))
	}
	if ns > 0 && rng.IntN(4) == 0 {
		c.cfg.Snapshots = append(c.cfg.Snapshots, c.cfg.Snapshots[0])
	}
	slices.Sort(c.cfg.Snapshots)
	if rng.IntN(3) == 0 {
		c.cfg.Snapshots = slices.Compact(c.cfg.Snapshots)
	}
	if rng.IntN(3) == 0 {
		// A deadline row above the input, on some keys (rule 5).
		hit := map[string]bool{}
		for _, k := range keys {
			hit[k] = rng.IntN(2) == 0
		}
		c.cfg.DeadlineAbove = func(k []byte) bool { return hit[string(k)] }
	}
	return c
}

func TestIteratorRandomized(t *testing.T) {
	iters := 5000
	if testing.Short() {
		iters = 1000
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := range iters {
		c := genCase(rng)
		wantRows, wantStats := model(c.in, c.cfg)
		for _, mk := range []func([]format.Row) format.Iterator{
			memInput,
			func(r []format.Row) format.Iterator { return newScratchIter(r) },
		} {
			got, st := drain(t, mk(c.in), c.cfg)
			checkInvariants(t, c.in, got, st, c.cfg, c.below)
			if !rowsEqual(got, wantRows) || st != wantStats {
				t.Errorf("case %d: differs from model\ncfg %+v\ninput:\n%sgot:\n%swant:\n%sstats %+v\nwant  %+v",
					i, c.cfg, fmtRows(c.in), fmtRows(got), fmtRows(wantRows), st, wantStats)
			}
			if t.Failed() {
				t.Fatalf("stopping at case %d (seed %d)", i, seed)
			}
		}
	}
}

// TestIteratorNoAllocPerRow: rows that pass through unchanged cost no
// allocation (a per-row heap copy once did).
func TestIteratorNoAllocPerRow(t *testing.T) {
	var in []format.Row
	for i := range 1000 {
		in = append(in, ttl(fmt.Sprintf("k%04d", i), uint64(i+1), 5000, "v"))
	}
	m := memtable.New(1)
	for i := range in {
		m.Add(&in[i])
	}
	allocs := testing.AllocsPerRun(10, func() {
		it := NewIterator(m.NewIter(), Config{Now: 1000})
		for it.Next() {
		}
	})
	if allocs > 20 {
		t.Fatalf("%.0f allocations for 1000 rows", allocs)
	}
}
