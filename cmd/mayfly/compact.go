package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/storage"
	"github.com/urfave/cli/v3"
)

func compactCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:  "compact",
		Usage: "rewrite the tables holding keys in [--start, --end] into the bottom level, dropping expired and shadowed rows",
		Description: "Runs DB.Compact: the memtable is flushed, then every table overlapping the range\n" +
			"(widened to whole tables; both bounds inclusive, empty means open) is merged into\n" +
			"the bottom level. Expired rows, shadowed versions and tombstones with nothing\n" +
			"beneath them are dropped. Needs the database to itself (no other open handle).\n" +
			"Prints the SSTable bytes (Metrics.DiskBytes) and the database's total bytes\n" +
			"before and after.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.StringFlag{Name: "start", Usage: "first `KEY` of the range (inclusive)"},
			&cli.StringFlag{Name: "end", Usage: "last `KEY` of the range (inclusive)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			var lo, hi []byte
			if s := cmd.String("start"); s != "" {
				lo = []byte(s)
			}
			if s := cmd.String("end"); s != "" {
				hi = []byte(s)
			}
			if lo != nil && hi != nil && string(lo) > string(hi) {
				return usagef("compact: --start %q is after --end %q", lo, hi)
			}
			return runMaintenance(ctx, cmd, "compact", func(ctx context.Context, db *mayfly.DB) error {
				return db.Compact(ctx, lo, hi)
			})
		},
	})
}

func reclaimCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:  "reclaim",
		Usage: "remove expired data from disk now (DB.ReclaimExpired)",
		Description: "Tables whose rows have all expired are dropped unread; every table whose\n" +
			"properties say it holds expired rows or tombstones is compacted to the bottom.\n" +
			"The cost follows the expired data, not the size of the database. Expiry is judged\n" +
			"by the system clock. Needs the database to itself. Prints the SSTable bytes and\n" +
			"the directory's total bytes before and after.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			return runMaintenance(ctx, cmd, "reclaim", func(ctx context.Context, db *mayfly.DB) error {
				return db.ReclaimExpired(ctx)
			})
		},
	})
}

// maintenanceResult is the compact and reclaim --json output.
type maintenanceResult struct {
	Op             string  `json:"op"`
	SSTBytesBefore uint64  `json:"sst_bytes_before"`
	SSTBytesAfter  uint64  `json:"sst_bytes_after"`
	TablesBefore   int     `json:"tables_before"`
	TablesAfter    int     `json:"tables_after"`
	RowsBefore     uint64  `json:"rows_before"`
	RowsAfter      uint64  `json:"rows_after"`
	DirBytesBefore int64   `json:"dir_bytes_before"`
	DirBytesAfter  int64   `json:"dir_bytes_after"`
	ExpiredDropped uint64  `json:"expired_dropped"`
	TombstonesDrop uint64  `json:"tombstones_dropped"`
	Seconds        float64 `json:"seconds"`
}

// runMaintenance opens the database for writing, runs op and reports the
// sizes before and after.
func runMaintenance(ctx context.Context, cmd *cli.Command, name string, op func(context.Context, *mayfly.DB) error) (err error) {
	s, _, err := openStore(ctx, cmd)
	if err != nil {
		return err
	}
	defer s.Close()
	res := maintenanceResult{Op: name}
	if res.DirBytesBefore, err = storedBytes(s); err != nil {
		return err
	}
	db, err := openDB(ctx, cmd, false, false)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			closeDB(db, &err)
		}
	}()
	before := db.Metrics()
	res.SSTBytesBefore, res.TablesBefore, res.RowsBefore = tableTotals(&before)
	start := time.Now()
	if err := op(ctx, db); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	res.Seconds = time.Since(start).Seconds()
	after := db.Metrics()
	res.SSTBytesAfter, res.TablesAfter, res.RowsAfter = tableTotals(&after)
	res.ExpiredDropped = after.ExpiredDropped - before.ExpiredDropped
	res.TombstonesDrop = after.TombstonesDropped - before.TombstonesDropped
	closed = true
	if err := db.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if res.DirBytesAfter, err = storedBytes(s); err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		return writeJSON(w, res)
	}
	printMaintenance(w, &res)
	return nil
}

func tableTotals(m *mayfly.Metrics) (bytes uint64, files int, rows uint64) {
	for _, l := range m.Levels {
		bytes += l.Bytes
		files += l.Files
		rows += l.Rows
	}
	return bytes, files, rows
}

// storedBytes is the total size of a database's objects: manifest
// versions, WAL segments and tables. An object removed between the listing
// and its lookup (by the database's own cleanup) is left out.
func storedBytes(s storage.Storage) (int64, error) {
	var n int64
	for _, dir := range databaseDirs {
		names, err := s.List(dir)
		if err != nil {
			return 0, err
		}
		for _, name := range names {
			r, err := s.Open(name)
			if errors.Is(err, storage.ErrNotExist) {
				continue
			}
			if err != nil {
				return 0, err
			}
			n += r.Size()
			r.Close()
		}
	}
	return n, nil
}

func printMaintenance(w io.Writer, r *maintenanceResult) {
	change := func(b, a uint64) string {
		if b == 0 {
			return ""
		}
		return fmt.Sprintf(" (%+.1f%%)", 100*(float64(a)-float64(b))/float64(b))
	}
	fmt.Fprintf(w, "%s finished in %v\n", r.Op, time.Duration(r.Seconds*float64(time.Second)).Round(time.Millisecond))
	fmt.Fprintf(w, "  sstable bytes:   %10d -> %10d%s  (%s -> %s)\n", r.SSTBytesBefore, r.SSTBytesAfter,
		change(r.SSTBytesBefore, r.SSTBytesAfter), humanBytes(r.SSTBytesBefore), humanBytes(r.SSTBytesAfter))
	fmt.Fprintf(w, "  directory bytes: %10d -> %10d%s  (WAL and manifest included)\n", r.DirBytesBefore, r.DirBytesAfter,
		change(uint64(r.DirBytesBefore), uint64(r.DirBytesAfter)))
	fmt.Fprintf(w, "  tables:          %10d -> %10d\n", r.TablesBefore, r.TablesAfter)
	fmt.Fprintf(w, "  rows:            %10d -> %10d  (expired rows dropped %d, tombstones dropped %d)\n",
		r.RowsBefore, r.RowsAfter, r.ExpiredDropped, r.TombstonesDrop)
}
