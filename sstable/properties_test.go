package sstable

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

func TestProperties(t *testing.T) {
	rows := []format.Row{
		{Key: []byte("a"), Seq: 10, Value: []byte("v1")},
		{Key: []byte("a"), Seq: 7, Flags: format.FlagTombstone},
		{Key: []byte("b"), Seq: 12, Flags: format.FlagHasTS | format.FlagHasExpire, TS: 500, ExpireTS: 9000, Value: []byte("vvv")},
		{Key: []byte("c"), Seq: 3, Flags: format.FlagHasTS | format.FlagHasExpire, TS: 400, ExpireTS: 7000, Value: []byte("w")},
		{Key: []byte("c"), Seq: 2, Flags: format.FlagHasTS, TS: 300, Value: []byte("x")},
		{Key: []byte("dd"), Seq: 20, Value: []byte("yyyy")},
	}
	data, got := buildTable(t, rows, WriterOptions{CreationTime: 1_700_000_000_123, BloomBitsPerKey: 10, BlockSize: 16})
	want := &Properties{
		FormatVersion: plainFormatVersion,
		TableStats: format.TableStats{
			RowFeatures:  format.FlagTombstone | format.FlagHasTS | format.FlagHasExpire,
			CreationTime: 1_700_000_000_123,
			MinTS:        300, MaxTS: 500,
			MinExpireTS: 7000, MaxExpireTS: 9000,
			NumRows: 6, NumTombstones: 1, NumTTLRows: 2,
			TTLBytes:    uint64(len("b") + len("vvv") + len("c") + len("w")),
			SmallestSeq: 2, LargestSeq: 20,
			Size:     uint64(len(data)),
			Smallest: format.AppendInternalKey(nil, &rows[0]),
			Largest:  format.AppendInternalKey(nil, &rows[5]),
		},
		RawKeyBytes:   1 + 1 + 1 + 1 + 1 + 2,
		RawValueBytes: 2 + 3 + 1 + 1 + 4,
		NumDataBlocks: got.NumDataBlocks,
	}
	if got.NumDataBlocks < 2 {
		t.Errorf("NumDataBlocks = %d with 16-byte blocks", got.NumDataBlocks)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("writer properties\n got %+v\nwant %+v", got, want)
	}
	r := openTable(t, data, nil)
	if !reflect.DeepEqual(r.Properties(), want) {
		t.Fatalf("reader properties\n got %+v\nwant %+v", r.Properties(), want)
	}
}

func TestPropertiesNoTTL(t *testing.T) {
	rows := []format.Row{{Key: []byte("a"), Seq: 1, Value: []byte("x")}}
	data, p := buildTable(t, rows, WriterOptions{})
	if p.RowFeatures != 0 || p.MinTS != 0 || p.MaxTS != 0 || p.MinExpireTS != 0 || p.MaxExpireTS != 0 || p.NumTTLRows != 0 {
		t.Fatalf("%+v", p)
	}
	if r := openTable(t, data, nil); !reflect.DeepEqual(r.Properties(), p) {
		t.Fatalf("reader %+v, writer %+v", r.Properties(), p)
	}
}

func TestPropertiesDecodeRejects(t *testing.T) {
	p := Properties{FormatVersion: 1, TableStats: format.TableStats{NumRows: 1, Smallest: []byte("k\x00\x01\x00\x00\x00\x00\x00\x00"), Largest: []byte("k\x00\x01\x00\x00\x00\x00\x00\x00")}}
	good := p.encode(nil)
	if _, err := decodeProperties(good, "f", 7); err != nil {
		t.Fatal(err)
	}
	for i := range good {
		if _, err := decodeProperties(good[:i], "f", 7); err == nil {
			t.Errorf("truncated to %d bytes: accepted", i)
		}
	}
	if _, err := decodeProperties(append(bytes.Clone(good), 0), "f", 7); err == nil {
		t.Error("trailing byte accepted")
	}
	for _, v := range []byte{0, FormatVersion + 1} {
		bad := bytes.Clone(good)
		bad[0] = v
		if _, err := decodeProperties(bad, "f", 7); err == nil {
			t.Errorf("version %d accepted", v)
		}
	}
}

func TestCompressionShrinks(t *testing.T) {
	rows := genRows(2000, 3)
	var sizes []int
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		data, _ := buildTable(t, rows, WriterOptions{Compression: c})
		sizes = append(sizes, len(data))
	}
	if sizes[1] >= sizes[0] || sizes[2] >= sizes[0] {
		t.Fatalf("sizes none/snappy/zstd = %v", sizes)
	}
	t.Logf("sizes none/snappy/zstd = %v", sizes)
}

func TestCompressIncompressible(t *testing.T) {
	src := make([]byte, 4096)
	x := uint64(88172645463325252)
	for i := range src {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		src[i] = byte(x)
	}
	for _, c := range []Compression{SnappyCompression, ZstdCompression} {
		out, typ, _, err := compress(nil, src, c)
		if err != nil || typ != blockNone || &out[0] != &src[0] {
			t.Errorf("%v: random data stored as %v (err %v)", c, typ, err)
		}
	}
}

func TestBloomFilter(t *testing.T) {
	const n = 5000
	var rows []format.Row
	for i := range n {
		rows = append(rows, format.Row{Key: ukeyFor(i), Seq: 1, Value: []byte("v")})
	}
	data, _ := buildTable(t, rows, WriterOptions{BloomBitsPerKey: 10})
	r := openTable(t, data, nil)
	fp := 0
	for i := range n {
		if !mayContain(t, r, ukeyFor(i)) {
			t.Fatalf("false negative for %q", ukeyFor(i))
		}
		absent := fmt.Appendf(nil, "key%08d", 2*i+1)
		if mayContain(t, r, absent) {
			fp++
		}
		if _, found, err := r.Get(absent, format.MaxSeq); found || err != nil {
			t.Fatalf("Get(%q) = %v, %v", absent, found, err)
		}
	}
	// 10 bits per key gives about 1% false positives.
	if fp > n/25 {
		t.Fatalf("%d false positives out of %d", fp, n)
	}
	t.Logf("bloom false positives: %d/%d", fp, n)
}
