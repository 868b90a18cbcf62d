package memtable

import (
	"sync"

	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/internal/slab"
)

// Pool recycles arena chunks between the memtables of one database.
//
// Without it every memtable maps its chunks fresh (internal/manual: mmap,
// the kernel then allocating and zeroing each page at its first write) on
// the committing writer's goroutine, and its last Unref unmaps them again on whichever
// goroutine lets go (usually the flush). The smaller the memtables, the more
// often both are paid. A memtable made with NewPooled instead takes chunks
// from its pool first, and its last Unref hands full-size chunks back.
//
// A recycled chunk is not zeroed: it keeps the bytes of the memtable that
// released it. Nothing reads them: a memtable reads only the records its
// own entries locate, all of which it wrote. A chunk returns to the pool
// only at the memtable's last Unref, when no reader, iterator or flush can
// still reach the old rows, exactly when it would otherwise be unmapped.
// The index (skiplist nodes) lives in the same chunks, so it is recycled
// with them.
//
// The pool keeps at most limit chunks (NewPool), and no chunk that would
// raise its own and the live memtables' chunks above two memtables' worth
// (memtableReleased); the rest are freed. It keeps at most
// one memtable's index worth of nodes. Chunks of a single oversized
// record are never kept. After Close the pool keeps nothing: chunks handed
// back later (by an iterator that outlived the database) are freed at once,
// and nodes are left to the garbage collector.
//
// A Pool is safe for concurrent use. A nil *Pool pools nothing.
type Pool struct {
	mu     sync.Mutex
	free   [][]byte // pooled chunks, the most recently released last
	limit  int
	closed bool
	stats  PoolStats
	// out counts the full-size chunks handed out by get and not released
	// yet: those of the live memtables' arenas.
	out int
	// span is the full-size chunks of the arena of the
	// memtable released last: one memtable's worth as the workload fills
	// them, which bounds what the pool keeps beside the live memtables.
	span int
}

// PoolStats counts what a Pool did.
type PoolStats struct {
	// Fresh counts chunks that memtables of the pool had to map fresh;
	// Reused those they took from the pool instead.
	Fresh, Reused uint64
	// Freed counts chunks handed back and freed: the pool was full or
	// closed, or the chunk held one oversized record.
	Freed uint64
	// Pooled is the number of chunks the pool holds now, PooledBytes their
	// size (counted in ArenaBytes).
	Pooled      int
	PooledBytes int64
}

// NewPool returns a pool for the memtables of one database whose memtables
// have Size memtableSize: it keeps at most maxChunks arena chunks (ChunkSize each); maxChunks < 0
// keeps as many chunks as one such memtable holds. memtableSize <= 0 keeps
// nothing (every chunk is freed when released, as without a pool).
//
// Pooled chunks stay resident between memtables, so every chunk the pool
// may keep is memory a database holds even while its memtables are nearly
// empty; a database keeps up to one memtable's worth, less while memtables
// are live (memtableReleased), which spares the commit path the mapping of
// most chunks (RFC 0003, "Chunk recycling").
func NewPool(memtableSize int64, maxChunks int) *Pool {
	if memtableSize <= 0 {
		return &Pool{}
	}
	limit := maxChunks
	if limit < 0 {
		limit = int((memtableSize + arenaChunk - 1) / arenaChunk)
	}
	return &Pool{limit: limit}
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	if p == nil {
		return PoolStats{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Pooled = len(p.free)
	s.PooledBytes = int64(len(p.free)) * arenaChunk
	return s
}

// Close frees every pooled chunk; chunks released afterwards are freed, not
// kept. Close is idempotent.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.stats.Freed += uint64(len(free))
	p.mu.Unlock()
	for _, c := range free {
		freeChunk(manual.PurposeMemtablePooled, c)
	}
}

// get returns a chunk of arenaChunk bytes for purpose pu: a pooled one if
// any, else a fresh one. Its bytes are arbitrary.
func (p *Pool) get(pu manual.Purpose) []byte {
	if p == nil {
		return newChunk(pu, arenaChunk)
	}
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.stats.Reused++
		p.out++
		p.mu.Unlock()
		manual.Move(manual.PurposeMemtablePooled, pu, len(c))
		return c
	}
	p.stats.Fresh++
	p.out++
	p.mu.Unlock()
	return newChunk(pu, arenaChunk)
}

// release takes back the chunks of a memtable whose last reference is
// gone (chunks used for purpose pu): it keeps full-size chunks up to the
// limit and frees the rest.
func (p *Pool) release(pu manual.Purpose, chunks [][]byte) {
	// Under the race detector a row slice a holder kept past its
	// memtable's release reads the poison once the chunk is reused.
	for _, c := range chunks {
		slab.Poison(c)
	}
	var drop [][]byte
	if p == nil {
		drop = chunks
	} else {
		p.mu.Lock()
		for _, c := range chunks {
			if len(c) == arenaChunk && p.out > 0 {
				p.out--
			}
		}
		for _, c := range chunks {
			// An oversized record's own chunk is never kept, nor one that
			// would raise the live and pooled chunks above two memtables'
			// worth (see memtableReleased).
			if !p.closed && len(c) == arenaChunk && len(p.free) < p.limit && p.out+len(p.free) < 2*p.span {
				p.free = append(p.free, c)
				manual.Move(pu, manual.PurposeMemtablePooled, len(c))
			} else {
				drop = append(drop, c)
			}
		}
		p.stats.Freed += uint64(len(drop))
		p.mu.Unlock()
	}
	for _, c := range drop {
		freeChunk(pu, c)
	}
}

// memtableReleased records that a memtable holding n full-size chunks
// (its arena) is about to hand them back. Until the next
// release the pool keeps chunks only while they and the chunks of the live
// memtables stay under 2n: two memtables' worth as the workload fills them.
//
// Why: a pool that refilled to its limit at every release kept the chunks
// of the run's high-water mark resident for good, beside the flush's and
// compaction's buffers at their largest. While one memtable is flushed the
// next one fills, and the flushed one's chunks are what the one after
// needs; chunks beyond that are mapped fresh on the commit path and freed at
// their release (RFC 0003, "Chunk recycling", on the bounds rejected).
func (p *Pool) memtableReleased(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.span = n
	p.mu.Unlock()
}

// freeChunk gives a chunk, counted under purpose pu, back to the operating
// system.
func freeChunk(pu manual.Purpose, c []byte) {
	manual.FreeFor(pu, c)
}
