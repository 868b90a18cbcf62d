package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/internal/s3test"
)

// dirNames lists the names in dir, or nil if it does not exist.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestNoDatabaseCreatesNothing points the commands that need an existing
// database at a missing directory and at a directory that holds something
// else: each fails with one line naming the location and leaves both as
// they were.
func TestNoDatabaseCreatesNothing(t *testing.T) {
	parent := t.TempDir()
	missing := filepath.Join(parent, "missing")
	other := filepath.Join(parent, "etc")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "hosts"), []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{missing, other} {
		for _, args := range [][]string{
			{"scan"}, {"get", "k"}, {"ttl", "k"}, {"delete", "k"}, {"stats"}, {"check"},
			{"compact"}, {"reclaim"}, {"manifest", "dump"}, {"wal", "dump"},
		} {
			args := append(slices.Clone(args), "--dir", dir)
			r := runCLI(t, "", nil, args...)
			want := 1
			if args[0] == "check" {
				want = 2
			}
			if r.code != want || r.stdout != "" || !strings.Contains(r.stderr, "no database at "+dir) {
				t.Errorf("mayfly %q: exit %d, stdout %q, stderr %q; want exit %d and \"no database at %s\"", args, r.code, r.stdout, r.stderr, want, dir)
			}
			oneLine(t, args, r.stderr)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("%s was created: %v", missing, err)
	}
	if got := dirNames(t, other); !slices.Equal(got, []string{"hosts"}) {
		t.Errorf("%s now holds %v, want only hosts", other, got)
	}
}

// TestWriterBesideWriter: a command that writes, run while another handle
// writes the database, did not run: exit 2 and one line saying so.
func TestWriterBesideWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	w, err := mayfly.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, args := range [][]string{{"put", "k", "v"}, {"delete", "k"}, {"compact"}, {"reclaim"}} {
		args := append(slices.Clone(args), "--dir", dir)
		r := runCLI(t, "", nil, args...)
		want := "mayfly: database at " + dir + " is in use by another process (one writer at a time)\n"
		if r.code != 2 || r.stderr != want {
			t.Errorf("mayfly %q: exit %d, stderr %q; want exit 2 and %q", args, r.code, r.stderr, want)
		}
	}
}

// objectURL is the URL of object name of the database at loc.
func objectURL(t *testing.T, loc, name string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + name
	return u.String()
}

// TestEveryCommandOnS3 runs every database command on a fresh prefix of
// the S3 server of the S3 pass (MAYFLY_TEST_BACKEND=s3, see internal/s3test).
func TestEveryCommandOnS3(t *testing.T) {
	if s3test.MustBackend(t) != s3test.S3 {
		t.Skip("runs in the S3 pass: MAYFLY_TEST_BACKEND=s3")
	}
	loc := s3test.Location(t)
	shown := s3test.Redact(loc)

	// Nothing there yet: no database, and nothing is created.
	fails(t, 1, "no database at "+shown, "scan", "--dir", loc)
	fails(t, 2, "no database at "+shown, "check", "--dir", loc)

	// Each writing open flushes what the previous one left in the WAL.
	ok(t, "put", "--dir", loc, "a", "alpha")
	ok(t, "put", "--dir", loc, "--ttl", "1h", "b", "bravo")
	ok(t, "put", "--dir", loc, "c", "charlie")
	ok(t, "put", "--dir", loc, "d", "delta")
	ok(t, "delete", "--dir", loc, "d")
	if got := ok(t, "get", "--dir", loc, "a"); got != "alpha\n" {
		t.Errorf("get a = %q", got)
	}
	fails(t, 1, "not found", "get", "--dir", loc, "d")
	if got := ok(t, "ttl", "--dir", loc, "a"); got != "no expiry\n" {
		t.Errorf("ttl a = %q", got)
	}
	if got := ok(t, "scan", "--dir", loc); got != "a\talpha\nb\tbravo\nc\tcharlie\n" {
		t.Errorf("scan = %q", got)
	}
	if got := ok(t, "scan", "--dir", loc, "--count", "--prefix", "b"); got != "1\n" {
		t.Errorf("scan --count --prefix b = %q", got)
	}

	var s stats
	if err := json.Unmarshal([]byte(ok(t, "stats", "--dir", loc, "--json")), &s); err != nil {
		t.Fatal(err)
	}
	if s.DiskBytes == 0 || s.Expiry == nil || s.Expiry.Tables == 0 || s.Dir != shown {
		t.Errorf("stats --json: disk_bytes %d, expiry %+v, dir %q", s.DiskBytes, s.Expiry, s.Dir)
	}
	d := manifestJSON(t, loc)
	var tables []string
	for _, l := range d.Levels {
		for _, f := range l.Files {
			tables = append(tables, f.Name)
		}
	}
	if len(tables) < 3 {
		t.Fatalf("manifest dump lists tables %v, want at least 3", tables)
	}
	out := ok(t, "check", "--dir", loc)
	if !strings.Contains(out, "all "+strconv.Itoa(len(tables))+" tables and") {
		t.Errorf("check:\n%s", out)
	}
	if out := ok(t, "sst", "dump", objectURL(t, loc, tables[0])); !strings.Contains(out, "format_version:") || !strings.Contains(out, "seq=") {
		t.Errorf("sst dump of %s:\n%s", tables[0], out)
	}
	walOut := ok(t, "wal", "dump", "--dir", loc)
	if !strings.Contains(walOut, `delete "d"`) || !strings.Contains(walOut, "clean end") {
		t.Errorf("wal dump --dir:\n%s", walOut)
	}
	seg := strings.TrimSuffix(strings.SplitN(walOut, ":", 2)[0], "\n")
	if out := ok(t, "wal", "dump", objectURL(t, loc, seg)); !strings.Contains(out, "segment") {
		t.Errorf("wal dump of %s:\n%s", seg, out)
	}

	// The TTL operations and conditional writes (a token that is gone again).
	ok(t, "putnx", "--dir", loc, "t", "token")
	fails(t, 1, `not applied: putnx "t"`, "putnx", "--dir", loc, "t", "again")
	if got := ok(t, "getdel", "--dir", loc, "t"); got != "token\n" {
		t.Errorf("getdel t = %q", got)
	}
	ok(t, "expire", "--dir", loc, "--ttl", "2h", "--gt", "b")
	if got := ok(t, "getex", "--dir", loc, "--ttl", "3h", "b"); got != "bravo\n" {
		t.Errorf("getex b = %q", got)
	}
	if got := ok(t, "scan", "--dir", loc); got != "a\talpha\nb\tbravo\nc\tcharlie\n" {
		t.Errorf("scan after the TTL operations = %q", got)
	}

	var res maintenanceResult
	if err := json.Unmarshal([]byte(ok(t, "compact", "--dir", loc, "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.TablesAfter != 1 || res.RowsAfter != 3 || res.DirBytesBefore == 0 {
		t.Errorf("compact: %+v", res)
	}
	ok(t, "reclaim", "--dir", loc)
	if got := ok(t, "scan", "--dir", loc, "--count"); got != "3\n" {
		t.Errorf("scan --count after compact = %q", got)
	}
	ok(t, "check", "--dir", loc)
	// Repair on the object store: every row kept (older versions and
	// tombstones too), the inputs moved aside.
	if out := ok(t, "repair", "--dir", loc); !strings.Contains(out, "wrote 1 tables in L6") || !strings.Contains(out, "moved") {
		t.Errorf("repair on S3: %s", out)
	}
	if got := ok(t, "scan", "--dir", loc); got != "a\talpha\nb\tbravo\nc\tcharlie\n" {
		t.Errorf("scan after repair = %q", got)
	}
	ok(t, "check", "--dir", loc)
	// Counters on the object store: the operator recorded by add is used
	// by every later command, repair keeps it.
	if got := ok(t, "add", "--dir", loc, "--ttl", "1h", "n", "2"); got != "2\n" {
		t.Errorf("add = %q", got)
	}
	if got := ok(t, "add", "--dir", loc, "n", "3"); got != "5\n" {
		t.Errorf("add = %q", got)
	}
	ok(t, "compact", "--dir", loc)
	ok(t, "repair", "--dir", loc)
	if got := ok(t, "counter", "--dir", loc, "n"); got != "5\n" {
		t.Errorf("counter after compact and repair = %q", got)
	}
}
