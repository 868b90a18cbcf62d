package mayfly

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
)

// TestFlushFreezesRotatedMemtables: the flush freezes the memtable it
// writes (memtable.Freeze), a reader that still holds it reads every row
// from the frozen array after the flush, and every arena and index chunk is
// back by Close.
func TestFlushFreezesRotatedMemtables(t *testing.T) {
	base := arenaBytes()
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = storage.NewMem()
		o.DisableAutoCompaction = true
	})
	const n = 2000
	for i := range n {
		if err := db.Put(lifeKey(i), lifeVal(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := db.loadReadState()
	if err != nil {
		t.Fatal(err)
	}
	mem := rs.mem
	if mem.Frozen() {
		t.Fatal("the active memtable is frozen")
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if !mem.Frozen() {
		t.Fatal("the flushed memtable was not frozen")
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		if r, ok := mem.Get(lifeKey(i), format.MaxSeq); !ok || !bytes.Equal(r.Value, lifeVal(i, 0)) {
			t.Fatalf("frozen Get(%s) = %.20q, %v", lifeKey(i), r.Value, ok)
		}
	}
	it := mem.NewIter()
	rows := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Row().Key, lifeKey(rows)) {
			t.Fatalf("frozen row %d is %q", rows, it.Row().Key)
		}
		rows++
	}
	it.Close()
	if rows != n {
		t.Fatalf("frozen walk saw %d rows, want %d", rows, n)
	}
	rs.release()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("%d arena bytes left after Close", got-base)
	}
}

// TestExpiredRowHidesOlderVersion: a row that expires in the memtable is
// flushed as it is (not as a tombstone) and must keep hiding the older
// version beneath it through the flush, compactions and a reopen; where no
// older version can exist the flush drops it.
func TestExpiredRowHidesOlderVersion(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	db := openTestDB(t, dir, clk, nil)
	mustPut := func(k, v string, ttl TTL) {
		t.Helper()
		if err := db.PutTTL([]byte(k), []byte(v), ttl); err != nil {
			t.Fatal(err)
		}
	}
	mustMissing := func(stage, k string) {
		t.Helper()
		if v, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: %s = %q, %v; want not found", stage, k, v, err)
		}
	}
	for i := 0; i < 100; i++ {
		mustPut(fmt.Sprintf("k%03d", i), "old", DefaultTTL())
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i += 2 {
		mustPut(fmt.Sprintf("k%03d", i), "new", ExpireAfter(2*time.Second))
	}
	// Keys after every table: nothing older beneath them.
	mustPut("z-expiring", "x", ExpireAfter(2*time.Second))
	mustPut("z-live", "y", ExpireAfter(time.Hour))
	clk.Advance(3 * time.Second) // expired in the memtable; due for rotation
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Flushes != 2 || m.MemtableBytes != 0 {
		t.Fatalf("idle memtable not flushed: %d flushes, %d bytes left", m.Flushes, m.MemtableBytes)
	}
	check := func(stage string) {
		t.Helper()
		for i := 0; i < 100; i++ {
			k := fmt.Sprintf("k%03d", i)
			if i%2 == 0 {
				mustMissing(stage, k)
			} else {
				mustGet(t, db, k, "old")
			}
		}
		mustMissing(stage, "z-expiring")
		mustGet(t, db, "z-live", "y")
	}
	check("after flush")
	if m.ExpiredToTombstone != 0 {
		t.Fatalf("flush turned %d expired rows into tombstones", m.ExpiredToTombstone)
	}
	if err := db.ReclaimExpired(ctx); err != nil {
		t.Fatal(err)
	}
	check("after ReclaimExpired")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, nil)
	defer db.Close()
	check("after reopen")
}

// TestFlushDropsExpiredAtBottom: a flush whose key range overlaps no table
// drops the rows that expired in the memtable, and keeps the rest.
func TestFlushDropsExpiredAtBottom(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.DisableAgeRotation = true })
	defer db.Close()
	for i := 0; i < 100; i++ {
		ttl := ExpireAfter(time.Second)
		if i%4 == 0 {
			ttl = DefaultTTL()
		}
		if err := db.PutTTL([]byte(fmt.Sprintf("k%03d", i)), []byte("v"), ttl); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Second)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.ExpiredDropped != 75 || m.Levels[0].Rows != 25 {
		t.Fatalf("flush dropped %d expired rows and kept %d rows; want 75 and 25", m.ExpiredDropped, m.Levels[0].Rows)
	}
	for i := 0; i < 100; i++ {
		if v, err := db.Get([]byte(fmt.Sprintf("k%03d", i))); i%4 == 0 && (err != nil || string(v) != "v") || i%4 != 0 && !errors.Is(err, ErrNotFound) {
			t.Fatalf("k%03d: %q, %v", i, v, err)
		}
	}
}

// TestFlushL0BloomBits: a flush that overlaps an older table writes a
// level-0 table with Options.L0BloomBitsPerKey bits per key; a flush that
// overlaps nothing (it will go down by a move) and a compaction into a
// lower level write Options.BloomBitsPerKey.
func TestFlushL0BloomBits(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), func(o *Options) {
		o.DisableAutoCompaction = true
		o.BloomBitsPerKey = 8
		o.L0BloomBitsPerKey = 20
	})
	defer db.Close()
	const keys = 3000
	// bitsPerKey is a table's filter bits per key, to within the rounding
	// to 64-byte lines and the filter's header.
	bitsPerKey := func(tf *tableFile) int {
		return int((tf.reader.FilterSize()*8 + int64(tf.Meta.NumRows)/2) / int64(tf.Meta.NumRows))
	}
	for round := range 2 {
		for i := range keys {
			if err := db.Put(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "v%d", round)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	db.mu.Lock()
	l0 := slices.Clone(db.current.levels[0])
	db.mu.Unlock()
	if len(l0) != 2 {
		t.Fatalf("level 0 holds %d tables, want the two flushes", len(l0))
	}
	if got := bitsPerKey(l0[1]); got != 8 {
		t.Errorf("first flush, over an empty database: %d bits per key, want BloomBitsPerKey (8)", got)
	}
	if got := bitsPerKey(l0[0]); got != 20 {
		t.Errorf("second flush, over the first: %d bits per key, want L0BloomBitsPerKey (20)", got)
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	bottom := slices.Clone(db.current.levels[bottomLevel])
	db.mu.Unlock()
	if len(bottom) == 0 {
		t.Fatal("the compaction left the bottom level empty")
	}
	for _, tf := range bottom {
		if got := bitsPerKey(tf); got != 8 {
			t.Errorf("compaction output %d: %d bits per key, want BloomBitsPerKey (8)", tf.Meta.Num, got)
		}
	}
}

// TestCarriedNewKeys: a rewrite keeps the count of first versions less
// every row it dropped, never below 0 nor above the rows it wrote; a split
// shares the count among its outputs by their rows, rounded down.
func TestCarriedNewKeys(t *testing.T) {
	for _, c := range []struct{ newKeys, in, out, want uint64 }{
		{100, 151, 151, 100},
		{100, 151, 149, 98},
		{1, 10, 5, 0},
		{10, 10, 5, 5},
		{0, 10, 10, 0},
	} {
		if got := carriedNewKeys(c.newKeys, c.in, c.out); got != c.want {
			t.Errorf("carriedNewKeys(%d, %d, %d) = %d, want %d", c.newKeys, c.in, c.out, got, c.want)
		}
	}
	table := func(rows, newKeys uint64) *compaction.Table {
		return &compaction.Table{Meta: &manifest.FileMeta{TableStats: format.TableStats{NumRows: rows}}, NewKeys: newKeys}
	}
	out := func(rows uint64) *tableFile {
		return &tableFile{Meta: &manifest.FileMeta{TableStats: format.TableStats{NumRows: rows}}}
	}
	inputs := []compaction.Input{{Level: 0, Tables: []*compaction.Table{table(60, 60), table(40, 10)}}}
	outs := []*tableFile{out(30), out(60)} // 10 rows dropped: 60 of 90 carried
	carryNewKeys(inputs, outs)
	if outs[0].newKeys != 20 || outs[1].newKeys != 40 {
		t.Fatalf("split outputs' new keys: %d and %d, want 20 and 40", outs[0].newKeys, outs[1].newKeys)
	}
}

// BenchmarkFlushMemtable measures the CPU of writing one frozen memtable as a
// level-0 table (writeL0: memtable walk, compaction rules, sstable writer
// with the default compression and bloom filter) into a local directory,
// including the table's fsync and the reads that open it; cpu-ns/row (the
// process's CPU time, not the disk's) is the figure to compare. The memtable
// holds about as many rows as a 16 MiB one does in the fill benchmarks:
// 16-byte keys in random or ascending insert order, 100-byte
// half-compressible values.
func BenchmarkFlushMemtable(b *testing.B) {
	const rows = 70_000
	db, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()

	r := rand.New(rand.NewPCG(1, 2))
	vals := make([][]byte, 256)
	for i := range vals {
		v := make([]byte, 100)
		for j := range v[:50] {
			v[j] = byte(r.Uint32())
		}
		vals[i] = v
	}
	for _, order := range []string{"random", "ascending"} {
		b.Run(order, func(b *testing.B) {
			m := memtable.New(1)
			defer m.Unref()
			key := make([]byte, 16)
			for i := range rows {
				if order == "random" {
					binary.BigEndian.PutUint64(key, r.Uint64())
					binary.BigEndian.PutUint64(key[8:], r.Uint64())
				} else {
					binary.BigEndian.PutUint64(key, uint64(i))
				}
				m.Add(&format.Row{Key: key, Seq: uint64(i + 1), Value: vals[i%len(vals)]})
			}
			benchWriteL0(b, db, m, rows)
		})
	}
}

// benchWriteL0 flushes m, of rows rows, once per op and reports cpu-ns/row.
func benchWriteL0(b *testing.B, db *DB, m *memtable.Memtable, rows int) {
	b.ReportAllocs()
	b.SetBytes(int64(rows * (16 + 100)))
	cpu0 := processCPU()
	for b.Loop() {
		t, err := db.writeL0(m, false, nil, nil, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if t.Meta.NumRows != uint64(rows) {
			b.Fatalf("flushed %d rows, want %d", t.Meta.NumRows, rows)
		}
		db.discardTables([]*tableFile{t}, nil)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N*rows), "cpu-ns/row")
}

// processCPU returns the process's user+system CPU time in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestMetaFromProps: the manifest entry carries every statistic of the
// properties, each set to a distinct value here, with key bounds that share
// no memory with the properties'.
func TestMetaFromProps(t *testing.T) {
	var p sstable.Properties
	v := reflect.ValueOf(&p.TableStats).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Uint64, reflect.Uint8:
			f.SetUint(uint64(i + 1))
		case reflect.Int64:
			f.SetInt(-int64(i + 1))
		case reflect.Slice:
			f.SetBytes(format.AppendInternalKey(nil, &format.Row{Key: fmt.Appendf(nil, "k%d", i), Seq: uint64(i)}))
		default:
			t.Fatalf("field %s of kind %s: extend the test", v.Type().Field(i).Name, f.Kind())
		}
	}
	m := metaFromProps(42, &p, 1234)
	if m.Num != 42 || m.CompactedTime != 1234 {
		t.Fatalf("Num %d, CompactedTime %d; want 42, 1234", m.Num, m.CompactedTime)
	}
	if !reflect.DeepEqual(m.TableStats, p.TableStats) {
		t.Fatalf("entry statistics\n got %+v\nwant %+v", m.TableStats, p.TableStats)
	}
	p.Smallest[0], p.Largest[0] = 'x', 'x'
	if m.Smallest[0] == 'x' || m.Largest[0] == 'x' {
		t.Fatal("the entry's key bounds share memory with the properties")
	}
}
