package corruption

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

// newestManifest returns the name of the newest manifest version in dir and
// how many versions there are.
func newestManifest(t *testing.T, dir string) (string, int) {
	t.Helper()
	vs := files(t, dir, "manifest", ".manifest")
	if len(vs) == 0 {
		t.Fatal("no manifest version")
	}
	return vs[len(vs)-1], len(vs)
}

// wantManifestCorruption opens dir, which must fail with a corruption error
// naming the manifest version, and checks that the failed Open changed no
// file.
func wantManifestCorruption(t *testing.T, dir, name string, reported func(int64) bool) {
	t.Helper()
	before := listAll(t, dir)
	noPanic(t, "damaged manifest", func() {
		db, err := openDB(dir)
		if err == nil {
			db.Close()
			t.Fatalf("Open succeeded with a damaged newest manifest version")
		}
		checkCorruption(t, "Open", err, name, reported)
	})
	if after := listAll(t, dir); !slices.Equal(before, after) {
		t.Errorf("the failed Open changed the directory:\nbefore %v\nafter  %v", before, after)
	}
}

// listAll lists every file under dir except the lock file.
func listAll(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, sub := range []string{"manifest", "sst", "wal"} {
		ents, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, e := range ents {
			out = append(out, sub+"/"+e.Name())
		}
	}
	return out
}

func TestManifestByteFlip(t *testing.T) {
	src, m := sharedTables(t)
	name, _ := newestManifest(t, src)
	orig := readFile(t, src, name)
	n := len(orig)
	for _, c := range []struct {
		desc string
		off  int
	}{
		{"magic", 0}, {"format version", 8}, {"next file number", 12}, {"first level", 20},
		{"middle", n / 2}, {"last body byte", n - 5}, {"CRC", n - 4}, {"last CRC byte", n - 1},
	} {
		t.Run(strings.ReplaceAll(c.desc, " ", "_"), func(t *testing.T) {
			dir := copyDir(t, src)
			writeFile(t, dir, name, flip(orig, c.off))
			wantManifestCorruption(t, dir, name, func(o int64) bool { return o >= 0 && o < int64(n) })
			writeFile(t, dir, name, orig)
			noPanic(t, "repaired", func() { verifyIntact(t, "after repair", dir, m) })
		})
	}
}

func TestManifestTruncate(t *testing.T) {
	src, m := sharedTables(t)
	name, _ := newestManifest(t, src)
	orig := readFile(t, src, name)
	n := len(orig)
	for _, size := range []int{n - 1, n - 4, n - 5, n / 2, 16, 15, 12, 8, 1, 0} {
		t.Run(fmt.Sprintf("to_%d_of_%d", size, n), func(t *testing.T) {
			dir := copyDir(t, src)
			writeFile(t, dir, name, orig[:size])
			wantManifestCorruption(t, dir, name, func(o int64) bool { return o >= 0 && o <= int64(size) })
			writeFile(t, dir, name, orig)
			noPanic(t, "repaired", func() { verifyIntact(t, "after repair", dir, m) })
		})
	}
}

// TestManifestDamagedWithOlderVersion keeps an older, intact manifest
// version next to the damaged newest one. Falling back to it would forget
// tables (and let orphan cleanup delete them), so Open must still fail.
func TestManifestDamagedWithOlderVersion(t *testing.T) {
	src, m := sharedTables(t)
	name, count := newestManifest(t, src)
	orig := readFile(t, src, name)
	dir := copyDir(t, src)
	// Make an older version by copying the newest under a lower number
	// that is not taken (versions are numbered NNNNNNNNNNNNNNNNNNNN).
	base := strings.TrimSuffix(filepath.Base(name), ".manifest")
	var v uint64
	if _, err := fmt.Sscanf(base, "%d", &v); err != nil || v < 2 {
		t.Fatalf("cannot parse manifest version %q", name)
	}
	older := fmt.Sprintf("manifest/%020d.manifest", v-1)
	if count == 1 {
		writeFile(t, dir, older, orig)
	}
	writeFile(t, dir, name, flip(orig, len(orig)/2))
	wantManifestCorruption(t, dir, name, nil)
	writeFile(t, dir, name, orig)
	noPanic(t, "repaired", func() { verifyIntact(t, "after repair", dir, m) })
}

// TestManifestOnlyVersionGarbage replaces the only manifest with bytes that
// are not a manifest at all: an error, never an empty database.
func TestManifestOnlyVersionGarbage(t *testing.T) {
	src, _ := sharedTables(t)
	dir := copyDir(t, src)
	for _, v := range files(t, dir, "manifest", ".manifest") {
		must(t, os.Remove(filepath.Join(dir, filepath.FromSlash(v))))
	}
	name := "manifest/00000000000000000001.manifest"
	writeFile(t, dir, name, []byte("this is not a manifest, but it is long enough"))
	noPanic(t, "garbage manifest", func() {
		db, err := openDB(dir)
		if err == nil {
			defer db.Close()
			v, gerr := db.Get([]byte("key000000"))
			t.Fatalf("Open succeeded on a garbage manifest (Get: %q, %v)", v, gerr)
		}
		checkCorruption(t, "Open", err, name, nil)
		if errors.Is(err, mayfly.ErrNotFound) {
			t.Errorf("error wraps ErrNotFound: %v", err)
		}
	})
}

// TestManifestRemoved removes the manifest directory of a database whose
// rows are all in tables. Opening an empty database over the tables would
// delete them as orphans; Open, writable or read-only, must instead fail
// with ErrCorruption naming the manifest directory and a table, and change
// nothing.
func TestManifestRemoved(t *testing.T) {
	src, m := sharedTables(t)
	dir := copyDir(t, src)
	saved := t.TempDir()
	must(t, os.Rename(filepath.Join(dir, "manifest"), filepath.Join(saved, "manifest")))
	tables := files(t, dir, "sst", ".sst")
	for _, readOnly := range []bool{false, true} {
		before := listAll(t, dir)
		noPanic(t, "manifest removed", func() {
			o := baseOptions()
			o.ReadOnly = readOnly
			db, err := mayfly.Open(dir, o)
			if err == nil {
				db.Close()
				t.Fatalf("Open (read-only %v) succeeded without a manifest", readOnly)
			}
			checkCorruption(t, "Open", err, "manifest", nil)
			if !strings.Contains(err.Error(), tables[0]) || !strings.Contains(err.Error(), "mayfly repair") {
				t.Errorf("error does not name %s and mayfly repair: %v", tables[0], err)
			}
		})
		if after := listAll(t, dir); !slices.Equal(before, after) {
			t.Errorf("the failed Open (read-only %v) changed the directory:\nbefore %v\nafter  %v", readOnly, before, after)
		}
	}
	must(t, os.RemoveAll(filepath.Join(dir, "manifest")))
	must(t, os.Rename(filepath.Join(saved, "manifest"), filepath.Join(dir, "manifest")))
	noPanic(t, "restored", func() { verifyIntact(t, "after restoring the manifest", dir, m) })
}
