// Command mayfly is the command-line tool of the Mayfly key-value store.
//
//	mayfly demo  [--dir DIR] [--sessions N] [--keep]
//	mayfly put    --dir DIR [--ttl D | --expire-at RFC3339] KEY [VALUE]
//	mayfly get    --dir DIR [--raw] KEY
//	mayfly ttl    --dir DIR [--ms | --at] KEY
//	mayfly delete --dir DIR KEY
//	mayfly expire --dir DIR (--ttl D | --expire-at RFC3339) [--nx|--xx|--gt|--lt] KEY
//	mayfly persist --dir DIR KEY
//	mayfly getex  --dir DIR (--ttl D | --expire-at RFC3339) [--raw] KEY
//	mayfly putnx  --dir DIR [--ttl D | --expire-at RFC3339] KEY [VALUE]
//	mayfly cas    --dir DIR [--ttl D | --expire-at RFC3339] KEY OLD NEW
//	mayfly getdel --dir DIR [--raw] KEY
//	mayfly add    --dir DIR [--ttl D | --expire-at RFC3339] KEY DELTA
//	mayfly counter --dir DIR KEY
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
// DIR is a local directory or an s3://bucket/prefix?endpoint=... URL (demo
// and bench: local only); FILE is a local path or the s3:// URL of one
// object.
//
// Results go to stdout, diagnostics to stderr, one line per error. Exit
// status: 0 on success, 1 when the operation failed (including a missing key
// for get and ttl, a condition that did not hold for expire, persist,
// putnx and cas, and corruption found by check), 2 when the command did
// not run: a usage error, or the database is in use by another process
// (check also exits 2 when it cannot read the database).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v3"

	// The S3 driver: DIR and FILE may be s3:// URLs.
	_ "github.com/mayflydb/mayfly/storage/s3"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the operation ran and failed
	exitUsage = 2 // the command did not run: bad arguments, database in use
)

// usageError marks an error in how the command was invoked.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// statusError is an error that ends the tool with its own exit status.
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// ExitCode implements cli.ExitCoder.
func (e *statusError) ExitCode() int { return e.code }

// progPrefix starts every line the tool prints to stderr; the engine's own
// errors start with the same words.
const progPrefix = "mayfly: "

// errText is err's message with the "mayfly: " that starts each wrapped
// engine error removed, so that layers of wrapping do not repeat it: a
// "mayfly: " is dropped where it begins the message, a line, or follows a
// ": " separator, and never inside a quoted string (a key).
func errText(err error) string {
	msg := err.Error()
	var b strings.Builder
	quoted := false
	for i := 0; i < len(msg); {
		atBoundary := i == 0 || msg[i-1] == '\n' || strings.HasSuffix(msg[:i], ": ")
		if !quoted && atBoundary && strings.HasPrefix(msg[i:], progPrefix) {
			i += len(progPrefix)
			continue
		}
		switch c := msg[i]; {
		case c == '\\' && quoted && i+1 < len(msg):
			b.WriteString(msg[i : i+2])
			i += 2
			continue
		case c == '"':
			quoted = !quoted
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
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
	// Joined errors (one per line) are printed on one line too. A message
	// that starts with a package's prefix ("mayfly/s3: ") names the tool
	// already.
	msg := strings.ReplaceAll(errText(err), "\n", "; ")
	if !strings.HasPrefix(msg, "mayfly/") {
		msg = progPrefix + msg
	}
	fmt.Fprintln(stderr, msg)
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
		Name:  "mayfly",
		Usage: "inspect and exercise a Mayfly database (an LSM key-value store with per-row TTL)",
		Description: "DIR is a local directory or s3://bucket/prefix?endpoint=URL&region=R&path_style=true\n" +
			"(credentials from the AWS environment). Exit status: 0 success; 1 the operation\n" +
			"failed (check: corruption found); 2 the command did not run: a usage error, the\n" +
			"database in use by another process (check: also no database, or unreadable).",
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
			expireCommand(),
			persistCommand(),
			getexCommand(),
			putnxCommand(),
			casCommand(),
			getdelCommand(),
			addCommand(),
			counterCommand(),
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
