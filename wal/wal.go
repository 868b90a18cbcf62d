// Package wal reads and writes Mayfly's write-ahead log segments.
//
// A segment is one storage log (the engine names it, e.g. "wal/000007.wal").
// It starts with a fixed header and continues with records until the end of
// the file or an end marker. All integers are little-endian.
//
// Segment header (HeaderSize = 24 bytes):
//
//	 0        8           12                    20          24
//	+---------+-----------+---------------------+-----------+
//	| magic   | version   | segment number      | crc32c    |
//	| 8 bytes | u32 (= 2) | u64                 | u32       |
//	+---------+-----------+---------------------+-----------+
//	                                 crc32c covers bytes 0..20
//
// Record (RecordHeaderSize = 9 bytes, then the payload):
//
//	 0          4          8        9
//	+----------+----------+--------+-------------------------+
//	| crc32c   | length   | type   | payload (length bytes)  |
//	| u32      | u32      | u8     |                         |
//	+----------+----------+--------+-------------------------+
//	           \____________ crc32c covers these ____________/
//
// crc32c is CRC-32 with the Castagnoli polynomial. length is at most
// MaxRecordSize. Record types:
//
//   - 1, a full record: the payload is one engine batch.
//   - 2, a sync mark (version 2 only): the payload is 8 bytes, a u64, the
//     segment offset through which the segment was durable (the end of the
//     last completed Sync) when the mark was appended.
//   - 3, a seal (version 2 only): an empty payload. It ends a segment the
//     writer finished (Writer.Seal, at a rotation, before the next segment
//     is created); only zero bytes may follow it.
//
// Sync mark (SyncMarkSize = 17 bytes):
//
//	 0          4            8        9                     17
//	+----------+------------+--------+----------------------+
//	| crc32c   | length = 8 | type=2 | synced offset u64    |
//	+----------+------------+--------+----------------------+
//
// The Writer appends a mark in front of the first record appended after a
// Sync that made records durable (not for a Sync of the header alone). A
// segment written without Sync has no marks; a synced commit pays one mark
// per sync group.
// A mark's value is at most its own offset. Version 1 segments (no marks)
// are still read; a mark in a version 1 segment is corruption.
//
// End of segment: a record header of nine zero bytes (or fewer than nine
// zero bytes at the end of the file) marks the end of the records. No real
// record has an all-zero header, because its type byte is never zero. Every
// byte after an end marker must also be zero.
//
// Preallocation: CreateLog asks a backend that can (storage.Local) for a
// preallocated log, whose space is reserved and zero-filled ahead of the
// writes, so that a synced append does not have to commit a file-size
// change. Such a segment is its records followed by zeros to the end of the
// file, which reads as the end marker above. A crash leaves zeros after the
// last record that reached the disk (a clean end), a record partly written
// over zeros (a CRC mismatch: torn), or zeros followed by non-zero bytes
// when pages reached the disk out of order (torn at the zeros). Segments
// are never reused, so the reserved space cannot hold records of an older
// segment.
//
// A segment whose header is all zero, or which is shorter than a header, is
// treated like a torn write at offset 0 (a crash right after the segment
// was created).
//
// # Torn writes and damage
//
// A crash can leave the last records of the newest segment partly written,
// in any order of pages, but only in bytes written after the last
// completed Sync: the bytes a completed Sync covered are on disk. Replay
// stops at the first record that is truncated, fails its CRC, or announces
// an impossible length (or at non-zero bytes after an end marker), at
// offset X. It then scans the rest of the segment byte by byte for intact
// records (ReplayResult.LostRecords, LostBytes) and sync marks. A valid
// mark with a value above X proves that a Sync completed after the bytes at
// X were written, so they were durable: that is damage (bit rot, tampering),
// not a crash, and Replay returns a corruption error at X. Otherwise Replay
// reports a torn record (TornOffset) instead of failing; the caller decides
// whether that is an acceptable torn tail (the newest segment) or
// corruption (an older, fully synced segment), using ReplayResult.TornError
// for the latter. A record whose CRC is valid but whose type is unknown, or
// a sync mark of the wrong length or an impossible value, cannot come from
// a torn write and is reported as corruption directly.
//
// Damage inside the last sync group of a segment has no mark after it and
// reads as a torn tail.
//
// # Seals
//
// A rotation seals the old segment (Writer.SealAsync): it appends a seal
// record and returns; a goroutine hands the seal, with every record before
// it, to the operating system and then syncs the old segment. The next
// segment's writer is ordered behind that seal (Writer.After): it hands no
// record to the operating system before the seal is, and every Sync of it
// first waits for the seal's sync (which itself waited for the segment
// before it) and fails if that failed. Hence:
//
//   - a completed Sync of a segment, and so a sync mark in it, implies that
//     every older segment is durable through its seal;
//   - a crash of the process alone leaves every older segment sealed: its
//     seal reached the operating system before any newer record;
//   - only a crash of the machine can leave an older segment without its
//     seal (cut short at a record boundary, or torn in its unsynced tail),
//     and then no Sync of a newer segment completed.
//
// The engine's recovery rule follows. Replay reads the segments oldest
// first; the newest segment is never sealed while it is written to. An
// older segment that does not end in a seal (ReplayResult.Sealed) is the
// log's torn tail if no newer segment holds a sync mark
// (ReplayResult.HasSyncMark): replay stops at its end or tear and drops
// the rest of it and every newer segment, reported as a torn tail. If a
// newer segment holds a sync mark, the missing seal is damage, refused as
// corruption naming the segment and offset.
//
// No write acknowledged durable is dropped by that rule: such a write lies
// in a segment S whose Sync completed, after every segment older than S
// was durable and sealed. So the first unsealed segment U is S or newer.
// If U is S, the tear lies after S's last completed Sync (damage before a
// sync mark is refused as above), and no Sync of a segment newer than S
// completed, or S would be sealed. If U is newer than S, no Sync of U or
// of anything newer completed. Either way the dropped bytes were never
// acknowledged durable.
//
// Damage that destroys a seal after it was made durable is told from a
// crash only when a newer segment holds a sync mark (a Sync that appended
// nothing after it leaves none), as damage in a segment's last sync group
// is; otherwise the rule above reads it as a torn tail and drops the newer
// segments' records, none of which were acknowledged durable. A seal
// matters only while its segment is replayed at all: once the flush of the
// memtable the segment holds is recorded in the manifest, the engine
// replays only newer segments (MinLogNum) and deletes it. So damage to a
// seal is taken for a crash only if it happens between the rotation and
// that flush (the flushes queued before it and its own, usually well under
// a second) and the machine then crashes before the flush. A record in the
// newer segment saying that the seal is durable would not narrow that
// window: unsynced, it reaches the disk with the kernel's writeback,
// seconds later.
//
// Rejected: syncing the old segment lazily at the newer segment's first
// Sync (a writer that never syncs would leave older segments unsynced
// indefinitely, and the first synced write after a rotation would pay two
// syncs); accepting every unsealed older segment (a segment cut short
// before durable data of a newer one would go unnoticed); keeping the
// synchronous seal (its sync, behind a busy journal, stalls every write
// for as long as it takes).
//
// On a lock-free object store the engine keeps the synchronous seal
// (Writer.Seal) and creates the next segment at the rotation: a writer
// another one fenced then fails at its seal, before it creates a segment.
// Elsewhere it creates the next segment's log ahead of need, in the
// background, and writes its header when a rotation takes
// it (NewWriter). A crash leaves such a log empty, which replay treats as a
// segment that never held data; its number is never reused, because Open
// raises the file-number counter past every file present.
//
// This package is engine-internal: it is importable (tools and tests read
// its types), but it has no compatibility promise; the stable API is
// package mayfly, storage and its drivers, and clock.
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Magic opens every segment: "MFLYWAL" followed by 0x1a.
const Magic uint64 = 0x1a4c4157594c464d

// Version is the segment format version this package writes. Replay reads
// versions 1 (no sync marks) and 2.
const Version uint32 = 2

// versionNoMarks is the first version, which has no sync marks.
const versionNoMarks uint32 = 1

// HeaderSize is the size of the segment header.
const HeaderSize = 24

// RecordHeaderSize is the size of a record header.
const RecordHeaderSize = 9

// MaxRecordSize is the largest payload a record may carry.
const MaxRecordSize = 256 << 20

// RecordTypeFull marks a record whose payload is complete in itself.
const RecordTypeFull uint8 = 1

// RecordTypeSyncMark marks a sync mark: its 8-byte payload is the offset
// through which the segment was durable when the mark was appended.
const RecordTypeSyncMark uint8 = 2

// SyncMarkSize is the encoded size of a sync mark.
const SyncMarkSize = RecordHeaderSize + 8

// RecordTypeSeal marks a seal: the end of a segment its writer finished.
const RecordTypeSeal uint8 = 3

// ErrSealed is returned by an append to a sealed segment.
var ErrSealed = errors.New("wal: segment is sealed")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// AppendHeader appends the segment header for segment segNum to dst.
func AppendHeader(dst []byte, segNum uint64) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, Magic)
	dst = binary.LittleEndian.AppendUint32(dst, Version)
	dst = binary.LittleEndian.AppendUint64(dst, segNum)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// AppendRecord appends the encoding of one full record carrying payload to
// dst and returns the extended slice. It panics if payload is longer than
// MaxRecordSize; callers bound batch sizes before they get here.
func AppendRecord(dst, payload []byte) []byte {
	if len(payload) > MaxRecordSize {
		panic(fmt.Sprintf("wal: record of %d bytes exceeds MaxRecordSize", len(payload)))
	}
	return appendTyped(dst, RecordTypeFull, payload)
}

// appendSyncMark appends a sync mark recording that the segment was durable
// through offset synced.
func appendSyncMark(dst []byte, synced int64) []byte {
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], uint64(synced))
	return appendTyped(dst, RecordTypeSyncMark, v[:])
}

// appendTyped appends a record of type typ carrying payload to dst.
func appendTyped(dst []byte, typ uint8, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // crc, filled in below
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, typ)
	dst = append(dst, payload...)
	crc := crc32.Checksum(dst[start+4:], crcTable)
	binary.LittleEndian.PutUint32(dst[start:], crc)
	return dst
}

// RecordLen returns the encoded size of a record carrying n payload bytes.
func RecordLen(n int) int { return RecordHeaderSize + n }
