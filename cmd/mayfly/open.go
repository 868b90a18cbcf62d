package main

import (
	"fmt"
	"os"

	"github.com/mayflydb/mayfly"
	"github.com/urfave/cli/v3"
)

// dirFlag is the --dir flag every database command takes.
func dirFlag() cli.Flag {
	return &cli.StringFlag{
		Name:      "dir",
		Aliases:   []string{"d"},
		Usage:     "database `DIR`ectory",
		Required:  true,
		TakesFile: true,
	}
}

// openDB opens the database in the --dir directory. Read-only handles share
// the directory with other readers; a writer needs it to itself. Unless
// create is set, the directory must already exist.
func openDB(cmd *cli.Command, readOnly, create bool) (*mayfly.DB, error) {
	dir := cmd.String("dir")
	if dir == "" {
		return nil, usagef("%s: --dir must not be empty", cmd.Name)
	}
	if !create {
		fi, err := os.Stat(dir)
		if err != nil {
			if os.IsNotExist(err) {
				return nil, fmt.Errorf("no database at %s: directory does not exist", dir)
			}
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", dir)
		}
	}
	return mayfly.Open(dir, &mayfly.Options{ReadOnly: readOnly})
}

// closeDB closes db, keeping the first error.
func closeDB(db *mayfly.DB, err *error) {
	if cerr := db.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close: %w", cerr)
	}
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
