package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/mayflydb/mayfly/format"
)

func buildBlockedFilter(t testing.TB, n, bitsPerKey int, key func(i int) []byte) *tableFilter {
	t.Helper()
	fw := newFilterWriter(bitsPerKey)
	defer fw.release()
	for i := range n {
		fw.add(key(i))
	}
	b, err := fw.build()
	if err != nil {
		t.Fatal(err)
	}
	f, err := decodeFilter(b, "test.sst", 100)
	if err != nil {
		t.Fatal(err)
	}
	if f.legacy != nil {
		t.Fatal("writer built a legacy filter")
	}
	return f
}

// TestBlockedFilterFPRate checks that a blocked filter has no false
// negatives and a false-positive rate near the documented 0.9-1.0% at 10
// bits per key (a standard bloom filter is at ~0.8%), on keys shaped like
// the benchmark's (a long shared prefix) and on short keys.
func TestBlockedFilterFPRate(t *testing.T) {
	const n = 50_000
	for _, kind := range []struct {
		name string
		key  func(i int) []byte
	}{
		{"prefixed", func(i int) []byte { return fmt.Appendf(nil, "user/00000000/%010d", i) }},
		{"short", func(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }},
		{"1byte-step", func(i int) []byte { return fmt.Appendf(nil, "k%d", i) }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			f := buildBlockedFilter(t, n, 10, func(i int) []byte { return kind.key(2 * i) })
			for i := range n {
				if !f.mayContain(kind.key(2 * i)) {
					t.Fatalf("false negative for key %d", 2*i)
				}
			}
			fp := 0
			for i := range n {
				if f.mayContain(kind.key(2*i + 1)) {
					fp++
				}
			}
			rate := float64(fp) / n
			t.Logf("false-positive rate %.3f%%", 100*rate)
			if rate > 0.02 {
				t.Fatalf("false-positive rate %.3f%%, want under 2%%", 100*rate)
			}
		})
	}
}

// TestFilterHashStable pins filterHash: it is part of the on-disk format, so
// a change must come with a new filter type.
func TestFilterHashStable(t *testing.T) {
	for _, c := range []struct {
		key  string
		want uint64
	}{
		{"", 0xd8a310150df90781},
		{"a", 0x83e31bbc7ab96180},
		{"user/0000000001", 0x035176427ab9abf6},
		{"0123456789abcdef", 0xd9fcc2ae102cbeb5},
	} {
		if got := filterHash([]byte(c.key)); got != c.want {
			t.Errorf("filterHash(%q) = %#x, want %#x", c.key, got, c.want)
		}
	}
}

func TestAlignedWords(t *testing.T) {
	for n := 1; n < 64; n++ {
		w := alignedWords(n)
		if len(w) != n || cap(w) != n {
			t.Fatalf("alignedWords(%d): len %d cap %d", n, len(w), cap(w))
		}
		if p := uintptr(unsafe.Pointer(&w[0])); p%blockedLineBytes != 0 {
			t.Fatalf("alignedWords(%d) at %#x, not 64-byte aligned", n, p)
		}
	}
}

// TestLegacyFilterTableReadable opens a table written before the blocked
// filter (testdata/legacy-filter-v1.sst: keys ukeyFor(0..1999), Snappy,
// 10 bloom bits per key, written by commit 2f05fa6): its type-0 filter must
// still be decoded and used.
func TestLegacyFilterTableReadable(t *testing.T) {
	data, err := os.ReadFile("testdata/legacy-filter-v1.sst")
	if err != nil {
		t.Fatal(err)
	}
	r := openTable(t, data, NewCache(1<<20))
	if f := mustFilter(t, r); f == nil || f.legacy == nil {
		t.Fatalf("filter = %+v, want a legacy filter", f)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	fp := 0
	for i := range 2000 {
		row, found, err := r.Get(ukeyFor(i), format.MaxSeq)
		if err != nil || !found || string(row.Value) != "v" {
			t.Fatalf("Get(%q) = %q, %v, %v", ukeyFor(i), row.Value, found, err)
		}
		absent := fmt.Appendf(nil, "key%08d", 2*i+1)
		if mayContain(t, r, absent) {
			fp++
		}
		if _, found, err := r.Get(absent, format.MaxSeq); found || err != nil {
			t.Fatalf("Get(%q) = %v, %v for an absent key", absent, found, err)
		}
	}
	if fp > 100 {
		t.Fatalf("legacy filter passed %d of 2000 absent keys", fp)
	}
}

// TestNewTableHasBlockedFilter checks that the writer now writes type 1.
func TestNewTableHasBlockedFilter(t *testing.T) {
	data, _ := buildTable(t, genRows(500, 1), WriterOptions{BloomBitsPerKey: 10})
	r := openTable(t, data, nil)
	if f := mustFilter(t, r); f == nil || f.legacy != nil || f.blocked.k != 7 {
		t.Fatalf("filter = %+v, want a blocked filter with 7 probes", f)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestBlockedFilterCorrupt feeds decodeFilter damaged blocked filters: each
// must be a corruption error naming the file and offset, never a panic.
func TestBlockedFilterCorrupt(t *testing.T) {
	fw := newFilterWriter(10)
	for i := range 100 {
		fw.add(ukeyFor(i))
	}
	good, err := fw.build()
	fw.release()
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(b []byte) []byte{
		"empty":         func(b []byte) []byte { return b[:0] },
		"unknown type":  func(b []byte) []byte { b[0] = 2; return b },
		"short header":  func(b []byte) []byte { return b[:blockedHeaderLen-1] },
		"zero probes":   func(b []byte) []byte { b[1] = 0; return b },
		"many probes":   func(b []byte) []byte { b[1] = maxBlockedProbes + 1; return b },
		"reserved":      func(b []byte) []byte { b[3] = 1; return b },
		"zero lines":    func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 0); return b[:blockedHeaderLen] },
		"lines too big": func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 1<<31); return b },
		"truncated":     func(b []byte) []byte { return b[:len(b)-1] },
		"extra line":    func(b []byte) []byte { return append(b, make([]byte, blockedLineBytes)...) },
	} {
		b := mutate(append([]byte(nil), good...))
		_, err := decodeFilter(b, "bad.sst", 4242)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		var ce *format.CorruptionError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "bad.sst") || !strings.Contains(err.Error(), "4242") {
			t.Errorf("%s: error %v does not name file and offset", name, err)
		}
	}
}

// TestFormatVersions checks that new tables are written at version 2, at
// version 3 when they hold a deadline row, at FormatVersion (4) when they
// hold a merge operand, and read back with it; the legacy golden table is at version 1 and still opens, and a
// version above FormatVersion is rejected as corruption.
func TestFormatVersions(t *testing.T) {
	data, props := buildTable(t, genRows(10, 1), WriterOptions{BloomBitsPerKey: 10})
	if props.FormatVersion != plainFormatVersion {
		t.Fatalf("new table at version %d, want %d", props.FormatVersion, plainFormatVersion)
	}
	rows := genRows(10, 1)
	rows[3] = format.Row{Key: rows[3].Key, Seq: rows[3].Seq, Flags: format.FlagDeadline | format.FlagHasTS | format.FlagHasExpire, TS: 5, ExpireTS: 9}
	withDeadline, dprops := buildTable(t, rows, WriterOptions{BloomBitsPerKey: 10})
	if dprops.FormatVersion != deadlineFormatVersion {
		t.Fatalf("table with a deadline row at version %d, want %d", dprops.FormatVersion, deadlineFormatVersion)
	}
	dr := openTable(t, withDeadline, nil)
	if got := dr.Properties().FormatVersion; got != deadlineFormatVersion {
		t.Fatalf("reopened at version %d", got)
	}
	got, found, err := dr.Get(rows[3].Key, format.MaxSeq)
	if err != nil || !found || !got.IsDeadline() || got.Value != nil || got.ExpireTS != 9 {
		t.Fatalf("deadline row read back as %+v, %v, %v", got, found, err)
	}
	rows[5] = format.Row{Key: rows[5].Key, Seq: rows[5].Seq, Flags: format.FlagMerge | format.FlagHasTS, TS: 6, Value: []byte("+1")}
	withMerge, mprops := buildTable(t, rows, WriterOptions{BloomBitsPerKey: 10})
	if mprops.FormatVersion != FormatVersion {
		t.Fatalf("table with a merge operand at version %d, want %d", mprops.FormatVersion, FormatVersion)
	}
	mr := openTable(t, withMerge, nil)
	if got, found, err := mr.Get(rows[5].Key, rows[5].Seq); err != nil || !found || !got.IsMerge() || string(got.Value) != "+1" || got.TS != 6 {
		t.Fatalf("merge operand read back as %+v, %v, %v", got, found, err)
	}
	legacy, err := os.ReadFile("testdata/legacy-filter-v1.sst")
	if err != nil {
		t.Fatal(err)
	}
	if r := openTable(t, legacy, nil); r.Properties().FormatVersion != 1 {
		t.Fatalf("golden table at version %d, want 1", r.Properties().FormatVersion)
	}
	ft, err := decodeFooter(data[len(data)-FooterLen:], int64(len(data)), "t.sst")
	if err != nil {
		t.Fatal(err)
	}
	ft.version = FormatVersion + 1
	copy(data[len(data)-FooterLen:], ft.encode())
	if _, err := Open(newMemObject(data), ReaderOptions{Name: "t.sst"}); !errors.Is(err, format.ErrCorruption) || !strings.Contains(err.Error(), "unknown format version") {
		t.Fatalf("Open of a version %d table: %v", FormatVersion+1, err)
	}
}
