package mayfly

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/compaction"
	"github.com/mayflydb/mayfly/sstable"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/s3"
)

// TestOpenRejectsOversizedBloom: a BloomBitsPerKey or L0BloomBitsPerKey
// above the bound fails Open with ErrInvalidOptions naming it before
// anything is created; the bound itself is accepted.
func TestOpenRejectsOversizedBloom(t *testing.T) {
	for _, field := range []string{"BloomBitsPerKey", "L0BloomBitsPerKey"} {
		with := func(bits int) *Options {
			o := &Options{}
			reflect.ValueOf(o).Elem().FieldByName(field).SetInt(int64(bits))
			return o
		}
		dir := filepath.Join(t.TempDir(), "db")
		_, err := Open(dir, with(MaxBloomBitsPerKey+1))
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), field) {
			t.Fatalf("Open with %s %d: %v, want ErrInvalidOptions naming it", field, MaxBloomBitsPerKey+1, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a rejected Open left %s behind (stat: %v)", dir, err)
		}
		db, err := Open(dir, with(MaxBloomBitsPerKey))
		if err != nil {
			t.Fatalf("Open with %s %d: %v", field, MaxBloomBitsPerKey, err)
		}
		// Two overlapping flushes: the second is a level-0 table.
		for round := range 2 {
			if err := db.Put([]byte("k"), fmt.Appendf(nil, "v%d", round)); err != nil {
				t.Fatal(err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if v, err := db.Get([]byte("k")); err != nil || string(v) != "v1" {
			t.Fatalf("Get after flushes with %s %d: %q, %v", field, MaxBloomBitsPerKey, v, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestL0BloomBitsDefault: L0BloomBitsPerKey defaults to
// DefaultL0BloomBitsPerKey, or to BloomBitsPerKey where that is larger; a
// value given is kept.
func TestL0BloomBitsDefault(t *testing.T) {
	for _, c := range []struct{ bits, l0, want int }{
		{0, 0, DefaultL0BloomBitsPerKey},
		{8, 0, DefaultL0BloomBitsPerKey},
		{DefaultL0BloomBitsPerKey + 4, 0, DefaultL0BloomBitsPerKey + 4},
		{DefaultL0BloomBitsPerKey + 4, 12, 12},
	} {
		db, err := Open(t.TempDir(), &Options{BloomBitsPerKey: c.bits, L0BloomBitsPerKey: c.l0})
		if err != nil {
			t.Fatal(err)
		}
		got := db.opts.L0BloomBitsPerKey
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("BloomBitsPerKey %d, L0BloomBitsPerKey %d: resolved to %d, want %d", c.bits, c.l0, got, c.want)
		}
	}
}

// TestOpenRejectsShadowedRatioAboveOne: an L0ShadowedRatio above 1 (a
// share) fails Open with ErrInvalidOptions naming it, before anything is
// created; 1 (off) is accepted.
func TestOpenRejectsShadowedRatioAboveOne(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	_, err := Open(dir, &Options{L0ShadowedRatio: 1.5})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "L0ShadowedRatio") {
		t.Fatalf("Open with L0ShadowedRatio 1.5: %v, want ErrInvalidOptions naming it", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a rejected Open left %s behind (stat: %v)", dir, err)
	}
	db, err := Open(dir, &Options{L0ShadowedRatio: 1})
	if err != nil {
		t.Fatalf("Open with L0ShadowedRatio 1: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRejectsNegativeOptions: a negative value in any numeric field of
// Options fails Open with ErrInvalidOptions naming the field, before
// anything is created. The fields are found by reflection, so a new one is
// covered without editing the test.
func TestOpenRejectsNegativeOptions(t *testing.T) {
	typ := reflect.TypeFor[Options]()
	n := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		o := Options{}
		v := reflect.ValueOf(&o).Elem().Field(i)
		switch v.Kind() {
		case reflect.Int, reflect.Int64:
			v.SetInt(-1)
		case reflect.Float64:
			v.SetFloat(-1)
		default:
			continue
		}
		n++
		dir := filepath.Join(t.TempDir(), "db")
		_, err := Open(dir, &o)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), f.Name) {
			t.Errorf("Open with %s = -1: %v, want ErrInvalidOptions naming it", f.Name, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Open with %s = -1 left %s behind (stat: %v)", f.Name, dir, err)
		}
	}
	if n < 20 {
		t.Fatalf("only %d numeric Options fields found", n)
	}
}

// TestOpenRejectsUnknownCompression: a Compression that is none of the
// sstable constants fails Open with ErrInvalidOptions; the zero value
// resolves to Snappy and NoCompression stays none.
func TestOpenRejectsUnknownCompression(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	_, err := Open(dir, &Options{Compression: sstable.ZstdCompression + 1})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Compression") {
		t.Fatalf("Open with Compression %d: %v, want ErrInvalidOptions naming it", sstable.ZstdCompression+1, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a rejected Open left %s behind (stat: %v)", dir, err)
	}
	for in, want := range map[sstable.Compression]sstable.Compression{
		sstable.DefaultCompression: sstable.SnappyCompression,
		sstable.NoCompression:      sstable.NoCompression,
		sstable.ZstdCompression:    sstable.ZstdCompression,
	} {
		o, err := (&Options{Compression: in}).withDefaults()
		if err != nil {
			t.Fatalf("Compression %v: %v", in, err)
		}
		if o.Compression != want {
			t.Errorf("Compression %v resolves to %v, want %v", in, o.Compression, want)
		}
	}
}

// TestDisableOptions: each Disable field resolves the value it turns off to
// "off" on a local directory and on an object store, and setting both the
// flag and the value fails Open with ErrInvalidOptions.
func TestDisableOptions(t *testing.T) {
	for _, c := range []struct {
		flag, field string
		off         func(db *DB) bool
	}{
		{"DisableObsoleteFileGrace", "ObsoleteFileGracePeriod", func(db *DB) bool { return db.opts.ObsoleteFileGracePeriod == 0 }},
		{"DisableAgeRotation", "MemtableExpiryFraction", func(db *DB) bool { return db.opts.MemtableExpiryFraction == 0 }},
		{"DisableWALMinWriteInterval", "WALMinWriteInterval", func(db *DB) bool {
			return db.opts.WALMinWriteInterval == 0 && db.logWriter.MinWriteInterval() == 0
		}},
		{"DisableBloomFilters", "BloomBitsPerKey", func(db *DB) bool { return db.opts.BloomBitsPerKey == 0 }},
		{"DisableBloomFilters", "L0BloomBitsPerKey", func(db *DB) bool { return db.opts.L0BloomBitsPerKey == 0 }},
		{"DisableBlockCache", "BlockCacheSize", func(db *DB) bool { return db.opts.BlockCacheSize == 0 && db.cache == nil }},
		{"DisableReadAhead", "ReadAheadSize", func(db *DB) bool { return db.opts.ReadAheadSize == 0 && db.compactionReadAhead == 0 }},
		{"DisablePeriodicCompaction", "PeriodicCompactionInterval", func(db *DB) bool {
			return db.pickerOptsValue().PeriodicIntervalMillis == 0
		}},
	} {
		t.Run(c.flag, func(t *testing.T) {
			for _, remote := range []bool{false, true} {
				o := Options{}
				if remote {
					o.Storage = fencingMem{storage.NewMem()}
				}
				reflect.ValueOf(&o).Elem().FieldByName(c.flag).SetBool(true)
				db, err := Open(t.TempDir(), &o)
				if err != nil {
					t.Fatal(err)
				}
				off := c.off(db)
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				if !off {
					t.Fatalf("remote %v: %s did not turn %s off", remote, c.flag, c.field)
				}
			}
			o := Options{}
			reflect.ValueOf(&o).Elem().FieldByName(c.flag).SetBool(true)
			switch v := reflect.ValueOf(&o).Elem().FieldByName(c.field); v.Kind() {
			case reflect.Float64:
				v.SetFloat(0.5)
			default:
				v.SetInt(int64(time.Second))
			}
			dir := filepath.Join(t.TempDir(), "db")
			if _, err := Open(dir, &o); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("Open with %s and %s: %v, want ErrInvalidOptions naming both", c.flag, c.field, err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a rejected Open left %s behind (stat: %v)", dir, err)
			}
		})
	}
}

// TestL0StallDefaultsScaleWithMemtable: the default level-0 slowdown and
// stop thresholds are 8 and 12 files at the 16 MiB reference memtable and
// above; below it the slowdown threshold doubles (never more) and the stop
// threshold scales with 16 MiB over the memtable size up to three times (36
// files below 6 MiB+), and explicit thresholds are kept as given (the
// slowdown still clamped to the stop threshold).
func TestL0StallDefaultsScaleWithMemtable(t *testing.T) {
	for _, c := range []struct {
		memtable, wantMemtable int64
		slowdown, stop         int
		wantSlowdown, wantStop int
	}{
		{0, DefaultMemtableSize, 0, 0, 8 * l0StallScale(DefaultMemtableSize), 12 * l0StopScale(DefaultMemtableSize)},
		{64 << 20, 64 << 20, 0, 0, 8, 12},
		{16 << 20, 16 << 20, 0, 0, 8, 12},
		{16<<20 - 1, 16<<20 - 1, 0, 0, 16, 24},
		{8 << 20, 8 << 20, 0, 0, 16, 24},
		{8<<20 - 1, 8<<20 - 1, 0, 0, 16, 36},
		{6 << 20, 6 << 20, 0, 0, 16, 36},
		{4 << 20, 4 << 20, 0, 0, 16, 36},
		{1 << 20, 1 << 20, 0, 0, 16, 36}, // capped at twice and three times
		{4 << 10, 4 << 10, 0, 0, 16, 36},
		{8 << 20, 8 << 20, 8, 12, 8, 12},  // explicit: as given
		{8 << 20, 8 << 20, 0, 6, 6, 6},    // default slowdown clamped to an explicit stop
		{8 << 20, 8 << 20, 10, 0, 10, 24}, // explicit slowdown, default stop
	} {
		o, err := (&Options{MemtableSize: c.memtable, L0SlowdownWritesThreshold: c.slowdown, L0StopWritesThreshold: c.stop}).withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if o.MemtableSize != c.wantMemtable || o.L0SlowdownWritesThreshold != c.wantSlowdown || o.L0StopWritesThreshold != c.wantStop {
			t.Errorf("MemtableSize %d, thresholds %d/%d: got memtable %d, thresholds %d/%d; want %d, %d/%d",
				c.memtable, c.slowdown, c.stop, o.MemtableSize, o.L0SlowdownWritesThreshold, o.L0StopWritesThreshold,
				c.wantMemtable, c.wantSlowdown, c.wantStop)
		}
	}
	// The resolved thresholds are the ones the write path and the picker use.
	db, err := Open(filepath.Join(t.TempDir(), "db"), &Options{MemtableSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.pickerOptsValue().L0SlowdownWritesThreshold; got != 16 || db.opts.L0StopWritesThreshold != 24 {
		t.Fatalf("8 MiB memtable: DB uses thresholds %d/%d, want 16/24", got, db.opts.L0StopWritesThreshold)
	}
}

// fencingMem is an in-memory store that looks like an object store.
type fencingMem struct{ *storage.Mem }

func (fencingMem) FenceLog(string) error { return nil }

func TestReadAheadSizeDefault(t *testing.T) {
	for _, c := range []struct {
		name    string
		remote  bool
		cache   bool
		set     int
		disable bool
		want    int
	}{
		{"local default", false, false, 0, false, defaultLocalReadAhead},
		{"local set", false, false, 128 << 10, false, 128 << 10},
		{"local disabled", false, false, 0, true, 0},
		{"object store default", true, false, 0, false, defaultObjectReadAhead},
		{"object store set", true, false, 64 << 10, false, 64 << 10},
		{"object store disabled", true, false, 0, true, 0},
		{"object store with disk cache", true, true, 0, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &Options{ReadAheadSize: c.set, DisableReadAhead: c.disable}
			if c.remote {
				o.Storage = fencingMem{storage.NewMem()}
			}
			if c.cache {
				o.ObjectCacheDir = t.TempDir()
			}
			db, err := Open(t.TempDir(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got := db.opts.ReadAheadSize; got != c.want {
				t.Fatalf("ReadAheadSize = %d, want %d", got, c.want)
			}
			// Only the local default gives compactions windows of their own.
			wantComp := 0
			if !c.remote && c.set == 0 && !c.disable {
				wantComp = localCompactionReadAhead
			}
			if db.compactionReadAhead != wantComp {
				t.Fatalf("compactionReadAhead = %d, want %d", db.compactionReadAhead, wantComp)
			}
			if o.ReadAheadSize != c.set {
				t.Fatalf("Open changed the caller's Options")
			}
		})
	}
}

// Scans, compactions and reopenings with read-ahead see every row.
func TestReadAheadDBScan(t *testing.T) {
	st := storage.NewMem()
	const n = 5000
	scan := func(readAhead int) {
		t.Helper()
		db, err := Open("", &Options{Storage: st, ReadAheadSize: readAhead, DisableReadAhead: readAhead == 0, DisableBlockCache: true, BlockSize: 512})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			if want := fmt.Sprintf("k%06d", i); string(it.Key()) != want || string(it.Value()) != want+"-v" {
				t.Fatalf("read-ahead %d: row %d is %q=%q", readAhead, i, it.Key(), it.Value())
			}
			i++
		}
		if err := it.Close(); err != nil || i != n {
			t.Fatalf("read-ahead %d: %d rows, err %v", readAhead, i, err)
		}
	}
	db, err := Open("", &Options{Storage: st, ReadAheadSize: 8 << 10, BlockSize: 512, MemtableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		k := fmt.Sprintf("k%06d", i)
		if err := db.Put([]byte(k), []byte(k+"-v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil { // reads the flushed tables ahead
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	scan(0)
	scan(4 << 10)
	scan(1 << 20)
}

// TestDefaultMemtableSize checks that a zero Options.MemtableSize means
// DefaultMemtableSize: the active memtable is not rotated while it is below
// that size and is rotated by the first write that finds it full.
func TestDefaultMemtableSize(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	if db.opts.MemtableSize != DefaultMemtableSize {
		t.Fatalf("resolved MemtableSize = %d, want %d", db.opts.MemtableSize, DefaultMemtableSize)
	}
	val := make([]byte, 4<<10)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%08d", i) }
	i := 0
	for ; db.Metrics().MemtableBytes < DefaultMemtableSize; i++ {
		if err := db.Put(key(i), val); err != nil {
			t.Fatal(err)
		}
		if m := db.Metrics(); m.ImmutableMemtables != 0 || m.Flushes != 0 {
			t.Fatalf("memtable rotated at %d bytes, below the default %d", m.MemtableBytes, DefaultMemtableSize)
		}
	}
	if err := db.Put(key(i), val); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.ImmutableMemtables+int(m.Flushes) == 0 || m.MemtableBytes >= DefaultMemtableSize {
		t.Fatalf("full memtable not rotated: active %d bytes, %d immutable, %d flushes",
			m.MemtableBytes, m.ImmutableMemtables, m.Flushes)
	}
}

// Tests of the documentation: every default that a table in docs/ states is
// checked against the code, so that a changed default fails until the docs
// change with it, and every test that docs/testing.md's Promises table names
// must exist.
//
// The tables read here, and the form of their cells:
//
//	docs/usage.md  | option | default | notes |            every exported Options field, one row each
//	docs/usage.md  | field | URL parameter | default |      every s3.Config field, one row each
//	docs/usage.md  `MaxKeySize` = 64 KiB (and the other Max*Size limits)
//	docs/cli.md    | command | flag | default |            every flag with a default in cmd/mayfly
//	docs/testing.md | promise | stated in | tests |        `dir` TestA, TestB; `dir2` TestC
//
// A default cell is one or more clauses separated by ";", each a value
// optionally followed by a condition ("on an object store", "with
// `MemtableSize` < 16 MiB", ...); parenthesised text is a remark and is not
// parsed, except that a backticked exported constant named in it must
// equal the value. A value is a number with an optional size unit (KiB, MiB,
// GiB) or duration unit (ms, s, minute, hour, ...), true or false, an
// sstable.Compression name, or, for fields whose default is their zero value
// (nil, ""), text describing what that zero means. A cell, row or condition
// the parser does not understand fails the test.

// mdTable is one markdown table of a documentation file.
type mdTable struct {
	file   string
	line   int // 1-based line of the header row
	header []string
	rows   []mdRow
}

type mdRow struct {
	line  int
	cells []string
}

// readTables returns every table of the markdown file at path (relative to
// the repository root).
func readTables(t *testing.T, path string) []mdTable {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var tables []mdTable
	for i := 0; i+1 < len(lines); i++ {
		if !isTableLine(lines[i]) || !isSeparatorLine(lines[i+1]) {
			continue
		}
		tb := mdTable{file: path, line: i + 1, header: splitCells(lines[i])}
		for j := range tb.header {
			tb.header[j] = strings.ToLower(tb.header[j])
		}
		j := i + 2
		for ; j < len(lines) && isTableLine(lines[j]); j++ {
			cells := splitCells(lines[j])
			if len(cells) != len(tb.header) {
				t.Fatalf("%s:%d: %d cells, the header has %d", path, j+1, len(cells), len(tb.header))
			}
			tb.rows = append(tb.rows, mdRow{line: j + 1, cells: cells})
		}
		tables = append(tables, tb)
		i = j - 1
	}
	return tables
}

func isTableLine(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "|") }

var separatorLine = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+\s*$`)

func isSeparatorLine(s string) bool { return separatorLine.MatchString(strings.TrimSpace(s)) }

// splitCells splits a table row at every "|" not escaped as "\|".
func splitCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// tablesWithHeader returns the tables whose header is exactly header; it
// fails the test if there is none.
func tablesWithHeader(t *testing.T, path string, header ...string) []mdTable {
	t.Helper()
	var out []mdTable
	for _, tb := range readTables(t, path) {
		if slicesEqual(tb.header, header) {
			out = append(out, tb)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no table with header %q", path, header)
	}
	return out
}

func slicesEqual(a, b []string) bool { return reflect.DeepEqual(a, b) }

var backticked = regexp.MustCompile("^`([^`]+)`$")

// identCell returns the single backticked word a cell holds.
func identCell(cell string) (string, bool) {
	m := backticked.FindStringSubmatch(cell)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// clause is one "value [condition]" part of a default cell.
type clause struct {
	value, cond string
	remarks     []string
}

// parseDefaultCell splits a default cell into clauses at the semicolons
// outside parentheses, taking parenthesised remarks out of each.
func parseDefaultCell(cell string) ([]clause, error) {
	var parts []string
	depth, start := 0, 0
	for i, r := range cell {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ';':
			if depth == 0 {
				parts = append(parts, cell[start:i])
				start = i + 1
			}
		}
		if depth < 0 {
			return nil, fmt.Errorf("unbalanced parentheses in %q", cell)
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced parentheses in %q", cell)
	}
	parts = append(parts, cell[start:])
	var out []clause
	for _, p := range parts {
		var c clause
		var text strings.Builder
		depth, from := 0, 0
		for i, r := range p {
			switch r {
			case '(':
				if depth == 0 {
					from = i + 1
				}
				depth++
			case ')':
				depth--
				if depth == 0 {
					c.remarks = append(c.remarks, p[from:i])
				}
			default:
				if depth == 0 {
					text.WriteRune(r)
				}
			}
		}
		s := strings.Join(strings.Fields(text.String()), " ")
		c.value = s
		cut := -1
		for _, marker := range []string{" locally", " on an object store", " with `"} {
			if i := strings.Index(s, marker); i >= 0 && (cut < 0 || i < cut) {
				cut = i
			}
		}
		if cut >= 0 {
			c.value, c.cond = s[:cut], s[cut+1:]
		}
		if c.value == "" {
			return nil, fmt.Errorf("clause %q of %q states no value", p, cell)
		}
		out = append(out, c)
	}
	return out, nil
}

var (
	sizeUnits = map[string]int64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
	durUnits  = map[string]time.Duration{
		"ns": time.Nanosecond, "ms": time.Millisecond, "s": time.Second,
		"second": time.Second, "seconds": time.Second, "min": time.Minute,
		"minute": time.Minute, "minutes": time.Minute, "h": time.Hour,
		"hour": time.Hour, "hours": time.Hour,
	}
	compressions = map[string]sstable.Compression{
		"`sstable.NoCompression`":     sstable.NoCompression,
		"`sstable.SnappyCompression`": sstable.SnappyCompression,
		"`sstable.ZstdCompression`":   sstable.ZstdCompression,
	}
	durationType    = reflect.TypeFor[time.Duration]()
	compressionType = reflect.TypeFor[sstable.Compression]()
	walRecoveryType = reflect.TypeFor[WALRecoveryMode]()
	loggerType      = reflect.TypeFor[*slog.Logger]()
)

// parseSize parses "N" or "N unit" with a size unit.
func parseSize(s string) (int64, error) {
	num, unit, _ := strings.Cut(s, " ")
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	if unit == "" {
		return n, nil
	}
	m, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown size unit %q", s, unit)
	}
	return n * m, nil
}

// parseDuration parses "0", "N unit" or a Go duration.
func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if num, unit, ok := strings.Cut(s, " "); ok {
		n, err := strconv.ParseInt(num, 10, 64)
		u, known := durUnits[unit]
		if err != nil || !known {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		return time.Duration(n) * u, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return d, nil
}

// checkValue reports whether the documented value text matches got, a
// field's resolved default.
func checkValue(text string, got reflect.Value) error {
	typ := got.Type()
	var want any
	var err error
	switch {
	case typ == durationType:
		want, err = parseDuration(text)
	case typ == compressionType:
		c, ok := compressions[text]
		if !ok {
			return fmt.Errorf("%q is not an sstable.Compression", text)
		}
		want = c
	case typ == walRecoveryType:
		m, ok := map[string]WALRecoveryMode{"`WALRecoveryStrict`": WALRecoveryStrict, "`WALRecoveryPointInTime`": WALRecoveryPointInTime}[text]
		if !ok {
			return fmt.Errorf("%q is not a WALRecoveryMode", text)
		}
		want = m
	case typ == loggerType:
		if text != "silent" {
			return fmt.Errorf("a *slog.Logger default must be documented as \"silent\", not %q", text)
		}
		if got.IsNil() || got.Interface().(*slog.Logger).Handler() != slog.DiscardHandler {
			return fmt.Errorf("documented silent, but the default logger is not slog.DiscardHandler")
		}
		return nil
	}
	if err != nil {
		return err
	}
	if want == nil {
		switch typ.Kind() {
		case reflect.Bool:
			b, perr := strconv.ParseBool(text)
			if perr != nil || (text != "true" && text != "false") {
				return fmt.Errorf("%q is not true or false", text)
			}
			want = b
		case reflect.Int, reflect.Int64:
			n, perr := parseSize(text)
			if perr != nil {
				return perr
			}
			want = reflect.ValueOf(n).Convert(typ).Interface()
		case reflect.Float64:
			f, perr := strconv.ParseFloat(text, 64)
			if perr != nil {
				return fmt.Errorf("%q is not a number", text)
			}
			want = f
		case reflect.String, reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Func, reflect.Map:
			// Descriptive text: the default is the zero value, whose meaning
			// the text states.
			if !got.IsZero() {
				return fmt.Errorf("documented as %q (the zero value), but the default is %v", text, got.Interface())
			}
			return nil
		default:
			return fmt.Errorf("no parser for a %v default", typ)
		}
	}
	if !reflect.DeepEqual(want, got.Interface()) {
		return fmt.Errorf("documented %s (%v), but the code's default is %v", text, want, got.Interface())
	}
	return nil
}

// docConstants are the exported constants a remark may name next to a value.
var docConstants = map[string]int64{
	"DefaultMemtableSize": DefaultMemtableSize,
	"MaxBloomBitsPerKey":  MaxBloomBitsPerKey,
	"MaxKeySize":          MaxKeySize,
	"MaxValueSize":        MaxValueSize,
	"MaxBatchSize":        MaxBatchSize,
}

var remarkIdent = regexp.MustCompile("`([A-Z][A-Za-z0-9]*)`")

// checkRemarkConstants checks the exported constants a clause's remarks name.
func checkRemarkConstants(c clause, got reflect.Value) error {
	for _, r := range c.remarks {
		for _, m := range remarkIdent.FindAllStringSubmatch(r, -1) {
			v, ok := docConstants[m[1]]
			if !ok {
				continue
			}
			if !got.CanInt() || got.Int() != v {
				return fmt.Errorf("remark names %s = %d, but the default is %v", m[1], v, got.Interface())
			}
		}
	}
	return nil
}

// optSetup is a situation a default can depend on.
type optSetup struct {
	remote   bool  // the storage is an object store
	cache    bool  // ObjectCacheDir is set
	memtable int64 // Options.MemtableSize; 0: the default
}

var memtableCond = regexp.MustCompile("^with `MemtableSize` (?:(≥) ([0-9]+ [KMG]iB))?(?: and )?(?:(<) ([0-9]+ [KMG]iB))?$")

// condSetups returns the setups in which a condition holds, sampling the
// ends of a MemtableSize range, and the zero setup when the default
// MemtableSize lies inside it.
func condSetups(cond string) ([]optSetup, error) {
	switch cond {
	case "", "locally":
		return []optSetup{{}}, nil
	case "on an object store":
		return []optSetup{{remote: true}}, nil
	case "on an object store with `ObjectCacheDir`":
		return []optSetup{{remote: true, cache: true}}, nil
	case "with `ObjectCacheDir`":
		return []optSetup{{cache: true}}, nil
	}
	m := memtableCond.FindStringSubmatch(cond)
	if m == nil || (m[1] == "" && m[3] == "") {
		return nil, fmt.Errorf("unknown condition %q", cond)
	}
	lo, hi := int64(64<<10), int64(0)
	var err error
	if m[1] != "" {
		if lo, err = parseSize(m[2]); err != nil {
			return nil, err
		}
	}
	if m[3] != "" {
		if hi, err = parseSize(m[4]); err != nil {
			return nil, err
		}
	}
	samples := []optSetup{{memtable: lo}}
	if hi > 0 {
		samples = append(samples, optSetup{memtable: hi - 1})
	} else {
		samples = append(samples, optSetup{memtable: 4 * lo})
	}
	if DefaultMemtableSize >= lo && (hi == 0 || DefaultMemtableSize < hi) {
		samples = append(samples, optSetup{})
	}
	return samples, nil
}

// resolvedOptions opens a database in setup s with otherwise zero Options
// and returns the Options it runs with: withDefaults and the defaults Open
// applies for the storage.
func resolvedOptions(t *testing.T, cache map[optSetup]Options, s optSetup) Options {
	t.Helper()
	if o, ok := cache[s]; ok {
		return o
	}
	o := &Options{MemtableSize: s.memtable}
	if s.remote {
		o.Storage = fencingMem{storage.NewMem()}
	}
	if s.cache {
		o.ObjectCacheDir = t.TempDir()
	}
	db, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatalf("open with %+v: %v", s, err)
	}
	got := *db.opts
	got.Storage = nil // the stand-in object store, not a default
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cache[s] = got
	return got
}

func TestDocsOptionDefaults(t *testing.T) {
	const doc = "docs/usage.md"
	typ := reflect.TypeFor[Options]()
	seen := map[string]int{}
	cache := map[optSetup]Options{}
	for _, tb := range tablesWithHeader(t, doc, "option", "default", "notes") {
		for _, row := range tb.rows {
			name, ok := identCell(row.cells[0])
			if !ok {
				t.Fatalf("%s:%d: option cell %q is not one `Field`", doc, row.line, row.cells[0])
			}
			f, ok := typ.FieldByName(name)
			if !ok || !f.IsExported() {
				t.Fatalf("%s:%d: Options has no field %s", doc, row.line, name)
			}
			if prev, dup := seen[name]; dup {
				t.Fatalf("%s:%d: %s already documented on line %d", doc, row.line, name, prev)
			}
			seen[name] = row.line
			clauses, err := parseDefaultCell(row.cells[1])
			if err != nil {
				t.Fatalf("%s:%d: %s: %v", doc, row.line, name, err)
			}
			coversZero := false
			for _, c := range clauses {
				setups, err := condSetups(c.cond)
				if err != nil {
					t.Fatalf("%s:%d: %s: %v", doc, row.line, name, err)
				}
				for _, s := range setups {
					coversZero = coversZero || s == optSetup{}
					o := resolvedOptions(t, cache, s)
					got := reflect.ValueOf(o).FieldByIndex(f.Index)
					if err := checkValue(c.value, got); err != nil {
						t.Errorf("%s:%d: %s (%+v): %v", doc, row.line, name, s, err)
					} else if err := checkRemarkConstants(c, got); err != nil {
						t.Errorf("%s:%d: %s: %v", doc, row.line, name, err)
					}
				}
			}
			if !coversZero {
				t.Errorf("%s:%d: %s: no clause states the default of zero Options on a local directory", doc, row.line, name)
			}
		}
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if _, ok := seen[f.Name]; f.IsExported() && !ok {
			t.Errorf("%s: Options.%s is in no option table", doc, f.Name)
		}
	}
}

var limitText = regexp.MustCompile("`(Max[A-Za-z]+Size)` = ([0-9]+ [KMG]iB)")

func TestDocsLimits(t *testing.T) {
	data, err := os.ReadFile("docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, m := range limitText.FindAllStringSubmatch(string(data), -1) {
		want, ok := docConstants[m[1]]
		if !ok {
			t.Fatalf("docs/usage.md states %s, which is no known limit", m[1])
		}
		n, err := parseSize(m[2])
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("docs/usage.md: %s = %s, but the code says %d", m[1], m[2], want)
		}
		found[m[1]] = true
	}
	for _, name := range []string{"MaxKeySize", "MaxValueSize", "MaxBatchSize"} {
		if !found[name] {
			t.Errorf("docs/usage.md does not state %s", name)
		}
	}
}

var l0RatioText = regexp.MustCompile("`compaction.(L0BottomRatio|L0NewKeyRatio)` = ([0-9.]+)")

// TestDocsL0BottomRatio: the ratios usage.md states for level 0's merges
// over a bottom base level, for all rows and for new keys, are the
// compaction package's.
func TestDocsL0BottomRatio(t *testing.T) {
	data, err := os.ReadFile("docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"L0BottomRatio": compaction.L0BottomRatio, "L0NewKeyRatio": compaction.L0NewKeyRatio}
	seen := map[string]bool{}
	for _, m := range l0RatioText.FindAllSubmatch(data, -1) {
		name := string(m[1])
		seen[name] = true
		if got, err := strconv.ParseFloat(string(m[2]), 64); err != nil || got != want[name] {
			t.Errorf("docs/usage.md: compaction.%s = %s, but the code says %v", name, m[2], want[name])
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("docs/usage.md does not state compaction.%s", name)
		}
	}
}

// s3Defaults returns the Config an s3.Store built from the bare URL
// s3://bucket runs with. The fields set only to reach the stub server
// (endpoint, region, path style, credentials) keep the bare URL's values.
func s3Defaults(t *testing.T) s3.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			w.WriteHeader(http.StatusNotImplemented)
		}
	}))
	defer srv.Close()
	bare, err := s3.ParseURL("s3://bucket")
	if err != nil {
		t.Fatal(err)
	}
	cfg := bare
	cfg.Endpoint, cfg.Region, cfg.PathStyle = srv.URL, "us-east-1", true
	cfg.AccessKey, cfg.SecretKey = "docs-test", "docs-test"
	st, err := s3.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := st.Config()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	gv, bv, cv := reflect.ValueOf(&got).Elem(), reflect.ValueOf(bare), reflect.ValueOf(cfg)
	for i := range gv.NumField() {
		if !reflect.DeepEqual(bv.Field(i).Interface(), cv.Field(i).Interface()) {
			gv.Field(i).Set(bv.Field(i))
		}
	}
	return got
}

// urlSample is a valid URL parameter value for a field of type typ, and the
// value the field then holds.
func urlSample(field string, typ reflect.Type) (string, any) {
	switch {
	case field == "Endpoint":
		return "http://127.0.0.1:1", "http://127.0.0.1:1"
	case typ == durationType:
		return "7s", 7 * time.Second
	case typ.Kind() == reflect.Bool:
		return "true", true
	case typ.Kind() == reflect.String:
		return "sample", "sample"
	default:
		return "7", reflect.ValueOf(int64(7)).Convert(typ).Interface()
	}
}

var snakeBoundary = regexp.MustCompile("([a-z0-9])([A-Z])")

func snakeCase(s string) string { return strings.ToLower(snakeBoundary.ReplaceAllString(s, "${1}_$2")) }

func TestDocsS3Defaults(t *testing.T) {
	const doc = "docs/usage.md"
	typ := reflect.TypeFor[s3.Config]()
	defaults := reflect.ValueOf(s3Defaults(t))
	seen := map[string]bool{}
	for _, tb := range tablesWithHeader(t, doc, "field", "url parameter", "default") {
		for _, row := range tb.rows {
			at := fmt.Sprintf("%s:%d", doc, row.line)
			name, ok := identCell(row.cells[0])
			if !ok {
				t.Fatalf("%s: field cell %q is not one `Field`", at, row.cells[0])
			}
			f, ok := typ.FieldByName(name)
			if !ok || seen[name] {
				t.Fatalf("%s: s3.Config has no field %s, or it is documented twice", at, name)
			}
			seen[name] = true
			checkS3URLParam(t, at, f, row.cells[1])
			if name == "Bucket" {
				if row.cells[2] != "required" {
					t.Errorf("%s: Bucket's default must read \"required\"", at)
				}
				if _, err := s3.New(context.Background(), s3.Config{}); err == nil {
					t.Errorf("%s: s3.New accepts a Config without Bucket", at)
				}
				continue
			}
			clauses, err := parseDefaultCell(row.cells[2])
			if err != nil {
				t.Fatalf("%s: %v", at, err)
			}
			if len(clauses) != 1 || clauses[0].cond != "" {
				t.Fatalf("%s: an s3.Config default is one value without a condition, not %q", at, row.cells[2])
			}
			if err := checkValue(clauses[0].value, defaults.FieldByIndex(f.Index)); err != nil {
				t.Errorf("%s: %s: %v", at, name, err)
			}
		}
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.IsExported() && !seen[f.Name] {
			t.Errorf("%s: s3.Config.%s is not in the object store table", doc, f.Name)
		}
	}
}

// checkS3URLParam checks a URL parameter cell: "—" (ParseURL must reject
// the field's snake_case name), the URL form `s3://bucket/prefix` (Bucket
// and Prefix), or backticked parameter names ParseURL must accept for f.
func checkS3URLParam(t *testing.T, at string, f reflect.StructField, cell string) {
	t.Helper()
	if cell == "—" {
		v, _ := urlSample(f.Name, f.Type)
		if _, err := s3.ParseURL("s3://bucket?" + snakeCase(f.Name) + "=" + v); err == nil {
			t.Errorf("%s: %s has no URL parameter in the docs, but ParseURL accepts %s", at, f.Name, snakeCase(f.Name))
		}
		return
	}
	if cell == "`s3://bucket/prefix`" {
		c, err := s3.ParseURL("s3://bkt/a/b")
		if err != nil {
			t.Fatal(err)
		}
		if got := reflect.ValueOf(c).FieldByIndex(f.Index).Interface(); got != map[string]string{"Bucket": "bkt", "Prefix": "a/b"}[f.Name] {
			t.Errorf("%s: s3://bkt/a/b gives %s = %v", at, f.Name, got)
		}
		return
	}
	params := regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(cell, -1)
	if len(params) == 0 {
		t.Fatalf("%s: URL parameter cell %q names no parameter", at, cell)
	}
	for _, p := range params {
		v, want := urlSample(f.Name, f.Type)
		c, err := s3.ParseURL("s3://bucket?" + p[1] + "=" + v)
		if err != nil {
			t.Errorf("%s: ParseURL rejects the documented parameter %s: %v", at, p[1], err)
			continue
		}
		if got := reflect.ValueOf(c).FieldByIndex(f.Index).Interface(); got != want {
			t.Errorf("%s: %s=%s gives %s = %v, want %v", at, p[1], v, f.Name, got, want)
		}
	}
}

// cliFlagDefaults reads cmd/mayfly's sources and returns every flag that
// has a Value, keyed by "command --flag".
func cliFlagDefaults(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("cmd/mayfly/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cmd/mayfly sources: %v", err)
	}
	var parsed []*ast.File
	consts := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
								consts[n.Name] = lit.Value
							}
						}
					}
				}
			}
		}
	}
	// Each flag literal written in a command's Flags belongs to that
	// command; a flag literal with a Value anywhere else (a helper
	// function's) cannot be attributed and fails the test.
	owner := map[*ast.CompositeLit]string{}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			cmd, ok := n.(*ast.CompositeLit)
			if !ok || !isCLIType(cmd.Type, "Command") {
				return true
			}
			flags, ok := field(cmd, "Flags").(*ast.CompositeLit)
			if !ok {
				return true
			}
			name := stringField(t, fset, cmd, "Name", consts)
			for _, e := range flags.Elts {
				if u, ok := e.(*ast.UnaryExpr); ok {
					if lit, ok := ast.Unparen(u.X).(*ast.CompositeLit); ok {
						owner[lit] = name
					}
				}
			}
			return true
		})
	}
	out := map[string]string{}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || field(lit, "Value") == nil {
				return true
			}
			if sel, ok := lit.Type.(*ast.SelectorExpr); !ok || !isCLIType(sel, sel.Sel.Name) || !strings.HasSuffix(sel.Sel.Name, "Flag") {
				return true
			}
			cmd, ok := owner[lit]
			if !ok {
				t.Fatalf("%v: a flag with a default outside a command's Flags list", fset.Position(lit.Pos()))
			}
			key := cmd + " --" + stringField(t, fset, lit, "Name", consts)
			if _, dup := out[key]; dup {
				t.Fatalf("%v: two commands define %s with a default", fset.Position(lit.Pos()), key)
			}
			out[key] = stringField(t, fset, lit, "Value", consts)
			return true
		})
	}
	return out
}

func isCLIType(e ast.Expr, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "cli" && sel.Sel.Name == name
}

// field returns the value of key in a keyed composite literal, or nil.
func field(lit *ast.CompositeLit, key string) ast.Expr {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == key {
				return kv.Value
			}
		}
	}
	return nil
}

// stringField returns the literal text of lit's key field (strings
// unquoted, constants resolved); it fails on anything else.
func stringField(t *testing.T, fset *token.FileSet, lit *ast.CompositeLit, key string, consts map[string]string) string {
	t.Helper()
	raw := ""
	switch v := field(lit, key).(type) {
	case *ast.BasicLit:
		raw = v.Value
	case *ast.Ident:
		c, ok := consts[v.Name]
		switch {
		case v.Name == "true" || v.Name == "false":
			return v.Name
		case ok:
			raw = c
		default:
			t.Fatalf("%v: cannot resolve %s: %s", fset.Position(v.Pos()), key, v.Name)
		}
	default:
		t.Fatalf("%v: %s is not a literal or constant", fset.Position(lit.Pos()), key)
	}
	if s, err := strconv.Unquote(raw); err == nil {
		return s
	}
	return raw
}

func TestDocsCLIFlagDefaults(t *testing.T) {
	const doc = "docs/cli.md"
	code := cliFlagDefaults(t)
	if len(code) == 0 {
		t.Fatal("found no flag with a default in cmd/mayfly: the source parser is broken")
	}
	seen := map[string]bool{}
	for _, tb := range tablesWithHeader(t, doc, "command", "flag", "default") {
		for _, row := range tb.rows {
			cmd, ok1 := identCell(row.cells[0])
			flag, ok2 := identCell(row.cells[1])
			if !ok1 || !ok2 || !strings.HasPrefix(flag, "--") {
				t.Fatalf("%s:%d: want `command` and `--flag`, got %q", doc, row.line, row.cells[:2])
			}
			key := cmd + " " + flag
			want, ok := code[key]
			if !ok {
				t.Errorf("%s:%d: cmd/mayfly has no flag %s with a default", doc, row.line, key)
				continue
			}
			seen[key] = true
			if row.cells[2] != want {
				t.Errorf("%s:%d: %s documented as %q, the code's default is %q", doc, row.line, key, row.cells[2], want)
			}
		}
	}
	for key, v := range code {
		if !seen[key] {
			t.Errorf("%s: the default of %s (%s) is not in the flag table", doc, key, v)
		}
	}
}

var fuzzTimeDoc = regexp.MustCompile("`FUZZ_TIME` \\(default `([^`]+)`")

func TestDocsFuzzTime(t *testing.T) {
	script, err := os.ReadFile("scripts/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\$\{FUZZ_TIME:-([^}]+)\}`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/test.sh: no ${FUZZ_TIME:-default}")
	}
	doc, err := os.ReadFile("docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	stated := fuzzTimeDoc.FindAllSubmatch(doc, -1)
	if len(stated) == 0 {
		t.Fatal("docs/testing.md states no \"`FUZZ_TIME` (default `...`)\"")
	}
	for _, s := range stated {
		if string(s[1]) != string(m[1]) {
			t.Errorf("docs/testing.md: FUZZ_TIME default %s, scripts/test.sh uses %s", s[1], m[1])
		}
	}
}

var (
	promiseGroup = regexp.MustCompile("^`([a-z0-9/]+)` (.+)$")
	testName     = regexp.MustCompile(`^Test[A-Za-z0-9_]+$`)
)

func TestDocsPromisesNameExistingTests(t *testing.T) {
	const doc = "docs/testing.md"
	tests := 0
	for _, tb := range tablesWithHeader(t, doc, "promise", "stated in", "tests") {
		for _, row := range tb.rows {
			groups := strings.Split(row.cells[2], ";")
			for _, g := range groups {
				m := promiseGroup.FindStringSubmatch(strings.TrimSpace(g))
				if m == nil {
					t.Fatalf("%s:%d: %q is not \"`dir` TestA, TestB\"", doc, row.line, g)
				}
				dir := m[1]
				if dir == "mayfly" {
					dir = "."
				}
				srcs, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
				if err != nil || len(srcs) == 0 {
					t.Fatalf("%s:%d: no test files in %s", doc, row.line, m[1])
				}
				var all strings.Builder
				for _, s := range srcs {
					b, err := os.ReadFile(s)
					if err != nil {
						t.Fatal(err)
					}
					all.Write(b)
				}
				for _, name := range strings.Split(m[2], ",") {
					name = strings.Trim(strings.TrimSpace(name), "`")
					if !testName.MatchString(name) {
						t.Fatalf("%s:%d: %q is not a test name", doc, row.line, name)
					}
					if !strings.Contains(all.String(), "\nfunc "+name+"(") {
						t.Errorf("%s:%d: no func %s( in %s/*_test.go", doc, row.line, name, m[1])
					}
					tests++
				}
			}
		}
	}
	if tests == 0 {
		t.Fatalf("%s: the Promises table names no test", doc)
	}
}

// declaredStore is an in-memory store that declares its traits.
type declaredStore struct {
	*storage.Mem
	traits storage.Traits
}

func (s declaredStore) Traits() storage.Traits { return s.traits }

// TestStorageDefaultsFollowDeclaredTraits checks that the defaults that
// depend on the backend follow the traits it declares, not the interfaces
// it happens to implement.
func TestStorageDefaultsFollowDeclaredTraits(t *testing.T) {
	for _, c := range []struct {
		name              string
		store             storage.Storage
		grace             time.Duration
		readAhead         int
		compRA, raAfter   int
		independentMisses bool
	}{
		{"declared remote", declaredStore{storage.NewMem(), storage.Traits{Remote: true}}, time.Minute, defaultObjectReadAhead, 0, 0, false},
		{"declared local", declaredStore{storage.NewMem(), storage.Traits{}}, 0, defaultLocalReadAhead, localCompactionReadAhead, localReadAheadAfter, true},
		{"fencer declaring nothing", fencingMem{storage.NewMem()}, time.Minute, defaultObjectReadAhead, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &Options{Storage: c.store}
			db, err := Open("", o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if db.opts.ObsoleteFileGracePeriod != c.grace || db.opts.ReadAheadSize != c.readAhead {
				t.Errorf("grace %v, read-ahead %d; want %v, %d", db.opts.ObsoleteFileGracePeriod, db.opts.ReadAheadSize, c.grace, c.readAhead)
			}
			if db.compactionReadAhead != c.compRA || db.readAheadAfter != c.raAfter || db.localTables != c.independentMisses {
				t.Errorf("compaction read-ahead %d, read ahead after %d, independent misses %v; want %d, %d, %v",
					db.compactionReadAhead, db.readAheadAfter, db.localTables, c.compRA, c.raAfter, c.independentMisses)
			}
			if o.ObsoleteFileGracePeriod != 0 || o.ReadAheadSize != 0 {
				t.Error("Open changed the caller's Options")
			}
		})
	}
}

// TestOpenRefusesLockFreeWithoutFencing: a backend that declares itself
// lock-free but fences no log could not keep two writers apart.
func TestOpenRefusesLockFreeWithoutFencing(t *testing.T) {
	mem := storage.NewMem()
	_, err := Open("", &Options{Storage: declaredStore{mem, storage.Traits{Remote: true, LockFree: true}}})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "LogFencer") {
		t.Fatalf("Open = %v; want an error wrapping ErrInvalidOptions naming storage.LogFencer", err)
	}
	if names, _ := mem.List("manifest"); len(names) != 0 {
		t.Fatalf("the refused Open wrote %v", names)
	}
}
