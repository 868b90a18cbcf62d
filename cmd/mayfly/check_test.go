package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly"
)

// damageFile flips one bit of the byte at off (negative: from the end) of
// the file at path.
func damageFile(t *testing.T, path string, off int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += len(data)
	}
	data[off] ^= 0x40
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// unreachableS3 is a location on a server that refuses connections, tried
// once, with credentials from the environment so that the SDK does not go
// looking for others.
const unreachableS3 = "s3://bucket/db?endpoint=http://127.0.0.1:1&max_attempts=1"

var fakeCredentials = []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true"}

// oneLine fails t unless stderr is exactly one line starting with
// "mayfly: " (or "mayfly/pkg: ", for an error a package reports as is).
func oneLine(t *testing.T, args []string, stderr string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "mayfly") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("mayfly %q: stderr %q, want one line starting with \"mayfly\"", args, stderr)
	}
}

func TestCheckExitStatus(t *testing.T) {
	td := buildTestDB(t)
	damaged := copyDB(t, td.dir)
	damageFile(t, tablePaths(t, damaged)[0], 100)
	notDB := t.TempDir()
	if err := os.WriteFile(filepath.Join(notDB, "notes.txt"), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	lostManifest := copyDB(t, td.dir)
	if err := os.RemoveAll(filepath.Join(lostManifest, "manifest")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		code int
		msg  string // on stderr; none for exit 0
		args []string
	}{
		{"healthy", 0, "", []string{"check", "--dir", td.dir}},
		{"damaged table", 1, "check: corruption in sst/", []string{"check", "--dir", damaged}},
		{"lost manifest", 1, "check: corruption in manifest", []string{"check", "--dir", lostManifest}},
		{"missing directory", 2, "no database at", []string{"check", "--dir", filepath.Join(notDB, "missing")}},
		{"not a database", 2, "no database at", []string{"check", "--dir", notDB}},
		{"unreachable store", 2, "not accessible", []string{"check", "--dir", unreachableS3}},
		{"bad arguments", 2, "unexpected arguments", []string{"check", "--dir", td.dir, "extra"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, "", fakeCredentials, c.args...)
			if r.code != c.code {
				t.Fatalf("mayfly %q: exit %d, want %d; stderr %q\n%s", c.args, r.code, c.code, r.stderr, r.stdout)
			}
			if c.code == 0 {
				if r.stderr != "" || !strings.Contains(r.stdout, " OK\n") {
					t.Errorf("healthy check: stderr %q\n%s", r.stderr, r.stdout)
				}
				return
			}
			oneLine(t, c.args, r.stderr)
			if c.name == "lost manifest" && (!strings.Contains(r.stdout, "the manifest is lost") || strings.Contains(r.stdout, "no table was ever flushed")) {
				t.Errorf("check of a lost manifest says:\n%s", r.stdout)
			}
			if !strings.Contains(r.stderr, c.msg) {
				t.Errorf("mayfly %q: stderr %q, want %q", c.args, r.stderr, c.msg)
			}
			if c.code == 2 && strings.Contains(r.stderr+r.stdout, "CORRUPT") {
				t.Errorf("a check that could not run reports corruption: %q\n%s", r.stderr, r.stdout)
			}
		})
	}
}

// TestCheckBesideWriter runs check while another handle writes the
// database. Where the engine lets a read-only handle open beside a writer,
// check reads the last published state and finds it healthy; where it
// does not, check says the database is in use (exit 2). Never corruption.
func TestCheckBesideWriter(t *testing.T) {
	td := buildTestDB(t)
	w, err := mayfly.Open(td.dir, &mayfly.Options{DisableAutoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Put([]byte("written:by-the-writer"), []byte("unflushed")); err != nil {
		t.Fatal(err)
	}
	tables := len(tablePaths(t, td.dir))
	ro, roErr := mayfly.Open(td.dir, &mayfly.Options{ReadOnly: true})
	if roErr == nil {
		ro.Close()
	}
	r := runCLI(t, "", nil, "check", "--dir", td.dir)
	switch {
	case roErr == nil:
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, fmt.Sprintf("all %d tables and", tables)) {
			t.Errorf("check beside a writer: exit %d, stderr %q, want 0 and %d tables OK:\n%s", r.code, r.stderr, tables, r.stdout)
		}
	case errors.Is(roErr, mayfly.ErrLocked):
		want := "mayfly: database at " + td.dir + " is in use by a writer\n"
		if r.code != 2 || r.stderr != want || r.stdout != "" {
			t.Errorf("check beside a writer: exit %d, stderr %q, stdout %q; want exit 2 and %q only", r.code, r.stderr, r.stdout, want)
		}
	default:
		t.Fatalf("read-only open beside a writer: %v", roErr)
	}
}

// TestCheckCorruptNewestManifest: a damaged newest manifest version is
// corruption, and the older version the database would not open with is
// not shown as its state.
func TestCheckCorruptNewestManifest(t *testing.T) {
	td := buildTestDB(t)
	dir := copyDB(t, td.dir)
	ents, err := os.ReadDir(filepath.Join(dir, "manifest"))
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, e := range ents {
		versions = append(versions, "manifest/"+e.Name())
	}
	slices.Sort(versions)
	if len(versions) < 2 {
		t.Fatalf("test database has manifest versions %v, want at least two", versions)
	}
	newest := versions[len(versions)-1]
	damageFile(t, filepath.Join(dir, newest), -1)

	args := []string{"check", "--dir", dir}
	r := runCLI(t, "", nil, args...)
	if r.code != 1 {
		t.Fatalf("check: exit %d, want 1; stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	oneLine(t, args, r.stderr)
	if !strings.Contains(r.stderr, newest) {
		t.Errorf("stderr %q does not name the damaged version %s", r.stderr, newest)
	}
	if !strings.Contains(r.stdout, newest+": CORRUPT") {
		t.Errorf("stdout does not report %s as CORRUPT:\n%s", newest, r.stdout)
	}
	for _, v := range versions[:len(versions)-1] {
		if strings.Contains(r.stdout, v) {
			t.Errorf("stdout presents the older version %s:\n%s", v, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "OK") {
		t.Errorf("stdout reports something OK against a damaged manifest:\n%s", r.stdout)
	}
}
