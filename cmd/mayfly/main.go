// Command mayfly is the command-line tool of the Mayfly key-value store.
//
//	mayfly demo  [--dir DIR] [--sessions N] [--keep]
//	mayfly put    --dir DIR [--ttl D | --expire-at RFC3339] KEY [VALUE]
//	mayfly get    --dir DIR [--raw] KEY
//	mayfly ttl    --dir DIR [--ms] KEY
//	mayfly delete --dir DIR KEY
//	mayfly scan   --dir DIR [--prefix P] [--start K] [--end K] [--limit N] [--json] [--count]
//	mayfly stats  --dir DIR [--json] [--now RFC3339] [--plot FILE.png|.svg] [--expiry=false]
//	mayfly check  --dir DIR
//	mayfly compact --dir DIR [--start K] [--end K] [--json]
//	mayfly reclaim --dir DIR [--json]
//	mayfly bench [--dir DIR] [--keys N] [--value-size B]
//	mayfly sst dump [--json] [--values] [--limit N] [--props] FILE
//	mayfly wal dump [--json] [--values] (--dir DIR | FILE)
//	mayfly manifest dump --dir DIR [--json]
//	mayfly repair [--json] DIR
//
// Results go to stdout, diagnostics to stderr. Exit status: 0 on success, 1
// when the operation failed (including a missing key for get and ttl), 2 for
// a usage error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v3"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks an error in how the command was invoked.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

func main() {
	os.Exit(run(context.Background(), os.Args, os.Stdout, os.Stderr))
}

// run executes the tool with args (args[0] is the program name) and returns
// the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newApp(stdout, stderr)
	err := root.Run(ctx, args)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "mayfly: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() != 0 {
		return ec.ExitCode()
	}
	return exitError
}

func newApp(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "mayfly",
		Usage:     "inspect and exercise a Mayfly database (an LSM key-value store with per-row TTL)",
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors are reported once, by run; never exit from inside the library.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		OnUsageError: func(_ context.Context, _ *cli.Command, err error, _ bool) error {
			return &usageError{msg: err.Error()}
		},
		HideVersion: true,
		Commands: []*cli.Command{
			demoCommand(),
			putCommand(),
			getCommand(),
			ttlCommand(),
			deleteCommand(),
			scanCommand(),
			statsCommand(),
			checkCommand(),
			compactCommand(),
			reclaimCommand(),
			benchCommand(),
			sstCommand(),
			walCommand(),
			manifestCommand(),
			repairCommand(),
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Present() {
				return usagef("unknown command %q (see mayfly --help)", cmd.Args().First())
			}
			return usagef("no command given (see mayfly --help)")
		},
	}
}

// withUsageErrors makes flag-parsing errors of a subcommand usage errors.
func withUsageErrors(c *cli.Command) *cli.Command {
	c.OnUsageError = func(_ context.Context, _ *cli.Command, err error, _ bool) error {
		return &usageError{msg: c.Name + ": " + err.Error()}
	}
	return c
}
