// Package corruption damages the files of a real, closed, local-directory
// database (SSTables, WAL segments, manifest versions) and checks how the
// engine reacts when it is opened again. For every kind of damage the
// contract is the same:
//
//   - nothing panics;
//   - Open fails with an error wrapping mayfly.ErrCorruption that names the
//     damaged file and a byte offset, or Open succeeds and DB.Check and every
//     read that touches the damaged bytes fail that way;
//   - no read ever returns wrong data: a key reads as its last written
//     value, as absent if it was deleted, or fails with ErrCorruption;
//   - a failed Open changes nothing: once the damage is undone the database
//     opens with all its data.
//
// Only damage that is not a torn write is corruption. A WAL record cut short
// at the end of the newest segment is the expected result of a crash and is
// dropped (Metrics.WALTornTails counts it).
//
// The tests use only the public API of mayfly, mayfly/clock and
// mayfly/storage (plus mayfly/format for the CorruptionError type and
// mayfly/sstable for the Compression option), and
// read the on-disk formats (RFC 0002) directly to choose where to damage.
package corruption

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/sstable"
)

// epoch is the manual clock's time in every test.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// noPanic runs fn and turns a panic into a test failure with its stack, so
// that a panicking scenario is reported as such and the remaining cases of
// the test still run.
func noPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s: panic: %v\n%s", what, p, debug.Stack())
		}
	}()
	fn()
}

// baseOptions are the options every test opens with: a manual clock, small
// memtables and blocks so that a few hundred rows make several tables of
// several blocks, no compression (so that the tests can read index blocks)
// and no background compaction (so that nothing rewrites a damaged table
// behind the test's back).
func baseOptions() *mayfly.Options {
	return &mayfly.Options{
		Clock:                 clock.NewManual(epoch),
		MemtableSize:          16 << 10,
		BlockSize:             512,
		Compression:           sstable.NoCompression,
		TargetFileSize:        12 << 10,
		DisableAutoCompaction: true,
	}
}

// model is what a database must read as: key -> value, or absent.
type model struct {
	live map[string]string
	dead map[string]bool // deleted or never-live keys that must read as absent
}

func newModel() *model { return &model{live: map[string]string{}, dead: map[string]bool{}} }

func (m *model) keys() []string {
	var ks []string
	for k := range m.live {
		ks = append(ks, k)
	}
	for k := range m.dead {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (m *model) liveKeys() []string {
	var ks []string
	for k := range m.live {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func value(i int) string { return fmt.Sprintf("value-%06d-%s", i, strings.Repeat("x", 40+i%50)) }

// buildTables creates a database in dir whose data is all in SSTables, on
// several levels, and closes it. Every key is written exactly once (puts,
// puts with a TTL far in the future, deletes of keys that were never
// written) so that each key lives in exactly one table and the rows a
// damaged block holds are exactly the keys that must fail.
func buildTables(t *testing.T, dir string) *model {
	t.Helper()
	m := newModel()
	db, err := mayfly.Open(dir, baseOptions())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	write := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			k := fmt.Sprintf("key%06d", i)
			switch i % 10 {
			case 3:
				must(t, db.PutTTL([]byte(k), []byte(value(i)), mayfly.ExpireAfter(1000*time.Hour)))
				m.live[k] = value(i)
			case 7:
				must(t, db.Delete([]byte(k)))
				m.dead[k] = true
			default:
				must(t, db.Put([]byte(k), []byte(value(i))))
				m.live[k] = value(i)
			}
		}
	}
	// The first range is compacted into a lower level, split into tables of
	// TargetFileSize; the second stays in level 0, one table per memtable.
	write(0, 600)
	must(t, db.Flush())
	must(t, db.Compact(context.Background(), nil, nil))
	write(600, 1200)
	must(t, db.Flush())
	met := db.Metrics()
	l0, lower := met.Levels[0].Files, 0
	for _, l := range met.Levels[1:] {
		lower += l.Files
	}
	if l0 < 2 || lower < 2 {
		t.Fatalf("want several tables on level 0 and below; have %d and %d", l0, lower)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return m
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// copyDir copies the database in src to a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if d.Name() == "LOCK" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}

// files lists the storage names (e.g. "sst/000012.sst") in dir/sub with
// suffix ext, sorted.
func files(t *testing.T, dir, sub, ext string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, sub))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ext) {
			out = append(out, sub+"/"+e.Name())
		}
	}
	slices.Sort(out)
	return out
}

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// flip returns a copy of b with the byte at off inverted.
func flip(b []byte, off int) []byte {
	c := bytes.Clone(b)
	c[off] ^= 0xff
	return c
}

var offsetRE = regexp.MustCompile(`at offset \d+`)

// checkCorruption asserts that err wraps ErrCorruption and names file and a
// byte offset (both in its message and in the CorruptionError it wraps). If
// wantOff is not nil, the reported offset must satisfy it. It returns the
// reported offset.
func checkCorruption(t *testing.T, what string, err error, file string, wantOff func(int64) bool) int64 {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error; want ErrCorruption in %s", what, file)
		return -1
	}
	if !errors.Is(err, mayfly.ErrCorruption) {
		t.Errorf("%s: error does not wrap ErrCorruption: %v", what, err)
		return -1
	}
	msg := err.Error()
	if !strings.Contains(msg, file) || !offsetRE.MatchString(msg) {
		t.Errorf("%s: error does not name %s and an offset: %v", what, file, err)
	}
	var ce *format.CorruptionError
	if !errors.As(err, &ce) {
		t.Errorf("%s: no CorruptionError in %v", what, err)
		return -1
	}
	if ce.File != file {
		t.Errorf("%s: CorruptionError names %q, want %q (%v)", what, ce.File, file, err)
	}
	if wantOff != nil && !wantOff(ce.Offset) {
		t.Errorf("%s: CorruptionError offset %d is not where the damage is (%v)", what, ce.Offset, err)
	}
	return ce.Offset
}

// openDB opens dir with baseOptions.
func openDB(dir string) (*mayfly.DB, error) { return mayfly.Open(dir, baseOptions()) }

// verifyAll reads every key of m from db. Each read must return the model's
// answer or, for keys in mayFail (or any key if mayFail is nil and
// anyMayFail), ErrCorruption; keys in mustFail must fail. It returns the
// keys that failed.
func verifyAll(t *testing.T, what string, db *mayfly.DB, m *model, mustFail map[string]bool, mayFail func(string) bool) []string {
	t.Helper()
	var failed []string
	for _, k := range m.keys() {
		v, err := db.Get([]byte(k))
		switch {
		case err != nil && errors.Is(err, mayfly.ErrCorruption):
			failed = append(failed, k)
			if !mustFail[k] && (mayFail == nil || !mayFail(k)) {
				t.Errorf("%s: Get(%q) failed though its data is intact: %v", what, k, err)
			}
			continue
		case mustFail[k]:
			t.Errorf("%s: Get(%q) = %.20q, %v; its block is damaged, want ErrCorruption", what, k, v, err)
			continue
		}
		if want, ok := m.live[k]; ok {
			if err != nil || string(v) != want {
				t.Errorf("%s: Get(%q) = %.20q, %v; want %.20q", what, k, v, err, want)
			}
		} else if !errors.Is(err, mayfly.ErrNotFound) {
			t.Errorf("%s: Get(%q) = %.20q, %v; want ErrNotFound", what, k, v, err)
		}
	}
	return failed
}

// verifyScan scans the whole database forwards and backwards. The pairs
// yielded must be a prefix (a suffix backwards) of the model's live pairs,
// without gaps or wrong values, and the scan must end with an error
// wrapping ErrCorruption if wantErr, else complete cleanly.
func verifyScan(t *testing.T, what string, db *mayfly.DB, m *model, wantErr bool) {
	t.Helper()
	live := m.liveKeys()
	for _, backwards := range []bool{false, true} {
		it, err := db.NewIter(nil)
		if err != nil {
			t.Errorf("%s: NewIter: %v", what, err)
			return
		}
		n := 0
		step, ok := it.Next, it.First()
		if backwards {
			step, ok = it.Prev, it.Last()
		}
		for ; ok; ok = step() {
			i := n
			if backwards {
				i = len(live) - 1 - n
			}
			if i < 0 || i >= len(live) || string(it.Key()) != live[i] || string(it.Value()) != m.live[live[i]] {
				t.Errorf("%s: scan (backwards %v) row %d is %q=%.20q; want %q", what, backwards, n, it.Key(), it.Value(), live[min(max(i, 0), len(live)-1)])
				break
			}
			n++
		}
		err = it.Close()
		switch {
		case wantErr && !errors.Is(err, mayfly.ErrCorruption):
			t.Errorf("%s: scan (backwards %v) read %d of %d rows and ended with %v; want ErrCorruption", what, backwards, n, len(live), err)
		case !wantErr && (err != nil || n != len(live)):
			t.Errorf("%s: scan (backwards %v) read %d of %d rows, error %v", what, backwards, n, len(live), err)
		}
	}
}

// verifyIntact opens dir, checks that every key reads as the model says and
// Check passes, and closes it.
func verifyIntact(t *testing.T, what string, dir string, m *model) {
	t.Helper()
	db, err := openDB(dir)
	if err != nil {
		t.Errorf("%s: Open: %v", what, err)
		return
	}
	defer db.Close()
	if err := db.Check(context.Background()); err != nil {
		t.Errorf("%s: Check: %v", what, err)
	}
	verifyAll(t, what, db, m, nil, nil)
	verifyScan(t, what, db, m, false)
}

// --- SSTable layout (RFC 0002), read from the bytes ---

const (
	footerLen  = 64
	trailerLen = 5
)

type handle struct{ off, len uint64 }

// end is the offset just past the block's trailer.
func (h handle) end() uint64 { return h.off + h.len + trailerLen }

func (h handle) contains(off int) bool { return uint64(off) >= h.off && uint64(off) < h.end() }

// sstLayout locates the blocks of an uncompressed table.
type sstLayout struct {
	size                 int
	filter, props, index handle
	blocks               []handle // data blocks, in order
	lastKeys             []string // user key of each block's last row
	firstKey             string   // user key of the table's first row
}

func parseSST(t *testing.T, b []byte) sstLayout {
	t.Helper()
	l := sstLayout{size: len(b)}
	f := b[len(b)-footerLen:]
	hs := []*handle{&l.filter, &l.props, &l.index}
	for i, h := range hs {
		h.off = binary.LittleEndian.Uint64(f[16*i:])
		h.len = binary.LittleEndian.Uint64(f[16*i+8:])
	}
	if c := b[l.index.off+l.index.len]; c != 0 {
		t.Fatalf("index block compressed (type %d); the tests need NoCompression", c)
	}
	// Index entries: shared, unshared, value length (uvarints), key delta,
	// attributes (per the key's flags), value = uvarint offset, length.
	blk := b[l.index.off : l.index.off+l.index.len]
	n := binary.LittleEndian.Uint32(blk[len(blk)-4:])
	entriesEnd := len(blk) - 4 - 4*int(n)
	var prev []byte
	for p := 0; p < entriesEnd; {
		shared, m1 := binary.Uvarint(blk[p:])
		unshared, m2 := binary.Uvarint(blk[p+m1:])
		vlen, m3 := binary.Uvarint(blk[p+m1+m2:])
		p += m1 + m2 + m3
		ik := append(bytes.Clone(prev[:shared]), blk[p:p+int(unshared)]...)
		p += int(unshared)
		uk, _, flags, ok := format.SplitInternalKey(ik)
		if !ok {
			t.Fatalf("index entry at %d: bad key %x", p, ik)
		}
		r := format.Row{Flags: flags}
		an, ok := format.DecodeAttrs(blk[p:], &r)
		if !ok {
			t.Fatalf("index entry at %d: bad attributes", p)
		}
		p += an
		v := blk[p : p+int(vlen)]
		p += int(vlen)
		off, k := binary.Uvarint(v)
		ln, _ := binary.Uvarint(v[k:])
		l.blocks = append(l.blocks, handle{off, ln})
		l.lastKeys = append(l.lastKeys, string(uk))
		prev = ik
	}
	// The first entry of the first data block holds the whole first key.
	_, m1 := binary.Uvarint(b)
	unshared, m2 := binary.Uvarint(b[m1:])
	_, m3 := binary.Uvarint(b[m1+m2:])
	p := m1 + m2 + m3
	if uk, _, _, ok := format.SplitInternalKey(b[p : p+int(unshared)]); ok {
		l.firstKey = string(uk)
	} else {
		t.Fatalf("bad first key in data block 0")
	}
	if len(l.blocks) < 3 {
		t.Fatalf("table has %d data blocks; want at least 3", len(l.blocks))
	}
	return l
}

// keysOfBlock returns the model keys stored in data block i: those after
// block i-1's last key up to block i's last key.
func (l sstLayout) keysOfBlock(m *model, i int) map[string]bool {
	out := map[string]bool{}
	for _, k := range m.keys() {
		if k <= l.lastKeys[i] && (i == 0 && k >= l.firstKey || i > 0 && k > l.lastKeys[i-1]) {
			out[k] = true
		}
	}
	return out
}

// keysOfTable returns the model keys within the table's key range.
func (l sstLayout) keysOfTable(m *model) map[string]bool {
	out := map[string]bool{}
	for i := range l.blocks {
		for k := range l.keysOfBlock(m, i) {
			out[k] = true
		}
	}
	return out
}
