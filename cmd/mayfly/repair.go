package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/mayflydb/mayfly"
	"github.com/urfave/cli/v3"
)

func repairCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "repair",
		Usage:     "rebuild a lost or damaged manifest from the tables and WAL (mayfly.Repair)",
		ArgsUsage: "[DIR]",
		Description: "Reads every readable row of every table in sst/ and of the WAL segments the\n" +
			"manifest does not mark as flushed, keeps every version and tombstone (exact\n" +
			"duplicates collapse), and writes them as new tables in the bottom level with a\n" +
			"new manifest version. Every input, and anything that could not be read, is moved\n" +
			"under lost/repair-<n>/, never deleted. DIR is a directory or an s3:// URL, as\n" +
			"for Open. The database must not be open. Prints what was read, kept and lost.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"d"}, TakesFile: true,
				Usage: "database `DIR`ectory or s3:// URL (or give DIR as the argument)"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as one JSON object"},
			&cli.StringFlag{Name: "merge-operator", Usage: "the built-in merge operator (`NAME`, e.g. mayfly.Int64Add) that wrote " +
				"the database's merge operands, needed when no readable manifest records it"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			dir := cmd.String("dir")
			switch {
			case dir != "" && cmd.Args().Len() == 0:
			case dir == "" && cmd.Args().Len() == 1 && cmd.Args().First() != "":
				dir = cmd.Args().First()
			default:
				return usagef("repair: want the database as --dir DIR or as one DIR argument")
			}
			if !strings.HasPrefix(dir, "s3://") {
				fi, err := os.Stat(dir)
				if err != nil {
					return fmt.Errorf("no database at %s: %w", dir, err)
				}
				if !fi.IsDir() {
					return fmt.Errorf("%s is not a directory", dir)
				}
			}
			var opts mayfly.Options
			if name := cmd.String("merge-operator"); name != "" {
				op, ok := mayfly.BuiltinMergeOperator(name)
				if !ok {
					return usagef("repair: --merge-operator %q is not a built-in operator (mayfly.Int64Add, mayfly.Int64Max, mayfly.Int64Min)", name)
				}
				opts.MergeOperator = op
			}
			rep, err := mayfly.Repair(dir, &opts)
			if rep == nil {
				return fmt.Errorf("repair: %w", err)
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				if jerr := writeJSON(w, repairJSON(rep)); jerr != nil {
					return jerr
				}
			} else {
				fmt.Fprint(w, rep.String())
			}
			if err != nil {
				return fmt.Errorf("repair: %w", err)
			}
			return nil
		},
	})
}

// repairResult is the repair --json output.
type repairResult struct {
	PreviousManifest string              `json:"previous_manifest"`
	ManifestVersion  uint64              `json:"manifest_version"`
	LostDir          string              `json:"lost_dir"`
	TablesRead       int                 `json:"tables_read"`
	WALSegmentsRead  int                 `json:"wal_segments_read"`
	WALRecords       int                 `json:"wal_records"`
	WALFlushed       int                 `json:"wal_records_flushed"`
	RowsRead         uint64              `json:"rows_read"`
	RowsKept         uint64              `json:"rows_kept"`
	Duplicates       uint64              `json:"duplicates"`
	TablesWritten    int                 `json:"tables_written"`
	LastSeq          uint64              `json:"last_seq"`
	MissingTables    []string            `json:"missing_tables"`
	Unreadable       []mayfly.RepairLoss `json:"unreadable"`
	Moved            []mayfly.MovedFile  `json:"moved"`
}

func repairJSON(r *mayfly.RepairReport) repairResult {
	return repairResult{
		PreviousManifest: r.PreviousManifest, ManifestVersion: r.ManifestVersion, LostDir: r.LostDir,
		TablesRead: r.TablesRead, WALSegmentsRead: r.WALSegmentsRead, WALRecords: r.WALRecords,
		WALFlushed: r.WALRecordsFlushed,
		RowsRead:   r.RowsRead, RowsKept: r.RowsKept, Duplicates: r.Duplicates, TablesWritten: r.TablesWritten,
		LastSeq: r.LastSeq, MissingTables: r.MissingTables, Unreadable: r.Unreadable, Moved: r.Moved,
	}
}
