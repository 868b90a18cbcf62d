package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bin is the mayfly binary built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mayfly-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "mayfly")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

type result struct {
	stdout, stderr string
	code           int
}

// mayfly runs the binary with args; stdin may be empty. env entries are
// added to the environment.
func runCLI(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run mayfly %q: %v", args, err)
	}
	return r
}

// ok runs mayfly and fails the test unless it exits 0 with an empty stderr.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := runCLI(t, "", nil, args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("mayfly %q: exit %d, stderr %q, stdout %q", args, r.code, r.stderr, r.stdout)
	}
	return r.stdout
}

// fails runs mayfly and checks its exit code and that stderr contains msg.
func fails(t *testing.T, code int, msg string, args ...string) {
	t.Helper()
	r := runCLI(t, "", nil, args...)
	if r.code != code || !strings.Contains(r.stderr, msg) {
		t.Fatalf("mayfly %q: exit %d, stderr %q; want exit %d and %q on stderr", args, r.code, r.stderr, code, msg)
	}
	if r.stdout != "" {
		t.Errorf("mayfly %q: unexpected stdout %q", args, r.stdout)
	}
}

var demoHeadings = []string{
	"== 1. Open a session store ==",
	"== 2. Write sessions and one-time tokens ==",
	"== 3. Flush to SSTables ==",
	"== 4. Read sessions and their TTLs ==",
	"== 5. Let engine time pass ==",
	"== 6. Compact ==",
	"== 7. Close and reopen ==",
}

func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	out := ok(t, "demo", "--sessions", "2000", "--dir", dir)
	for _, h := range demoHeadings {
		if !strings.Contains(out, h) {
			t.Errorf("demo output lacks heading %q", h)
		}
	}
	for _, s := range []string{
		"engine time 2025-06-01 09:31:00 UTC (T+31m0s)",
		"a scan finds 2000 live sessions",
		"all 200 tokens are gone",
		"compaction dropped 1700 expired rows",
		"after reopening a scan finds 500 live keys",
		"checks passed. Kept " + dir,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("demo output lacks %q", s)
		}
	}
	if strings.Contains(out, "[FAIL]") {
		t.Errorf("demo output reports a failure:\n%s", out)
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out)
	}

	// The kept directory is a database the other commands can read.
	if got := ok(t, "scan", "--dir", dir, "--count"); got != "500\n" {
		t.Errorf("scan --count of the demo database = %q, want 500", got)
	}
	if got := ok(t, "ttl", "--dir", dir, "session:000003"); got != "no expiry\n" {
		t.Errorf("ttl of a remember-me session = %q", got)
	}

	// A directory that is not empty is refused.
	fails(t, 1, "is not empty", "demo", "--sessions", "8", "--dir", dir)
}

func TestDemoTempDirRemoved(t *testing.T) {
	tmp := t.TempDir()
	r := runCLI(t, "", []string{"TMPDIR=" + tmp}, "demo", "--sessions", "40")
	if r.code != 0 {
		t.Fatalf("demo: exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	if !strings.Contains(r.stdout, "Mayfly demo: a session store in "+tmp) || !strings.Contains(r.stdout, "Removed ") {
		t.Errorf("demo does not report its temporary directory and its removal:\n%s", r.stdout)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("demo left %v behind in TMPDIR", left)
	}
}

func TestKVRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	future := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)

	ok(t, "put", "--dir", dir, "a", "alpha")
	ok(t, "put", "--dir", dir, "--ttl", "1h", "b", "bravo")
	ok(t, "put", "--dir", dir, "--expire-at", future.Format(time.RFC3339), "c", "charlie")
	ok(t, "put", "--dir", dir, "--expire-at", "2001-01-01T00:00:00Z", "old", "already expired")
	if r := runCLI(t, "from\nstdin", nil, "put", "--dir", dir, "d"); r.code != 0 {
		t.Fatalf("put from stdin: exit %d, %s", r.code, r.stderr)
	}

	if got := ok(t, "get", "--dir", dir, "a"); got != "alpha\n" {
		t.Errorf("get a = %q", got)
	}
	if got := ok(t, "get", "--dir", dir, "--raw", "d"); got != "from\nstdin" {
		t.Errorf("get --raw d = %q", got)
	}
	if got := ok(t, "ttl", "--dir", dir, "a"); got != "no expiry\n" {
		t.Errorf("ttl a = %q", got)
	}
	d, err := time.ParseDuration(strings.TrimSpace(ok(t, "ttl", "--dir", dir, "b")))
	if err != nil || d <= 59*time.Minute || d > time.Hour {
		t.Errorf("ttl b = %v, %v; want just under 1h", d, err)
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(ok(t, "ttl", "--dir", dir, "--ms", "c")), 10, 64)
	if err != nil || ms > (48*time.Hour).Milliseconds() || ms < (47*time.Hour).Milliseconds() {
		t.Errorf("ttl --ms c = %d, %v; want just under 48h", ms, err)
	}

	// An ExpireAt in the past writes an already-expired row.
	fails(t, 1, "not found", "get", "--dir", dir, "old")

	if got, want := ok(t, "scan", "--dir", dir), "a\talpha\nb\tbravo\nc\tcharlie\nd\tfrom\nstdin\n"; got != want {
		t.Errorf("scan = %q, want %q", got, want)
	}
	recs := scanJSON(t, ok(t, "scan", "--dir", dir, "--json"))
	if len(recs) != 4 {
		t.Fatalf("scan --json: %d records, want 4: %+v", len(recs), recs)
	}
	for _, r := range recs {
		switch r.Key {
		case "a", "d":
			if r.ExpiresAt != nil {
				t.Errorf("%s: expires_at %v, want none", r.Key, r.ExpiresAt)
			}
		case "b":
			if r.ExpiresAt == nil || time.Until(*r.ExpiresAt) > time.Hour || time.Until(*r.ExpiresAt) < 59*time.Minute {
				t.Errorf("b: expires_at %v, want about an hour from now", r.ExpiresAt)
			}
		case "c":
			if r.ExpiresAt == nil || !r.ExpiresAt.Equal(future) {
				t.Errorf("c: expires_at %v, want %v", r.ExpiresAt, future)
			}
		default:
			t.Errorf("unexpected key %q", r.Key)
		}
	}
	if recs[3].Value != "from\nstdin" {
		t.Errorf("d: value %q", recs[3].Value)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--prefix", "b"}, "b\tbravo\n"},
		{[]string{"--start", "b", "--end", "d"}, "b\tbravo\nc\tcharlie\n"},
		{[]string{"--start", "b", "--limit", "1"}, "b\tbravo\n"},
		{[]string{"--prefix", "c", "--start", "a", "--end", "z"}, "c\tcharlie\n"},
		{[]string{"--start", "c", "--end", "b"}, ""},
		{[]string{"--count"}, "4\n"},
		{[]string{"--count", "--prefix", "x"}, "0\n"},
	} {
		if got := ok(t, append([]string{"scan", "--dir", dir}, c.args...)...); got != c.want {
			t.Errorf("scan %q = %q, want %q", c.args, got, c.want)
		}
	}

	ok(t, "delete", "--dir", dir, "a")
	ok(t, "delete", "--dir", dir, "never-written") // not an error
	fails(t, 1, "not found", "get", "--dir", dir, "a")
	fails(t, 1, "not found", "ttl", "--dir", dir, "a")
	if got := ok(t, "scan", "--dir", dir, "--count"); got != "3\n" {
		t.Errorf("scan --count after delete = %q", got)
	}
}

func scanJSON(t *testing.T, out string) []scanRecord {
	t.Helper()
	var recs []scanRecord
	for line := range strings.Lines(out) {
		var r scanRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("scan --json line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

func TestStats(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	for i := range 5 { // each writing open flushes what the last one left in the WAL
		ok(t, "put", "--dir", dir, "--ttl", "1h", fmt.Sprintf("k%d", i), "v")
	}
	ok(t, "delete", "--dir", dir, "k0")

	out := ok(t, "stats", "--dir", dir)
	for _, s := range []string{"level", "ttl_rows", "tombstones", "L0", "L6", "total", "disk_bytes:", "wal_records_replayed:", "open_snapshots:"} {
		if !strings.Contains(out, s) {
			t.Errorf("stats output lacks %q:\n%s", s, out)
		}
	}

	var s stats
	if err := json.Unmarshal([]byte(ok(t, "stats", "--dir", dir, "--json")), &s); err != nil {
		t.Fatalf("stats --json: %v", err)
	}
	if len(s.Levels) != 7 {
		t.Fatalf("stats --json: %d levels, want 7", len(s.Levels))
	}
	var rows, ttlRows, bytes uint64
	for _, l := range s.Levels {
		rows += l.Rows
		ttlRows += l.TTLRows
		bytes += l.Bytes
	}
	// The last put was flushed by the delete's open; the delete is still
	// in the WAL, which the read-only stats open replays into memory.
	if rows < 5 || ttlRows < 5 || bytes != s.DiskBytes || s.DiskBytes == 0 {
		t.Errorf("stats --json: rows %d, ttl rows %d, bytes %d, disk_bytes %d", rows, ttlRows, bytes, s.DiskBytes)
	}
	if s.WALRecordsReplayed != 1 {
		t.Errorf("stats --json: wal_records_replayed %d, want 1 (the delete)", s.WALRecordsReplayed)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		code int
		msg  string
		args []string
	}{
		{2, "no command", nil},
		{2, "unknown command", []string{"frobnicate"}},
		{2, `"dir" not set`, []string{"get", "k"}},
		{2, "exactly one KEY", []string{"get", "--dir", dir}},
		{2, "not defined", []string{"scan", "--dir", dir, "--bogus"}},
		{2, "mutually exclusive", []string{"put", "--dir", dir, "--ttl", "1m", "--expire-at", "2030-01-01T00:00:00Z", "k", "v"}},
		{2, "expire-at", []string{"put", "--dir", dir, "--expire-at", "tomorrow", "k", "v"}},
		{2, "1ms", []string{"put", "--dir", dir, "--ttl", "1us", "k", "v"}},
		{2, "at least 4", []string{"demo", "--sessions", "3"}},
		{1, "does not exist", []string{"get", "--dir", filepath.Join(dir, "missing"), "k"}},
		{1, "does not exist", []string{"stats", "--dir", filepath.Join(dir, "missing")}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) { fails(t, c.code, c.msg, c.args...) })
	}
}
