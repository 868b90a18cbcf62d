package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mayflydb/mayfly"
	"github.com/urfave/cli/v3"
)

// The TTL operations and conditional writes (RFC 0008, RFC 0009). Each
// writing command is durable when it returns (Close syncs the WAL). A
// condition that does not hold is reported as "not applied" on stderr with
// exit status 1, so a shell can branch on it.

// errNotApplied ends a command whose condition did not hold.
func errNotApplied(what string, key []byte) error {
	return &statusError{code: 1, err: fmt.Errorf("not applied: %s %q", what, key)}
}

// expireCondFlags are expire's Redis-style options.
var expireCondFlags = []struct {
	name string
	cond mayfly.ExpireCond
	help string
}{
	{"nx", mayfly.ExpireNX, "only if the key has no deadline"},
	{"xx", mayfly.ExpireXX, "only if the key has a deadline"},
	{"gt", mayfly.ExpireGT, "only if the new deadline is later"},
	{"lt", mayfly.ExpireLT, "only if the new deadline is earlier"},
}

func expireCommand() *cli.Command {
	flags := append([]cli.Flag{dirFlag()}, ttlFlags()...)
	for _, f := range expireCondFlags {
		flags = append(flags, &cli.BoolFlag{Name: f.name, Usage: f.help})
	}
	return withUsageErrors(&cli.Command{
		Name:      "expire",
		Usage:     "set the deadline of a live KEY without rewriting its value (exit status 1 if not applied)",
		ArgsUsage: "KEY",
		Flags:     flags,
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			key, ttl, err := keyAndDeadline(cmd, " (persist removes a deadline)")
			if err != nil {
				return err
			}
			cond := mayfly.ExpireAlways
			for _, f := range expireCondFlags {
				if !cmd.Bool(f.name) {
					continue
				}
				if cond != mayfly.ExpireAlways {
					return usagef("expire: --nx, --xx, --gt and --lt are mutually exclusive")
				}
				cond = f.cond
			}
			return writeIf(ctx, cmd, "expire", key, func(db *mayfly.DB) (bool, error) { return db.Expire(key, ttl, cond) })
		},
	})
}

func persistCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "persist",
		Usage:     "remove the deadline of a live KEY (exit status 1 if it has none)",
		ArgsUsage: "KEY",
		Flags:     []cli.Flag{dirFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			key, err := oneKey(cmd)
			if err != nil {
				return err
			}
			return writeIf(ctx, cmd, "persist", key, func(db *mayfly.DB) (bool, error) { return db.Persist(key) })
		},
	})
}

func getexCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "getex",
		Usage:     "print the value of KEY and set its deadline (a sliding expiry)",
		ArgsUsage: "KEY",
		Flags: append([]cli.Flag{dirFlag(),
			&cli.BoolFlag{Name: "raw", Usage: "print the value's bytes exactly, without a trailing newline"},
		}, ttlFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			key, ttl, err := keyAndDeadline(cmd, "")
			if err != nil {
				return err
			}
			return readAndWrite(ctx, cmd, key, func(db *mayfly.DB) ([]byte, error) { return db.GetEx(key, ttl) })
		},
	})
}

func getdelCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "getdel",
		Usage:     "print the value of KEY and delete it in one step (a one-time token)",
		ArgsUsage: "KEY",
		Flags: []cli.Flag{dirFlag(),
			&cli.BoolFlag{Name: "raw", Usage: "print the value's bytes exactly, without a trailing newline"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			key, err := oneKey(cmd)
			if err != nil {
				return err
			}
			return readAndWrite(ctx, cmd, key, func(db *mayfly.DB) ([]byte, error) { return db.GetDel(key) })
		},
	})
}

func putnxCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "putnx",
		Usage:     "write KEY=VALUE only if KEY has no live value (exit status 1 if it has)",
		ArgsUsage: "KEY [VALUE]",
		Flags:     append([]cli.Flag{dirFlag()}, ttlFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			key, value, err := keyAndValue(cmd)
			if err != nil {
				return err
			}
			ttl, _, err := ttlFromFlags(cmd, mayfly.NoExpiry())
			if err != nil {
				return err
			}
			return writeIf(ctx, cmd, "putnx", key, func(db *mayfly.DB) (bool, error) { return db.PutIfAbsent(key, value, ttl) })
		},
	})
}

func casCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "cas",
		Usage:     "write KEY=NEW only if KEY's live value is OLD (exit status 1 if not)",
		ArgsUsage: "KEY OLD NEW",
		Flags:     append([]cli.Flag{dirFlag()}, ttlFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			if cmd.Args().Len() != 3 || cmd.Args().Get(0) == "" {
				return usagef("cas: want KEY OLD NEW, got %d arguments", cmd.Args().Len())
			}
			key, old, new := []byte(cmd.Args().Get(0)), []byte(cmd.Args().Get(1)), []byte(cmd.Args().Get(2))
			ttl, _, err := ttlFromFlags(cmd, mayfly.NoExpiry())
			if err != nil {
				return err
			}
			return writeIf(ctx, cmd, "cas", key, func(db *mayfly.DB) (bool, error) { return db.CompareAndSwap(key, old, new, ttl) })
		},
	})
}

// keyAndDeadline reads KEY and the TTL --ttl or --expire-at gives, which
// the command needs; hint ends the usage error when neither is given.
func keyAndDeadline(cmd *cli.Command, hint string) ([]byte, mayfly.TTL, error) {
	key, err := oneKey(cmd)
	if err != nil {
		return nil, mayfly.TTL{}, err
	}
	ttl, set, err := ttlFromFlags(cmd, mayfly.NoExpiry())
	if err != nil {
		return nil, mayfly.TTL{}, err
	}
	if !set {
		return nil, mayfly.TTL{}, usagef("%s: give --ttl or --expire-at%s", cmd.Name, hint)
	}
	return key, ttl, nil
}

// keyAndValue reads KEY [VALUE] (VALUE from stdin when omitted).
func keyAndValue(cmd *cli.Command) (key, value []byte, err error) {
	n := cmd.Args().Len()
	if n < 1 || n > 2 {
		return nil, nil, usagef("%s: want KEY [VALUE], got %d arguments", cmd.Name, n)
	}
	key = []byte(cmd.Args().Get(0))
	if len(key) == 0 {
		return nil, nil, usagef("%s: KEY must not be empty", cmd.Name)
	}
	if n == 2 {
		return key, []byte(cmd.Args().Get(1)), nil
	}
	value, err = io.ReadAll(cmdReader(cmd))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: read value from stdin: %w", cmd.Name, err)
	}
	return key, value, nil
}

// writeIf opens the database for writing and runs a conditional write.
func writeIf(ctx context.Context, cmd *cli.Command, what string, key []byte, op func(*mayfly.DB) (bool, error)) (err error) {
	db, err := openDB(ctx, cmd, false, false)
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	applied, err := op(db)
	switch {
	case err != nil:
		return keyError(key, err)
	case !applied:
		return errNotApplied(what, key)
	}
	return nil
}

// readAndWrite opens the database for writing, runs an operation that
// returns a value, and prints it.
func readAndWrite(ctx context.Context, cmd *cli.Command, key []byte, op func(*mayfly.DB) ([]byte, error)) (err error) {
	db, err := openDB(ctx, cmd, false, false)
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	v, err := op(db)
	if err != nil {
		return keyError(key, err)
	}
	return printValue(cmd, v)
}
