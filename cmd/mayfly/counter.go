package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mayflydb/mayfly"
	"github.com/urfave/cli/v3"
)

// Counters (RFC 0010): add counts with one answering mayfly.DB.Add, so a
// window's deadline is fixed by its first add; counter prints one. A
// database that records no merge operator gets Int64Add from add.

func addCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "add",
		Usage:     "add DELTA to the counter KEY and print its new value (a window: --ttl applies when it starts)",
		ArgsUsage: "KEY DELTA",
		Flags:     append([]cli.Flag{dirFlag()}, ttlFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			if cmd.Args().Len() != 2 || cmd.Args().Get(0) == "" {
				return usagef("add: want KEY DELTA, got %d arguments", cmd.Args().Len())
			}
			key := []byte(cmd.Args().Get(0))
			delta, err := strconv.ParseInt(cmd.Args().Get(1), 10, 64)
			if err != nil {
				return usagef("add: DELTA %q is not a 64-bit integer", cmd.Args().Get(1))
			}
			ttl, _, err := ttlFromFlags(cmd, mayfly.NoExpiry())
			if err != nil {
				return err
			}
			db, err := openDBWith(ctx, cmd, false, true, mayfly.Int64Add)
			if err != nil {
				return err
			}
			defer closeDB(db, &err)
			n, err := db.Add(key, delta, ttl)
			if err != nil {
				return keyError(key, err)
			}
			_, err = fmt.Fprintln(cmd.Root().Writer, n)
			return err
		},
	})
}

func counterCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "counter",
		Usage:     "print the value of the counter KEY (exit status 1 and \"not found\" when its window ended or it has none)",
		ArgsUsage: "KEY",
		Flags:     []cli.Flag{dirFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			key, err := oneKey(cmd)
			if err != nil {
				return err
			}
			db, err := openDB(ctx, cmd, true, false)
			if err != nil {
				return err
			}
			defer closeDB(db, &err)
			v, err := db.Get(key)
			if err != nil {
				return keyError(key, err)
			}
			n, ok := mayfly.DecodeInt64(v)
			if !ok {
				return &statusError{code: exitError, err: fmt.Errorf("%q holds %d bytes, not a counter", key, len(v))}
			}
			_, err = fmt.Fprintln(cmd.Root().Writer, n)
			return err
		},
	})
}
