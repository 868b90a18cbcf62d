package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/storage"
	"github.com/urfave/cli/v3"
)

// dirFlag is the --dir flag every database command takes: a local
// directory or an s3:// URL, the locations mayfly.Open accepts.
func dirFlag() cli.Flag {
	return &cli.StringFlag{
		Name:      "dir",
		Aliases:   []string{"d"},
		Usage:     "database `DIR`ectory, or s3://bucket/prefix?endpoint=URL&region=R&path_style=true",
		Required:  true,
		TakesFile: true,
	}
}

// isS3 reports whether loc names an object store rather than a local path.
func isS3(loc string) bool { return strings.HasPrefix(loc, "s3://") }

// shownLocation is loc for messages and titles: an s3:// URL without its
// query (endpoint and tuning parameters), a local path as given.
func shownLocation(loc string) string {
	if isS3(loc) {
		if i := strings.IndexByte(loc, '?'); i >= 0 {
			return loc[:i]
		}
	}
	return loc
}

// location returns the --dir of cmd.
func location(cmd *cli.Command) (string, error) {
	loc := cmd.String("dir")
	if loc == "" {
		return "", usagef("%s: --dir must not be empty", cmd.Name)
	}
	return loc, nil
}

// inUseError reports that another process holds the database: the command
// did not run (exit status 2), and can be retried once that process is done.
type inUseError struct {
	loc      string
	readOnly bool
}

func (e *inUseError) Error() string {
	if e.readOnly {
		return fmt.Sprintf("database at %s is in use by a writer", shownLocation(e.loc))
	}
	return fmt.Sprintf("database at %s is in use by another process (one writer at a time)", shownLocation(e.loc))
}

func (e *inUseError) Unwrap() error { return mayfly.ErrLocked }

// ExitCode makes the error end the tool with status 2 (see run).
func (e *inUseError) ExitCode() int { return exitUsage }

// openStore opens the storage of the existing database at --dir, the way
// mayfly.Open would, and creates nothing: a local directory must exist, and
// the location must hold a manifest version, a WAL segment or a table. The
// caller closes the storage.
func openStore(ctx context.Context, cmd *cli.Command) (storage.Storage, string, error) {
	loc, err := location(cmd)
	if err != nil {
		return nil, "", err
	}
	if !isS3(loc) {
		// Say "no database" for a missing directory or a file.
		fi, err := os.Stat(loc)
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("no database at %s: directory does not exist", loc)
		}
		if err != nil {
			return nil, "", err
		}
		if !fi.IsDir() {
			return nil, "", fmt.Errorf("no database at %s: not a directory", loc)
		}
	}
	s, err := mayfly.OpenStorage(ctx, loc)
	if err != nil {
		return nil, "", err
	}
	if err := requireDatabase(s, loc); err != nil {
		s.Close()
		return nil, "", err
	}
	return s, loc, nil
}

// databaseDirs are the directories a database keeps its objects in.
var databaseDirs = []string{manifest.Dir, "wal", "sst"}

// requireDatabase fails unless s holds at least one of a database's objects.
// Every writer's open leaves a WAL segment, so a location without any is
// not a database (a typo, or a system directory).
func requireDatabase(s storage.Storage, loc string) error {
	for _, dir := range databaseDirs {
		names, err := s.List(dir)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			return nil
		}
	}
	return fmt.Errorf("no database at %s: it holds no manifest, WAL segment or table", shownLocation(loc))
}

// openDB opens the database at --dir. Unless create is set, the database
// must already exist (see openStore): nothing is created where there is
// none. A database held by another process fails with an *inUseError.
func openDB(ctx context.Context, cmd *cli.Command, readOnly, create bool) (*mayfly.DB, error) {
	return openDBWith(ctx, cmd, readOnly, create, nil)
}

// openDBWith is openDB with the merge operator the database records (a
// built-in: mayfly.BuiltinMergeOperator), or op when it records none.
func openDBWith(ctx context.Context, cmd *cli.Command, readOnly, create bool, op mayfly.MergeOperator) (*mayfly.DB, error) {
	loc, err := location(cmd)
	if err != nil {
		return nil, err
	}
	s, _, err := openStore(ctx, cmd)
	switch {
	case err == nil:
		op, err = recordedOperator(s, op)
		s.Close()
		if err != nil {
			return nil, err
		}
	case !create:
		return nil, err
	}
	db, err := mayfly.Open(loc, &mayfly.Options{ReadOnly: readOnly, MergeOperator: op})
	if errors.Is(err, mayfly.ErrLocked) {
		return nil, &inUseError{loc: loc, readOnly: readOnly}
	}
	return db, err
}

// closeDB closes db, keeping the first error.
func closeDB(db *mayfly.DB, err *error) {
	if cerr := db.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close: %w", cerr)
	}
}

// openObject opens the storage holding one file named on the command line
// (a local path, or an s3:// URL of the object) and returns the file's name
// in it. The caller closes the storage.
func openObject(ctx context.Context, arg string) (s storage.Storage, name string, err error) {
	if isS3(arg) {
		u, err := url.Parse(arg)
		if err != nil || u.Path == "" || strings.HasSuffix(u.Path, "/") {
			return nil, "", fmt.Errorf("%s: want s3://bucket/prefix/OBJECT?endpoint=...", shownLocation(arg))
		}
		dir, name := path.Split(u.Path)
		// An object store tells a log from an object by its directory
		// (logs live under wal/): keep a database directory in the name.
		if parent, sub := path.Split(strings.TrimSuffix(dir, "/")); slices.Contains(databaseDirs, sub) {
			dir, name = parent, sub+"/"+name
		}
		u.Path = dir
		s, err := mayfly.OpenStorage(ctx, u.String())
		return s, name, err
	}
	fi, err := os.Stat(arg)
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("%s is not a regular file", arg)
	}
	s, err = storage.OpenLocalReadOnly(filepath.Dir(arg))
	return s, filepath.Base(arg), err
}

// oneKey returns the single KEY argument of cmd.
func oneKey(cmd *cli.Command) ([]byte, error) {
	if cmd.Args().Len() != 1 {
		return nil, usagef("%s: want exactly one KEY argument, got %d", cmd.Name, cmd.Args().Len())
	}
	k := cmd.Args().First()
	if k == "" {
		return nil, usagef("%s: KEY must not be empty", cmd.Name)
	}
	return []byte(k), nil
}

// recordedOperator returns the built-in merge operator the newest manifest
// of s records, def when it records none; an operator the tool does not
// know is an error naming it.
func recordedOperator(s storage.Storage, def mayfly.MergeOperator) (mayfly.MergeOperator, error) {
	st, _, _, err := manifest.Load(s)
	if err != nil || st == nil || st.MergeOperator == "" {
		return def, nil // Open reports a damaged manifest itself
	}
	op, ok := mayfly.BuiltinMergeOperator(st.MergeOperator)
	if !ok {
		return nil, fmt.Errorf("the database records merge operator %q, which this tool does not have", st.MergeOperator)
	}
	return op, nil
}
