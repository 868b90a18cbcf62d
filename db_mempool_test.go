package mayfly

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/storage"
)

// TestMemtableChunksReusedAcrossRotations: the memtables a DB rotates
// through take the chunk the pool kept from the ones already flushed
// instead of mapping it fresh, the pool never holds more than
// memPoolChunks, and Close gives every chunk back.
func TestMemtableChunksReusedAcrossRotations(t *testing.T) {
	base := arenaBytes()
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = storage.NewMem()
		o.MemtableSize = 2 * memtable.ChunkSize
		o.DisableAutoCompaction = true
	})
	// Each round fills a memtable's arena to 2 chunks (1400 rows of about
	// a thousandth of a chunk) without reaching MemtableSize, then flushes
	// it. The keys ascend, so the memtable's index is its tail, which the
	// flush's freeze keeps as the frozen array: it takes no chunk from the
	// pool (memtable.Freeze).
	const rounds, rows, chunksPerRound = 8, 1400, 2
	// The pool keeps memPoolChunks, or with -1 one memtable's 2 chunks.
	poolChunks := uint64(2)
	if c := memPoolChunks; c >= 0 {
		poolChunks = uint64(c)
	}
	val := bytes.Repeat([]byte{'v'}, memtable.ChunkSize/1000-40)
	for r := range rounds {
		for i := range rows {
			if err := db.Put(fmt.Appendf(nil, "r%d-%06d", r, i), val); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if s := db.memPool.Stats(); uint64(s.Pooled) > poolChunks {
			t.Fatalf("round %d: pool holds %d chunks, more than %d", r, s.Pooled, poolChunks)
		}
	}
	s := db.memPool.Stats()
	t.Logf("chunk pool after %d rounds: %+v", rounds, s)
	if s.Fresh+s.Reused != rounds*chunksPerRound {
		t.Fatalf("%+v: want %d chunk uses in all", s, rounds*chunksPerRound)
	}
	// A flush wakes Flush just before it releases its memtable, so a
	// round may find the previous round's chunks not yet back. Round k's
	// memtable is surely released before round k+2 fills, so of any two
	// rounds from the third on, one reuses the pooled chunks; and chunks
	// are mapped only while at most two memtables (flushing and active)
	// and the pool hold any.
	wantReused := uint64((rounds - 2) / 2 * min(poolChunks, chunksPerRound))
	if s.Reused < wantReused || s.Fresh-s.Freed > 2*chunksPerRound+poolChunks {
		t.Fatalf("%+v: want at least %d reused and at most %d mapped", s, wantReused, 2*chunksPerRound+poolChunks)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if s := db.memPool.Stats(); s.Pooled != 0 {
		t.Fatalf("after Close the pool holds %d chunks", s.Pooled)
	}
	if got := arenaBytes(); got != base {
		t.Fatalf("after Close %d arena bytes remain", got-base)
	}
}
