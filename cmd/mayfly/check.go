package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
	"github.com/urfave/cli/v3"
)

func checkCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:  "check",
		Usage: "verify every live SSTable (DB.Check) and every WAL segment; exit status 1 on corruption",
		Description: "The database is opened read-only and DB.Check re-reads every block of every\n" +
			"live table, verifying checksums, decoding, key order and properties. Each table\n" +
			"is listed as OK or with the corruption found (file and byte offset). Then every\n" +
			"WAL segment the manifest does not cover is replayed and its batches decoded: a\n" +
			"torn tail on the newest segment is what a crash leaves and only a warning;\n" +
			"anywhere else it is corruption.\n\n" +
			"If the database does not open, the tables the manifest lists are checked one by\n" +
			"one without it, to name the damaged file.",
		Flags:  []cli.Flag{dirFlag()},
		Action: runCheck,
	})
}

// checkTable is one table the check covers.
type checkTable struct {
	level int
	meta  *manifest.FileMeta
	err   error
}

func runCheck(ctx context.Context, cmd *cli.Command) (err error) {
	if err := noArgs(cmd); err != nil {
		return err
	}
	s, err := openStore(cmd)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(cmd.Root().Writer)
	defer w.Flush()
	var bad []string // names of damaged files

	db, openErr := openDB(cmd, true, false)
	if openErr == nil {
		defer closeDB(db, &err)
	}
	st, version, _, err := manifest.Load(s)
	if err != nil {
		fmt.Fprintf(w, "manifest: FAILED: %v\n", err)
		w.Flush()
		return fmt.Errorf("check: manifest unreadable: %w", err)
	}
	if st == nil {
		st = &manifest.State{}
		fmt.Fprintf(w, "manifest: none (no table was ever flushed)\n")
	} else {
		fmt.Fprintf(w, "manifest: %s OK (%d tables)\n", manifest.VersionName(version), st.NumFiles())
	}
	var tables []*checkTable
	for l, files := range st.Levels {
		for _, f := range files {
			tables = append(tables, &checkTable{level: l, meta: f})
		}
	}

	if openErr != nil {
		fmt.Fprintf(w, "open: FAILED: %v\n", openErr)
		fmt.Fprintf(w, "checking the manifest's tables one by one instead\n")
		for _, t := range tables {
			t.err = checkTableFile(s, t.meta.Num)
		}
		bad = append(bad, "open")
	} else {
		cerr := db.Check(ctx)
		if cerr != nil && (errors.Is(cerr, context.Canceled) || errors.Is(cerr, context.DeadlineExceeded)) {
			return cerr
		}
		assignCheckErrors(tables, cerr)
	}
	for _, t := range tables {
		name := tableName(t.meta.Num)
		if t.err == nil {
			fmt.Fprintf(w, "L%d %s %d bytes: OK\n", t.level, name, t.meta.Size)
			continue
		}
		fmt.Fprintf(w, "L%d %s %d bytes: CORRUPT: %v\n", t.level, name, t.meta.Size, t.err)
		bad = append(bad, name)
	}

	segs, err := walSegments(s)
	if err != nil {
		return err
	}
	var live []uint64
	for _, seg := range segs {
		if seg >= st.MinLogNum {
			live = append(live, seg)
		}
	}
	for i, seg := range live {
		name := logName(seg)
		records, res, err := checkSegment(s, name, seg)
		switch {
		case err != nil:
			fmt.Fprintf(w, "%s: CORRUPT: %v\n", name, err)
			bad = append(bad, name)
		case res.Torn() && i == len(live)-1:
			fmt.Fprintf(w, "%s: OK, %d records; warning: torn tail at offset %d (%d bytes dropped at open): %s\n",
				name, records, res.TornOffset, res.FileSize-res.ValidBytes, res.TornReason)
		case res.Torn():
			fmt.Fprintf(w, "%s: CORRUPT: %v\n", name, res.TornError(name))
			bad = append(bad, name)
		default:
			fmt.Fprintf(w, "%s: OK, %d records\n", name, records)
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(w, "FAILED: %d problem(s)\n", len(bad))
		w.Flush()
		return fmt.Errorf("check: corruption in %s", strings.Join(bad, ", "))
	}
	fmt.Fprintf(w, "all %d tables and %d WAL segments OK\n", len(tables), len(live))
	return w.Flush()
}

// assignCheckErrors hands each error DB.Check returned (one per damaged
// table, joined) to the table it names.
func assignCheckErrors(tables []*checkTable, err error) {
	if err == nil {
		return
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		assigned := false
		var ce *format.CorruptionError
		for _, t := range tables {
			name := tableName(t.meta.Num)
			if (errors.As(e, &ce) && ce.File == name) || strings.Contains(e.Error(), "table "+name+":") {
				t.err, assigned = e, true
				break
			}
		}
		if !assigned && len(tables) > 0 {
			// Not attributable to a table: charge it to the first, so that it
			// is reported and the check fails.
			tables[0].err = errors.Join(tables[0].err, e)
		}
	}
}

// checkTableFile opens table num directly and runs its full check.
func checkTableFile(s storage.Storage, num uint64) error {
	r, err := openTable(s, num)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Check()
}

// checkSegment replays one WAL segment and decodes every batch in it.
func checkSegment(s storage.Storage, name string, num uint64) (records int, res wal.ReplayResult, err error) {
	res, err = wal.ReplayRecords(s, name, num, func(off int64, payload []byte) error {
		if err := checkBatch(payload); err != nil {
			return format.Corruptf(name, off, "record decodes badly: %v", err)
		}
		records++
		return nil
	})
	return records, res, err
}

func checkBatch(payload []byte) error {
	br, err := format.NewBatchReader(payload)
	if err != nil {
		return err
	}
	var row format.Row
	for {
		ok, err := br.Next(&row)
		if err != nil || !ok {
			return err
		}
	}
}
