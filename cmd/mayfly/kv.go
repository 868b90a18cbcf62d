package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/urfave/cli/v3"
)

func putCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "put",
		Usage:     "write KEY=VALUE (VALUE read from stdin when omitted); durable when it returns",
		ArgsUsage: "KEY [VALUE]",
		Flags:     append([]cli.Flag{dirFlag()}, ttlFlags()...),
		Action:    runPut,
	})
}

func runPut(ctx context.Context, cmd *cli.Command) (err error) {
	n := cmd.Args().Len()
	if n < 1 || n > 2 {
		return usagef("put: want KEY [VALUE], got %d arguments", n)
	}
	key := []byte(cmd.Args().Get(0))
	if len(key) == 0 {
		return usagef("put: KEY must not be empty")
	}
	ttl, _, err := ttlFromFlags(cmd, mayfly.NoExpiry())
	if err != nil {
		return err
	}
	var value []byte
	if n == 2 {
		value = []byte(cmd.Args().Get(1))
	} else {
		value, err = io.ReadAll(cmdReader(cmd))
		if err != nil {
			return fmt.Errorf("put: read value from stdin: %w", err)
		}
	}
	db, err := openDB(ctx, cmd, false, true)
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	return db.PutWith(key, value, ttl, mayfly.Sync)
}

// ttlFlags are the flags that give a TTL: --ttl and --expire-at.
func ttlFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "ttl", Usage: "expire the row this long after the write (e.g. 90s, 30m, 24h)"},
		&cli.StringFlag{Name: "expire-at", Usage: "expire the row at this RFC 3339 `TIME` (e.g. 2030-01-02T15:04:05Z)"},
	}
}

// ttlFromFlags reads the TTL that --ttl or --expire-at gives; set is false
// (and the TTL def) when neither is given.
func ttlFromFlags(cmd *cli.Command, def mayfly.TTL) (ttl mayfly.TTL, set bool, err error) {
	switch {
	case cmd.IsSet("ttl") && cmd.IsSet("expire-at"):
		return def, false, usagef("%s: --ttl and --expire-at are mutually exclusive", cmd.Name)
	case cmd.IsSet("ttl"):
		d := cmd.Duration("ttl")
		if d < time.Millisecond {
			return def, false, usagef("%s: --ttl %v is below the 1ms resolution", cmd.Name, d)
		}
		return mayfly.ExpireAfter(d), true, nil
	case cmd.IsSet("expire-at"):
		t, perr := time.Parse(time.RFC3339Nano, cmd.String("expire-at"))
		if perr != nil {
			return def, false, usagef("%s: --expire-at: %v", cmd.Name, perr)
		}
		return mayfly.ExpireAt(t), true, nil
	}
	return def, false, nil
}

func cmdReader(cmd *cli.Command) io.Reader {
	if r := cmd.Root().Reader; r != nil {
		return r
	}
	return os.Stdin
}

func getCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "get",
		Usage:     "print the value of KEY (exit status 1 and \"not found\" on stderr if it has none)",
		ArgsUsage: "KEY",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "raw", Usage: "print the value's bytes exactly, without a trailing newline"},
		},
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
			return printValue(cmd, v)
		},
	})
}

// printValue writes a value to stdout, with a newline unless --raw.
func printValue(cmd *cli.Command, v []byte) error {
	if !cmd.Bool("raw") {
		v = append(v, '\n')
	}
	_, err := cmd.Root().Writer.Write(v)
	return err
}

func ttlCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "ttl",
		Usage:     "print how long KEY has left to live, or \"no expiry\"",
		ArgsUsage: "KEY",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "ms", Usage: "print the time left as a whole number of milliseconds"},
			&cli.BoolFlag{Name: "at", Usage: "print the deadline itself (RFC 3339, UTC) instead of the time left"},
		},
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
			if cmd.Bool("ms") && cmd.Bool("at") {
				return usagef("ttl: --ms and --at are mutually exclusive")
			}
			w := cmd.Root().Writer
			if cmd.Bool("at") {
				at, expires, err := db.ExpireTime(key)
				switch {
				case err != nil:
					return keyError(key, err)
				case !expires:
					_, err = fmt.Fprintln(w, "no expiry")
				default:
					_, err = fmt.Fprintln(w, fmtMS(at.UnixMilli()))
				}
				return err
			}
			left, expires, err := db.TTL(key)
			if err != nil {
				return keyError(key, err)
			}
			switch {
			case !expires:
				_, err = fmt.Fprintln(w, "no expiry")
			case cmd.Bool("ms"):
				_, err = fmt.Fprintln(w, left.Milliseconds())
			default:
				_, err = fmt.Fprintln(w, left)
			}
			return err
		},
	})
}

func deleteCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:      "delete",
		Aliases:   []string{"del"},
		Usage:     "delete KEY (deleting a missing key is not an error); durable when it returns",
		ArgsUsage: "KEY",
		Flags:     []cli.Flag{dirFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) (err error) {
			key, err := oneKey(cmd)
			if err != nil {
				return err
			}
			db, err := openDB(ctx, cmd, false, false)
			if err != nil {
				return err
			}
			defer closeDB(db, &err)
			return db.DeleteWith(key, mayfly.Sync)
		},
	})
}

// keyError describes a failed point read of key.
func keyError(key []byte, err error) error {
	if errors.Is(err, mayfly.ErrNotFound) {
		return fmt.Errorf("not found: %q", key)
	}
	return fmt.Errorf("%q: %w", key, err)
}

func scanCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:  "scan",
		Usage: "list live keys in order: KEY<TAB>VALUE per line, or one JSON object per line with --json",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.StringFlag{Name: "prefix", Usage: "only keys starting with `P`"},
			&cli.StringFlag{Name: "start", Usage: "first `KEY` (inclusive)"},
			&cli.StringFlag{Name: "end", Usage: "stop before this `KEY` (exclusive)"},
			&cli.IntFlag{Name: "limit", Usage: "stop after `N` keys (0: no limit)"},
			&cli.BoolFlag{Name: "json", Usage: `print {"key","value","expires_at"} objects, one per line; expires_at (RFC 3339, UTC) only for keys with an expiry`},
			&cli.BoolFlag{Name: "count", Usage: "print only the number of keys"},
		},
		Action: runScan,
	})
}

// scanRecord is one line of scan --json output.
type scanRecord struct {
	Key       string     `json:"key"`
	Value     string     `json:"value"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

func runScan(ctx context.Context, cmd *cli.Command) (err error) {
	if cmd.Args().Present() {
		return usagef("scan: unexpected arguments %q", cmd.Args().Slice())
	}
	limit := cmd.Int("limit")
	if limit < 0 {
		return usagef("scan: --limit must not be negative")
	}
	if cmd.Bool("json") && cmd.Bool("count") {
		return usagef("scan: --json and --count are mutually exclusive")
	}
	lower, upper := scanBounds(cmd)
	db, err := openDB(ctx, cmd, true, false)
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	if lower != nil && upper != nil && bytes.Compare(lower, upper) >= 0 {
		return emitCount(cmd, 0, cmd.Bool("count"))
	}

	it, err := db.NewIter(&mayfly.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	w := bufio.NewWriter(cmd.Root().Writer)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n := 0
	for ok := it.First(); ok && (limit == 0 || n < limit); ok = it.Next() {
		n++
		switch {
		case cmd.Bool("count"):
		case cmd.Bool("json"):
			// The iterator carries each row's deadline: no lookup per key.
			rec := scanRecord{Key: string(it.Key()), Value: string(it.Value())}
			if at, expires := it.ExpireTime(); expires {
				at = at.UTC()
				rec.ExpiresAt = &at
			}
			if err := enc.Encode(rec); err != nil {
				return err
			}
		default:
			w.Write(it.Key())
			w.WriteByte('\t')
			w.Write(it.Value())
			w.WriteByte('\n')
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if cmd.Bool("count") {
		fmt.Fprintln(w, n)
	}
	return w.Flush()
}

func emitCount(cmd *cli.Command, n int, count bool) error {
	if count {
		_, err := fmt.Fprintln(cmd.Root().Writer, n)
		return err
	}
	return nil
}

// scanBounds turns --prefix, --start and --end into iterator bounds; nil
// means open.
func scanBounds(cmd *cli.Command) (lower, upper []byte) {
	if s := cmd.String("start"); s != "" {
		lower = []byte(s)
	}
	if s := cmd.String("end"); s != "" {
		upper = []byte(s)
	}
	if p := []byte(cmd.String("prefix")); len(p) > 0 {
		if lower == nil || bytes.Compare(p, lower) > 0 {
			lower = p
		}
		if succ := prefixEnd(p); succ != nil && (upper == nil || bytes.Compare(succ, upper) < 0) {
			upper = succ
		}
	}
	return lower, upper
}

// prefixEnd returns the smallest key greater than every key starting with
// p, or nil if there is none (p is all 0xff bytes).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
