package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/sstable"
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
	"== 8. Slide a session, spend a token once ==",
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
		"after 1200 GetEx calls over 40 minutes the session expires at 10:41:00",
		"960 of them wrote nothing",
		"a second GetDel(token:reset) finds nothing",
		"30 minutes after the last request the session is gone",
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
	for _, s := range []string{"level", "ttl_rows", "tombstones", "L0", "L6", "total", "disk_bytes:", "wal_records_replayed:", "open_snapshots:", "memory_memtable_arena:", "memory_total:"} {
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
	// The replayed delete sits in a memtable: its arena chunk is counted.
	if m := s.Memory; m.MemtableArena <= 0 || m.Total < m.MemtableArena {
		t.Errorf("stats --json: memory %+v, want the replayed memtable's arena counted", m)
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
		{2, "local directory", []string{"demo", "--dir", "s3://bucket/demo"}},
		{2, "local directory", []string{"bench", "--dir", "s3://bucket/bench"}},
		{1, "does not exist", []string{"get", "--dir", filepath.Join(dir, "missing"), "k"}},
		{1, "does not exist", []string{"stats", "--dir", filepath.Join(dir, "missing")}},
		{2, "--now", []string{"stats", "--dir", dir, "--now", "yesterday"}},
		{2, ".png or .svg", []string{"stats", "--dir", dir, "--plot", "chart.gif"}},
		{2, "no subcommand", []string{"sst"}},
		{2, "exactly one FILE", []string{"sst", "dump"}},
		{2, "--dir DIR or a segment FILE", []string{"wal", "dump"}},
		{2, `"dir" not set`, []string{"manifest", "dump"}},
		{2, "--start", []string{"compact", "--dir", dir, "--start", "b", "--end", "a"}},
		{2, "at least 10", []string{"bench", "--keys", "3"}},
		{2, "between 1 and 8", []string{"demo", "--until", "9"}},
		{2, "does not exist", []string{"check", "--dir", filepath.Join(dir, "missing")}},
		{1, "does not exist", []string{"manifest", "dump", "--dir", filepath.Join(dir, "missing")}},
		{1, "no such file", []string{"sst", "dump", filepath.Join(dir, "missing.sst")}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) { fails(t, c.code, c.msg, c.args...) })
	}
}

// --- database inspection and maintenance commands ---

// testDBBase is the engine time the test database is written at.
var testDBBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// testDB describes the database buildTestDB wrote.
type testDB struct {
	dir         string
	tableRows   int               // rows in SSTables
	tableDels   int               // tombstones among them
	tableBytes  uint64            // their key+value bytes
	tableTTL    int               // puts with a TTL among them
	liveNever   uint64            // puts without a TTL that no delete covers
	bucketBytes map[string]uint64 // expected expiry histogram at testDBBase+1m
	walPuts     int               // rows left in the WAL only
	walDels     int
}

// buildTestDB writes a database through the library: a small memtable so
// that several SSTables exist, rows with TTLs from 30s to 30 days and
// without one, deletes, and a few rows left in the WAL. Every key is
// written once per memtable, so every write reaches the tables as is.
func buildTestDB(t *testing.T) *testDB {
	t.Helper()
	td := &testDB{dir: filepath.Join(t.TempDir(), "db"), bucketBytes: map[string]uint64{}}
	clk := clock.NewManual(testDBBase)
	db, err := mayfly.Open(td.dir, &mayfly.Options{Clock: clk, MemtableSize: 64 << 10, DisableAutoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	classes := []struct {
		ttl    mayfly.TTL
		bucket string // at testDBBase + 1 minute
	}{
		{mayfly.ExpireAfter(30 * time.Second), "expired"},
		{mayfly.ExpireAfter(90 * time.Second), "minute"},
		{mayfly.ExpireAfter(30 * time.Minute), "hour"},
		{mayfly.ExpireAfter(12 * time.Hour), "day"},
		{mayfly.ExpireAfter(72 * time.Hour), "week"},
		{mayfly.ExpireAfter(30 * 24 * time.Hour), "later"},
		{mayfly.NoExpiry(), "never"},
	}
	b := db.NewBatch()
	for i := range 3000 {
		k := fmt.Sprintf("key:%05d", i)
		v := strings.Repeat(string(rune('a'+i%26)), 50+i%50)
		c := classes[i%len(classes)]
		if err := b.PutTTL([]byte(k), []byte(v), c.ttl); err != nil {
			t.Fatal(err)
		}
		td.tableRows++
		td.tableBytes += uint64(len(k) + len(v))
		td.bucketBytes[c.bucket] += uint64(len(k) + len(v))
		switch {
		case c.bucket != "never":
			td.tableTTL++
		case i%10 != 0: // not deleted below
			td.liveNever++
		}
		if b.Len() == 100 {
			if err := b.Write(nil); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i += 10 {
		k := fmt.Sprintf("key:%05d", i)
		if err := db.Delete([]byte(k)); err != nil {
			t.Fatal(err)
		}
		td.tableRows++
		td.tableDels++
		td.tableBytes += uint64(len(k))
		td.bucketBytes["tombstone"] += uint64(len(k))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := db.PutTTL(fmt.Appendf(nil, "wal:%03d", i), []byte("in the log"), mayfly.ExpireAfter(time.Hour)); err != nil {
			t.Fatal(err)
		}
		td.walPuts++
	}
	if err := db.Delete([]byte("key:00001")); err != nil {
		t.Fatal(err)
	}
	td.walDels++
	if m := db.Metrics(); m.Levels[0].Files < 4 {
		t.Fatalf("test database has %d level-0 tables, want several", m.Levels[0].Files)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return td
}

// copyDB copies a database directory so that a test can damage or change it.
func copyDB(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func manifestJSON(t *testing.T, dir string) manifestDump {
	t.Helper()
	var d manifestDump
	if err := json.Unmarshal([]byte(ok(t, "manifest", "dump", "--dir", dir, "--json")), &d); err != nil {
		t.Fatalf("manifest dump --json: %v", err)
	}
	return d
}

func tablePaths(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	for _, l := range manifestJSON(t, dir).Levels {
		for _, f := range l.Files {
			paths = append(paths, filepath.Join(dir, filepath.FromSlash(f.Name)))
		}
	}
	return paths
}

func TestManifestDump(t *testing.T) {
	td := buildTestDB(t)
	d := manifestJSON(t, td.dir)
	if len(d.Levels) != 7 || d.Version == 0 || d.NextFileNum == 0 || d.MinLogNum == 0 {
		t.Fatalf("manifest dump --json: %+v", d)
	}
	if !d.ClockHWM.Equal(testDBBase) {
		t.Errorf("clock_hwm %v, want %v", d.ClockHWM, testDBBase)
	}
	var rows, dels uint64
	ttlFiles := 0
	for _, l := range d.Levels {
		for _, f := range l.Files {
			rows += f.NumRows
			dels += f.NumTombstones
			if fi, err := os.Stat(filepath.Join(td.dir, f.Name)); err != nil || uint64(fi.Size()) != f.Size {
				t.Errorf("%s: size %d in the manifest, on disk %v %v", f.Name, f.Size, fi, err)
			}
			if f.Smallest == nil || f.Largest == nil || f.Smallest.Key > f.Largest.Key {
				t.Errorf("%s: key range %v .. %v", f.Name, f.Smallest, f.Largest)
			}
			if f.NumTTLRows > 0 {
				ttlFiles++
				if f.MinExpireTS == nil || f.MaxExpireTS == nil || f.MaxExpireTS.Before(*f.MinExpireTS) {
					t.Errorf("%s: expiry range %v .. %v", f.Name, f.MinExpireTS, f.MaxExpireTS)
				}
			}
		}
	}
	if rows != uint64(td.tableRows) || dels != uint64(td.tableDels) || ttlFiles == 0 {
		t.Errorf("manifest lists %d rows, %d tombstones, %d files with TTL rows; want %d, %d, > 0", rows, dels, ttlFiles, td.tableRows, td.tableDels)
	}
	out := ok(t, "manifest", "dump", "--dir", td.dir)
	for _, s := range []string{"next_file_num:", "last_seq:", "clock_hwm:", "min_log_num:", "L0:", "expire range", "key:00000"} {
		if !strings.Contains(out, s) {
			t.Errorf("manifest dump lacks %q:\n%s", s, out)
		}
	}
}

func TestSSTDump(t *testing.T) {
	td := buildTestDB(t)
	paths := tablePaths(t, td.dir)
	var rows, dels, ttl int
	var bytes uint64
	for _, p := range paths {
		var d sstDump
		if err := json.Unmarshal([]byte(ok(t, "sst", "dump", "--json", p)), &d); err != nil {
			t.Fatalf("sst dump --json %s: %v", p, err)
		}
		if uint64(len(d.Rows)) != d.Properties.NumRows || d.Truncated {
			t.Errorf("%s: %d rows listed, properties say %d", p, len(d.Rows), d.Properties.NumRows)
		}
		if d.Properties.FormatVersion < 2 || d.Properties.FormatVersion > sstable.FormatVersion || d.Properties.NumDataBlocks == 0 || d.Properties.CreationTime.IsZero() {
			t.Errorf("%s: properties %+v", p, d.Properties)
		}
		for _, r := range d.Rows {
			rows++
			bytes += uint64(len(r.Key) + r.ValueLen)
			switch {
			case r.Kind == "delete":
				dels++
			case r.ExpireTS != nil:
				ttl++
				if r.TS == nil || !r.TS.Equal(testDBBase) || !r.ExpireTS.After(testDBBase) {
					t.Errorf("%s: row %+v", p, r)
				}
			}
		}
	}
	if rows != td.tableRows || dels != td.tableDels || bytes != td.tableBytes || ttl != td.tableTTL {
		t.Errorf("sst dump: %d rows, %d deletes, %d TTL rows, %d bytes; want %d, %d, %d, %d", rows, dels, ttl, bytes, td.tableRows, td.tableDels, td.tableTTL, td.tableBytes)
	}

	out := ok(t, "sst", "dump", "--limit", "3", "--values", paths[len(paths)-1])
	for _, s := range []string{"format_version:", "row_features:", "creation_time:", "expire range:", "rows:", "seq=", "value=\"", "stopped at --limit 3"} {
		if !strings.Contains(out, s) {
			t.Errorf("sst dump lacks %q:\n%s", s, out)
		}
	}
	var d sstDump
	if err := json.Unmarshal([]byte(ok(t, "sst", "dump", "--json", "--limit", "2", "--values", paths[0])), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Rows) != 2 || !d.Truncated || (d.Rows[0].Kind == "put" && (d.Rows[0].Value == nil || len(*d.Rows[0].Value) != d.Rows[0].ValueLen)) {
		t.Errorf("sst dump --json --limit 2 --values: %+v", d.Rows)
	}
}

func TestWALDump(t *testing.T) {
	td := buildTestDB(t)
	out := ok(t, "wal", "dump", "--dir", td.dir)
	for _, s := range []string{"wal/", "seq=", "commit=2025-01-01T00:00:00.000Z", `"wal:000"`, "expire_ts=2025-01-01T01:00:00.000Z", `delete "key:00001"`, "clean end"} {
		if !strings.Contains(out, s) {
			t.Errorf("wal dump lacks %q:\n%s", s, out)
		}
	}
	var segs []walSegment
	for line := range strings.Lines(ok(t, "wal", "dump", "--dir", td.dir, "--json")) {
		var s walSegment
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("wal dump --json line %q: %v", line, err)
		}
		segs = append(segs, s)
	}
	puts, dels := 0, 0
	var last walSegment
	for _, s := range segs {
		if s.Torn {
			t.Errorf("%s: torn at %d: %s", s.File, s.TornOffset, s.TornReason)
		}
		for _, r := range s.Records {
			if r.Offset < 24 || int(r.Count) != len(r.Entries) {
				t.Errorf("%s: record %+v", s.File, r)
			}
			for _, e := range r.Entries {
				if e.Kind == "delete" {
					dels++
				} else {
					puts++
				}
			}
		}
		if len(s.Records) > 0 {
			last = s
		}
	}
	if puts != td.walPuts || dels != td.walDels {
		t.Fatalf("wal dump: %d puts, %d deletes, want %d and %d", puts, dels, td.walPuts, td.walDels)
	}

	// Cut the last record short: the dump of the file reports a torn tail.
	seg := filepath.Join(t.TempDir(), "000099.wal")
	data, err := os.ReadFile(filepath.Join(td.dir, last.File))
	if err != nil {
		t.Fatal(err)
	}
	// The segment is preallocated: its records end at ValidBytes, then zeros.
	if err := os.WriteFile(seg, data[:last.ValidBytes-3], 0o600); err != nil {
		t.Fatal(err)
	}
	out = ok(t, "wal", "dump", seg)
	lastOff := last.Records[len(last.Records)-1].Offset
	if want := fmt.Sprintf("TORN TAIL at offset %d", lastOff); !strings.Contains(out, want) {
		t.Errorf("wal dump of a truncated segment lacks %q:\n%s", want, out)
	}
	if strings.Count(out, "\n  @") != len(last.Records)-1 {
		t.Errorf("wal dump of a truncated segment should list %d records:\n%s", len(last.Records)-1, out)
	}
}

func statsJSONOut(t *testing.T, args ...string) stats {
	t.Helper()
	var s stats
	if err := json.Unmarshal([]byte(ok(t, append([]string{"stats", "--json"}, args...)...)), &s); err != nil {
		t.Fatalf("stats --json: %v", err)
	}
	if s.Expiry == nil && !slices.Contains(args, "--expiry=false") {
		t.Fatalf("stats --json has no expiry histogram")
	}
	return s
}

func TestStatsExpiry(t *testing.T) {
	td := buildTestDB(t)
	at := testDBBase.Add(time.Minute)
	s := statsJSONOut(t, "--dir", td.dir, "--now", at.Format(time.RFC3339))
	h := s.Expiry
	if !h.Now.Equal(at) || h.Tables < 4 || h.TotalRows != uint64(td.tableRows) || h.TotalBytes != td.tableBytes {
		t.Errorf("expiry: now %v, %d tables, %d rows, %d bytes; want %v, >= 4, %d, %d", h.Now, h.Tables, h.TotalRows, h.TotalBytes, at, td.tableRows, td.tableBytes)
	}
	var sum uint64
	for _, b := range h.Buckets {
		sum += b.Bytes
		if b.Bytes != td.bucketBytes[b.Name] {
			t.Errorf("bucket %s (%s): %d bytes, want %d", b.Name, b.Label, b.Bytes, td.bucketBytes[b.Name])
		}
	}
	if sum != h.TotalBytes || len(h.Buckets) != 8 || h.Buckets[0].Name != "expired" || h.Buckets[0].Bytes == 0 {
		t.Errorf("buckets add up to %d of %d bytes: %+v", sum, h.TotalBytes, h.Buckets)
	}

	// By the engine clock (the system clock now) every TTL row has expired.
	h = statsJSONOut(t, "--dir", td.dir).Expiry
	var ttlBytes uint64
	for name, n := range td.bucketBytes {
		if name != "never" && name != "tombstone" {
			ttlBytes += n
		}
	}
	if h.Buckets[0].Bytes != ttlBytes || time.Since(h.Now) > time.Hour {
		t.Errorf("expiry at %v: %d expired bytes, want %d", h.Now, h.Buckets[0].Bytes, ttlBytes)
	}
	if s := statsJSONOut(t, "--dir", td.dir, "--expiry=false"); s.Expiry != nil {
		t.Errorf("stats --expiry=false still has a histogram")
	}

	out := ok(t, "stats", "--dir", td.dir, "--now", at.Format(time.RFC3339))
	for _, s := range []string{"when stored bytes expire", "already expired", "within 1 minute", "never (no TTL)", "tombstones", "█", "total"} {
		if !strings.Contains(out, s) {
			t.Errorf("stats output lacks %q:\n%s", s, out)
		}
	}

	png := filepath.Join(t.TempDir(), "expiry.png")
	ok(t, "stats", "--dir", td.dir, "--now", at.Format(time.RFC3339), "--plot", png)
	data, err := os.ReadFile(png)
	if err != nil || len(data) < 1000 || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("stats --plot wrote %d bytes (err %v), not a PNG", len(data), err)
	}
	svg := filepath.Join(t.TempDir(), "expiry.svg")
	ok(t, "stats", "--dir", td.dir, "--plot", svg)
	if data, err := os.ReadFile(svg); err != nil || !bytes.Contains(data, []byte("<svg")) {
		t.Errorf("stats --plot .svg: %v, %.100q", err, data)
	}
}

func TestCheck(t *testing.T) {
	td := buildTestDB(t)
	out := ok(t, "check", "--dir", td.dir)
	paths := tablePaths(t, td.dir)
	if n := strings.Count(out, ": OK\n"); n != len(paths) {
		t.Errorf("check lists %d tables OK, want %d:\n%s", n, len(paths), out)
	}
	if !strings.Contains(out, fmt.Sprintf("all %d tables and", len(paths))) || !strings.Contains(out, "records") {
		t.Errorf("check output:\n%s", out)
	}

	// Flip a byte in the first data block of one table.
	dir := copyDB(t, td.dir)
	victim := tablePaths(t, dir)[1]
	name := "sst/" + filepath.Base(victim)
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	data[100] ^= 0x40
	if err := os.WriteFile(victim, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", nil, "check", "--dir", dir)
	if r.code != 1 || !strings.Contains(r.stderr, name) {
		t.Fatalf("check of a damaged table: exit %d, stderr %q; want exit 1 naming %s", r.code, r.stderr, name)
	}
	if !strings.Contains(r.stdout, name+" ") || !strings.Contains(r.stdout, "CORRUPT") || !strings.Contains(r.stdout, "checksum") ||
		strings.Count(r.stdout, ": OK\n") != len(paths)-1 {
		t.Errorf("check of a damaged table:\n%s", r.stdout)
	}
}

func TestCompactAndReclaim(t *testing.T) {
	td := buildTestDB(t)
	for _, c := range []struct {
		args     []string
		minDrop  uint64 // expired rows dropped at least
		wantRows uint64 // rows after, 0: unchecked
	}{
		// By the system clock every TTL row has expired; a full compaction
		// leaves only the rows without a TTL that were not deleted.
		{[]string{"reclaim"}, 1, 0},
		{[]string{"compact"}, 1, td.liveNever},
		{[]string{"compact", "--start", "key:01000", "--end", "key:01999"}, 1, 0},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			dir := copyDB(t, td.dir)
			var res maintenanceResult
			out := ok(t, append(c.args, "--dir", dir, "--json")...)
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			if res.SSTBytesAfter >= res.SSTBytesBefore || res.DirBytesAfter >= res.DirBytesBefore ||
				res.ExpiredDropped < c.minDrop || res.RowsAfter >= res.RowsBefore {
				t.Errorf("%v did not shrink the database: %+v", c.args, res)
			}
			if c.wantRows != 0 && res.RowsAfter != c.wantRows {
				t.Errorf("%v: %d rows left, want %d", c.args, res.RowsAfter, c.wantRows)
			}
			var disk uint64
			for _, p := range tablePaths(t, dir) {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				disk += uint64(fi.Size())
			}
			if disk != res.SSTBytesAfter {
				t.Errorf("%v: tables on disk hold %d bytes, reported %d", c.args, disk, res.SSTBytesAfter)
			}
			human := ok(t, append(c.args, "--dir", dir)...)
			if !strings.Contains(human, "sstable bytes:") || !strings.Contains(human, "directory bytes:") {
				t.Errorf("%v output:\n%s", c.args, human)
			}
			ok(t, "check", "--dir", dir)
		})
	}
}

func TestBench(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bench")
	out := ok(t, "bench", "--dir", dir, "--keys", "300", "--value-size", "50")
	for _, s := range []string{"fillseq", "fillrandom", "readrandom", "(300 of 300 found)", "scan", "(300 rows)", "ttlchurn",
		"disk/live", "all expired, reclaimed", "summary:", "ops/s", "MB/s", "kept " + dir} {
		if !strings.Contains(out, s) {
			t.Errorf("bench output lacks %q:\n%s", s, out)
		}
	}
	fails(t, 1, "is not empty", "bench", "--dir", dir, "--keys", "10")
	r := runCLI(t, "", []string{"TMPDIR=" + t.TempDir()}, "bench", "--keys", "20")
	if r.code != 0 || strings.Contains(r.stdout, "kept ") {
		t.Errorf("bench in a temporary directory: exit %d, %s\n%s", r.code, r.stderr, r.stdout)
	}
}

func TestDemoUntil(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	out := ok(t, "demo", "--sessions", "400", "--dir", dir, "--until", "5")
	if !strings.Contains(out, "Stopped after step 5") || strings.Contains(out, "== 6. Compact ==") {
		t.Errorf("demo --until 5:\n%s", out)
	}
	// Expired rows are still on disk: at the demo's end time, the tokens and
	// the short and standard sessions.
	h := statsJSONOut(t, "--dir", dir, "--now", demoStart.Add(31*time.Minute).Format(time.RFC3339)).Expiry
	if h.Buckets[bucketExpired].Rows != 400/2+400/4+40 || h.Buckets[bucketNever].Rows != 100 {
		t.Errorf("demo --until 5 expiry: %+v", h.Buckets)
	}
}

// prefixToken matches the prefixes Mayfly's packages start their errors
// with: "mayfly: ", "mayfly/storage: ", "mayfly/s3: ", ...
var prefixToken = regexp.MustCompile(`mayfly(/[a-z0-9]+)?: `)

// TestErrorsSayPrefixOnce makes commands fail in several ways and checks
// that each prints one line that names no package prefix twice.
func TestErrorsSayPrefixOnce(t *testing.T) {
	td := buildTestDB(t)
	badManifest := copyDB(t, td.dir)
	ents, err := os.ReadDir(filepath.Join(badManifest, "manifest"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		damageFile(t, filepath.Join(badManifest, "manifest", e.Name()), -1)
	}
	newestBad := copyDB(t, td.dir)
	damageFile(t, filepath.Join(newestBad, "manifest", ents[len(ents)-1].Name()), -1)
	noTable := copyDB(t, td.dir)
	if err := os.Remove(tablePaths(t, noTable)[0]); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "short.sst")
	if err := os.WriteFile(short, []byte("not a table"), 0o600); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(t.TempDir(), "db")
	w, err := mayfly.Open(locked, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	for _, args := range [][]string{
		{"delete", "--dir", locked, "k"},
		{"get", "--dir", newestBad, "k"},
		{"scan", "--dir", badManifest},
		{"manifest", "dump", "--dir", badManifest},
		{"get", "--dir", noTable, "key:00001"},
		{"sst", "dump", short},
		{"get", "--dir", "s3://", "k"},
		{"check", "--dir", unreachableS3},
	} {
		r := runCLI(t, "", fakeCredentials, args...)
		if r.code == 0 {
			t.Errorf("mayfly %q succeeded", args)
			continue
		}
		oneLine(t, args, r.stderr)
		seen := map[string]bool{}
		for _, tok := range prefixToken.FindAllString(r.stderr, -1) {
			if seen[tok] {
				t.Errorf("mayfly %q: %q says %q more than once", args, r.stderr, tok)
				break
			}
			seen[tok] = true
		}
	}
}

func TestErrText(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("plain"), "plain"},
		{fmt.Errorf("mayfly: open x: %w", errors.New("mayfly: corruption in y")), "open x: corruption in y"},
		{fmt.Errorf("%q: %w", "mayfly: key", errors.New("mayfly: not found")), `"mayfly: key": not found`},
		{fmt.Errorf("get %q: %w", `a\"b: mayfly: c`, mayfly.ErrClosed), `get "a\\\"b: mayfly: c": closed`},
		{errors.Join(errors.New("mayfly: first"), errors.New("mayfly: second")), "first\nsecond"},
		{errors.New("mayfly/storage: kept"), "mayfly/storage: kept"},
	} {
		if got := errText(c.err); got != c.want {
			t.Errorf("errText(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
