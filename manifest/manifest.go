// Package manifest records which SSTables make up the database.
//
// Every version of the manifest is a full snapshot of State, stored as its
// own object "manifest/NNNNNNNNNNNNNNNNNNNN.manifest" (the version number,
// 20 digits, zero-padded so that names sort numerically). A version is
// created with Storage.PutIfAbsent, so it appears atomically and durably,
// and two writers can never both create the same version. Load returns the
// newest version that decodes and reports the newer ones it had to skip;
// the engine refuses to open when any was skipped, since versions are
// written atomically and a damaged newest one means lost information.
//
// Encoding (integers in the fixed-size fields are little-endian):
//
//	+-----------+------------+-------------------------+-----------+
//	| magic     | format     | body                    | crc32c    |
//	| 8 bytes   | u32 (1, 2) |                         | u32       |
//	+-----------+------------+-------------------------+-----------+
//	 crc32c (Castagnoli) covers every byte before it.
//
// The body is a sequence of varints (uv = unsigned varint, sv = signed
// zig-zag varint) and length-prefixed byte strings:
//
//	uv next_file_num
//	uv last_seq
//	sv clock_hwm
//	uv min_log_num
//	uv writer_epoch
//	uv num_levels               (= NumLevels)
//	num_levels times:
//	  uv file_count
//	  file_count times, a file:
//	    uv num, uv size
//	    uv len, smallest internal key
//	    uv len, largest internal key
//	    uv smallest_seq, uv largest_seq
//	    sv creation_time, sv compacted_time
//	    sv min_ts, sv max_ts, sv min_expire_ts, sv max_expire_ts
//	    sv min_tombstone_ts
//	    uv num_rows, uv num_tombstones, uv num_ttl_rows, uv ttl_bytes
//	    u8 row_features
//	format 2 only: uv len, merge operator name (non-empty)
//
// A state without a merge operator name is written at format 1, so a
// database that never set Options.MergeOperator stays readable by the
// releases before it; one that did is refused by them with "unsupported
// manifest format version 2" rather than read without its operator.
//
// The body must be consumed exactly. Every length and count is checked
// against the bytes that remain before anything is allocated by it, and the
// decoded state must pass State.Validate.
//
// This package is engine-internal: it is importable (tools and tests read
// its types), but it has no compatibility promise; the stable API is
// package mayfly, storage and its drivers, and clock.
package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/storage"
)

// NumLevels is the number of LSM levels.
const NumLevels = 7

// Dir is the storage directory holding manifest versions.
const Dir = "manifest"

// Magic opens every manifest version: "MFLYMANI".
const Magic uint64 = 0x494e414d594c464d

// FormatVersion is the newest encoding version this package writes and
// reads; it reads every version from 1. Version 2 adds the merge operator
// name and is written only when State.MergeOperator is set.
const FormatVersion uint32 = 2

// plainFormatVersion is the version of a state without a merge operator.
const plainFormatVersion uint32 = 1

const (
	prefixLen = 12 // magic + format version
	crcLen    = 4
	nameExt   = ".manifest"
	nameDigit = 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// FileMeta describes one live SSTable. It is immutable once created: a
// State shares FileMeta pointers with the states it was cloned from.
type FileMeta struct {
	Num uint64 // file number

	// TableStats is the table's size, key bounds and row statistics, as
	// its properties block records them.
	format.TableStats

	CompactedTime int64 // Unix ms of the compaction or flush that produced it
}

// SmallestUserKey returns the user key of Smallest: a subslice of it,
// found in constant time without allocating (the user key is the internal
// key less its fixed-size trailer). Smallest must be a well-formed internal
// key, as State.Validate requires; for a shorter one it returns nil.
func (f *FileMeta) SmallestUserKey() []byte { return userKey(f.Smallest) }

// LargestUserKey returns the user key of Largest, as SmallestUserKey does
// for Smallest.
func (f *FileMeta) LargestUserKey() []byte { return userKey(f.Largest) }

// Overlaps reports whether the file's user keys meet [lo, hi]; a nil bound
// is open.
func (f *FileMeta) Overlaps(lo, hi []byte) bool {
	return (hi == nil || bytes.Compare(f.SmallestUserKey(), hi) <= 0) &&
		(lo == nil || bytes.Compare(f.LargestUserKey(), lo) >= 0)
}

func userKey(ikey []byte) []byte {
	n := len(ikey) - format.TrailerLen
	if n < 0 {
		return nil
	}
	return ikey[:n:n]
}

// State is the content of one manifest version.
type State struct {
	// Levels holds the live files of each level. L0 is stored in the order
	// given (the engine keeps it sorted by LargestSeq, newest first); every
	// other level is sorted by Smallest, and its files do not overlap.
	Levels [NumLevels][]*FileMeta

	NextFileNum uint64 // the next file number to allocate; every file's Num is below it
	LastSeq     uint64 // the last sequence number used; no file holds a larger one
	ClockHWM    int64  // highest engine clock reading persisted (Unix ms)
	MinLogNum   uint64 // WAL segments numbered below MinLogNum are fully flushed
	WriterEpoch uint64 // for writer fencing
	// MergeOperator is the name of the merge operator the database's merge
	// operands are written for (Options.MergeOperator); empty: none set yet.
	MergeOperator string
}

// Clone returns a copy of st whose level slices may be changed without
// affecting st. The FileMeta values are shared.
func (st *State) Clone() *State {
	c := *st
	for i, files := range st.Levels {
		c.Levels[i] = slices.Clone(files)
	}
	return &c
}

// NumFiles returns the number of files in all levels.
func (st *State) NumFiles() int {
	n := 0
	for _, files := range st.Levels {
		n += len(files)
	}
	return n
}

// invalid describes a broken invariant: the file it concerns (index -1 for
// the state as a whole) and why.
type invalid struct {
	level, index int
	reason       string
}

// check returns the first invariant st breaks, or nil.
func (st *State) check() *invalid {
	if st.LastSeq > format.MaxSeq {
		return &invalid{-1, -1, fmt.Sprintf("last sequence %d exceeds the maximum %d", st.LastSeq, format.MaxSeq)}
	}
	seen := make(map[uint64]int, st.NumFiles())
	for level, files := range st.Levels {
		for i, f := range files {
			bad := func(format string, args ...any) *invalid {
				return &invalid{level, i, fmt.Sprintf(format, args...)}
			}
			if f == nil {
				return bad("nil file")
			}
			if f.Num == 0 {
				return bad("file number 0")
			}
			if f.Num >= st.NextFileNum {
				return bad("file %d is not below the next file number %d", f.Num, st.NextFileNum)
			}
			if prev, dup := seen[f.Num]; dup {
				return bad("file %d is also listed in L%d", f.Num, prev)
			}
			seen[f.Num] = level
			if _, _, _, ok := format.SplitInternalKey(f.Smallest); !ok {
				return bad("file %d: malformed smallest key %x", f.Num, f.Smallest)
			}
			if _, _, _, ok := format.SplitInternalKey(f.Largest); !ok {
				return bad("file %d: malformed largest key %x", f.Num, f.Largest)
			}
			if format.CompareInternal(f.Smallest, f.Largest) > 0 {
				return bad("file %d: smallest key %x sorts after largest key %x", f.Num, f.Smallest, f.Largest)
			}
			if f.SmallestSeq > f.LargestSeq {
				return bad("file %d: smallest sequence %d above largest %d", f.Num, f.SmallestSeq, f.LargestSeq)
			}
			if f.LargestSeq > st.LastSeq {
				return bad("file %d: largest sequence %d above the last sequence %d", f.Num, f.LargestSeq, st.LastSeq)
			}
			if level > 0 && i > 0 && format.CompareInternal(files[i-1].Largest, f.Smallest) >= 0 {
				return bad("file %d overlaps or precedes file %d in L%d", f.Num, files[i-1].Num, level)
			}
		}
	}
	return nil
}

// Validate checks the invariants every stored state satisfies: file
// numbers are non-zero, unique and below NextFileNum; keys are well-formed
// internal keys with Smallest <= Largest; SmallestSeq <= LargestSeq <=
// LastSeq <= format.MaxSeq; files in levels >= 1 are sorted and disjoint.
func (st *State) Validate() error {
	if bad := st.check(); bad != nil {
		if bad.level < 0 {
			return fmt.Errorf("manifest: invalid state: %s", bad.reason)
		}
		return fmt.Errorf("manifest: invalid state: L%d file #%d: %s", bad.level, bad.index, bad.reason)
	}
	return nil
}

// Encode returns the encoding of st. st must not contain nil files; Write
// validates st before encoding it.
func Encode(st *State) []byte {
	size := prefixLen + 7*binary.MaxVarintLen64 + crcLen + len(st.MergeOperator)
	for _, files := range st.Levels {
		size += binary.MaxVarintLen64
		for _, f := range files {
			size += 16*binary.MaxVarintLen64 + 1 + len(f.Smallest) + len(f.Largest)
		}
	}
	b := make([]byte, 0, size)
	b = binary.LittleEndian.AppendUint64(b, Magic)
	version := plainFormatVersion
	if st.MergeOperator != "" {
		version = FormatVersion
	}
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.AppendUvarint(b, st.NextFileNum)
	b = binary.AppendUvarint(b, st.LastSeq)
	b = binary.AppendVarint(b, st.ClockHWM)
	b = binary.AppendUvarint(b, st.MinLogNum)
	b = binary.AppendUvarint(b, st.WriterEpoch)
	b = binary.AppendUvarint(b, NumLevels)
	for _, files := range st.Levels {
		b = binary.AppendUvarint(b, uint64(len(files)))
		for _, f := range files {
			b = binary.AppendUvarint(b, f.Num)
			b = binary.AppendUvarint(b, f.Size)
			b = binary.AppendUvarint(b, uint64(len(f.Smallest)))
			b = append(b, f.Smallest...)
			b = binary.AppendUvarint(b, uint64(len(f.Largest)))
			b = append(b, f.Largest...)
			b = binary.AppendUvarint(b, f.SmallestSeq)
			b = binary.AppendUvarint(b, f.LargestSeq)
			b = binary.AppendVarint(b, f.CreationTime)
			b = binary.AppendVarint(b, f.CompactedTime)
			b = binary.AppendVarint(b, f.MinTS)
			b = binary.AppendVarint(b, f.MaxTS)
			b = binary.AppendVarint(b, f.MinExpireTS)
			b = binary.AppendVarint(b, f.MaxExpireTS)
			b = binary.AppendVarint(b, f.MinTombstoneTS)
			b = binary.AppendUvarint(b, f.NumRows)
			b = binary.AppendUvarint(b, f.NumTombstones)
			b = binary.AppendUvarint(b, f.NumTTLRows)
			b = binary.AppendUvarint(b, f.TTLBytes)
			b = append(b, f.RowFeatures)
		}
	}
	if st.MergeOperator != "" {
		b = binary.AppendUvarint(b, uint64(len(st.MergeOperator)))
		b = append(b, st.MergeOperator...)
	}
	return appendCRC(b)
}

// minFileLen is the fewest bytes one encoded file can take: eighteen
// one-byte varints and the flags byte, plus two keys of at least a trailer.
const minFileLen = 18 + 1 + 2*format.TrailerLen

// decoder reads the body; off is the absolute offset of the next byte.
type decoder struct {
	name string
	data []byte // the whole encoding, without the CRC
	off  int
	err  error
}

func (d *decoder) fail(at int, msg string, args ...any) {
	if d.err == nil {
		d.err = format.Corruptf(d.name, int64(at), msg, args...)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.data[d.off:])
	if n <= 0 {
		d.fail(d.off, "bad varint for %s", what)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.data[d.off:])
	if n <= 0 {
		d.fail(d.off, "bad varint for %s", what)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) bytes(what string) []byte {
	at := d.off
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.data)-d.off) {
		d.fail(at, "%s length %d exceeds the %d bytes left", what, n, len(d.data)-d.off)
		return nil
	}
	b := bytes.Clone(d.data[d.off : d.off+int(n)])
	d.off += int(n)
	return b
}

func (d *decoder) byte(what string) uint8 {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.data) {
		d.fail(d.off, "truncated %s", what)
		return 0
	}
	c := d.data[d.off]
	d.off++
	return c
}

// Decode decodes a manifest version read from the object name. Errors wrap
// format.ErrCorruption and name the file and the offset of the bad bytes.
func Decode(name string, data []byte) (*State, error) {
	if len(data) < prefixLen+crcLen {
		return nil, format.Corruptf(name, 0, "manifest of %d bytes is too short", len(data))
	}
	if m := binary.LittleEndian.Uint64(data); m != Magic {
		return nil, format.Corruptf(name, 0, "bad manifest magic %#016x", m)
	}
	body := data[:len(data)-crcLen]
	if got, want := binary.LittleEndian.Uint32(data[len(body):]), crc32.Checksum(body, crcTable); got != want {
		return nil, format.Corruptf(name, int64(len(body)), "manifest checksum %#08x, computed %#08x", got, want)
	}
	version := binary.LittleEndian.Uint32(data[8:])
	if version < plainFormatVersion || version > FormatVersion {
		return nil, format.Corruptf(name, 8, "unsupported manifest format version %d", version)
	}
	d := &decoder{name: name, data: body, off: prefixLen}
	st := &State{}
	st.NextFileNum = d.uvarint("next file number")
	st.LastSeq = d.uvarint("last sequence")
	st.ClockHWM = d.varint("clock high-water mark")
	st.MinLogNum = d.uvarint("minimum log number")
	st.WriterEpoch = d.uvarint("writer epoch")
	at := d.off
	if n := d.uvarint("level count"); d.err == nil && n != NumLevels {
		d.fail(at, "manifest has %d levels, expected %d", n, NumLevels)
	}
	// fileAt[level][i] is the offset where file i of level starts, for
	// reporting invariant violations.
	var fileAt [NumLevels][]int
	for level := 0; level < NumLevels && d.err == nil; level++ {
		at := d.off
		count := d.uvarint("file count")
		if d.err != nil {
			break
		}
		if count > uint64(len(body)-d.off)/minFileLen {
			d.fail(at, "L%d file count %d exceeds the %d bytes left", level, count, len(body)-d.off)
			break
		}
		if count == 0 {
			continue
		}
		files := make([]*FileMeta, 0, count)
		for i := uint64(0); i < count && d.err == nil; i++ {
			fileAt[level] = append(fileAt[level], d.off)
			f := &FileMeta{}
			f.Num = d.uvarint("file number")
			f.Size = d.uvarint("file size")
			f.Smallest = d.bytes("smallest key")
			f.Largest = d.bytes("largest key")
			f.SmallestSeq = d.uvarint("smallest sequence")
			f.LargestSeq = d.uvarint("largest sequence")
			f.CreationTime = d.varint("creation time")
			f.CompactedTime = d.varint("compaction time")
			f.MinTS = d.varint("min ts")
			f.MaxTS = d.varint("max ts")
			f.MinExpireTS = d.varint("min expire ts")
			f.MaxExpireTS = d.varint("max expire ts")
			f.MinTombstoneTS = d.varint("min tombstone ts")
			f.NumRows = d.uvarint("row count")
			f.NumTombstones = d.uvarint("tombstone count")
			f.NumTTLRows = d.uvarint("TTL row count")
			f.TTLBytes = d.uvarint("TTL bytes")
			f.RowFeatures = d.byte("row features")
			files = append(files, f)
		}
		st.Levels[level] = files
	}
	if version >= 2 && d.err == nil {
		at := d.off
		if st.MergeOperator = string(d.bytes("merge operator name")); d.err == nil && st.MergeOperator == "" {
			d.fail(at, "empty merge operator name in a format 2 manifest")
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.off != len(body) {
		return nil, format.Corruptf(name, int64(d.off), "%d unexpected bytes after the last level", len(body)-d.off)
	}
	if bad := st.check(); bad != nil {
		at := int64(prefixLen)
		if bad.level >= 0 {
			at = int64(fileAt[bad.level][bad.index])
		}
		return nil, format.Corruptf(name, at, "invalid manifest: %s", bad.reason)
	}
	return st, nil
}

// VersionName returns the storage name of manifest version v.
func VersionName(v uint64) string {
	return fmt.Sprintf("%s/%0*d%s", Dir, nameDigit, v, nameExt)
}

// ParseVersionName returns the version a manifest object name stands for;
// ok is false for any name VersionName would not produce.
func ParseVersionName(name string) (v uint64, ok bool) {
	base, found := strings.CutPrefix(name, Dir+"/")
	if !found {
		return 0, false
	}
	digits, found := strings.CutSuffix(base, nameExt)
	if !found || len(digits) != nameDigit {
		return 0, false
	}
	v, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || VersionName(v) != name {
		return 0, false
	}
	return v, true
}

// versions lists the manifest versions in storage, ascending.
func versions(s storage.Storage) ([]uint64, error) {
	names, err := s.List(Dir)
	if err != nil {
		return nil, fmt.Errorf("manifest: list: %w", err)
	}
	var vs []uint64
	for _, name := range names {
		if v, ok := ParseVersionName(name); ok {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs, nil
}

// Load returns the newest manifest version that decodes and its version
// number, or (nil, 0, nil, nil) if there is no manifest at all. Newer
// versions that fail to decode are skipped and returned in skipped (each
// a format.CorruptionError naming the object) for the caller to log.
//
// If versions exist but none decodes, Load returns an error wrapping
// format.ErrCorruption rather than reporting an empty database. Read errors
// other than a version vanishing under it are returned as they are: falling
// back past a version that could not be read would lose its changes.
func Load(s storage.Storage) (st *State, version uint64, skipped []error, err error) {
	vs, err := versions(s)
	if err != nil {
		return nil, 0, nil, err
	}
	found := 0
	for i := len(vs) - 1; i >= 0; i-- {
		name := VersionName(vs[i])
		data, err := storage.ReadAll(s, name)
		if err != nil {
			if errors.Is(err, storage.ErrNotExist) {
				continue // removed since List
			}
			return nil, 0, skipped, fmt.Errorf("manifest: read %s: %w", name, err)
		}
		found++
		st, err := Decode(name, data)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		return st, vs[i], skipped, nil
	}
	if found > 0 {
		return nil, 0, skipped, fmt.Errorf("manifest: none of %d versions is readable: %w", found, errors.Join(skipped...))
	}
	return nil, 0, nil, nil
}

// Write validates st and stores it as version, which must be new: if the
// version exists Write returns an error wrapping storage.ErrExists and
// changes nothing. Versions start at 1.
func Write(s storage.Storage, version uint64, st *State) error {
	if version == 0 {
		return errors.New("manifest: version 0 is reserved for an empty database")
	}
	if err := st.Validate(); err != nil {
		return err
	}
	name := VersionName(version)
	if err := s.PutIfAbsent(name, Encode(st)); err != nil {
		return fmt.Errorf("manifest: write version %d: %w", version, err)
	}
	return nil
}

// RemoveOlder deletes every manifest version below keep.
func RemoveOlder(s storage.Storage, keep uint64) error {
	vs, err := versions(s)
	if err != nil {
		return err
	}
	var errs []error
	for _, v := range vs {
		if v >= keep {
			break
		}
		if err := s.Remove(VersionName(v)); err != nil {
			errs = append(errs, fmt.Errorf("manifest: remove version %d: %w", v, err))
		}
	}
	return errors.Join(errs...)
}

// appendCRC appends the checksum of b to b.
func appendCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}
