package manifest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/storage"
)

func ikey(k string, seq uint64) []byte {
	return format.AppendInternalKey(nil, &format.Row{Key: []byte(k), Seq: seq})
}

func testFile(num uint64, lo, hi string, seq uint64) *FileMeta {
	return &FileMeta{
		Num: num,
		TableStats: format.TableStats{
			Size:          4096 + num,
			Smallest:      ikey(lo, seq+1),
			Largest:       ikey(hi, seq),
			SmallestSeq:   seq,
			LargestSeq:    seq + 1,
			CreationTime:  1_700_000_000_000 + int64(num),
			MinTS:         -5,
			MaxTS:         1 << 62,
			MinExpireTS:   0,
			MaxExpireTS:   -1 << 63,
			NumRows:       1000,
			NumTombstones: 7,
			NumTTLRows:    300,
			TTLBytes:      1 << 40,
			RowFeatures:   0x05,
		},
		CompactedTime: 1_700_000_000_500,
	}
}

func testState() *State {
	st := &State{
		NextFileNum: 100,
		LastSeq:     5000,
		ClockHWM:    1_700_000_123_456,
		MinLogNum:   12,
		WriterEpoch: 3,
	}
	st.Levels[0] = []*FileMeta{testFile(20, "a", "z", 900), testFile(10, "b", "y", 800)}
	st.Levels[1] = []*FileMeta{testFile(5, "a", "f", 10), testFile(6, "g", "m", 20), testFile(7, "n", "zz", 30)}
	st.Levels[6] = []*FileMeta{testFile(1, "\x00", "\xff\xff", 1)}
	return st
}

func TestRoundTrip(t *testing.T) {
	named := testState()
	named.MergeOperator = "mayfly.Int64Add"
	for _, st := range []*State{{}, {NextFileNum: 1, ClockHWM: -1}, testState(), named} {
		data := Encode(st)
		got, err := Decode("manifest/x", data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, st)
		}
	}
}

func TestDecodeCopiesKeys(t *testing.T) {
	data := Encode(testState())
	st, err := Decode("m", data)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), st.Levels[1][0].Smallest...)
	for i := range data {
		data[i] = 0
	}
	if string(st.Levels[1][0].Smallest) != string(want) {
		t.Fatal("decoded keys alias the input")
	}
}

func TestVersionName(t *testing.T) {
	if got := VersionName(42); got != "manifest/00000000000000000042.manifest" {
		t.Fatalf("VersionName = %q", got)
	}
	for _, v := range []uint64{1, 42, 1<<64 - 1} {
		if got, ok := ParseVersionName(VersionName(v)); !ok || got != v {
			t.Fatalf("parse %d: %d %v", v, got, ok)
		}
	}
	for _, n := range []string{"manifest/42.manifest", "manifest/0000000000000000004x.manifest", "sst/00000000000000000042.manifest",
		"manifest/00000000000000000042.manifes", "manifest/+0000000000000000042.manifest", "manifest/99999999999999999999.manifest"} {
		if _, ok := ParseVersionName(n); ok {
			t.Errorf("parsed %q", n)
		}
	}
}

func TestLoadWriteRemove(t *testing.T) {
	s := storage.NewMem()
	st, v, skipped, err := Load(s)
	if st != nil || v != 0 || skipped != nil || err != nil {
		t.Fatalf("empty storage: %v %d %v %v", st, v, skipped, err)
	}
	st1 := testState()
	if err := Write(s, 1, st1); err != nil {
		t.Fatal(err)
	}
	st2 := st1.Clone()
	st2.Levels[0] = append(st2.Levels[0], testFile(30, "c", "d", 950))
	st2.LastSeq = 6000
	if err := Write(s, 2, st2); err != nil {
		t.Fatal(err)
	}
	if err := Write(s, 2, st1); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("rewrite of version 2: %v", err)
	}
	// A foreign object in the directory is ignored.
	if err := s.PutIfAbsent("manifest/notes.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	got, v, skipped, err := Load(s)
	if err != nil || v != 2 || len(skipped) != 0 || !reflect.DeepEqual(got, st2) {
		t.Fatalf("Load = %d %v %v", v, skipped, err)
	}
	// A corrupt newest version is skipped and reported.
	if err := s.PutIfAbsent(VersionName(3), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	bad := Encode(st2)
	bad[20] ^= 1
	if err := s.PutIfAbsent(VersionName(4), bad); err != nil {
		t.Fatal(err)
	}
	got, v, skipped, err = Load(s)
	if err != nil || v != 2 || !reflect.DeepEqual(got, st2) {
		t.Fatalf("Load with corrupt newest = %d %v", v, err)
	}
	if len(skipped) != 2 {
		t.Fatalf("skipped = %v", skipped)
	}
	for i, want := range []string{VersionName(4), VersionName(3)} {
		var ce *format.CorruptionError
		if !errors.As(skipped[i], &ce) || ce.File != want {
			t.Fatalf("skipped[%d] = %v, want corruption in %s", i, skipped[i], want)
		}
	}

	if err := RemoveOlder(s, 4); err != nil {
		t.Fatal(err)
	}
	names, _ := s.List(Dir)
	want := []string{VersionName(4), "manifest/notes.txt"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("after RemoveOlder: %q", names)
	}
	// Only corrupt versions left: an error, not an empty database.
	st, v, skipped, err = Load(s)
	if st != nil || !errors.Is(err, format.ErrCorruption) || len(skipped) != 1 {
		t.Fatalf("all corrupt: %v %d %v %v", st, v, skipped, err)
	}
}

func TestWriteRace(t *testing.T) {
	s, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := testState()
			st.WriterEpoch = uint64(i)
			err := Write(s, 9, st)
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, storage.ErrExists) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d writers won", wins)
	}
	if _, v, _, err := Load(s); err != nil || v != 9 {
		t.Fatalf("Load = %d %v", v, err)
	}
}

func TestWriteValidates(t *testing.T) {
	s := storage.NewMem()
	if err := Write(s, 0, &State{}); err == nil {
		t.Fatal("version 0 accepted")
	}
	cases := map[string]func(st *State){
		"nil file":         func(st *State) { st.Levels[2] = []*FileMeta{nil} },
		"num zero":         func(st *State) { st.Levels[1][0].Num = 0 },
		"num too big":      func(st *State) { st.Levels[1][0].Num = st.NextFileNum },
		"duplicate":        func(st *State) { st.Levels[2] = []*FileMeta{testFile(5, "x", "y", 1)} },
		"short key":        func(st *State) { st.Levels[0][0].Smallest = []byte("abc") },
		"bad flags":        func(st *State) { st.Levels[0][0].Largest[len(st.Levels[0][0].Largest)-8] = 0xf0 },
		"inverted keys":    func(st *State) { f := st.Levels[0][0]; f.Smallest, f.Largest = f.Largest, f.Smallest },
		"inverted seqs":    func(st *State) { st.Levels[0][0].SmallestSeq = st.Levels[0][0].LargestSeq + 1 },
		"seq above last":   func(st *State) { st.Levels[0][0].LargestSeq = st.LastSeq + 1 },
		"last seq too big": func(st *State) { st.LastSeq = format.MaxSeq + 1 },
		"overlap":          func(st *State) { st.Levels[1][1].Smallest = ikey("e", 1) },
		"unsorted": func(st *State) {
			l := st.Levels[1]
			l[0], l[2] = l[2], l[0]
		},
	}
	for name, mutate := range cases {
		st := testState()
		mutate(st)
		if err := Write(s, 1, st); err == nil {
			t.Errorf("%s: invalid state written", name)
			continue
		}
		if st.Levels[2] != nil && st.Levels[2][0] == nil {
			continue // cannot be encoded
		}
		// The same state, encoded anyway, does not decode.
		_, err := Decode("m", Encode(st))
		if !errors.Is(err, format.ErrCorruption) {
			t.Errorf("%s: decoded an invalid state: %v", name, err)
		}
	}
	if names, _ := s.List(Dir); len(names) != 0 {
		t.Fatalf("invalid states were written: %q", names)
	}
	// L0 may overlap and be in any order.
	st := testState()
	st.Levels[0][0], st.Levels[0][1] = st.Levels[0][1], st.Levels[0][0]
	if err := Write(s, 1, st); err != nil {
		t.Fatal(err)
	}
}

func TestTruncationAndFlips(t *testing.T) {
	data := Encode(testState())
	for n := 0; n < len(data); n++ {
		_, err := Decode("m", data[:n])
		var ce *format.CorruptionError
		if !errors.As(err, &ce) || ce.File != "m" || ce.Offset < 0 || ce.Offset > int64(len(data)) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	for i := range data {
		for bit := range 8 {
			b := append([]byte(nil), data...)
			b[i] ^= 1 << bit
			_, err := Decode("m", b)
			if !errors.Is(err, format.ErrCorruption) {
				t.Fatalf("flip %d.%d: %v", i, bit, err)
			}
		}
	}
	// Trailing garbage.
	if _, err := Decode("m", append(append([]byte(nil), data...), 0)); !errors.Is(err, format.ErrCorruption) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func TestStructuralErrorsBehindValidCRC(t *testing.T) {
	// Bodies with a valid checksum but bad structure must be caught by the
	// bounds checks, with the offset of the bad field.
	good := Encode(&State{NextFileNum: 1})
	body := good[:len(good)-crcLen]
	cases := map[string][]byte{
		"huge count":           append(append([]byte(nil), body[:len(body)-NumLevels]...), 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0, 0, 0),
		"wrong levels":         append(append([]byte(nil), body[:len(body)-NumLevels-1]...), 6, 0, 0, 0, 0, 0, 0),
		"bad varint":           append(append([]byte(nil), body[:prefixLen]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"extra":                append(append([]byte(nil), body...), 1),
		"version 3":            append(append(append([]byte(nil), body[:8]...), 3, 0, 0, 0), body[prefixLen:]...),
		"version 2 no name":    append(append(append([]byte(nil), body[:8]...), 2, 0, 0, 0), body[prefixLen:]...),
		"version 2 empty name": append(append(append(append([]byte(nil), body[:8]...), 2, 0, 0, 0), body[prefixLen:]...), 0),
		"key len too big":      append(append(append([]byte(nil), body[:len(body)-NumLevels]...), 1, 5, 1, 0x80, 0x80, 0x04), make([]byte, 20)...),
	}
	for name, b := range cases {
		_, err := Decode("m", appendCRC(b))
		var ce *format.CorruptionError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if ce.Offset < prefixLen && name != "version 3" {
			t.Errorf("%s: offset %d points into the header", name, ce.Offset)
		}
	}
}

func TestClone(t *testing.T) {
	st := testState()
	c := st.Clone()
	c.Levels[1] = append(c.Levels[1][:1], testFile(50, "x", "y", 1))
	c.Levels[0][0] = nil
	c.LastSeq++
	if len(st.Levels[1]) != 3 || st.Levels[1][1].Num != 6 || st.Levels[0][0] == nil || st.LastSeq != 5000 {
		t.Fatal("Clone shares level slices")
	}
	if c.Levels[1][0] != st.Levels[1][0] {
		t.Fatal("Clone copied FileMeta values")
	}
}

func TestLoadReadError(t *testing.T) {
	s := &failingOpen{Storage: storage.NewMem()}
	if err := Write(s, 1, testState()); err != nil {
		t.Fatal(err)
	}
	s.fail = true
	if _, _, _, err := Load(s); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("read error not returned: %v", err)
	}
}

type failingOpen struct {
	storage.Storage
	fail bool
}

func (f *failingOpen) Open(name string) (storage.ObjectReader, error) {
	if f.fail {
		return nil, fmt.Errorf("injected I/O error")
	}
	return f.Storage.Open(name)
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(&State{}))
	f.Add(Encode(testState()))
	f.Add(Encode(testState())[:40])
	f.Add(Encode(&State{MergeOperator: "mayfly.Int64Add"}))
	f.Add([]byte{})
	f.Add([]byte("MFLYMANI"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, appendCRC(append([]byte(nil), data...))} {
			st, err := Decode("m", in)
			if err != nil {
				if !errors.Is(err, format.ErrCorruption) {
					t.Fatalf("non-corruption error %v", err)
				}
				continue
			}
			if err := st.Validate(); err != nil {
				t.Fatalf("decoded an invalid state: %v", err)
			}
			again, err := Decode("m", Encode(st))
			if err != nil || !reflect.DeepEqual(again, st) {
				t.Fatalf("re-encoding does not round trip: %v", err)
			}
		}
	})
}

// TestFileMetaUserKeys: the user-key bounds are the internal keys less their
// trailers, and Overlaps compares them with closed bounds, nil ones open.
func TestFileMetaUserKeys(t *testing.T) {
	f := testFile(1, "c", "f", 10)
	if got := string(f.SmallestUserKey()); got != "c" {
		t.Fatalf("SmallestUserKey = %q, want %q", got, "c")
	}
	if got := string(f.LargestUserKey()); got != "f" {
		t.Fatalf("LargestUserKey = %q, want %q", got, "f")
	}
	if got := f.LargestUserKey(); cap(got) != len(got) {
		t.Fatalf("LargestUserKey has spare capacity %d: an append would write over the trailer", cap(got)-len(got))
	}
	cases := []struct {
		lo, hi string
		nilLo  bool
		nilHi  bool
		want   bool
	}{
		{lo: "a", hi: "b", want: false},
		{lo: "a", hi: "c", want: true},
		{lo: "d", hi: "e", want: true},
		{lo: "f", hi: "z", want: true},
		{lo: "fa", hi: "z", want: false},
		{lo: "a", hi: "bz", nilLo: true, want: false},
		{lo: "a", hi: "c", nilLo: true, want: true},
		{lo: "g", hi: "z", nilHi: true, want: false},
		{lo: "f", hi: "z", nilHi: true, want: true},
		{nilLo: true, nilHi: true, want: true},
	}
	for _, c := range cases {
		lo, hi := []byte(c.lo), []byte(c.hi)
		if c.nilLo {
			lo = nil
		}
		if c.nilHi {
			hi = nil
		}
		if got := f.Overlaps(lo, hi); got != c.want {
			t.Errorf("[c, f].Overlaps(%q, %q) = %v, want %v", lo, hi, got, c.want)
		}
	}
	if got := (&FileMeta{TableStats: format.TableStats{Smallest: []byte("short")}}).SmallestUserKey(); got != nil {
		t.Fatalf("SmallestUserKey of a key shorter than a trailer = %q, want nil", got)
	}
}

// TestMergeOperatorNameFormat: a state without a merge operator name is
// written at format 1, byte for byte as before the field existed; one with
// a name at format 2, which a format-1 reader refuses by its version.
func TestMergeOperatorNameFormat(t *testing.T) {
	plain := Encode(testState())
	if v := plain[8]; v != 1 {
		t.Fatalf("state without an operator at format %d, want 1", v)
	}
	st := testState()
	st.MergeOperator = "counter"
	named := Encode(st)
	if v := named[8]; v != 2 {
		t.Fatalf("state with an operator at format %d, want 2", v)
	}
	if len(named) != len(plain)+1+len("counter") {
		t.Fatalf("named encoding %d bytes, plain %d", len(named), len(plain))
	}
}
