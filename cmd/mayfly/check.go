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

// Exit statuses of check besides 0 (everything read and verified).
const (
	checkCorrupt = exitError // damaged or missing data found
	checkNotRun  = exitUsage // could not check: bad arguments, no database, in use, unreadable
)

func checkCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:  "check",
		Usage: "verify the manifest, every live SSTable (DB.Check) and every WAL segment; exit status 0 healthy, 1 corruption, 2 could not check",
		Description: "The database is opened read-only and DB.Check re-reads every block of every\n" +
			"live table, verifying checksums, decoding, key order and properties. Each table\n" +
			"is listed as OK or with the corruption found (file and byte offset). Then every\n" +
			"WAL segment the manifest does not cover is replayed and its batches decoded: a\n" +
			"torn tail on the newest segment is what a crash leaves and only a warning;\n" +
			"anywhere else it is corruption. A damaged newest manifest version is corruption:\n" +
			"the database does not open with it, and an older version is not its state, so\n" +
			"nothing is checked against one.\n\n" +
			"If the database does not open because of damage, the tables the manifest lists\n" +
			"are checked one by one without it, to name the damaged file.\n\n" +
			"Exit status: 0 healthy; 1 corruption found (damaged or missing data); 2 the check\n" +
			"could not run: bad arguments, no database there, the database is in use by a\n" +
			"writer, or a read failed for another reason than damage (permissions, network).",
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

// checker collects what a check found and prints it as it goes.
type checker struct {
	w       *bufio.Writer
	damaged []string // names of damaged or missing objects
	unread  []string // names of objects that could not be read
}

// report prints label's outcome: OK (err nil), CORRUPT (damage) or
// UNREADABLE (any other failure), and files name under the outcome.
func (c *checker) report(label, name string, err error, ok string) {
	switch {
	case err == nil:
		fmt.Fprintf(c.w, "%s: %s\n", label, ok)
	case isDamage(err):
		fmt.Fprintf(c.w, "%s: CORRUPT: %s\n", label, errText(err))
		c.damaged = append(c.damaged, name)
	default:
		fmt.Fprintf(c.w, "%s: UNREADABLE: %s\n", label, errText(err))
		c.unread = append(c.unread, name)
	}
}

// isDamage reports whether err shows damaged or missing data rather than a
// failure to read it.
func isDamage(err error) bool {
	return errors.Is(err, format.ErrCorruption) || errors.Is(err, storage.ErrNotExist)
}

// notRun marks err as a check that could not run (exit status 2).
func notRun(err error) error { return &statusError{code: checkNotRun, err: err} }

func runCheck(ctx context.Context, cmd *cli.Command) (err error) {
	if err := noArgs(cmd); err != nil {
		return err
	}
	s, _, err := openStore(ctx, cmd)
	if err != nil {
		return notRun(err)
	}
	defer s.Close()
	db, openErr := openDB(ctx, cmd, true, false)
	var inUse *inUseError
	switch {
	case errors.As(openErr, &inUse):
		return openErr
	case openErr == nil:
		defer closeDB(db, &err)
	case !isDamage(openErr):
		return notRun(openErr)
	}
	c := &checker{w: bufio.NewWriter(cmd.Root().Writer)}
	defer c.w.Flush()

	st := c.checkManifest(s)
	if st == nil {
		return c.finish(0, 0)
	}
	var tables []*checkTable
	for l, files := range st.Levels {
		for _, f := range files {
			tables = append(tables, &checkTable{level: l, meta: f})
		}
	}
	if openErr != nil {
		c.report("open", "open", openErr, "")
		fmt.Fprintf(c.w, "checking the manifest's tables one by one instead\n")
		for _, t := range tables {
			t.err = checkTableFile(s, t.meta.Num)
		}
	} else {
		cerr := db.Check(ctx)
		if cerr != nil && (errors.Is(cerr, context.Canceled) || errors.Is(cerr, context.DeadlineExceeded)) {
			return notRun(cerr)
		}
		assignCheckErrors(tables, cerr)
	}
	for _, t := range tables {
		name := tableName(t.meta.Num)
		c.report(fmt.Sprintf("L%d %s %d bytes", t.level, name, t.meta.Size), name, t.err, "OK")
	}
	segs, err := walSegments(s)
	if err != nil {
		c.report("wal", "wal", err, "")
		return c.finish(len(tables), 0)
	}
	return c.finish(len(tables), c.checkSegments(s, segs, st.MinLogNum))
}

// checkManifest reports the newest manifest version and returns the state
// to check the tables and WAL segments against: empty if there is no
// manifest yet, nil if there is none to trust (the newest version is
// damaged or unreadable: an older version is not the database's state).
func (c *checker) checkManifest(s storage.Storage) *manifest.State {
	st, version, skipped, err := manifest.Load(s)
	for _, e := range skipped {
		name := manifest.Dir
		var ce *format.CorruptionError
		if errors.As(e, &ce) {
			name = ce.File
		}
		c.report(name, name, e, "")
	}
	switch {
	case err != nil && len(skipped) == 0:
		c.report("manifest", manifest.Dir, err, "")
		return nil
	case err != nil || len(skipped) > 0:
		fmt.Fprintf(c.w, "tables and WAL segments not checked: the newest manifest version is damaged\n")
		return nil
	case st == nil:
		// A writer's first Open writes a manifest version before any
		// table or WAL segment: files without one mean it was lost.
		if n, first := countDataFiles(s); n > 0 {
			c.report("manifest", manifest.Dir, format.Corruptf(manifest.Dir, 0,
				"no manifest version, but %d tables and WAL segments are present (%s first): the manifest is lost; `mayfly repair` rebuilds it", n, first), "")
			return nil
		}
		fmt.Fprintf(c.w, "manifest: none (an empty database)\n")
		return &manifest.State{}
	}
	c.report(manifest.VersionName(version), "", nil, fmt.Sprintf("OK (%d tables)", st.NumFiles()))
	return st
}

// checkSegments replays the WAL segments from minLog on and returns how
// many it checked.
func (c *checker) checkSegments(s storage.Storage, segs []uint64, minLog uint64) int {
	var live []uint64
	for _, seg := range segs {
		if seg >= minLog {
			live = append(live, seg)
		}
	}
	for i, seg := range live {
		name := logName(seg)
		records, res, err := checkSegment(s, name, seg)
		switch {
		case errors.Is(err, storage.ErrNotExist):
			// Listed, then gone: a live writer removes a segment once a
			// flush has covered it.
			fmt.Fprintf(c.w, "%s: removed since listed (a writer flushed it)\n", name)
		case err != nil:
			c.report(name, name, err, "")
		case res.Torn() && i == len(live)-1:
			fmt.Fprintf(c.w, "%s: OK, %d records; warning: torn tail at offset %d (%d bytes dropped at open): %s\n",
				name, records, res.TornOffset, res.FileSize-res.ValidBytes, res.TornReason)
		case res.Torn():
			c.report(name, name, res.TornError(name), "")
		default:
			fmt.Fprintf(c.w, "%s: OK, %d records\n", name, records)
		}
	}
	return len(live)
}

// finish prints the verdict and returns the error that sets the exit
// status: corruption wins over objects that could not be read.
func (c *checker) finish(tables, segments int) error {
	defer c.w.Flush()
	switch {
	case len(c.damaged) > 0:
		fmt.Fprintf(c.w, "FAILED: %d problem(s)\n", len(c.damaged)+len(c.unread))
		return &statusError{code: checkCorrupt, err: fmt.Errorf("check: corruption in %s", strings.Join(c.damaged, ", "))}
	case len(c.unread) > 0:
		fmt.Fprintf(c.w, "INCOMPLETE: %d object(s) could not be read\n", len(c.unread))
		return notRun(fmt.Errorf("check: could not read %s", strings.Join(c.unread, ", ")))
	}
	fmt.Fprintf(c.w, "all %d tables and %d WAL segments OK\n", tables, segments)
	return nil
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

// countDataFiles counts the tables and WAL segments in s and names the
// first one (errors count as none: the caller reports the manifest).
func countDataFiles(s storage.Storage) (n int, first string) {
	for _, dir := range []string{"sst", "wal"} {
		names, err := s.List(dir)
		if err != nil {
			continue
		}
		if first == "" && len(names) > 0 {
			first = names[0]
		}
		n += len(names)
	}
	return n, first
}
