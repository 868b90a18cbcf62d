package corruption

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/storage"
)

// pristine is a database built once per test binary and copied by every
// case, with its model.
var (
	pristineOnce sync.Once
	pristineDir  string
	pristineM    *model
	pristineErr  string
)

// sharedTables returns a closed database whose data is all in SSTables
// (see buildTables). Cases copy it before damaging it.
func sharedTables(t *testing.T) (string, *model) {
	t.Helper()
	pristineOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mayfly-corruption-*")
		if err != nil {
			pristineErr = err.Error()
			return
		}
		pristineDir = dir
		// buildTables reports through t; a failure there fails this test
		// and leaves pristineM nil for the others.
		pristineM = buildTables(t, dir)
	})
	if pristineM == nil {
		t.Fatalf("building the shared database failed %s", pristineErr)
	}
	return pristineDir, pristineM
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pristineDir != "" {
		os.RemoveAll(pristineDir)
	}
	os.Exit(code)
}

// sstCase is one way of damaging a table.
type sstCase struct {
	desc string
	off  int // byte to flip, or length to truncate to
	// block is the data block the damage is in, or -1.
	block int
	// region is the handle of the block the damage is in (data, filter,
	// properties or index); zero for the footer.
	region handle
}

// sstCases returns damage at chosen places of every part of table l.
func sstCases(l sstLayout) []sstCase {
	b := l.blocks
	last := len(b) - 1
	var cs []sstCase
	data := func(desc string, i, off int) {
		cs = append(cs, sstCase{desc: desc, off: off, block: i, region: b[i]})
	}
	data("data block 0, first byte", 0, 0)
	data("data block 1, middle", 1, int(b[1].off+b[1].len/2))
	data("data block 1, restart array", 1, int(b[1].off+b[1].len-2))
	data("data block 2, compression type in trailer", 2, int(b[2].off+b[2].len))
	data("last data block, last CRC byte", last, int(b[last].end()-1))
	meta := func(desc string, h handle, off int) {
		cs = append(cs, sstCase{desc: desc, off: off, block: -1, region: h})
	}
	if l.filter.len > 0 {
		meta("filter block, middle", l.filter, int(l.filter.off+l.filter.len/2))
		meta("filter block, CRC", l.filter, int(l.filter.end()-2))
	}
	meta("properties block, first byte", l.props, int(l.props.off))
	meta("properties block, middle", l.props, int(l.props.off+l.props.len/2))
	meta("index block, first byte", l.index, int(l.index.off))
	meta("index block, middle", l.index, int(l.index.off+l.index.len/2))
	meta("index block, compression type", l.index, int(l.index.off+l.index.len))
	f := l.size - footerLen
	for _, fc := range []struct {
		desc string
		at   int
	}{
		{"footer, filter handle", 0}, {"footer, properties handle", 17}, {"footer, index handle offset", 32},
		{"footer, index handle length", 40}, {"footer, format version", 48}, {"footer, CRC", 53}, {"footer, magic", 63},
	} {
		cs = append(cs, sstCase{desc: fc.desc, off: f + fc.at, block: -1})
	}
	return cs
}

// reportedIn returns a check that a reported offset lies where c's damage
// is: the start of its block, or within the footer.
func (c sstCase) reportedIn(size int) func(int64) bool {
	if c.region == (handle{}) {
		return func(o int64) bool { return o >= int64(size-footerLen) && o < int64(size) }
	}
	return func(o int64) bool { return o == int64(c.region.off) }
}

// chosenTables returns the tables the tests damage: the first (on a lower
// level, written by compaction) and the last (a level-0 flush).
func chosenTables(t *testing.T, dir string) []string {
	ssts := files(t, dir, "sst", ".sst")
	if len(ssts) < 3 {
		t.Fatalf("only %d tables", len(ssts))
	}
	// The first table (compacted, below level 0) and the largest of the
	// others (the last flush may be a small remainder of few blocks).
	largest := ssts[1]
	for _, name := range ssts[2:] {
		if len(readFile(t, dir, name)) > len(readFile(t, dir, largest)) {
			largest = name
		}
	}
	return []string{ssts[0], largest}
}

// runDamaged opens a damaged copy and checks the contract. mustFail are the
// keys whose reads must fail (the rows of a damaged data block), mayFail
// those that may (the rows of the damaged table). inFilter says the damage
// is in the table's filter block, which point lookups read and scans do not.
// It reports whether Open succeeded.
func runDamaged(t *testing.T, dir, file string, m *model, mustFail, mayFail map[string]bool, inFilter bool, reported func(int64) bool) (opened bool) {
	t.Helper()
	db, err := openDB(dir)
	if err != nil {
		t.Logf("Open failed: %v", err)
		checkCorruption(t, "Open", err, file, reported)
		return false
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	cerr := db.Check(context.Background())
	t.Logf("Open succeeded; Check: %v", cerr)
	checkCorruption(t, "Check", cerr, file, reported)
	failed := verifyAll(t, "Get", db, m, mustFail, func(k string) bool { return mayFail[k] })
	if len(mustFail) > 0 {
		// The error of a read names the file and the damaged block.
		for k := range mustFail {
			_, err := db.Get([]byte(k))
			checkCorruption(t, fmt.Sprintf("Get(%q)", k), err, file, reported)
			break
		}
		verifyScan(t, "scan", db, m, true)
	} else if len(failed) > 0 {
		// A scan reads every block but the filter.
		verifyScan(t, "scan", db, m, !inFilter)
	}
	return true
}

func TestSSTByteFlip(t *testing.T) {
	src, m := sharedTables(t)
	for _, name := range chosenTables(t, src) {
		orig := readFile(t, src, name)
		l := parseSST(t, orig)
		tableKeys := l.keysOfTable(m)
		for _, c := range sstCases(l) {
			t.Run(fmt.Sprintf("%s/%s", filepath.Base(name), strings.ReplaceAll(c.desc, " ", "_")), func(t *testing.T) {
				dir := copyDir(t, src)
				writeFile(t, dir, name, flip(orig, c.off))
				var mustFail map[string]bool
				if c.block >= 0 {
					// Deleted keys may be absent from the table (compaction
					// to the bottom level drops their tombstones, and the
					// bloom filter then answers without reading the block);
					// every live key of the block must fail.
					mustFail = l.keysOfBlock(m, c.block)
					for k := range mustFail {
						if _, live := m.live[k]; !live {
							delete(mustFail, k)
						}
					}
					if len(mustFail) == 0 {
						t.Fatalf("no model keys in block %d", c.block)
					}
				}
				noPanic(t, "damaged", func() {
					opened := runDamaged(t, dir, name, m, mustFail, tableKeys, l.filter.len > 0 && c.region == l.filter, c.reportedIn(l.size))
					if c.block >= 0 && !opened {
						// Data blocks are read on demand; damage in one must
						// not make the whole database unopenable.
						t.Errorf("Open failed for damage in a data block")
					}
				})
				writeFile(t, dir, name, orig)
				noPanic(t, "repaired", func() { verifyIntact(t, "after repair", dir, m) })
			})
		}
	}
}

func TestSSTTruncate(t *testing.T) {
	src, m := sharedTables(t)
	for _, name := range chosenTables(t, src) {
		orig := readFile(t, src, name)
		l := parseSST(t, orig)
		tableKeys := l.keysOfTable(m)
		for _, n := range []int{
			l.size - 1, l.size - 8, l.size - footerLen + 1, l.size - footerLen, l.size - footerLen - 1,
			int(l.index.off + l.index.len/2), int(l.props.off), int(l.blocks[1].off + 7), footerLen, footerLen - 1, 1, 0,
		} {
			t.Run(fmt.Sprintf("%s/to_%d_of_%d", filepath.Base(name), n, l.size), func(t *testing.T) {
				dir := copyDir(t, src)
				writeFile(t, dir, name, orig[:n])
				noPanic(t, "truncated", func() {
					runDamaged(t, dir, name, m, nil, tableKeys, false, nil)
				})
				writeFile(t, dir, name, orig)
				noPanic(t, "repaired", func() { verifyIntact(t, "after repair", dir, m) })
			})
		}
	}
}

var sweepStride = flag.Int("corruption.stride", 0,
	"flip every n-th byte in TestSSTByteFlipSweep (default 97, 401 with -short; 1 flips every byte)")

// TestSSTByteFlipSweep flips bytes all over one table, at a stride, and
// checks the general contract for each: the damage is found by Open or by
// Check, and no read returns wrong data.
func TestSSTByteFlipSweep(t *testing.T) {
	src, m := sharedTables(t)
	name := chosenTables(t, src)[1]
	orig := readFile(t, src, name)
	l := parseSST(t, orig)
	tableKeys := l.keysOfTable(m)
	stride := *sweepStride
	if stride <= 0 {
		stride = 97
		if testing.Short() {
			stride = 401
		}
	}
	dir := copyDir(t, src)
	for off := 0; off < len(orig); off += stride {
		writeFile(t, dir, name, flip(orig, off))
		noPanic(t, fmt.Sprintf("flip at %d", off), func() {
			db, err := openDB(dir)
			if err != nil {
				checkCorruption(t, fmt.Sprintf("flip at %d: Open", off), err, name, nil)
				return
			}
			defer db.Close()
			checkCorruption(t, fmt.Sprintf("flip at %d: Check", off), db.Check(context.Background()), name, nil)
			verifyAll(t, fmt.Sprintf("flip at %d: Get", off), db, m, nil, func(k string) bool { return tableKeys[k] })
		})
		if t.Failed() {
			return // one offset's report is enough
		}
	}
	writeFile(t, dir, name, orig)
	verifyIntact(t, "after the sweep", dir, m)
}

// TestSSTMissing deletes a table the manifest lists: Open must fail with an
// error that names the table, and must not have changed anything.
func TestSSTMissing(t *testing.T) {
	src, m := sharedTables(t)
	for _, name := range chosenTables(t, src) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			dir := copyDir(t, src)
			orig := readFile(t, dir, name)
			before := files(t, dir, "sst", ".sst")
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
				t.Fatal(err)
			}
			noPanic(t, "missing table", func() {
				db, err := openDB(dir)
				if err == nil {
					db.Close()
					t.Fatalf("Open succeeded without %s", name)
				}
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error does not name %s: %v", name, err)
				}
				if !errors.Is(err, storage.ErrNotExist) {
					t.Errorf("error does not wrap storage.ErrNotExist: %v", err)
				}
				checkCorruption(t, "Open", err, name, nil)
			})
			// The failed Open deleted nothing (no orphan cleanup, no new
			// manifest version superseding the tables).
			after := files(t, dir, "sst", ".sst")
			if len(after) != len(before)-1 {
				t.Errorf("tables before %v, after failed Open %v", before, after)
			}
			writeFile(t, dir, name, orig)
			noPanic(t, "restored", func() { verifyIntact(t, "after restoring the table", dir, m) })
		})
	}
}

// TestSSTReplacedByAnotherTable puts the bytes of another valid table in
// place of a listed one (a restored stale file, a mix-up of two files).
// Every block checks out, but the table is not the one the manifest
// describes: its size, key range and sequence range differ from the
// manifest's entry. Open or Check must report it; reads must not answer
// "not found" for keys the missing table held.
func TestSSTReplacedByAnotherTable(t *testing.T) {
	src, m := sharedTables(t)
	ssts := files(t, src, "sst", ".sst")
	chosen := chosenTables(t, src)
	victim, other := chosen[1], ssts[0]
	l := parseSST(t, readFile(t, src, victim))
	victimKeys := l.keysOfTable(m)
	dir := copyDir(t, src)
	writeFile(t, dir, victim, readFile(t, src, other))
	noPanic(t, "replaced table", func() {
		db, err := openDB(dir)
		if err != nil {
			checkCorruption(t, "Open", err, victim, nil)
			return
		}
		defer db.Close()
		cerr := db.Check(context.Background())
		wrong := 0
		for k := range victimKeys {
			if want, ok := m.live[k]; ok {
				if v, err := db.Get([]byte(k)); err == nil && string(v) != want || errors.Is(err, mayfly.ErrNotFound) {
					wrong++
				}
			}
		}
		if cerr == nil || wrong > 0 {
		}
		checkCorruption(t, "Check", cerr, victim, nil)
		if wrong > 0 {
			t.Errorf("%d live keys of %s read as absent or wrong", wrong, victim)
		}
	})
}
