package prometheus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	mayflyprom "github.com/mayflydb/mayfly/contrib/prometheus"
	"github.com/mayflydb/mayfly/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// scalarMetrics is the number of unlabelled metrics, levelMetrics the number
// of per-level metrics, both as exported by NewCollector.
const (
	scalarMetrics = 43
	levelMetrics  = 8
	numLevels     = 7
	numKinds      = 8  // l0, l0merge, l0split, level, expired, periodic, manual, shadowed
	numMemory     = 11 // memory_bytes components
)

func openDB(t *testing.T, opts *mayfly.Options) *mayfly.DB {
	t.Helper()
	db, err := mayfly.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// gather returns the registry's metrics as "name{labels}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			if lp := m.GetLabel(); len(lp) > 0 {
				var parts []string
				for _, l := range lp {
					parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				key += "{" + strings.Join(parts, ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			default:
				t.Fatalf("%s: unexpected type %v", key, mf.GetType())
			}
		}
	}
	return out
}

func TestCollector(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openDB(t, &mayfly.Options{Clock: clk, DisableAutoCompaction: true})
	c := mayflyprom.NewCollector(db, "mayfly")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)

	// 100 permanent rows, 50 that expire after a minute, and deletes of
	// 10 of the permanent ones.
	for i := range 100 {
		if err := db.Put(fmt.Appendf(nil, "key:%03d", i), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	b := db.NewBatch()
	for i := range 50 {
		b.PutTTL(fmt.Appendf(nil, "tmp:%03d", i), []byte("short-lived"), mayfly.ExpireAfter(time.Minute))
	}
	if err := b.Write(mayfly.Sync); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := db.Delete(fmt.Appendf(nil, "key:%03d", i)); err != nil {
			t.Fatal(err)
		}
	}

	got := gather(t, reg)
	check(t, got, map[string]float64{
		"mayfly_rows_written_total":      160,
		"mayfly_batches_committed_total": 111,
		"mayfly_wal_syncs_total":         1,
		"mayfly_flushes_total":           0,
		"mayfly_write_amplification":     0,
		`mayfly_level_files{level="0"}`:  0,
		"mayfly_open_snapshots":          0,
	})
	if got["mayfly_memtable_bytes"] <= 0 || got["mayfly_wal_bytes_total"] <= 0 {
		t.Errorf("memtable_bytes = %v, wal_bytes_total = %v; want > 0", got["mayfly_memtable_bytes"], got["mayfly_wal_bytes_total"])
	}
	// The active memtable's arena chunk and the WAL's pending buffer are
	// outside the Go heap.
	if got[`mayfly_memory_bytes{component="memtable_arena"}`] <= 0 || got[`mayfly_memory_bytes{component="wal"}`] <= 0 {
		t.Errorf("memory_bytes: memtable_arena %v, wal %v; want an arena chunk and a WAL buffer",
			got[`mayfly_memory_bytes{component="memtable_arena"}`], got[`mayfly_memory_bytes{component="wal"}`])
	}

	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	got = gather(t, reg)
	check(t, got, map[string]float64{
		"mayfly_flushes_total":          1,
		`mayfly_level_files{level="0"}`: 1,
		// The deletes shadowed 10 puts in the memtable, and with no table
		// beneath it the flush was a bottom write that dropped their 10
		// tombstones as well.
		`mayfly_level_rows{level="0"}`:        140,
		`mayfly_level_ttl_rows{level="0"}`:    50,
		`mayfly_level_tombstones{level="0"}`:  0,
		"mayfly_tombstones_dropped_total":     10,
		`mayfly_level_files{level="6"}`:       0,
		"mayfly_memtable_bytes":               0,
		"mayfly_immutable_memtables":          0,
		"mayfly_open_snapshots":               1,
		"mayfly_write_amplification":          1,
		`mayfly_compactions_total{kind="l0"}`: 0,
	})
	if got[`mayfly_level_bytes{level="0"}`] <= 0 || got["mayfly_flush_bytes_total"] != got[`mayfly_level_bytes{level="0"}`] {
		t.Errorf("level 0 bytes = %v, flush bytes = %v; want equal and > 0",
			got[`mayfly_level_bytes{level="0"}`], got["mayfly_flush_bytes_total"])
	}
	snap.Close()

	// Reads: hits, a miss, and an expired row.
	for _, k := range []string{"key:050", "key:051", "tmp:000"} {
		if _, err := db.Get([]byte(k)); err != nil {
			t.Fatal(k, err)
		}
	}
	if _, err := db.Get([]byte("nope")); err == nil {
		t.Fatal("Get(nope) found something")
	}
	clk.Advance(2 * time.Minute) // every tmp: row expires
	if _, err := db.Get([]byte("tmp:001")); err == nil {
		t.Fatal("expired row still visible")
	}
	got = gather(t, reg)
	check(t, got, map[string]float64{
		"mayfly_gets_total":            5,
		"mayfly_rows_read_total":       3,
		"mayfly_expired_on_read_total": 1,
	})

	// A touch within the window and a condition a read decides.
	if ok, err := db.Touch([]byte("key:050"), mayfly.NoExpiry()); !ok || err != nil {
		t.Fatalf("Touch = %v, %v", ok, err)
	}
	if ok, err := db.PutIfAbsent([]byte("key:050"), []byte("x"), mayfly.NoExpiry()); ok || err != nil {
		t.Fatalf("PutIfAbsent of a live key = %v, %v", ok, err)
	}
	check(t, gather(t, reg), map[string]float64{
		"mayfly_touches_coalesced_total":         1,
		"mayfly_conditions_failed_on_read_total": 1,
	})
	if got[`mayfly_level_expired_bytes{level="0"}`] <= 0 {
		t.Errorf("level 0 expired bytes = %v after every TTL row expired; want > 0", got[`mayfly_level_expired_bytes{level="0"}`])
	}
	if got[`mayfly_level_score{level="0"}`] <= 0 {
		t.Errorf("level 0 score = %v with one file; want > 0", got[`mayfly_level_score{level="0"}`])
	}

	// A manual compaction to the bottom drops the expired rows (the
	// tombstones went at the flush).
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	got = gather(t, reg)
	check(t, got, map[string]float64{
		`mayfly_compactions_total{kind="manual"}`: 1,
		`mayfly_compactions_total{kind="l0"}`:     0,
		"mayfly_expired_dropped_rows_total":       50,
		"mayfly_tombstones_dropped_total":         10,
		"mayfly_expired_to_tombstone_rows_total":  0,
		`mayfly_level_files{level="0"}`:           0,
		`mayfly_level_files{level="6"}`:           1,
		`mayfly_level_rows{level="6"}`:            90,
		`mayfly_level_ttl_rows{level="6"}`:        0,
		`mayfly_level_tombstones{level="6"}`:      0,
		"mayfly_running_compactions":              0,
		"mayfly_flushes_total":                    1, // Compact's flush found nothing to write
	})
	if got["mayfly_compaction_read_bytes_total"] != got["mayfly_flush_bytes_total"] {
		t.Errorf("compaction read %v bytes, want the %v flushed", got["mayfly_compaction_read_bytes_total"], got["mayfly_flush_bytes_total"])
	}
	written := got["mayfly_compaction_written_bytes_total"]
	if written <= 0 || written != got[`mayfly_level_bytes{level="6"}`] {
		t.Errorf("compaction wrote %v bytes, level 6 holds %v", written, got[`mayfly_level_bytes{level="6"}`])
	}
	wantWA := (got["mayfly_flush_bytes_total"] + written) / got["mayfly_flush_bytes_total"]
	if wa := got["mayfly_write_amplification"]; wa != wantWA || wa <= 1 {
		t.Errorf("write amplification = %v, want %v (> 1)", wa, wantWA)
	}

	// A scan through the compacted table goes through the block cache.
	var scanErr error
	n := 0
	for range db.Scan(nil, nil, &scanErr) {
		n++
	}
	if scanErr != nil || n != 90 {
		t.Fatalf("scan: %d rows, %v", n, scanErr)
	}
	got = gather(t, reg)
	if got["mayfly_block_cache_hits_total"]+got["mayfly_block_cache_misses_total"] == 0 || got["mayfly_block_cache_bytes"] <= 0 {
		t.Errorf("block cache: hits %v misses %v bytes %v; want some traffic",
			got["mayfly_block_cache_hits_total"], got["mayfly_block_cache_misses_total"], got["mayfly_block_cache_bytes"])
	}

	// The exact exposition of a few metrics, help text and type included.
	expected := `
# HELP mayfly_compactions_total Compactions that rewrote data, by the reason they were picked (l0: level 0 into the base level; l0merge: level-0 tables merged among themselves; l0split: level 0 split into key-disjoint slices; level: level over its size target; expired: enough expired bytes; periodic: expired or deleted data older than the periodic interval; manual: Compact or ReclaimExpired; shadowed: level-0 rows superseded by newer counter rows).
# TYPE mayfly_compactions_total counter
mayfly_compactions_total{kind="expired"} 0
mayfly_compactions_total{kind="l0"} 0
mayfly_compactions_total{kind="l0merge"} 0
mayfly_compactions_total{kind="l0split"} 0
mayfly_compactions_total{kind="level"} 0
mayfly_compactions_total{kind="manual"} 1
mayfly_compactions_total{kind="periodic"} 0
mayfly_compactions_total{kind="shadowed"} 0
# HELP mayfly_rows_written_total Rows committed since the database was opened: puts and deletes.
# TYPE mayfly_rows_written_total counter
mayfly_rows_written_total 160
# HELP mayfly_level_files SSTables in the level.
# TYPE mayfly_level_files gauge
mayfly_level_files{level="0"} 0
mayfly_level_files{level="1"} 0
mayfly_level_files{level="2"} 0
mayfly_level_files{level="3"} 0
mayfly_level_files{level="4"} 0
mayfly_level_files{level="5"} 0
mayfly_level_files{level="6"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected),
		"mayfly_compactions_total", "mayfly_rows_written_total", "mayfly_level_files"); err != nil {
		t.Error(err)
	}

	// Every metric, every scrape: no storage counters on a local directory.
	if n, want := testutil.CollectAndCount(c), scalarMetrics+levelMetrics*numLevels+numKinds+numMemory; n != want {
		t.Errorf("CollectAndCount = %d, want %d", n, want)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func check(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: missing", k)
		} else if g != w {
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
}

// countingStore is a storage backend that reports request counters
// (storage.RequestMetrics), as the S3 backend does.
type countingStore struct {
	storage.Storage
	m storage.RequestCounts
}

func (s *countingStore) RequestCounts() storage.RequestCounts { return s.m }

func TestCollectorStorageCounters(t *testing.T) {
	st := &countingStore{Storage: storage.NewMem(), m: storage.RequestCounts{
		Puts: 3, Gets: 4, RangeGets: 5, Lists: 6, Deletes: 7, Heads: 8, Posts: 9,
		BytesOut: 1000, BytesIn: 2000, Retries: 2,
	}}
	db := openDB(t, &mayfly.Options{Storage: st, Clock: clock.NewManual(epoch)})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(mayflyprom.NewCollector(db, "kv"))
	got := gather(t, reg)
	check(t, got, map[string]float64{
		`kv_storage_requests_total{op="put"}`:       3,
		`kv_storage_requests_total{op="get"}`:       4,
		`kv_storage_requests_total{op="range_get"}`: 5,
		`kv_storage_requests_total{op="list"}`:      6,
		`kv_storage_requests_total{op="delete"}`:    7,
		`kv_storage_requests_total{op="head"}`:      8,
		`kv_storage_requests_total{op="post"}`:      9,
		`kv_storage_bytes_total{direction="out"}`:   1000,
		`kv_storage_bytes_total{direction="in"}`:    2000,
		"kv_storage_retries_total":                  2,
	})
	if n, want := testutil.CollectAndCount(mayflyprom.NewCollector(db, "kv")), scalarMetrics+levelMetrics*numLevels+numKinds+numMemory+10; n != want {
		t.Errorf("CollectAndCount = %d, want %d", n, want)
	}
}

// The collector keeps working after the database is closed, reporting the
// final counts.
func TestCollectorAfterClose(t *testing.T) {
	db, err := mayfly.Open(t.TempDir(), &mayfly.Options{Clock: clock.NewManual(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	db.Put([]byte("k"), []byte("v"))
	db.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(mayflyprom.NewCollector(db, ""))
	check(t, gather(t, reg), map[string]float64{"rows_written_total": 1})
}
