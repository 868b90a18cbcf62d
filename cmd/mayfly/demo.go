package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/urfave/cli/v3"
)

func demoCommand() *cli.Command {
	return withUsageErrors(&cli.Command{
		Name:  "demo",
		Usage: "run a session-store story on a local directory: write sessions with TTLs, watch them expire, compact, reopen, slide a session, spend a token once",
		Description: "The demo injects a manual clock (Options.Clock), so \"engine time\" jumps\n" +
			"forward instantly and every run prints the same figures. It checks its own claims\n" +
			"and exits non-zero if one fails, so it doubles as a smoke test.\n\n" +
			"Without --dir it works in a new temporary directory, removed at the end unless\n" +
			"--keep is given (or a check fails). A --dir must be empty or not exist yet, and is kept.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "run in `DIR` (must be empty or not exist) instead of a temporary directory", TakesFile: true},
			&cli.IntFlag{Name: "sessions", Value: 20000, Usage: "number of sessions to write (at least 4)"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the temporary directory"},
			&cli.IntFlag{Name: "until", Value: demoSteps, Usage: "stop after step `N` (1-8), leaving the database as it is then (e.g. 5: expired rows still on disk)"},
		},
		Action: runDemo,
	})
}

// demoStart is the engine time the demo begins at. It is fixed so that the
// output is the same on every run, and in the past so that a kept directory
// can later be opened with the system clock (a database never lets its
// clock run below the latest time it has recorded).
var demoStart = time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)

const (
	demoDefaultTTL = 30 * time.Minute
	demoShortTTL   = 5 * time.Minute
	demoTokenTTL   = 90 * time.Second
	demoBatchSize  = 1000
)

// Session classes, by index modulo 4: half short, a quarter on the default
// TTL, a quarter remember-me.
const (
	classShort = iota
	classStandard
	classRemember
)

func sessionClass(i int) int {
	switch i % 4 {
	case 0, 1:
		return classShort
	case 2:
		return classStandard
	}
	return classRemember
}

var classNames = [...]string{"short", "standard", "remember-me"}

type demo struct {
	w      io.Writer
	dir    string
	clk    *clock.Manual
	db     *mayfly.DB
	tty    bool
	checks int
	until  int // the last step to run

	sessions, tokens             int
	short, standard, remember    int
	rememberKey, rememberValue   string
	expiredRows, liveAfterExpiry int
}

func runDemo(ctx context.Context, cmd *cli.Command) (err error) {
	if cmd.Args().Present() {
		return usagef("demo: unexpected arguments %q", cmd.Args().Slice())
	}
	n := cmd.Int("sessions")
	if n < 4 {
		return usagef("demo: --sessions must be at least 4, got %d", n)
	}
	until := cmd.Int("until")
	if until < 1 || until > demoSteps {
		return usagef("demo: --until must be between 1 and %d, got %d", demoSteps, until)
	}
	w := cmd.Root().Writer
	dir, temp := cmd.String("dir"), false
	if isS3(dir) {
		return usagef("%s: --dir must be a local directory (it works on files there)", cmd.Name)
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "mayfly-demo-"); err != nil {
			return err
		}
		temp = true
	} else if err := checkEmptyDir(dir); err != nil {
		return err
	}
	d := &demo{w: w, dir: dir, clk: clock.NewManual(demoStart), sessions: n, tty: isTerminal(w), until: until}
	fmt.Fprintf(w, "Mayfly demo: a session store in %s\n", dir)

	err = d.run(ctx)
	if d.db != nil {
		d.db.Close()
	}
	switch {
	case err != nil:
		fmt.Fprintf(w, "\nFAILED after %d checks; the directory is kept for inspection: %s\n", d.checks, dir)
		return fmt.Errorf("demo: %w", err)
	case temp && !cmd.Bool("keep"):
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("demo: remove %s: %w", dir, err)
		}
		fmt.Fprintf(w, "\nAll %d checks passed. Removed %s.\n", d.checks, dir)
	default:
		if until < demoSteps {
			fmt.Fprintf(w, "\nStopped after step %d (--until).", until)
		}
		fmt.Fprintf(w, "\nAll %d checks passed. Kept %s; try:\n", d.checks, dir)
		fmt.Fprintf(w, "  mayfly stats --dir %s\n  mayfly scan --dir %s --limit 3 --json\n", dir, dir)
	}
	return nil
}

func checkEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("demo: %s is not empty; give a new or empty directory, or leave out --dir", dir)
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// demoSteps is the number of steps of the story.
const demoSteps = 8

func (d *demo) run(ctx context.Context) error {
	steps := []func(context.Context) error{
		d.open, d.write, d.flush, d.read, d.expire, d.compact, d.reopen, d.slide,
	}
	for _, step := range steps[:d.until] {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// --- output helpers ---

func (d *demo) heading(title string) {
	now := d.clk.Now().UTC()
	fmt.Fprintf(d.w, "\n== %s ==\n", title)
	fmt.Fprintf(d.w, "   engine time %s (T+%v)\n", now.Format("2006-01-02 15:04:05 MST"), now.Sub(demoStart))
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.w, "  "+format+"\n", args...)
}

// check records one verified claim; a false one ends the demo.
func (d *demo) check(ok bool, format string, args ...any) error {
	d.checks++
	msg := fmt.Sprintf(format, args...)
	if !ok {
		fmt.Fprintf(d.w, "  [FAIL] %s\n", msg)
		return fmt.Errorf("check failed: %s", msg)
	}
	fmt.Fprintf(d.w, "  [ok] %s\n", msg)
	return nil
}

func (d *demo) options() *mayfly.Options {
	return &mayfly.Options{
		DefaultTTL: demoDefaultTTL,
		Clock:      d.clk,
		// Small memtables so that even the demo's few megabytes make
		// several SSTables; no background compaction so that every run
		// produces the same files.
		MemtableSize:          1 << 20,
		DisableAutoCompaction: true,
	}
}

func (d *demo) advanceTo(offset time.Duration) {
	d.clk.Set(demoStart.Add(offset))
	fmt.Fprintf(d.w, "\n  -- engine clock advanced to T+%v (%s) --\n", offset, d.clk.Now().UTC().Format("15:04:05"))
}

func sessionKey(i int) string { return fmt.Sprintf("session:%06d", i) }
func tokenKey(i int) string   { return fmt.Sprintf("token:%06d", i) }

func sessionValue(i int) string {
	return fmt.Sprintf(`{"user":"user%05d","kind":%q,"ip":"10.%d.%d.%d","cart":[%d,%d]}`,
		i%50000, classNames[sessionClass(i)], i>>16&255, i>>8&255, i&255, i*7%1000, i*13%1000)
}

// countLive counts the live keys starting with prefix, and returns the
// first one it finds that keep rejects (if keep is not nil).
func (d *demo) countLive(prefix string, keep func(k, v []byte) bool) (n int, bad string, err error) {
	for k, v := range d.db.Scan([]byte(prefix), prefixEnd([]byte(prefix)), &err) {
		n++
		if keep != nil && bad == "" && !keep(k, v) {
			bad = string(k)
		}
	}
	return n, bad, err
}

// --- the story ---

func (d *demo) open(context.Context) (err error) {
	d.heading("1. Open a session store")
	o := d.options()
	d.say("mayfly.Open(%q, &mayfly.Options{DefaultTTL: %v, Clock: clock.NewManual(...), MemtableSize: 1 MiB, DisableAutoCompaction: true})", d.dir, o.DefaultTTL)
	d.say("the manual clock moves only when the demo advances it, so expiry happens instantly and deterministically")
	d.db, err = mayfly.Open(d.dir, o)
	return err
}

func (d *demo) write(context.Context) error {
	d.heading("2. Write sessions and one-time tokens")
	b := d.db.NewBatch()
	for i := 0; i < d.sessions; i++ {
		var ttl mayfly.TTL
		switch sessionClass(i) {
		case classShort:
			ttl = mayfly.ExpireAfter(demoShortTTL)
			d.short++
		case classStandard:
			ttl = mayfly.DefaultTTL()
			d.standard++
		case classRemember:
			ttl = mayfly.NoExpiry()
			d.remember++
			if d.rememberKey == "" {
				d.rememberKey, d.rememberValue = sessionKey(i), sessionValue(i)
			}
		}
		if err := b.PutTTL([]byte(sessionKey(i)), []byte(sessionValue(i)), ttl); err != nil {
			return err
		}
		if b.Len() == demoBatchSize || i == d.sessions-1 {
			if err := b.Write(nil); err != nil {
				return err
			}
			b.Reset()
			if d.tty {
				fmt.Fprintf(d.w, "\r  writing sessions: %d/%d", i+1, d.sessions)
			}
		}
	}
	if d.tty {
		fmt.Fprintln(d.w)
	}
	d.say("wrote %d sessions in batches of %d", d.sessions, demoBatchSize)

	d.tokens = max(1, d.sessions/10)
	deadline := d.clk.Now().Add(demoTokenTTL)
	for i := 0; i < d.tokens; i++ {
		otp := strconv.Itoa(100000 + i*7919%900000)
		if err := b.PutTTL([]byte(tokenKey(i)), []byte(otp), mayfly.ExpireAt(deadline)); err != nil {
			return err
		}
	}
	if err := b.Write(mayfly.Sync); err != nil {
		return err
	}
	d.say("wrote %d one-time tokens in one synced batch", d.tokens)
	d.expiredRows = d.short + d.standard + d.tokens
	d.liveAfterExpiry = d.remember

	tw := tabwriter.NewWriter(d.w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\n  keys\tTTL\tcount\n")
	fmt.Fprintf(tw, "  session:* short\tExpireAfter(%v)\t%d\n", demoShortTTL, d.short)
	fmt.Fprintf(tw, "  session:* standard\tDefaultTTL (%v)\t%d\n", demoDefaultTTL, d.standard)
	fmt.Fprintf(tw, "  session:* remember-me\tNoExpiry\t%d\n", d.remember)
	fmt.Fprintf(tw, "  token:*\tExpireAt(%s)\t%d\n", deadline.UTC().Format("15:04:05"), d.tokens)
	tw.Flush()
	fmt.Fprintln(d.w)

	ns, _, err := d.countLive("session:", nil)
	if err != nil {
		return err
	}
	nt, _, err := d.countLive("token:", nil)
	if err != nil {
		return err
	}
	if err := d.check(ns == d.sessions, "a scan finds %d live sessions (want %d)", ns, d.sessions); err != nil {
		return err
	}
	return d.check(nt == d.tokens, "a scan finds %d live tokens (want %d)", nt, d.tokens)
}

func (d *demo) flush(context.Context) error {
	d.heading("3. Flush to SSTables")
	d.say("db.Flush() writes the memtables to level 0 and records them in the manifest")
	if err := d.db.Flush(); err != nil {
		return err
	}
	m := d.db.Metrics()
	if err := d.showFiles(); err != nil {
		return err
	}
	d.showMetrics(&m)
	fmt.Fprintln(d.w)
	l0 := m.Levels[0]
	total := uint64(d.sessions + d.tokens)
	ttlRows := uint64(d.short + d.standard + d.tokens)
	if err := d.check(m.ImmutableMemtables == 0, "nothing waits for a flush (immutable memtables: %d)", m.ImmutableMemtables); err != nil {
		return err
	}
	if err := d.check(l0.Rows == total && m.DiskBytes() == l0.Bytes, "level 0 holds all %d rows (has %d)", total, l0.Rows); err != nil {
		return err
	}
	return d.check(l0.TTLRows == ttlRows, "%d of them carry an expiry (want %d: short + standard + tokens)", l0.TTLRows, ttlRows)
}

func (d *demo) read(context.Context) error {
	d.heading("4. Read sessions and their TTLs")
	cases := []struct {
		key  string
		want time.Duration // 0: no expiry
	}{
		{sessionKey(0), demoShortTTL},
		{sessionKey(2), demoDefaultTTL},
		{d.rememberKey, 0},
		{tokenKey(0), demoTokenTTL},
	}
	for _, c := range cases {
		v, err := d.db.Get([]byte(c.key))
		if err != nil {
			return fmt.Errorf("get %s: %w", c.key, err)
		}
		left, expires, err := d.db.TTL([]byte(c.key))
		if err != nil {
			return fmt.Errorf("ttl %s: %w", c.key, err)
		}
		desc, ok := "no expiry", !expires && c.want == 0
		if expires {
			desc, ok = "expires in "+left.String(), left == c.want
		}
		if err := d.check(ok, "%-15s %-19s %s", c.key, desc, v); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) expire(context.Context) error {
	d.heading("5. Let engine time pass")
	m0 := d.db.Metrics()
	before := m0.DiskBytes()

	d.advanceTo(demoTokenTTL)
	left, _, err := d.db.TTL([]byte(tokenKey(0)))
	if err := d.check(err == nil && left == 0, "%s is still readable at its deadline (TTL %v, err %v): deadlines are inclusive", tokenKey(0), left, err); err != nil {
		return err
	}

	d.advanceTo(demoTokenTTL + time.Second)
	gone := 0
	for i := 0; i < d.tokens; i++ {
		if _, err := d.db.Get([]byte(tokenKey(i))); errors.Is(err, mayfly.ErrNotFound) {
			gone++
		} else if err != nil {
			return err
		}
	}
	if err := d.check(gone == d.tokens, "all %d tokens are gone: Get returns ErrNotFound for %d", d.tokens, gone); err != nil {
		return err
	}
	ns, _, err := d.countLive("session:", nil)
	if err != nil {
		return err
	}
	if err := d.check(ns == d.sessions, "all %d sessions are still live (scan finds %d)", d.sessions, ns); err != nil {
		return err
	}
	if left, _, err := d.db.TTL([]byte(sessionKey(0))); err == nil {
		d.say("%s now expires in %v", sessionKey(0), left)
	}

	d.advanceTo(6 * time.Minute)
	_, err = d.db.Get([]byte(sessionKey(0)))
	if err := d.check(errors.Is(err, mayfly.ErrNotFound), "Get(%s) (a 5-minute session) returns ErrNotFound (got %v)", sessionKey(0), err); err != nil {
		return err
	}
	want := d.standard + d.remember
	ns, bad, err := d.countLive("session:", func(_, v []byte) bool { return !strings.Contains(string(v), `"short"`) })
	if err != nil {
		return err
	}
	if err := d.check(ns == want && bad == "", "%d live sessions left (want %d = standard + remember-me): the %d five-minute sessions are gone%s", ns, want, d.short, culprit(bad, "survived")); err != nil {
		return err
	}

	d.advanceTo(31 * time.Minute)
	ns, bad, err = d.countLive("session:", func(_, v []byte) bool { return strings.Contains(string(v), `"remember-me"`) })
	if err != nil {
		return err
	}
	if err := d.check(ns == d.remember && bad == "", "%d live sessions left, all remember-me (want %d)%s", ns, d.remember, culprit(bad, "is not remember-me")); err != nil {
		return err
	}
	nt, _, err := d.countLive("", nil)
	if err != nil {
		return err
	}
	if err := d.check(nt == d.remember, "a full scan finds %d live keys in all (want %d)", nt, d.remember); err != nil {
		return err
	}
	m := d.db.Metrics()
	d.say("reads hid %d expired rows so far (Metrics.ExpiredOnRead)", m.ExpiredOnRead)
	return d.check(m.DiskBytes() == before, "expired rows are invisible but still on disk: %s, as before", humanBytes(m.DiskBytes()))
}

func (d *demo) compact(ctx context.Context) error {
	d.heading("6. Compact")
	before := d.db.Metrics()
	d.say("db.Compact(ctx, nil, nil) rewrites every table into the bottom level, dropping expired rows")
	start := time.Now()
	if err := d.db.Compact(ctx, nil, nil); err != nil {
		return err
	}
	took := time.Since(start)
	m := d.db.Metrics()
	b, a := before.DiskBytes(), m.DiskBytes()
	d.say("SSTable bytes (Metrics.DiskBytes): %s -> %s (%.0f%% smaller), in %v wall time", humanBytes(b), humanBytes(a), 100*(1-float64(a)/float64(max(b, 1))), took.Round(time.Millisecond))
	d.say("compaction read %s, wrote %s; expired rows dropped %d, tombstones dropped %d, tables deleted %d",
		humanBytes(m.CompactionBytesRead), humanBytes(m.CompactionBytesWritten),
		m.ExpiredDropped-before.ExpiredDropped, m.TombstonesDropped-before.TombstonesDropped, m.TablesDeleted-before.TablesDeleted)
	d.say("since Open: %d flushes (%s), %d compaction(s), write amplification %.2f",
		m.Flushes, humanBytes(m.FlushBytes), m.Compactions, m.WriteAmplification())
	d.showMetrics(&m)
	if err := d.showFiles(); err != nil {
		return err
	}
	fmt.Fprintln(d.w)
	var rows, ttlRows uint64
	for _, l := range m.Levels {
		rows += l.Rows
		ttlRows += l.TTLRows
	}
	dropped := m.ExpiredDropped - before.ExpiredDropped
	if err := d.check(dropped == uint64(d.expiredRows), "compaction dropped %d expired rows (want %d = short + standard + tokens)", dropped, d.expiredRows); err != nil {
		return err
	}
	if err := d.check(rows == uint64(d.remember) && ttlRows == 0 && m.Levels[0].Files == 0,
		"the tables now hold exactly the %d remember-me rows (%d rows, %d with an expiry, %d level-0 files)", d.remember, rows, ttlRows, m.Levels[0].Files); err != nil {
		return err
	}
	return d.check(a < b, "the database is smaller on disk (%d < %d bytes)", a, b)
}

func (d *demo) reopen(context.Context) (err error) {
	d.heading("7. Close and reopen")
	if err := d.db.Close(); err != nil {
		return err
	}
	d.db = nil
	d.say("closed; reopening %s with the same options", d.dir)
	if d.db, err = mayfly.Open(d.dir, d.options()); err != nil {
		return err
	}
	n, _, err := d.countLive("", nil)
	if err != nil {
		return err
	}
	if err := d.check(n == d.liveAfterExpiry, "after reopening a scan finds %d live keys (want %d, as before Close)", n, d.liveAfterExpiry); err != nil {
		return err
	}
	v, err := d.db.Get([]byte(d.rememberKey))
	if err := d.check(err == nil && string(v) == d.rememberValue, "%s still reads %s", d.rememberKey, v); err != nil {
		return err
	}
	_, err = d.db.Get([]byte(sessionKey(2)))
	return d.check(errors.Is(err, mayfly.ErrNotFound), "%s (expired, compacted away) stays gone: %v", sessionKey(2), err)
}

// showFiles lists every file under the demo directory with its size.
func (d *demo) showFiles() error {
	files, err := listFiles(d.dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "\n  files in %s:\n", d.dir)
	width := len("(99 files)")
	for _, f := range files {
		width = max(width, len(f.name))
	}
	var total int64
	for _, f := range files {
		fmt.Fprintf(d.w, "    %-*s %9d bytes\n", width, f.name, f.size)
		total += f.size
	}
	fmt.Fprintf(d.w, "    %-*s %9d bytes\n", width, fmt.Sprintf("(%d files)", len(files)), total)
	return nil
}

// showMetrics prints the level table. Activity counters are printed by the
// steps that need them: Flush can return a moment before the flush counters
// are updated, so they are not printed right after it.
func (d *demo) showMetrics(m *mayfly.Metrics) {
	fmt.Fprintf(d.w, "\n  levels (db.Metrics()):\n")
	printLevels(d.w, "    ", m, true)
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// culprit describes the key that broke a check, if any.
func culprit(key, what string) string {
	if key == "" {
		return ""
	}
	return fmt.Sprintf("; %s %s", key, what)
}
