// Package prometheus exports a Mayfly database's metrics to Prometheus.
//
// It lives in its own Go module so that the core mayfly module never depends
// on the Prometheus client library. Register the collector returned by
// NewCollector with a prometheus.Registerer:
//
//	reg.MustRegister(mayflyprom.NewCollector(db, "mayfly"))
//
// Every scrape calls db.Metrics exactly once and turns each of its fields into
// a metric: monotonically increasing counts become counters (suffix _total),
// point-in-time state becomes gauges. Per-level figures carry a "level" label
// ("0" to "6"), compactions a "kind" label, storage backend requests an "op"
// label, memory outside the Go heap a "component" label.
package prometheus

import (
	"slices"
	"strconv"
	"strings"

	"github.com/mayflydb/mayfly"
	"github.com/prometheus/client_golang/prometheus"
)

// compactionKinds are the reasons a data-rewriting compaction is picked
// (Metrics.CompactionsByKind). They are always exported, at zero until the
// first compaction of that kind, so that rate() and absent() behave; any
// other kind the engine reports is exported too.
var compactionKinds = []string{"l0", "l0merge", "l0split", "level", "expired", "periodic", "manual", "shadowed"}

// scalar is a metric with no labels read from one Metrics field.
type scalar struct {
	desc  *prometheus.Desc
	vtype prometheus.ValueType
	value func(m *mayfly.Metrics) float64
}

// levelMetric is a per-level gauge read from one LevelMetrics field.
type levelMetric struct {
	desc  *prometheus.Desc
	value func(l *mayfly.LevelMetrics) float64
}

type collector struct {
	db *mayfly.DB

	scalars []scalar
	levels  []levelMetric

	compactions     *prometheus.Desc // label kind
	storageRequests *prometheus.Desc // label op
	storageBytes    *prometheus.Desc // label direction
	storageRetries  *prometheus.Desc
	memory          *prometheus.Desc // label component
}

// NewCollector returns a Collector exporting db's metrics under namespace
// (for example "mayfly"; empty for none). To export several databases from
// one registry, give each its own namespace or wrap the collectors with
// prometheus.WrapRegistererWith and a distinguishing constant label.
//
// The collector reads db.Metrics once per scrape and keeps no state of its
// own; after db is closed it goes on reporting the final counts.
func NewCollector(db *mayfly.DB, namespace string) prometheus.Collector {
	c := &collector{db: db}
	name := func(n string) string { return prometheus.BuildFQName(namespace, "", n) }

	counter := func(n, help string, v func(m *mayfly.Metrics) float64) {
		c.scalars = append(c.scalars, scalar{prometheus.NewDesc(name(n), help, nil, nil), prometheus.CounterValue, v})
	}
	gauge := func(n, help string, v func(m *mayfly.Metrics) float64) {
		c.scalars = append(c.scalars, scalar{prometheus.NewDesc(name(n), help, nil, nil), prometheus.GaugeValue, v})
	}
	u := func(f func(m *mayfly.Metrics) uint64) func(m *mayfly.Metrics) float64 {
		return func(m *mayfly.Metrics) float64 { return float64(f(m)) }
	}

	// Write path.
	counter("rows_written_total", "Rows committed since the database was opened: puts and deletes.",
		u(func(m *mayfly.Metrics) uint64 { return m.RowsWritten }))
	counter("batches_committed_total", "Batches committed since open; each single Put or Delete is one batch.",
		u(func(m *mayfly.Metrics) uint64 { return m.BatchesCommitted }))
	counter("wal_bytes_total", "Bytes appended to the write-ahead log.",
		u(func(m *mayfly.Metrics) uint64 { return m.WALBytes }))
	counter("wal_syncs_total", "Write-ahead log fsyncs, one per synced commit group.",
		u(func(m *mayfly.Metrics) uint64 { return m.WALSyncs }))
	counter("wal_segments_created_total", "Write-ahead log segment files created.",
		u(func(m *mayfly.Metrics) uint64 { return m.WALSegmentsCreated }))
	counter("wal_records_replayed_total", "Write-ahead log records recovered when the database was opened.",
		u(func(m *mayfly.Metrics) uint64 { return m.WALRecordsReplayed }))
	counter("wal_torn_tails_total", "Torn (partially written) write-ahead log tail records dropped when the database was opened.",
		u(func(m *mayfly.Metrics) uint64 { return m.WALTornTails }))
	counter("write_stalls_total", "Times a write had to wait for a flush or level-0 compaction to catch up.",
		u(func(m *mayfly.Metrics) uint64 { return m.WriteStalls }))
	counter("write_stall_seconds_total", "Total time writes spent stalled waiting for flushes or compactions, in seconds.",
		func(m *mayfly.Metrics) float64 { return m.WriteStallTime.Seconds() })
	counter("write_slowdowns_total", "Commits delayed because level 0 reached the slowdown threshold.",
		u(func(m *mayfly.Metrics) uint64 { return m.WriteSlowdowns }))
	counter("write_slowdown_seconds_total", "Total time commits were delayed by level-0 slowdowns, in seconds.",
		func(m *mayfly.Metrics) float64 { return m.WriteSlowdownTime.Seconds() })

	// Read path.
	counter("gets_total", "Point lookups (Get and TTL) served.",
		u(func(m *mayfly.Metrics) uint64 { return m.Gets }))
	counter("rows_read_total", "Live rows returned by point lookups and iterators.",
		u(func(m *mayfly.Metrics) uint64 { return m.RowsRead }))
	counter("expired_on_read_total", "Rows a read found but hid because they had expired.",
		u(func(m *mayfly.Metrics) uint64 { return m.ExpiredOnRead }))
	counter("touches_coalesced_total", "Touch and GetEx calls that wrote nothing: the deadline was already within the touch window.",
		u(func(m *mayfly.Metrics) uint64 { return m.TouchesCoalesced }))
	counter("conditions_failed_on_read_total", "Single-key conditional calls a read before the commit pipeline already decided as failed.",
		u(func(m *mayfly.Metrics) uint64 { return m.ConditionsFailedOnRead }))
	counter("bloom_negatives_total", "SSTable lookups skipped because the bloom filter ruled the key out.",
		u(func(m *mayfly.Metrics) uint64 { return m.BloomNegatives }))
	counter("bloom_false_positives_total", "SSTable lookups the bloom filter let through that found nothing.",
		u(func(m *mayfly.Metrics) uint64 { return m.BloomFalsePositives }))
	counter("block_cache_hits_total", "Block cache lookups that found the block in memory.",
		u(func(m *mayfly.Metrics) uint64 { return m.BlockCacheHits }))
	counter("block_cache_misses_total", "Block cache lookups that had to read the block from storage.",
		u(func(m *mayfly.Metrics) uint64 { return m.BlockCacheMisses }))
	counter("follow_refreshes_total", "Times a read-only follower loaded a newer version of the database.",
		u(func(m *mayfly.Metrics) uint64 { return m.FollowRefreshes }))

	// Flushes and compactions.
	counter("flushes_total", "Memtable flushes to level-0 SSTables.",
		u(func(m *mayfly.Metrics) uint64 { return m.Flushes }))
	counter("flush_bytes_total", "Bytes of SSTables written by memtable flushes.",
		u(func(m *mayfly.Metrics) uint64 { return m.FlushBytes }))
	counter("compaction_read_bytes_total", "Bytes of SSTables read by compactions.",
		u(func(m *mayfly.Metrics) uint64 { return m.CompactionBytesRead }))
	counter("compaction_written_bytes_total", "Bytes of SSTables written by compactions.",
		u(func(m *mayfly.Metrics) uint64 { return m.CompactionBytesWritten }))
	counter("trivial_moves_total", "SSTables moved down a level without being rewritten.",
		u(func(m *mayfly.Metrics) uint64 { return m.TrivialMoves }))
	counter("whole_file_drops_total", "SSTables deleted without being read because every row in them had expired.",
		u(func(m *mayfly.Metrics) uint64 { return m.WholeFileDrops }))
	counter("whole_file_drop_bytes_total", "Bytes of SSTables deleted without being read because every row in them had expired.",
		u(func(m *mayfly.Metrics) uint64 { return m.WholeFileDropBytes }))
	counter("expired_to_tombstone_rows_total", "Expired rows a flush or compaction rewrote as tombstones (still needed to hide older versions).",
		u(func(m *mayfly.Metrics) uint64 { return m.ExpiredToTombstone }))
	counter("expired_dropped_rows_total", "Expired rows dropped for good by compactions into the bottom level.",
		u(func(m *mayfly.Metrics) uint64 { return m.ExpiredDropped }))
	counter("tombstones_dropped_total", "Tombstones dropped by compactions because nothing older remained beneath them.",
		u(func(m *mayfly.Metrics) uint64 { return m.TombstonesDropped }))
	counter("filter_removed_rows_total", "Rows removed by user compaction filters.",
		u(func(m *mayfly.Metrics) uint64 { return m.FilterRemoved }))
	counter("filter_changed_rows_total", "Rows rewritten by user compaction filters.",
		u(func(m *mayfly.Metrics) uint64 { return m.FilterChanged }))
	counter("tables_deleted_total", "Obsolete SSTable files deleted from storage.",
		u(func(m *mayfly.Metrics) uint64 { return m.TablesDeleted }))
	counter("manifest_writes_total", "Manifest versions written (one per flush, compaction or other change to the set of tables).",
		u(func(m *mayfly.Metrics) uint64 { return m.ManifestWrites }))

	// State.
	gauge("memtable_bytes", "Size of the active memtable in bytes.",
		func(m *mayfly.Metrics) float64 { return float64(m.MemtableBytes) })
	gauge("immutable_memtables", "Frozen memtables waiting to be flushed.",
		func(m *mayfly.Metrics) float64 { return float64(m.ImmutableMemtables) })
	gauge("immutable_memtable_bytes", "Total size in bytes of the frozen memtables waiting to be flushed.",
		func(m *mayfly.Metrics) float64 { return float64(m.ImmutableBytes) })
	gauge("block_cache_bytes", "Bytes currently held by the block cache.",
		func(m *mayfly.Metrics) float64 { return float64(m.BlockCacheBytes) })
	gauge("open_snapshots", "Snapshots currently open.",
		func(m *mayfly.Metrics) float64 { return float64(m.OpenSnapshots) })
	gauge("running_compactions", "Compactions currently in progress.",
		func(m *mayfly.Metrics) float64 { return float64(m.RunningCompactions) })
	gauge("memory_block_cache_in_use_bytes", "Bytes of the block cache's slab memory (part of memory_bytes{component=\"block_cache_mapped\"}) handed out to blocks, for the whole process.",
		func(m *mayfly.Metrics) float64 { return float64(m.Memory.BlockCacheInUse) })
	gauge("write_amplification", "Bytes written to SSTables (flushes plus compactions) per byte flushed since open; 0 before the first flush.",
		func(m *mayfly.Metrics) float64 { return m.WriteAmplification() })

	level := []string{"level"}
	lvl := func(n, help string, v func(l *mayfly.LevelMetrics) float64) {
		c.levels = append(c.levels, levelMetric{prometheus.NewDesc(name(n), help, level, nil), v})
	}
	lvl("level_files", "SSTables in the level.",
		func(l *mayfly.LevelMetrics) float64 { return float64(l.Files) })
	lvl("level_bytes", "Total size in bytes of the SSTables in the level.",
		func(l *mayfly.LevelMetrics) float64 { return float64(l.Bytes) })
	lvl("level_rows", "Rows held by the level's SSTables, tombstones included.",
		func(l *mayfly.LevelMetrics) float64 { return float64(l.Rows) })
	lvl("level_ttl_rows", "Rows in the level that carry an expiry.",
		func(l *mayfly.LevelMetrics) float64 { return float64(l.TTLRows) })
	lvl("level_tombstones", "Tombstones in the level.",
		func(l *mayfly.LevelMetrics) float64 { return float64(l.Tombstones) })
	lvl("level_score", "Compaction score of the level (level 0: files over the trigger; others: bytes over the size target); >= 1 means a compaction is due.",
		func(l *mayfly.LevelMetrics) float64 { return l.Score })
	lvl("level_target_bytes", "Size target of the level in bytes (0 for level 0 and unused levels).",
		func(l *mayfly.LevelMetrics) float64 { return float64(l.TargetBytes) })
	lvl("level_expired_bytes", "Estimated bytes in the level whose rows have expired but are still on disk.",
		func(l *mayfly.LevelMetrics) float64 { return float64(l.ExpiredBytes) })

	c.compactions = prometheus.NewDesc(name("compactions_total"),
		"Compactions that rewrote data, by the reason they were picked (l0: level 0 into the base level; l0merge: level-0 tables merged among themselves; l0split: level 0 split into key-disjoint slices; level: level over its size target; expired: enough expired bytes; periodic: expired or deleted data older than the periodic interval; manual: Compact or ReclaimExpired; shadowed: level-0 rows superseded by newer counter rows).",
		[]string{"kind"}, nil)
	c.storageRequests = prometheus.NewDesc(name("storage_requests_total"),
		"Requests sent to the storage backend (object stores only; every attempt, retries included), by operation.",
		[]string{"op"}, nil)
	c.storageBytes = prometheus.NewDesc(name("storage_bytes_total"),
		"Bytes moved to (out: request bodies) and from (in: response bodies) the storage backend (object stores only).",
		[]string{"direction"}, nil)
	c.storageRetries = prometheus.NewDesc(name("storage_retries_total"),
		"Storage backend request attempts that were retried (object stores only).",
		nil, nil)
	c.memory = prometheus.NewDesc(name("memory_bytes"),
		"Memory held outside the Go heap (anonymous mappings the Go runtime's metrics do not see), for the whole process, by component (memtable_arena, memtable_frozen, memtable_pooled, block_cache_mapped, table_indexes, index_blocks, wal, object_writers, filter_builders, read_ahead, other); the components sum to the total.",
		[]string{"component"}, nil)
	return c
}

// Describe sends the descriptors of every metric the collector can export.
// They do not depend on the database's state, so Describe reads nothing.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range c.scalars {
		ch <- s.desc
	}
	for _, l := range c.levels {
		ch <- l.desc
	}
	ch <- c.compactions
	ch <- c.storageRequests
	ch <- c.storageBytes
	ch <- c.storageRetries
	ch <- c.memory
}

// Collect reads db.Metrics once and sends every metric.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.db.Metrics()
	for _, s := range c.scalars {
		ch <- prometheus.MustNewConstMetric(s.desc, s.vtype, s.value(&m))
	}
	for i := range m.Levels {
		l := &m.Levels[i]
		label := strconv.Itoa(i)
		for _, lm := range c.levels {
			ch <- prometheus.MustNewConstMetric(lm.desc, prometheus.GaugeValue, lm.value(l), label)
		}
	}
	for _, k := range compactionKinds {
		ch <- prometheus.MustNewConstMetric(c.compactions, prometheus.CounterValue, float64(m.CompactionsByKind[k]), k)
	}
	for k, n := range m.CompactionsByKind {
		if !slices.Contains(compactionKinds, k) {
			ch <- prometheus.MustNewConstMetric(c.compactions, prometheus.CounterValue, float64(n), k)
		}
	}
	for _, mc := range m.Memory.Components() {
		ch <- prometheus.MustNewConstMetric(c.memory, prometheus.GaugeValue, float64(mc.Bytes), mc.Name)
	}
	// Storage counters exist only for backends that keep them (the S3
	// backend); a local directory reports none.
	for k, n := range m.Storage {
		v := float64(n)
		switch {
		case k == "retries":
			ch <- prometheus.MustNewConstMetric(c.storageRetries, prometheus.CounterValue, v)
		case strings.HasPrefix(k, "bytes_"):
			ch <- prometheus.MustNewConstMetric(c.storageBytes, prometheus.CounterValue, v, strings.TrimPrefix(k, "bytes_"))
		default:
			ch <- prometheus.MustNewConstMetric(c.storageRequests, prometheus.CounterValue, v, k)
		}
	}
}
