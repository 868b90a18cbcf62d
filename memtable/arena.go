package memtable

import (
	"encoding/binary"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
)

// Arena records. Every row is one record in an append-only chunk of the
// memtable's arena:
//
//	+----------+----------+-------------+--------+--------------+---------------+--------+
//	| klen u32 | vlen u32 | trailer u64 | key    | ts i64       | expire_ts i64 | value  |
//	| (LE)     | (LE)     | seq<<8|flags| klen B | if FlagHasTS | if HasExpire  | vlen B |
//	+----------+----------+-------------+--------+--------------+---------------+--------+
//
// Chunks are arenaChunk bytes; a record larger than a quarter chunk gets a
// chunk of its own. Chunks come from internal/manual, outside the Go heap:
// the garbage collector neither scans them nor counts them toward its heap
// goal, so a full memtable costs its own size in resident memory rather than
// up to twice it, and a released memtable's memory goes back to the
// operating system at once, or to the database's Pool (pool.go) for its
// next memtable. Bytes once written never change or move: rows handed to
// readers alias them, until the memtable's last reference is dropped (Unref)
// and every chunk is freed or pooled.

// arenaChunk is the size of each shared arena chunk. Chunks are resident
// in full (NewResident), so the unused tail of a memtable's last chunk, and
// of the last chunk of its frozen array, is resident memory that holds
// nothing: up to a chunk each, per live or pooled memtable. 256 KiB keeps
// that slack under 1 MiB across the two memtables and the pool of a fill,
// while a fresh chunk's mmap still amortises over 64 pages and offsets
// still fit an entry's 20 bits (entry.go; RFC 0003, "Chunk size").
const arenaChunk = 256 << 10

// ChunkSize is the size of the arena chunks memtables and Pools hold (a
// record over a quarter of it gets a chunk of its own size).
const ChunkSize = arenaChunk

// recordHeader is the fixed part of a record: key and value lengths and
// the trailer.
const recordHeader = 16

// recordLen returns the arena bytes the record of r takes.
func recordLen(r *format.Row) int {
	n := recordHeader + len(r.Key) + len(r.Value)
	if r.Flags&format.FlagHasTS != 0 {
		n += 8
	}
	if r.Flags&format.FlagHasExpire != 0 {
		n += 8
	}
	return n
}

// ArenaBytes reports the arena bytes of the process not yet given back to
// the operating system: those of memtables whose last reference is not
// released, and the chunks Pools keep for later memtables. This is the
// memory, outside the Go heap, that memtables take. Tests use it to check
// that every memtable is given back. It is the sum of the three memtable
// purposes of internal/manual (arena, frozen, pooled), under which every
// chunk is counted from its mapping to its release.
func ArenaBytes() int64 {
	b := manual.PurposeBytes()
	return b[manual.PurposeMemtableArena] + b[manual.PurposeMemtableFrozen] + b[manual.PurposeMemtablePooled]
}

// newChunk returns n freshly mapped arena bytes, counted under purpose p (manual.PurposeMemtableArena or PurposeMemtableFrozen).
func newChunk(p manual.Purpose, n int) []byte {
	return manual.NewResidentFor(p, n)
}

// reserve returns the chunk index and offset of n fresh arena bytes. Caller
// holds mu for writing.
func (m *Memtable) reserve(n int) (chunk, off int) {
	if n > arenaChunk/4 {
		m.chunks = append(m.chunks, newChunk(manual.PurposeMemtableArena, n))
		return len(m.chunks) - 1, 0
	}
	if m.cur < 0 || arenaChunk-m.curLen < n {
		m.chunks = append(m.chunks, m.pool.get(manual.PurposeMemtableArena))
		m.cur, m.curLen = len(m.chunks)-1, 0
	}
	off = m.curLen
	m.curLen += n
	return m.cur, off
}

// fullChunks returns how many full-size chunks the memtable holds that
// came from the pool: arena and frozen array (not the chunks of a lazy
// run, a tail or a frozen array that was one, which are mapped on their
// own and never pooled). Caller holds mu.
func (m *Memtable) fullChunks() int {
	n := 0
	if !m.frozen.lazy {
		n = len(m.frozen.bufs)
	}
	for _, c := range m.chunks {
		if len(c) == arenaChunk {
			n++
		}
	}
	return n
}

// freeArena hands every chunk to the pool, which keeps or frees it. Caller
// holds mu for writing and the last reference.
func (m *Memtable) freeArena() {
	m.pool.release(manual.PurposeMemtableArena, m.chunks)
	clear(m.chunks)
	m.chunks, m.cur, m.curLen = nil, -1, 0
}

// writeRecord copies r into the arena and returns its location (see loc).
// Caller holds mu for writing.
func (m *Memtable) writeRecord(r *format.Row, n int) uint64 {
	chunk, off := m.reserve(n)
	if chunk > maxChunk {
		panic("memtable: arena chunk index overflow")
	}
	b := m.chunks[chunk][off : off+n : off+n]
	binary.LittleEndian.PutUint32(b, uint32(len(r.Key)))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(r.Value)))
	binary.LittleEndian.PutUint64(b[8:], r.Seq<<8|uint64(r.Flags))
	p := recordHeader + copy(b[recordHeader:], r.Key)
	if r.Flags&format.FlagHasTS != 0 {
		binary.LittleEndian.PutUint64(b[p:], uint64(r.TS))
		p += 8
	}
	if r.Flags&format.FlagHasExpire != 0 {
		binary.LittleEndian.PutUint64(b[p:], uint64(r.ExpireTS))
		p += 8
	}
	copy(b[p:], r.Value)
	return makeLoc(chunk, off, len(r.Key))
}

// recordKey returns the key of the record at loc. Caller holds mu.
func (m *Memtable) recordKey(loc uint64) []byte {
	c := m.chunks[locChunk(loc)]
	off := locOff(loc)
	klen := int(binary.LittleEndian.Uint32(c[off:]))
	p := off + recordHeader
	return c[p : p+klen : p+klen]
}

// trailer returns seq<<8|flags of the row of e, a stored entry. Caller
// holds mu.
func (m *Memtable) trailer(e entry) uint64 {
	return binary.LittleEndian.Uint64(m.chunks[locChunk(e.loc)][locOff(e.loc)+8:])
}

// row materialises the row of e. Caller holds mu.
func (m *Memtable) row(e entry) format.Row {
	c := m.chunks[locChunk(e.loc)]
	off := locOff(e.loc)
	klen := int(binary.LittleEndian.Uint32(c[off:]))
	vlen := int(binary.LittleEndian.Uint32(c[off+4:]))
	t := binary.LittleEndian.Uint64(c[off+8:])
	p := off + recordHeader
	r := format.Row{Key: c[p : p+klen : p+klen], Seq: t >> 8, Flags: uint8(t)}
	p += klen
	if r.Flags&format.FlagHasTS != 0 {
		r.TS = int64(binary.LittleEndian.Uint64(c[p:]))
		p += 8
	}
	if r.Flags&format.FlagHasExpire != 0 {
		r.ExpireTS = int64(binary.LittleEndian.Uint64(c[p:]))
		p += 8
	}
	if vlen > 0 {
		r.Value = c[p : p+vlen : p+vlen]
	}
	return r
}
