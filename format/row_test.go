package format

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ikey builds an internal key for tests.
func ikey(key string, seq uint64, flags uint8) []byte {
	return AppendInternalKey(nil, &Row{Key: []byte(key), Seq: seq, Flags: flags})
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

func TestInternalKeyLayout(t *testing.T) {
	r := Row{Key: []byte("abc"), Seq: 0x0102030405, Flags: FlagTombstone | FlagHasTS}
	got := AppendInternalKey([]byte("prefix"), &r)
	want := append([]byte("prefixabc"), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint64(want[len(want)-8:], 0x0102030405<<8|uint64(FlagTombstone|FlagHasTS))
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendInternalKey = %x, want %x", got, want)
	}
	if r.Trailer() != 0x0102030405<<8|3 {
		t.Fatalf("Trailer = %#x", r.Trailer())
	}
}

func TestCompareInternalOrder(t *testing.T) {
	// In the intended order: user key ascending, then sequence descending.
	// "a" < "a\x00" < "ab" checks that the trailer never takes part in the
	// user-key comparison (a plain bytes.Compare of internal keys would
	// order "a"+trailer after "a\x00"+trailer for a large trailer).
	ordered := [][]byte{
		ikey("", MaxSeq, 0),
		ikey("", 0, 0),
		ikey("a", MaxSeq, FlagTombstone),
		ikey("a", 1<<40, 0),
		ikey("a", 256, FlagHasExpire|FlagHasTS),
		ikey("a", 255, 0),
		ikey("a", 1, 0),
		ikey("a", 0, 0),
		ikey("a\x00", MaxSeq, 0),
		ikey("a\x00", 0, 0),
		ikey("ab", 7, 0),
		ikey("b", 100, 0),
		ikey("\xff", 1, 0),
		ikey("\xff\xff", MaxSeq, 0),
	}
	for i := range ordered {
		for j := range ordered {
			got := sign(CompareInternal(ordered[i], ordered[j]))
			want := sign(i - j)
			if got != want {
				t.Errorf("CompareInternal(#%d %x, #%d %x) = %d, want %d", i, ordered[i], j, ordered[j], got, want)
			}
		}
	}
	// Flags never order two rows with the same key and sequence.
	for f := range KnownFlags + 1 {
		if c := CompareInternal(ikey("k", 9, f), ikey("k", 9, 0)); c != 0 {
			t.Errorf("flags %#x change the order: %d", f, c)
		}
	}
}

func TestCompareRowsMatchesInternalKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]Row, 500)
	for i := range rows {
		k := make([]byte, rng.IntN(4))
		for j := range k {
			k[j] = byte(rng.IntN(3)) // few distinct bytes: many shared prefixes
		}
		seq := rng.Uint64N(8)
		if rng.IntN(10) == 0 {
			seq = MaxSeq - rng.Uint64N(3)
		}
		flags := uint8(rng.UintN(uint(KnownFlags) + 1))
		if !ValidKind(flags) {
			flags &^= FlagDeadline | FlagMerge
		}
		rows[i] = Row{Key: k, Seq: seq, Flags: flags}
	}
	for i := range rows {
		for j := range rows {
			a, b := &rows[i], &rows[j]
			ci := sign(CompareInternal(AppendInternalKey(nil, a), AppendInternalKey(nil, b)))
			cr := sign(CompareRows(a, b))
			if ci != cr {
				t.Fatalf("CompareRows(%x/%d, %x/%d) = %d, CompareInternal = %d", a.Key, a.Seq, b.Key, b.Seq, cr, ci)
			}
		}
	}
	// Sorting by either comparison gives the same sequence of (key, seq).
	byRows := slices.Clone(rows)
	slices.SortStableFunc(byRows, func(a, b Row) int { return CompareRows(&a, &b) })
	keys := make([][]byte, len(rows))
	for i := range rows {
		keys[i] = AppendInternalKey(nil, &rows[i])
	}
	slices.SortStableFunc(keys, CompareInternal)
	for i := range keys {
		uk, seq, _, ok := SplitInternalKey(keys[i])
		if !ok || !bytes.Equal(uk, byRows[i].Key) || seq != byRows[i].Seq {
			t.Fatalf("position %d: internal key (%x, %d), row (%x, %d)", i, uk, seq, byRows[i].Key, byRows[i].Seq)
		}
	}
}

func TestSeekKey(t *testing.T) {
	for _, seq := range []uint64{0, 1, 255, 256, 1 << 40, MaxSeq - 1, MaxSeq} {
		sk := SeekKey([]byte("x"), []byte("key"), seq)
		if !bytes.HasPrefix(sk, []byte("x")) {
			t.Fatalf("SeekKey did not append to dst: %q", sk)
		}
		sk = sk[1:]
		// Versions newer than seq sort before the seek key, versions at or
		// below it at or after it, whatever their flags.
		for _, s := range []uint64{0, seq - 1, seq, seq + 1, MaxSeq} {
			if s > MaxSeq { // seq-1 and seq+1 wrapped or passed MaxSeq
				continue
			}
			for f := range KnownFlags + 1 {
				c := CompareInternal(ikey("key", s, f), sk)
				if s > seq && c >= 0 {
					t.Errorf("seq %d flags %#x: newer version sorts at or after SeekKey(%d)", s, f, seq)
				}
				if s <= seq && c < 0 {
					t.Errorf("seq %d flags %#x: visible version sorts before SeekKey(%d)", s, f, seq)
				}
			}
		}
		// Every version of a smaller key sorts before, of a larger key after.
		if CompareInternal(ikey("kex", 0, 0), sk) >= 0 || CompareInternal(ikey("ke", 0, 0), sk) >= 0 {
			t.Errorf("smaller key sorts at or after SeekKey(%d)", seq)
		}
		if CompareInternal(ikey("key\x00", MaxSeq, 0), sk) <= 0 || CompareInternal(ikey("kez", MaxSeq, 0), sk) <= 0 {
			t.Errorf("larger key sorts at or before SeekKey(%d)", seq)
		}
	}
}

func TestSplitInternalKeyRoundTrip(t *testing.T) {
	for _, key := range []string{"", "k", "a longer user key \x00\xff"} {
		for _, seq := range []uint64{0, 1, 1<<8 - 1, 1 << 8, 1<<48 + 3, MaxSeq} {
			for f := range KnownFlags + 1 {
				if !ValidKind(f) {
					continue
				}
				ik := ikey(key, seq, f)
				uk, s, fl, ok := SplitInternalKey(ik)
				if !ok || string(uk) != key || s != seq || fl != f {
					t.Fatalf("SplitInternalKey(%x) = %q, %d, %#x, %v; want %q, %d, %#x", ik, uk, s, fl, ok, key, seq, f)
				}
				// The user key is capped so that appending to it cannot
				// overwrite the trailer.
				if cap(uk) != len(uk) {
					t.Fatalf("user key capacity %d > length %d", cap(uk), len(uk))
				}
			}
		}
	}
}

func TestSplitInternalKeyRejectsUnknownFlags(t *testing.T) {
	for bit := 5; bit < 8; bit++ {
		for _, base := range []uint8{0, KnownFlags &^ (FlagTombstone | FlagMerge)} {
			f := base | 1<<bit
			ik := binary.LittleEndian.AppendUint64([]byte("key"), 42<<8|uint64(f))
			if uk, seq, fl, ok := SplitInternalKey(ik); ok {
				t.Errorf("flags %#08b accepted: %q %d %#x", f, uk, seq, fl)
			}
		}
	}
	// Every byte value: accepted exactly when it holds known bits only and
	// names one kind of row (at most one of tombstone, deadline row and
	// merge operand).
	for f := range 256 {
		ik := binary.LittleEndian.AppendUint64(nil, 1<<8|uint64(f))
		_, _, _, ok := SplitInternalKey(ik)
		kinds := 0
		for _, k := range []uint8{FlagTombstone, FlagDeadline, FlagMerge} {
			if uint8(f)&k != 0 {
				kinds++
			}
		}
		want := uint8(f)&^KnownFlags == 0 && kinds <= 1
		if ok != want {
			t.Errorf("flags %#x: ok = %v, want %v", f, ok, want)
		}
	}
	// SeekKey's 0xff flags are for comparison only and never a stored key.
	if _, _, _, ok := SplitInternalKey(SeekKey(nil, []byte("k"), 5)); ok {
		t.Error("a SeekKey split as a valid internal key")
	}
}

func TestSplitInternalKeyRejectsShortKeys(t *testing.T) {
	for n := range TrailerLen {
		if _, _, _, ok := SplitInternalKey(make([]byte, n)); ok {
			t.Errorf("%d-byte internal key accepted", n)
		}
	}
	if _, _, _, ok := SplitInternalKey(nil); ok {
		t.Error("nil internal key accepted")
	}
	// Exactly a trailer: an empty user key, which is well formed.
	uk, seq, f, ok := SplitInternalKey(binary.LittleEndian.AppendUint64(nil, 7<<8|uint64(FlagHasTS)))
	if !ok || len(uk) != 0 || seq != 7 || f != FlagHasTS {
		t.Errorf("trailer-only key: %q %d %#x %v", uk, seq, f, ok)
	}
}

func TestAttrsRoundTrip(t *testing.T) {
	values := []int64{0, 1, 127, 128, 16383, 16384, 1 << 32, 1767225600000, 253402300799999, math.MaxInt64 - 1, math.MaxInt64}
	for f := range KnownFlags + 1 {
		for _, ts := range values {
			for _, exp := range values {
				r := Row{Flags: f, TS: ts, ExpireTS: exp}
				enc := AppendAttrs([]byte{0xAA}, &r)
				if enc[0] != 0xAA {
					t.Fatal("AppendAttrs overwrote dst")
				}
				enc = enc[1:]
				if len(enc) != r.AttrsLen() {
					t.Fatalf("flags %#x ts %d exp %d: AttrsLen %d, encoded %d bytes", f, ts, exp, r.AttrsLen(), len(enc))
				}
				// Trailing bytes after the attributes are not consumed.
				src := append(bytes.Clone(enc), 0x01, 0x02)
				got := Row{Flags: f}
				n, ok := DecodeAttrs(src, &got)
				if !ok || n != len(enc) {
					t.Fatalf("flags %#x ts %d exp %d: DecodeAttrs = %d, %v; want %d, true", f, ts, exp, n, ok, len(enc))
				}
				wantTS, wantExp := int64(0), int64(0)
				if f&FlagHasTS != 0 {
					wantTS = ts
				}
				if f&FlagHasExpire != 0 {
					wantExp = exp
				}
				if got.TS != wantTS || got.ExpireTS != wantExp {
					t.Fatalf("flags %#x: decoded ts %d exp %d, want %d %d", f, got.TS, got.ExpireTS, wantTS, wantExp)
				}
				if f&(FlagHasTS|FlagHasExpire) == 0 && len(enc) != 0 {
					t.Fatalf("flags %#x: rows without a TTL pay %d bytes", f, len(enc))
				}
			}
		}
	}
	// MaxInt64 has 63 significant bits: nine bytes of uvarint each.
	r := Row{Flags: FlagHasTS | FlagHasExpire, TS: math.MaxInt64, ExpireTS: math.MaxInt64}
	if n := r.AttrsLen(); n != 18 {
		t.Errorf("AttrsLen at MaxInt64 = %d, want 18", n)
	}
}

func TestDecodeAttrsRejectsBadInput(t *testing.T) {
	both := FlagHasTS | FlagHasExpire
	full := AppendAttrs(nil, &Row{Flags: both, TS: 300, ExpireTS: math.MaxInt64})
	// Every strict prefix is truncated.
	for n := range len(full) {
		r := Row{Flags: both}
		if _, ok := DecodeAttrs(full[:n], &r); ok {
			t.Errorf("prefix of %d of %d bytes accepted", n, len(full))
		}
	}
	tooBig := binary.AppendUvarint(nil, 1<<63) // one above MaxInt64
	for _, tc := range []struct {
		name  string
		flags uint8
		src   []byte
	}{
		{"ts above MaxInt64", FlagHasTS, tooBig},
		{"expire_ts above MaxInt64", FlagHasExpire, tooBig},
		{"expire_ts above MaxInt64 after ts", both, append([]byte{1}, tooBig...)},
		{"max uint64", FlagHasTS, binary.AppendUvarint(nil, math.MaxUint64)},
		{"overlong varint", FlagHasTS, bytes.Repeat([]byte{0x80}, 10)},
		{"varint overflow", FlagHasExpire, append(bytes.Repeat([]byte{0xff}, 9), 0x02)},
		{"empty", FlagHasTS, nil},
	} {
		r := Row{Flags: tc.flags}
		if n, ok := DecodeAttrs(tc.src, &r); ok {
			t.Errorf("%s: accepted (%d bytes)", tc.name, n)
		}
	}
	// No flags: nothing is read, even from nothing.
	if n, ok := DecodeAttrs(nil, &Row{Flags: FlagTombstone}); !ok || n != 0 {
		t.Errorf("no attributes: %d, %v", n, ok)
	}
}

func TestExpiryBoundary(t *testing.T) {
	const d = 1767225600000
	for _, tc := range []struct {
		row           Row
		now           int64
		expired, live bool
	}{
		{Row{Flags: FlagHasExpire | FlagHasTS, ExpireTS: d}, d - 1, false, true},
		{Row{Flags: FlagHasExpire | FlagHasTS, ExpireTS: d}, d, false, true}, // visible at the deadline itself
		{Row{Flags: FlagHasExpire | FlagHasTS, ExpireTS: d}, d + 1, true, false},
		{Row{Flags: FlagHasExpire, ExpireTS: 0}, 0, false, true},
		{Row{Flags: FlagHasExpire, ExpireTS: 0}, 1, true, false},
		{Row{Flags: FlagHasExpire, ExpireTS: math.MaxInt64}, math.MaxInt64, false, true},
		{Row{Flags: FlagHasExpire, ExpireTS: math.MaxInt64 - 1}, math.MaxInt64, true, false},
		// ExpireTS without the flag is ignored.
		{Row{ExpireTS: d}, d + 1, false, true},
		{Row{ExpireTS: 0}, math.MaxInt64, false, true},
		// A tombstone is never live, expired or not.
		{Row{Flags: FlagTombstone | FlagHasTS}, d, false, false},
		{Row{Flags: FlagTombstone | FlagHasExpire, ExpireTS: d}, d, false, false},
		{Row{Flags: FlagTombstone | FlagHasExpire, ExpireTS: d}, d + 1, true, false},
	} {
		r := tc.row
		if got := r.ExpiredAt(tc.now); got != tc.expired {
			t.Errorf("%+v ExpiredAt(%d) = %v, want %v", r, tc.now, got, tc.expired)
		}
		if got := r.LiveAt(tc.now); got != tc.live {
			t.Errorf("%+v LiveAt(%d) = %v, want %v", r, tc.now, got, tc.live)
		}
		if r.IsTombstone() != (r.Flags&FlagTombstone != 0) || r.HasExpiry() != (r.Flags&FlagHasExpire != 0) {
			t.Errorf("%+v: IsTombstone/HasExpiry disagree with the flags", r)
		}
	}
}

func TestCorruptionError(t *testing.T) {
	err := Corruptf("sst/000012.sst", 4096, "bad %s", "block")
	want := "mayfly: corruption in sst/000012.sst at offset 4096: bad block"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	ce, ok := err.(*CorruptionError)
	if !ok || ce.File != "sst/000012.sst" || ce.Offset != 4096 || ce.Reason != "bad block" {
		t.Errorf("fields: %#v", err)
	}
	if ce.Unwrap() != ErrCorruption {
		t.Error("CorruptionError does not unwrap to ErrCorruption")
	}
}

// TestResolve: a deadline row gives the value beneath it its deadline (or
// none) and its sequence number; over a tombstone or nothing the key is
// absent.
func TestResolve(t *testing.T) {
	v := Row{Key: []byte("k"), Seq: 3, Flags: FlagHasTS | FlagHasExpire, TS: 10, ExpireTS: 100, Value: []byte("v")}
	extend := Row{Key: []byte("k"), Seq: 7, Flags: FlagDeadline | FlagHasTS | FlagHasExpire, TS: 50, ExpireTS: 500}
	r, ok := Resolve(&extend, &v)
	if !ok || r.Seq != 7 || string(r.Value) != "v" || !r.HasExpiry() || r.ExpireTS != 500 || r.TS != 50 || r.IsDeadline() || !r.HasValue() {
		t.Fatalf("extend: %+v, %v", r, ok)
	}
	if !r.LiveAt(400) || r.LiveAt(501) {
		t.Fatalf("extended row live at 400: %v, at 501: %v", r.LiveAt(400), r.LiveAt(501))
	}
	persist := Row{Key: []byte("k"), Seq: 8, Flags: FlagDeadline | FlagHasTS, TS: 60}
	if r, ok := Resolve(&persist, &v); !ok || r.HasExpiry() || !r.LiveAt(1<<40) || r.Flags != FlagHasTS {
		t.Fatalf("persist: %+v, %v", r, ok)
	}
	tomb := Row{Key: []byte("k"), Seq: 2, Flags: FlagTombstone | FlagHasTS}
	if _, ok := Resolve(&extend, &tomb); ok {
		t.Fatal("a deadline row over a tombstone resolved to a value")
	}
	if _, ok := Resolve(&extend, nil); ok {
		t.Fatal("a deadline row over nothing resolved to a value")
	}
	if extend.LiveAt(0) || extend.HasValue() || !extend.IsDeadline() {
		t.Fatal("a deadline row reads as a value by itself")
	}
}
