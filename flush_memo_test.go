package mayfly

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/format"
)

// keepAll is a compaction filter that keeps every row: a database with it
// keeps no flush memo and reads every state beneath from its tables.
type keepAll struct{}

func (keepAll) Name() string { return "keep-all" }
func (keepAll) Filter(FilterContext, FilterRow) (FilterDecision, []byte) {
	return FilterKeep, nil
}

// TestFlushMemoMatchesLookups runs one random history of counter adds
// (blind and answering, in windows of several lengths), puts, deletes,
// deadline changes, snapshots held across flushes, compactions and clock
// moves against two databases: one whose flushes take the states beneath
// from the previous flush's memo, one that looks them all up (its no-op
// compaction filter turns the memo off). After every flush each key reads
// the same count and deadline from both, and the first took states from
// its memo.
func TestFlushMemoMatchesLookups(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { testFlushMemoMatchesLookups(t, seed) })
	}
}

func testFlushMemoMatchesLookups(t *testing.T, seed uint64) {
	clk := clock.NewManual(epoch)
	memo := openCounterDB(t, t.TempDir(), clk)
	defer memo.Close()
	plain := openTestDB(t, t.TempDir(), clk, func(o *Options) {
		o.MergeOperator = Int64Add
		o.CompactionFilters = []CompactionFilter{keepAll{}}
	})
	defer plain.Close()
	dbs := []*DB{memo, plain}
	rng := rand.New(rand.NewPCG(seed, 7))
	key := func() []byte { return fmt.Appendf(nil, "c%02d", rng.IntN(24)) }
	ttls := []TTL{NoExpiry(), ExpireAfter(2 * time.Second), ExpireAfter(10 * time.Second), ExpireAfter(time.Minute)}
	var snaps [][]*Snapshot
	each := func(what string, f func(db *DB) error) {
		t.Helper()
		for _, db := range dbs {
			if err := f(db); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	compare := func(step int) {
		t.Helper()
		for i := range 24 {
			k := fmt.Appendf(nil, "c%02d", i)
			var got [2]string
			for j, db := range dbs {
				v, err := db.Get(k)
				at, expires, err2 := db.ExpireTime(k)
				if errors.Is(err, ErrNotFound) {
					v = nil
				} else if err != nil || err2 != nil {
					t.Fatalf("step %d: %s: %v, %v", step, k, err, err2)
				}
				got[j] = fmt.Sprintf("%x expires=%v at %d", v, expires, at.UnixMilli())
			}
			if got[0] != got[1] {
				t.Fatalf("seed %d step %d: %s reads %s with the memo, %s without", seed, step, k, got[0], got[1])
			}
		}
	}
	for step := range 1200 {
		k := key()
		switch op := rng.IntN(100); {
		case op < 55:
			d, ttl := int64(rng.IntN(9)-2), ttls[rng.IntN(len(ttls))]
			each("Merge", func(db *DB) error { return db.Merge(k, EncodeInt64(d), ttl) })
		case op < 62:
			d, ttl := int64(rng.IntN(5)), ttls[rng.IntN(len(ttls))]
			var got []int64
			each("Add", func(db *DB) error { n, err := db.Add(k, d, ttl); got = append(got, n); return err })
			if got[0] != got[1] {
				t.Fatalf("seed %d step %d: Add(%s) = %d with the memo, %d without", seed, step, k, got[0], got[1])
			}
		case op < 66:
			v := EncodeInt64(int64(rng.IntN(100)))
			each("Put", func(db *DB) error { return db.Put(k, v) })
		case op < 69:
			each("Delete", func(db *DB) error { return db.Delete(k) })
		case op < 72:
			ttl := ttls[1+rng.IntN(len(ttls)-1)]
			each("Expire", func(db *DB) error { _, err := db.Expire(k, ttl, ExpireAlways); return err })
		case op < 74:
			var pair []*Snapshot
			each("NewSnapshot", func(db *DB) error { s, err := db.NewSnapshot(); pair = append(pair, s); return err })
			snaps = append(snaps, pair)
		case op < 77 && len(snaps) > 0:
			i := rng.IntN(len(snaps))
			for _, s := range snaps[i] {
				s.Close()
			}
			snaps = append(snaps[:i], snaps[i+1:]...)
		case op < 90:
			clk.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
		case op < 98:
			each("Flush", func(db *DB) error { return db.Flush() })
			compare(step)
		default:
			each("Compact", func(db *DB) error { return db.Compact(context.Background(), nil, nil) })
			compare(step)
		}
	}
	for _, pair := range snaps {
		for _, s := range pair {
			s.Close()
		}
	}
	if memo.metrics.flushMemoHits.Load() == 0 || plain.metrics.flushMemoHits.Load() != 0 {
		t.Fatalf("states taken from a memo: %d with it, %d without (want some, none)",
			memo.metrics.flushMemoHits.Load(), plain.metrics.flushMemoHits.Load())
	}
	t.Logf("seed %d: %d states from the memo", seed, memo.metrics.flushMemoHits.Load())
}

// TestFlushMemoRecordsFirstBaseRow: a memo remembers the first row a
// flush wrote for a key it looked up, only when that row is a value row
// or a tombstone, and nothing once full.
func TestFlushMemoRecordsFirstBaseRow(t *testing.T) {
	db := openCounterDB(t, t.TempDir(), clock.NewManual(epoch))
	defer db.Close()
	f := db.newFlushMemo(nil)
	row := func(key string, seq uint64, flags uint8, v string) {
		f.written(&format.Row{Key: []byte(key), Seq: seq, Flags: flags, Value: []byte(v)})
	}
	f.want = []byte("a")
	row("a", 9, format.FlagMerge, "op") // an operand first: nothing
	row("a", 5, 0, "base")              // a base, but not the first row of a
	f.want = []byte("b")
	row("b", 8, 0, "b8")
	row("b", 3, 0, "b3")
	row("c", 7, 0, "c7") // not looked up
	f.want = []byte("d")
	row("d", 6, format.FlagDeadline, "")
	if len(f.rows) != 1 {
		t.Fatalf("memo holds %d keys, want only b", len(f.rows))
	}
	m, ok := f.get([]byte("b"))
	if !ok || m.seq != 8 || !bytes.Equal(f.arena[m.off:m.off+m.n], []byte("b8")) {
		t.Fatalf("b remembered as seq %d %q", m.seq, f.arena[m.off:m.off+m.n])
	}
	f.full = true
	f.want = []byte("e")
	row("e", 2, 0, "e2")
	if _, ok := f.get([]byte("e")); ok {
		t.Fatal("a full memo recorded e")
	}
	db2 := openTestDB(t, t.TempDir(), clock.NewManual(epoch), func(o *Options) {
		o.MergeOperator = Int64Add
		o.CompactionFilters = []CompactionFilter{keepAll{}}
	})
	defer db2.Close()
	if db2.newFlushMemo(nil) != nil {
		t.Fatal("a database with compaction filters keeps a memo")
	}
}

// TestFlushMemoBounded: a memo records at most flushMemoMaxKeys keys and
// flushMemoMaxBytes of their keys and values, then nothing more; the
// constants are the bounds usage.md's sizing states.
func TestFlushMemoBounded(t *testing.T) {
	if flushMemoMaxKeys != 16<<10 || flushMemoMaxBytes != 2<<20 {
		t.Fatalf("bounds %d keys, %d bytes; usage.md says 16k and 2 MiB", flushMemoMaxKeys, flushMemoMaxBytes)
	}
	db := openCounterDB(t, t.TempDir(), clock.NewManual(epoch))
	defer db.Close()
	record := func(f *flushMemo, n, valueLen int) {
		for i := range n {
			k := fmt.Appendf(nil, "counter:%08d", i)
			f.want = k
			f.written(&format.Row{Key: k, Seq: uint64(i + 1), Value: make([]byte, valueLen)})
		}
	}
	f := db.newFlushMemo(nil)
	record(f, flushMemoMaxKeys+10, 8)
	if len(f.rows) != flushMemoMaxKeys || !f.full {
		t.Fatalf("%d keys recorded (full %v), want %d", len(f.rows), f.full, flushMemoMaxKeys)
	}
	f = db.newFlushMemo(nil)
	record(f, 4096, 1000) // 16-byte keys: 2 MiB hold 2,063 rows
	if n := len(f.rows); n != flushMemoMaxBytes/1016 || !f.full {
		t.Fatalf("%d rows of 1,016 bytes recorded (full %v), want %d", n, f.full, flushMemoMaxBytes/1016)
	}
}

// TestFlushMemoGet: a memo finds its keys whether they are asked for in
// ascending order (its cursor's path), again, or backwards, misses the keys
// between them, and stops recording at a key written out of order.
func TestFlushMemoGet(t *testing.T) {
	db := openCounterDB(t, t.TempDir(), clock.NewManual(epoch))
	defer db.Close()
	f := db.newFlushMemo(nil)
	for i, k := range []string{"b", "d", "f"} {
		f.want = []byte(k)
		f.written(&format.Row{Key: []byte(k), Seq: uint64(i + 1), Value: []byte("v" + k)})
	}
	for _, c := range []struct {
		key string
		hit bool
	}{
		{"a", false}, {"b", true}, {"c", false}, {"d", true}, {"d", true}, {"b", true},
		{"e", false}, {"f", true}, {"g", false}, {"a", false}, {"f", true},
	} {
		m, ok := f.get([]byte(c.key))
		if ok != c.hit || ok && string(f.arena[m.off:m.off+m.n]) != "v"+c.key {
			t.Fatalf("get(%s) = %q, %v; want hit %v", c.key, f.arena[m.off:m.off+m.n], ok, c.hit)
		}
	}
	f.want = []byte("c")
	f.written(&format.Row{Key: []byte("c"), Seq: 9, Value: []byte("vc")})
	if !f.full || len(f.rows) != 3 {
		t.Fatalf("a key written out of order: full %v, %d rows", f.full, len(f.rows))
	}
}
