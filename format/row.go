// Package format defines how Mayfly names and orders the rows it stores.
//
// A row is one version of one user key. Every row carries a sequence number
// that orders it among other versions of the same key, a flags byte, and the
// optional time attributes described below. The same Row type travels from a
// batch through the WAL and the memtable into SSTables, so the expiry of a row
// is decided once, at commit, and never recomputed.
//
// # Internal keys
//
// Rows are sorted by user key ascending, then by sequence number descending,
// so that the newest version of a key is met first. The on-disk form of that
// order is the internal key:
//
//	+----------------+------------------------------------+
//	| user key bytes | trailer: uint64 little-endian      |
//	|                | (seq << 8) | flags                 |
//	+----------------+------------------------------------+
//
// Sequence numbers use the low 56 bits of a uint64 (MaxSeq).
//
// # Row flags
//
//	bit 0  FlagTombstone  the row deletes the key; it has no value
//	bit 1  FlagHasTS      the row carries ts (creation time, Unix ms)
//	bit 2  FlagHasExpire  the row carries expire_ts (Unix ms)
//	bit 3  FlagDeadline   the row sets its key's deadline; it has no value
//	bit 4  FlagMerge      the row is a merge operand; its value is the operand
//	bits 5-7              reserved; a reader rejects them as corruption
//
// Rows without a TTL carry neither ts nor expire_ts: they pay nothing for the
// feature. Where present the attributes are encoded after the key as
// uvarint(ts) followed by uvarint(expire_ts); see AppendAttrs.
//
// # Expiry
//
// A row with FlagHasExpire is visible while now <= ExpireTS and is treated as
// absent once now > ExpireTS (see Row.ExpiredAt). An expired row still hides
// every older version of its key: expiry never uncovers older data.
//
// # Deadline rows
//
// A deadline row (FlagDeadline, never with FlagTombstone) changes the
// deadline of the value beneath it without repeating the value: with
// FlagHasExpire the key's deadline becomes ExpireTS, without it the key no
// longer expires. It is written only over a live value, and always carries
// ts (its commit time). A reader resolves it against the versions below
// (see Resolve): the value comes from the newest older row that is not a
// deadline row, the deadline from the newest deadline row above that value,
// and the key is absent if the value row is a tombstone or missing. The
// value row's own expire_ts then no longer counts. Compaction folds a
// deadline row into the value beneath when no snapshot separates them
// (RFC 0008, "Deadline rows").
//
// # Merge operands
//
// A merge operand (FlagMerge, never with FlagTombstone or FlagDeadline)
// carries an operand for the key's merge operator as its value, always ts
// (its commit time) and, with FlagHasExpire, the deadline its TTL gave it.
// Its expire_ts is not its own expiry: it is the deadline of the window
// the operand starts when it finds no live state beneath it. A reader
// resolves a chain of operands against the versions below (see
// MergeChain, merge.go, and RFC 0010).
//
// This package is engine-internal: it is importable (tools and tests read
// its types), but it has no compatibility promise; the stable API is
// package mayfly, storage and its drivers, and clock.
package format

import (
	"bytes"
	"encoding/binary"
)

// Flag bits of a row; see the package documentation.
const (
	FlagTombstone uint8 = 1 << 0
	FlagHasTS     uint8 = 1 << 1
	FlagHasExpire uint8 = 1 << 2
	FlagDeadline  uint8 = 1 << 3
	FlagMerge     uint8 = 1 << 4

	// KnownFlags is the set of bits a reader understands. A row with any
	// other bit set is corrupt (or written by a newer format version).
	KnownFlags = FlagTombstone | FlagHasTS | FlagHasExpire | FlagDeadline | FlagMerge

	// noValue marks the kinds of row that carry no value.
	noValue = FlagTombstone | FlagDeadline
)

// MaxSeq is the largest sequence number a row can carry.
const MaxSeq uint64 = 1<<56 - 1

// TrailerLen is the number of bytes the trailer adds to a user key.
const TrailerLen = 8

// Row is one version of a key. Key and Value alias memory owned by whoever
// produced the Row (a batch, a memtable or an SSTable block) and must be
// copied by a caller that keeps them past that owner's lifetime.
type Row struct {
	Key      []byte // user key
	Seq      uint64 // sequence number, at most MaxSeq
	Flags    uint8  // FlagTombstone | FlagHasTS | FlagHasExpire | FlagDeadline | FlagMerge
	TS       int64  // creation time in Unix milliseconds; valid if FlagHasTS
	ExpireTS int64  // expiry deadline in Unix milliseconds; valid if FlagHasExpire
	Value    []byte // nil for tombstones
}

// IsTombstone reports whether the row deletes its key.
func (r *Row) IsTombstone() bool { return r.Flags&FlagTombstone != 0 }

// IsDeadline reports whether the row is a deadline row: it sets the
// deadline of the value beneath it and has no value of its own.
func (r *Row) IsDeadline() bool { return r.Flags&FlagDeadline != 0 }

// IsMerge reports whether the row is a merge operand: its value is an
// operand that a reader folds onto the versions beneath it.
func (r *Row) IsMerge() bool { return r.Flags&FlagMerge != 0 }

// HasValue reports whether the row kind carries a value (neither a
// tombstone nor a deadline row; a merge operand's value is its operand).
func (r *Row) HasValue() bool { return r.Flags&noValue == 0 }

// FlagsHaveValue is HasValue for a bare flags byte.
func FlagsHaveValue(flags uint8) bool { return flags&noValue == 0 }

// ValidKind reports whether flags name one kind of row: a tombstone, a
// deadline row and a merge operand exclude each other.
func ValidKind(flags uint8) bool {
	k := flags & (noValue | FlagMerge)
	return k&(k-1) == 0 && flags&^KnownFlags == 0
}

// HasExpiry reports whether the row carries an expiry deadline.
func (r *Row) HasExpiry() bool { return r.Flags&FlagHasExpire != 0 }

// ExpiredAt reports whether the row has expired at time nowMillis: true when
// it carries a deadline and nowMillis > ExpireTS. A row is still visible at
// nowMillis == ExpireTS.
func (r *Row) ExpiredAt(nowMillis int64) bool {
	return r.Flags&FlagHasExpire != 0 && r.ExpireTS < nowMillis
}

// LiveAt reports whether a reader at nowMillis sees a value in this row:
// it is a value row (neither a tombstone, a deadline row nor a merge
// operand) and not expired. A deadline row needs Resolve, an operand
// MergeChain.
func (r *Row) LiveAt(nowMillis int64) bool {
	return r.Flags&(noValue|FlagMerge) == 0 && !r.ExpiredAt(nowMillis)
}

// Resolve applies deadline row d (the newest version of its key) to v, the
// newest older version that is not a deadline row (nil if there is none):
// it returns the row a reader sees, v's value under d's deadline, with d's
// sequence number; ok is false when the key is absent (v is nil or a
// tombstone). The returned row aliases v's key and value.
func Resolve(d, v *Row) (Row, bool) {
	if v == nil || v.Flags&FlagTombstone != 0 {
		return Row{}, false
	}
	r := *v
	r.Seq = d.Seq
	r.Flags = v.Flags&^(FlagHasExpire|FlagHasTS) | d.Flags&(FlagHasExpire|FlagHasTS)
	r.TS, r.ExpireTS = d.TS, d.ExpireTS
	return r, true
}

// Trailer returns the 8-byte trailer value (seq << 8 | flags).
func (r *Row) Trailer() uint64 { return r.Seq<<8 | uint64(r.Flags) }

// AttrsLen returns the number of bytes AppendAttrs writes for r.
func (r *Row) AttrsLen() int {
	n := 0
	if r.Flags&FlagHasTS != 0 {
		n += uvarintLen(uint64(r.TS))
	}
	if r.Flags&FlagHasExpire != 0 {
		n += uvarintLen(uint64(r.ExpireTS))
	}
	return n
}

// AppendAttrs appends the row's optional attributes (ts, expire_ts) as
// uvarints, in that order, each only if its flag is set.
func AppendAttrs(dst []byte, r *Row) []byte {
	if r.Flags&FlagHasTS != 0 {
		dst = binary.AppendUvarint(dst, uint64(r.TS))
	}
	if r.Flags&FlagHasExpire != 0 {
		dst = binary.AppendUvarint(dst, uint64(r.ExpireTS))
	}
	return dst
}

// DecodeAttrs reads the attributes that r.Flags announces from src into r
// and returns the number of bytes consumed. It returns ok == false if src is
// truncated, a varint is malformed, or a time does not fit in an int64.
func DecodeAttrs(src []byte, r *Row) (n int, ok bool) {
	if r.Flags&FlagHasTS != 0 {
		v, m := binary.Uvarint(src)
		if m <= 0 || v > 1<<63-1 {
			return 0, false
		}
		r.TS = int64(v)
		n += m
	}
	if r.Flags&FlagHasExpire != 0 {
		v, m := binary.Uvarint(src[n:])
		if m <= 0 || v > 1<<63-1 {
			return 0, false
		}
		r.ExpireTS = int64(v)
		n += m
	}
	return n, true
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// AppendInternalKey appends r's internal key (user key, then trailer).
func AppendInternalKey(dst []byte, r *Row) []byte {
	dst = append(dst, r.Key...)
	return binary.LittleEndian.AppendUint64(dst, r.Trailer())
}

// SplitInternalKey splits an internal key into its user key, sequence number
// and flags. ok is false if ikey is shorter than a trailer or carries
// unknown flag bits.
func SplitInternalKey(ikey []byte) (ukey []byte, seq uint64, flags uint8, ok bool) {
	if len(ikey) < TrailerLen {
		return nil, 0, 0, false
	}
	n := len(ikey) - TrailerLen
	t := binary.LittleEndian.Uint64(ikey[n:])
	flags = uint8(t)
	if !ValidKind(flags) {
		return nil, 0, 0, false
	}
	return ikey[:n:n], t >> 8, flags, true
}

// CompareInternal orders internal keys: user key ascending, then sequence
// number descending. Both arguments must be valid internal keys.
func CompareInternal(a, b []byte) int {
	ua, ub := a[:len(a)-TrailerLen], b[:len(b)-TrailerLen]
	if c := bytes.Compare(ua, ub); c != 0 {
		return c
	}
	sa := binary.LittleEndian.Uint64(a[len(a)-TrailerLen:]) >> 8
	sb := binary.LittleEndian.Uint64(b[len(b)-TrailerLen:]) >> 8
	switch {
	case sa > sb:
		return -1
	case sa < sb:
		return 1
	}
	return 0
}

// CompareRows orders two rows the way their internal keys order.
func CompareRows(a, b *Row) int {
	if c := bytes.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	switch {
	case a.Seq > b.Seq:
		return -1
	case a.Seq < b.Seq:
		return 1
	}
	return 0
}

// SeekKey returns the internal key that sorts before every version of ukey
// visible at sequence number seq: positioning at or after it finds the newest
// version of ukey with Seq <= seq.
func SeekKey(dst, ukey []byte, seq uint64) []byte {
	dst = append(dst, ukey...)
	return binary.LittleEndian.AppendUint64(dst, seq<<8|0xff)
}
