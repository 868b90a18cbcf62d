package memtable

import (
	"sync"

	"github.com/mayflydb/mayfly/internal/manual"
)

// ChunkPool recycles arena chunks between the memtables of one database.
//
// Without it every memtable maps its chunks fresh (internal/manual: mmap,
// with the pages allocated and zeroed by the kernel up front) on the commit
// leader's goroutine, and its last Unref unmaps them again on whichever
// goroutine lets go (usually the flush). The smaller the memtables, the more
// often both are paid. A memtable made with NewPooled instead takes chunks
// from its pool first, and its last Unref hands full-size chunks back.
//
// A recycled chunk is not zeroed: it keeps the bytes of the memtable that
// released it. Nothing reads them: a memtable reads only the records its
// own entries locate, all of which it wrote. A chunk returns to the pool
// only at the memtable's last Unref, when no reader, iterator or flush can
// still reach the old rows, exactly when it would otherwise be unmapped.
//
// The pool keeps at most limit chunks (NewChunkPool), the rest are freed.
// Chunks of a single oversized record are never kept. After Close the pool
// keeps nothing: chunks handed back later (by an iterator that outlived the
// database) are freed at once.
//
// A ChunkPool is safe for concurrent use. A nil *ChunkPool pools nothing.
type ChunkPool struct {
	mu     sync.Mutex
	free   [][]byte // pooled chunks, the most recently released last
	limit  int
	closed bool
	stats  PoolStats
}

// PoolStats counts what a ChunkPool did.
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

// NewChunkPool returns a pool that keeps at most maxBytes of chunks, rounded
// up to whole chunks (1 MiB). A database sizes it to one memtable: see
// RFC 0003 for why that never raises peak memory. maxBytes <= 0 keeps
// nothing (every chunk is freed when released, as without a pool).
func NewChunkPool(maxBytes int64) *ChunkPool {
	limit := 0
	if maxBytes > 0 {
		limit = int((maxBytes + arenaChunk - 1) / arenaChunk)
	}
	return &ChunkPool{limit: limit}
}

// Stats returns the pool's counters.
func (p *ChunkPool) Stats() PoolStats {
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
func (p *ChunkPool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.stats.Freed += uint64(len(free))
	p.mu.Unlock()
	for _, c := range free {
		freeChunk(c)
	}
}

// get returns a chunk of arenaChunk bytes: a pooled one if any, else a
// fresh one. Its bytes are arbitrary.
func (p *ChunkPool) get() []byte {
	if p == nil {
		return newChunk(arenaChunk)
	}
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.stats.Reused++
		p.mu.Unlock()
		return c
	}
	p.stats.Fresh++
	p.mu.Unlock()
	return newChunk(arenaChunk)
}

// release takes back the chunks of a memtable whose last reference is
// gone: it keeps full-size chunks up to the limit and frees the rest.
func (p *ChunkPool) release(chunks [][]byte) {
	var drop [][]byte
	if p == nil {
		drop = chunks
	} else {
		p.mu.Lock()
		for _, c := range chunks {
			// An oversized record's own chunk is never kept.
			if !p.closed && len(c) == arenaChunk && len(p.free) < p.limit {
				p.free = append(p.free, c)
			} else {
				drop = append(drop, c)
			}
		}
		p.stats.Freed += uint64(len(drop))
		p.mu.Unlock()
	}
	for _, c := range drop {
		freeChunk(c)
	}
}

// freeChunk gives a chunk back to the operating system.
func freeChunk(c []byte) {
	arenaBytes.Add(-int64(len(c)))
	manual.Free(c)
}
