package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/urfave/cli/v3"
)

func statsCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:  "stats",
		Usage: "print per-level files, bytes, rows, TTL rows and tombstones, the other metrics, and when the stored bytes expire",
		Description: "The database is opened read-only. Level figures describe the database; activity\n" +
			"counters (gets, flushes, ...) cover only this open, so they mostly show WAL replay.\n\n" +
			"The expiry histogram reads every row of every live SSTable and files its key+value\n" +
			"bytes by its deadline relative to now (the engine clock, or --now): already\n" +
			"expired (dead but still on disk), within a minute, hour, day, week, later, never\n" +
			"(no TTL), and tombstones. It costs a full read of the tables; --expiry=false\n" +
			"skips it.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
			&cli.BoolFlag{Name: "expiry", Value: true, Usage: "compute the expiry histogram (reads every row)"},
			&cli.StringFlag{Name: "now", Usage: "judge expiry at this RFC 3339 `TIME` instead of the engine clock (e.g. 2030-01-02T15:04:05Z)"},
			&cli.StringFlag{Name: "plot", Usage: "also draw the expiry histogram as a bar chart into `FILE` (.png or .svg)", TakesFile: true},
		},
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			if cmd.Args().Present() {
				return usagef("stats: unexpected arguments %q", cmd.Args().Slice())
			}
			var now time.Time
			if cmd.IsSet("now") {
				if now, err = time.Parse(time.RFC3339Nano, cmd.String("now")); err != nil {
					return usagef("stats: --now: %v", err)
				}
			}
			plotPath := cmd.String("plot")
			if plotPath != "" {
				if !cmd.Bool("expiry") {
					return usagef("stats: --plot needs the expiry histogram (drop --expiry=false)")
				}
				if err := checkPlotPath(plotPath); err != nil {
					return err
				}
			}
			db, err := openDB(ctx, cmd, true, false)
			if err != nil {
				return err
			}
			defer closeDB(db, &err)
			m := db.Metrics()
			var hist *expiryHistogram
			if cmd.Bool("expiry") {
				if now.IsZero() {
					if now, err = engineNow(db); err != nil {
						return err
					}
				}
				if hist, err = storedExpiry(ctx, cmd, now); err != nil {
					return err
				}
				if plotPath != "" {
					if err := plotExpiry(hist, shownLocation(cmd.String("dir")), plotPath); err != nil {
						return fmt.Errorf("stats: --plot: %w", err)
					}
				}
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				s := statsJSON(shownLocation(cmd.String("dir")), &m)
				s.Expiry = hist
				return writeJSON(w, s)
			}
			if err := printStats(w, &m); err != nil {
				return err
			}
			if hist != nil {
				return printExpiry(w, hist)
			}
			return nil
		},
	})
}

// engineNow reads the database's clock: the system time, but never below
// the latest time the database recorded.
func engineNow(db *mayfly.DB) (time.Time, error) {
	snap, err := db.NewSnapshot()
	if err != nil {
		return time.Time{}, err
	}
	defer snap.Close()
	return snap.Time(), nil
}

// storedExpiry computes the expiry histogram of the tables the newest
// manifest of the database at --dir lists.
func storedExpiry(ctx context.Context, cmd *cli.Command, now time.Time) (*expiryHistogram, error) {
	s, _, err := openStore(ctx, cmd)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	st, _, _, err := manifest.Load(s)
	if err != nil {
		return nil, err
	}
	return computeExpiry(s, st, now)
}

// levelStats is one level in stats --json output.
type levelStats struct {
	Level      int    `json:"level"`
	Files      int    `json:"files"`
	Bytes      uint64 `json:"bytes"`
	Rows       uint64 `json:"rows"`
	TTLRows    uint64 `json:"ttl_rows"`
	Tombstones uint64 `json:"tombstones"`
}

// stats is the stats --json output: every Metrics field, snake_case.
type stats struct {
	Dir                    string       `json:"dir"`
	DiskBytes              uint64       `json:"disk_bytes"`
	Levels                 []levelStats `json:"levels"`
	MemtableBytes          int64        `json:"memtable_bytes"`
	ImmutableMemtables     int          `json:"immutable_memtables"`
	ImmutableBytes         int64        `json:"immutable_bytes"`
	RowsWritten            uint64       `json:"rows_written"`
	BatchesCommitted       uint64       `json:"batches_committed"`
	Gets                   uint64       `json:"gets"`
	RowsRead               uint64       `json:"rows_read"`
	ExpiredOnRead          uint64       `json:"expired_on_read"`
	BloomNegatives         uint64       `json:"bloom_negatives"`
	BloomFalsePositives    uint64       `json:"bloom_false_positives"`
	WALBytes               uint64       `json:"wal_bytes"`
	WALSyncs               uint64       `json:"wal_syncs"`
	WALSegmentsCreated     uint64       `json:"wal_segments_created"`
	WALRecordsReplayed     uint64       `json:"wal_records_replayed"`
	WALTornTails           uint64       `json:"wal_torn_tails"`
	Flushes                uint64       `json:"flushes"`
	FlushBytes             uint64       `json:"flush_bytes"`
	Compactions            uint64       `json:"compactions"`
	CompactionBytesRead    uint64       `json:"compaction_bytes_read"`
	CompactionBytesWritten uint64       `json:"compaction_bytes_written"`
	WriteAmplification     float64      `json:"write_amplification"`
	ExpiredToTombstone     uint64       `json:"expired_to_tombstone"`
	ExpiredDropped         uint64       `json:"expired_dropped"`
	TombstonesDropped      uint64       `json:"tombstones_dropped"`
	TablesDeleted          uint64       `json:"tables_deleted"`
	ManifestWrites         uint64       `json:"manifest_writes"`
	WriteStalls            uint64       `json:"write_stalls"`
	WriteStallTimeNanos    int64        `json:"write_stall_time_ns"`
	BlockCacheHits         uint64       `json:"block_cache_hits"`
	BlockCacheMisses       uint64       `json:"block_cache_misses"`
	BlockCacheBytes        int64        `json:"block_cache_bytes"`
	OpenSnapshots          int          `json:"open_snapshots"`
	// Memory is Metrics.Memory: the process's memory outside the Go heap.
	Memory memoryStats `json:"memory"`
	// Expiry is the expiry histogram; absent with --expiry=false.
	Expiry *expiryHistogram `json:"expiry,omitempty"`
}

// memoryStats is Metrics.Memory in stats --json output, in bytes.
type memoryStats struct {
	MemtableArena    int64 `json:"memtable_arena"`
	MemtableFrozen   int64 `json:"memtable_frozen"`
	MemtablePooled   int64 `json:"memtable_pooled"`
	BlockCacheMapped int64 `json:"block_cache_mapped"`
	BlockCacheInUse  int64 `json:"block_cache_in_use"`
	TableIndexes     int64 `json:"table_indexes"`
	IndexBlocks      int64 `json:"index_blocks"`
	WAL              int64 `json:"wal"`
	ObjectWriters    int64 `json:"object_writers"`
	FilterBuilders   int64 `json:"filter_builders"`
	ReadAhead        int64 `json:"read_ahead"`
	Other            int64 `json:"other"`
	Total            int64 `json:"total"`
}

func statsJSON(dir string, m *mayfly.Metrics) stats {
	s := stats{
		Dir: dir, DiskBytes: m.DiskBytes(),
		MemtableBytes: m.MemtableBytes, ImmutableMemtables: m.ImmutableMemtables, ImmutableBytes: m.ImmutableBytes,
		RowsWritten: m.RowsWritten, BatchesCommitted: m.BatchesCommitted,
		Gets: m.Gets, RowsRead: m.RowsRead, ExpiredOnRead: m.ExpiredOnRead,
		BloomNegatives: m.BloomNegatives, BloomFalsePositives: m.BloomFalsePositives,
		WALBytes: m.WALBytes, WALSyncs: m.WALSyncs, WALSegmentsCreated: m.WALSegmentsCreated,
		WALRecordsReplayed: m.WALRecordsReplayed, WALTornTails: m.WALTornTails,
		Flushes: m.Flushes, FlushBytes: m.FlushBytes, Compactions: m.Compactions,
		CompactionBytesRead: m.CompactionBytesRead, CompactionBytesWritten: m.CompactionBytesWritten,
		WriteAmplification: m.WriteAmplification(),
		ExpiredToTombstone: m.ExpiredToTombstone, ExpiredDropped: m.ExpiredDropped,
		TombstonesDropped: m.TombstonesDropped, TablesDeleted: m.TablesDeleted, ManifestWrites: m.ManifestWrites,
		WriteStalls: m.WriteStalls, WriteStallTimeNanos: int64(m.WriteStallTime),
		BlockCacheHits: m.BlockCacheHits, BlockCacheMisses: m.BlockCacheMisses, BlockCacheBytes: m.BlockCacheBytes,
		OpenSnapshots: m.OpenSnapshots,
		Memory:        memoryStats(m.Memory),
	}
	for l, lm := range m.Levels {
		s.Levels = append(s.Levels, levelStats{Level: l, Files: lm.Files, Bytes: lm.Bytes,
			Rows: lm.Rows, TTLRows: lm.TTLRows, Tombstones: lm.Tombstones})
	}
	return s
}

// printLevels writes a table of the levels; with skipEmpty, levels without
// files are left out.
func printLevels(w io.Writer, indent string, m *mayfly.Metrics, skipEmpty bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%slevel\tfiles\tbytes\trows\tttl_rows\ttombstones\t\n", indent)
	var tot mayfly.LevelMetrics
	for l, lm := range m.Levels {
		tot.Files += lm.Files
		tot.Bytes += lm.Bytes
		tot.Rows += lm.Rows
		tot.TTLRows += lm.TTLRows
		tot.Tombstones += lm.Tombstones
		if skipEmpty && lm.Files == 0 {
			continue
		}
		fmt.Fprintf(tw, "%sL%d\t%d\t%d\t%d\t%d\t%d\t\n", indent, l, lm.Files, lm.Bytes, lm.Rows, lm.TTLRows, lm.Tombstones)
	}
	fmt.Fprintf(tw, "%stotal\t%d\t%d\t%d\t%d\t%d\t\n", indent, tot.Files, tot.Bytes, tot.Rows, tot.TTLRows, tot.Tombstones)
	return tw.Flush()
}

func printStats(w io.Writer, m *mayfly.Metrics) error {
	if err := printLevels(w, "", m, false); err != nil {
		return err
	}
	s := statsJSON("", m)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	rows := []struct {
		name string
		v    any
	}{
		{"disk_bytes", s.DiskBytes},
		{"memtable_bytes", s.MemtableBytes},
		{"immutable_memtables", s.ImmutableMemtables},
		{"immutable_bytes", s.ImmutableBytes},
		{"rows_written", s.RowsWritten},
		{"batches_committed", s.BatchesCommitted},
		{"gets", s.Gets},
		{"rows_read", s.RowsRead},
		{"expired_on_read", s.ExpiredOnRead},
		{"bloom_negatives", s.BloomNegatives},
		{"bloom_false_positives", s.BloomFalsePositives},
		{"wal_bytes", s.WALBytes},
		{"wal_syncs", s.WALSyncs},
		{"wal_segments_created", s.WALSegmentsCreated},
		{"wal_records_replayed", s.WALRecordsReplayed},
		{"wal_torn_tails", s.WALTornTails},
		{"flushes", s.Flushes},
		{"flush_bytes", s.FlushBytes},
		{"compactions", s.Compactions},
		{"compaction_bytes_read", s.CompactionBytesRead},
		{"compaction_bytes_written", s.CompactionBytesWritten},
		{"write_amplification", fmt.Sprintf("%.2f", s.WriteAmplification)},
		{"expired_to_tombstone", s.ExpiredToTombstone},
		{"expired_dropped", s.ExpiredDropped},
		{"tombstones_dropped", s.TombstonesDropped},
		{"tables_deleted", s.TablesDeleted},
		{"manifest_writes", s.ManifestWrites},
		{"write_stalls", s.WriteStalls},
		{"write_stall_time", m.WriteStallTime},
		{"block_cache_hits", s.BlockCacheHits},
		{"block_cache_misses", s.BlockCacheMisses},
		{"block_cache_bytes", s.BlockCacheBytes},
		{"open_snapshots", s.OpenSnapshots},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%v\n", r.name, r.v)
	}
	for _, c := range m.Memory.Components() {
		fmt.Fprintf(tw, "memory_%s:\t%d\n", c.Name, c.Bytes)
	}
	fmt.Fprintf(tw, "memory_block_cache_in_use:\t%d\n", m.Memory.BlockCacheInUse)
	fmt.Fprintf(tw, "memory_total:\t%d\n", m.Memory.Total)
	return tw.Flush()
}
