package memtable

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/internal/manual"
)

// Arena records. Every row is one record in an append-only chunk of the
// memtable's arena, and one skiplist node (skl.go) in a chunk that holds
// nodes only:
//
//	+----------+----------+-------------+--------+--------------+---------------+--------+
//	| klen u32 | vlen u32 | trailer u64 | key    | ts i64       | expire_ts i64 | value  |
//	| (LE)     | (LE)     | seq<<8|flags| klen B | if FlagHasTS | if HasExpire  | vlen B |
//	+----------+----------+-------------+--------+--------------+---------------+--------+
//
// Nodes are kept apart from records so that the index is dense: a search
// visits about 30 nodes, and a few MB of nodes stay in the CPU caches where
// nodes strewn among records (six times the bytes) would not. Chunks are
// arenaChunk bytes; a record larger than a quarter chunk gets a chunk of its
// own. Chunks come from internal/manual, outside the Go heap:
// the garbage collector neither scans them nor counts them toward its heap
// goal, so a full memtable costs its own size in resident memory rather than
// up to twice it, and a released memtable's memory goes back to the
// operating system at once, or to the database's Pool (pool.go) for its
// next memtable. Bytes once written never change or move: rows handed to
// readers alias them, until the memtable's last reference is dropped (Unref)
// and every chunk is freed or pooled.

// arenaChunk is the size of each shared arena chunk. A fresh chunk's pages
// become resident as they are first written, a recycled chunk's are
// resident in full, so the unused end of a memtable's last record chunk,
// and of its last node chunk, may be resident memory that holds nothing: up
// to a chunk each, per live memtable. The size weighs that slack against
// how often a chunk is mapped, and an offset within a chunk must fit a
// location's 20 bits (keys.go; RFC 0003, "Chunk size").
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

// newChunk returns n freshly mapped arena bytes, counted under purpose p.
// Their pages are not populated up front (no MAP_POPULATE): populating
// makes the mmap a system call of tens of microseconds, long enough for the
// Go scheduler to hand the writer's processor away, and a busy machine then
// gives it back milliseconds later; a page fault at the first write keeps
// the processor (RFC 0003, "Chunk recycling").
func newChunk(p manual.Purpose, n int) []byte {
	return manual.NewFor(p, n)
}

// The arena's chunks as readers see them. Writers append a chunk under
// arena.mu, writing its slot of chunks before they publish the longer table
// (arena.table); a chunk's index never changes, and a location that names it
// was published (by the CAS that links its node) after the table that holds
// it, so a reader that finds a chunk index past the table it loaded loads the
// table again and finds it there (view.chunk).
type chunkTable struct{ chunks [][]byte }

// arena hands out space for nodes and records to concurrent writers, each
// kind from chunks of its own (nodeSpace, recordSpace). cur[kind]
// packs the slot of the chunk being filled (its index plus one; 0: none yet)
// in its upper 32 bits and the bytes handed out from it in its lower 32: an
// allocation is one atomic add, and only the writer whose add ran past the
// chunk's end takes mu to add the next chunk (the others that ran past it
// meanwhile find cur moved on and add again).
type arena struct {
	mu    sync.Mutex // serialises appending chunks
	table atomic.Pointer[chunkTable]
	cur   [2]atomic.Uint64
}

// The kinds of arena space.
const (
	nodeSpace   = 0 // skiplist nodes: every allocation a multiple of 8
	recordSpace = 1
)

// alloc returns the chunk index and offset of n fresh bytes (at most
// arenaChunk/4) in a shared chunk of the given kind. Safe for concurrent
// use.
func (m *Memtable) alloc(kind, n int) (chunk, off int) {
	a := &m.arena
	cur := &a.cur[kind]
	for {
		v := cur.Add(uint64(n))
		slot, end := int(v>>32), int(uint32(v))
		if slot > 0 && end <= arenaChunk {
			return slot - 1, end - n
		}
		a.mu.Lock()
		if int(cur.Load()>>32) != slot {
			a.mu.Unlock() // another writer added the next chunk: add again
			continue
		}
		chunk = m.appendChunk(m.pool.get(manual.PurposeMemtableArena))
		cur.Store(uint64(chunk+1)<<32 | uint64(n))
		a.mu.Unlock()
		return chunk, 0
	}
}

// allocBig returns the index of a chunk of its own for a record of n bytes
// (over arenaChunk/4). Safe for concurrent use.
func (m *Memtable) allocBig(n int) int {
	m.arena.mu.Lock()
	defer m.arena.mu.Unlock()
	return m.appendChunk(newChunk(manual.PurposeMemtableArena, n))
}

// appendChunk adds c to the table and returns its index. Caller holds
// arena.mu.
func (m *Memtable) appendChunk(c []byte) int {
	var old [][]byte
	if t := m.arena.table.Load(); t != nil {
		old = t.chunks
	}
	if len(old) > maxChunk {
		panic("memtable: arena chunk index overflow")
	}
	// Appending may write the slot past len(old) in the array readers of
	// the old table share; none of them reads past its own length.
	m.arena.table.Store(&chunkTable{chunks: append(old, c)})
	return len(old)
}

// chunks returns the arena's chunks; nil before the first or after the
// last Unref.
func (m *Memtable) chunks() [][]byte {
	if t := m.arena.table.Load(); t != nil {
		return t.chunks
	}
	return nil
}

// fullChunks returns how many full-size chunks (those that came from the
// pool) the arena holds. Caller holds the last reference.
func (m *Memtable) fullChunks() int {
	n := 0
	for _, c := range m.chunks() {
		if len(c) == arenaChunk {
			n++
		}
	}
	return n
}

// freeArena hands every chunk to the pool, which keeps or frees it. Caller
// holds the last reference.
func (m *Memtable) freeArena() {
	chunks := m.chunks()
	m.arena.table.Store(nil)
	m.arena.cur[nodeSpace].Store(0)
	m.arena.cur[recordSpace].Store(0)
	m.pool.release(manual.PurposeMemtableArena, chunks)
	clear(chunks)
}

// writeRecord copies r into b, which is recordLen(r) bytes.
func writeRecord(b []byte, r *format.Row) {
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
}

// recordKey returns the key of the record at loc.
func (v *view) recordKey(loc uint64) []byte {
	c := v.chunk(locChunk(loc))
	off := locOff(loc)
	klen := int(binary.LittleEndian.Uint32(c[off:]))
	p := off + recordHeader
	return c[p : p+klen : p+klen]
}

// row materialises the row of the record at loc.
func (v *view) row(loc uint64) format.Row {
	c := v.chunk(locChunk(loc))
	off := locOff(loc)
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
