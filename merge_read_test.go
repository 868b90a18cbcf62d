package mayfly

import (
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/format"
)

// TestMergeChainCountsAVersionOnce: a version met twice (a memtable and
// the table it was flushed to can both be in one read state) is added to
// a chain once, so its operand counts once.
func TestMergeChainCountsAVersionOnce(t *testing.T) {
	op := format.Row{Seq: 7, Flags: format.FlagMerge | format.FlagHasTS, TS: 1, Value: EncodeInt64(6)}
	base := format.Row{Seq: 3, Value: EncodeInt64(10)}
	var c mergeChain
	for _, r := range []format.Row{op, op, base, base} {
		if c.add(&r) {
			break
		}
	}
	r, ok, err := c.resolve([]byte("k"), merger{&Int64Add})
	if n, _ := DecodeInt64(r.Value); err != nil || !ok || n != 16 {
		t.Fatalf("resolved to %d (%v, %v), want 16", n, ok, err)
	}
}

// TestMergeChainFoldedTwin: a flush folds operands into a value row at the
// newest operand's sequence number; met after that operand (memtable and
// table in one read state), it replaces it and ends the chain.
func TestMergeChainFoldedTwin(t *testing.T) {
	op := format.Row{Seq: 9, Flags: format.FlagMerge | format.FlagHasTS, TS: 1, Value: EncodeInt64(8)}
	folded := format.Row{Seq: 9, Value: EncodeInt64(35)}
	older := format.Row{Seq: 5, Flags: format.FlagMerge | format.FlagHasTS, TS: 1, Value: EncodeInt64(27)}
	var c mergeChain
	for _, r := range []format.Row{op, folded, older} {
		if c.add(&r) {
			break
		}
	}
	r, ok, err := c.resolve([]byte("k"), merger{&Int64Add})
	if n, _ := DecodeInt64(r.Value); err != nil || !ok || n != 35 {
		t.Fatalf("resolved to %d (%v, %v), want 35", n, ok, err)
	}
}

// TestMergeIteratorFoldedTwinBackward: reading backwards, an operand met
// after the value row a flush folded it into (same sequence number) is
// not counted again. Both are visible while the flush installs its table.
func TestMergeIteratorFoldedTwinBackward(t *testing.T) {
	db := openCounterDB(t, t.TempDir(), clock.NewManual(epoch))
	defer db.Close()
	addBlind(t, db, "c", 40, NoExpiry())
	addBlind(t, db, "c", 5, NoExpiry())
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	// The rows of the key as a read state holding the memtable and its
	// flushed table yields them backwards: the folded value, then its
	// twin operand.
	op := format.Row{Key: []byte("c"), Seq: 9, Flags: format.FlagMerge | format.FlagHasTS, TS: 1, Value: EncodeInt64(5)}
	folded := format.Row{Key: []byte("c"), Seq: 9, Flags: format.FlagHasTS, TS: 1, Value: EncodeInt64(45)}
	it.key = append(it.key[:0], "c"...)
	it.hasMerge = false
	live := true
	it.valueBuf = append(it.valueBuf[:0], folded.Value...)
	it.expires = false
	it.seedChain(live, folded.Seq)
	it.chain.add(&op)
	if !it.settleMerge(&live) || !live {
		t.Fatal("settle failed")
	}
	if n, _ := DecodeInt64(it.valueBuf); n != 45 {
		t.Fatalf("resolved to %d, want 45", n)
	}
}

// TestMergeMetrics: point reads of a key holding operands count as merge
// reads, a repeat read of an unchanged counter as a cache hit, and a flush
// that folds a key's operands into one row counts one fold; reads of plain
// rows count nothing.
func TestMergeMetrics(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openCounterDB(t, t.TempDir(), clk)
	defer db.Close()
	must(t, db.Put([]byte("plain"), []byte("v")))
	for range 3 {
		addBlind(t, db, "c", 1, ExpireAfter(time.Minute))
	}
	addBlind(t, db, "d", 1, ExpireAfter(time.Minute))
	mustGet(t, db, "plain", "v")
	wantCounter(t, db, "c", 3, epoch.Add(time.Minute)) // a read and a cached state
	m := db.Metrics()
	// wantCounter reads c twice (Get, ExpireTime): the second finds the
	// state the first cached.
	if m.MergeReads != 2 || m.MergeCacheHits != 1 {
		t.Fatalf("merge reads %d, cache hits %d; want 2 and 1", m.MergeReads, m.MergeCacheHits)
	}
	must(t, db.Flush())
	if got := db.Metrics().MergesFolded; got != 2 {
		t.Fatalf("merges folded by the flush: %d, want 2 (c and d)", got)
	}
}
