package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
)

// memtableEnv names an environment variable that, when set, overrides
// Options.MemtableSize for the Mayfly engine with this many MiB (fractions
// allowed, e.g. 0.5). It exists only to measure the memtable-size trade
// (bench/HISTORY.md, "Memtable size: RSS against write amplification") without editing code; reported comparisons leave it
// unset so that Mayfly runs with the library's defaults. It is read by this
// adapter only, never by the library.
const memtableEnv = "MAYFLY_BENCH_MEMTABLE_MIB"

type mayflyEngine struct {
	db  *mayfly.DB
	dir string
	mem *memSampler // the memory breakdown at the highest RSS
	// clock, if set before Open, is the database's Options.Clock (the
	// ttlscale workload's simulated time).
	clock clock.Clock
}

func (e *mayflyEngine) Name() string { return "mayfly" }

func (e *mayflyEngine) Open(dir string, cacheBytes int64, bloom int) error {
	o := &mayfly.Options{BlockCacheSize: max(cacheBytes, 0), BloomBitsPerKey: max(bloom, 0),
		MergeOperator: mayfly.Int64Add}
	o.DisableBloomFilters = bloom <= 0
	o.DisableBlockCache = cacheBytes <= 0
	o.Clock = e.clock
	if v := os.Getenv(memtableEnv); v != "" {
		mib, err := strconv.ParseFloat(v, 64)
		if err != nil || mib <= 0 {
			return fmt.Errorf("bench: %s=%q is not a positive number of MiB", memtableEnv, v)
		}
		o.MemtableSize = int64(mib * (1 << 20))
	}
	db, err := mayfly.Open(dir, o)
	if err != nil {
		return err
	}
	e.db, e.dir, e.mem = db, dir, startMemSampler()
	return nil
}

func (e *mayflyEngine) Put(k, v []byte) error { return e.db.Put(k, v) }

func (e *mayflyEngine) PutTTL(k, v []byte, ttl time.Duration) error {
	return e.db.PutTTL(k, v, mayfly.ExpireAfter(ttl))
}

func (e *mayflyEngine) SyncPut(k, v []byte) error {
	return e.db.PutWith(k, v, mayfly.DefaultTTL(), mayfly.Sync)
}

func (e *mayflyEngine) Batch(keys, values [][]byte) error {
	b := e.db.NewBatch()
	defer b.Close() // recycle the batch, as the Pebble adapter does
	for i := range keys {
		b.Put(keys[i], values[i])
	}
	return b.Write(mayfly.NoSync)
}

func (e *mayflyEngine) Get(k, dst []byte) ([]byte, bool, error) {
	// GetAppend copies the value into dst, as the other adapters do.
	v, err := e.db.GetAppend(dst, k)
	if errors.Is(err, mayfly.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	return v, true, nil
}

func (e *mayflyEngine) NewIter() (Iter, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return mayflyIter{it}, nil
}

type mayflyIter struct{ *mayfly.Iterator }

func (e *mayflyEngine) Settle(ctx context.Context) error {
	if err := e.db.Flush(); err != nil {
		return err
	}
	return e.db.WaitForCompactions(ctx)
}

func (e *mayflyEngine) Stats() map[string]float64 {
	m := e.db.Metrics()
	stats := map[string]float64{
		"write_amp":         m.WriteAmplification(),
		"sst_bytes":         float64(m.DiskBytes()),
		"write_stalls":      float64(m.WriteStalls),
		"write_stall_ms":    float64(m.WriteStallTime.Milliseconds()),
		"write_slowdowns":   float64(m.WriteSlowdowns),
		"write_slowdown_ms": float64(m.WriteSlowdownTime.Milliseconds()),
		"compactions":       float64(m.Compactions),
		"whole_file_drops":  float64(m.WholeFileDrops),
		"trivial_moves":     float64(m.TrivialMoves),
		"l0_files":          float64(m.Levels[0].Files),
		"cache_hits":        float64(m.BlockCacheHits),
		"cache_misses":      float64(m.BlockCacheMisses),
	}
	stats["flushes"] = float64(m.Flushes)
	stats["touches_coalesced"] = float64(m.TouchesCoalesced)
	stats["wal_bytes"] = float64(m.WALBytes)
	stats["cond_failed_on_read"] = float64(m.ConditionsFailedOnRead)
	stats["cond_groups_proven"] = float64(m.CondGroupsProven)
	stats["cond_groups_drained"] = float64(m.CondGroupsDrained)
	stats["batches_applied_by_others"] = float64(m.BatchesAppliedByOthers)
	stats["batches_committed"] = float64(m.BatchesCommitted)
	for kind, n := range m.CompactionsByKind {
		stats["compactions_"+kind] = float64(n)
	}
	e.mem.addTo(stats)
	return stats
}

func (e *mayflyEngine) Close() error {
	e.mem.Stop()
	return e.db.Close()
}

func (e *mayflyEngine) DiskBytes() int64 { return DirBytes(e.dir) }

// TableBytes is the bytes of the live version's SSTables.
func (e *mayflyEngine) TableBytes() int64 {
	m := e.db.Metrics()
	return int64(m.DiskBytes())
}

// TTLOps: Mayfly's native single-key operations.

func (e *mayflyEngine) PutExpiring(k, v []byte, ttl time.Duration) error { return e.PutTTL(k, v, ttl) }

func (e *mayflyEngine) GetEx(k []byte, ttl time.Duration, dst []byte) ([]byte, bool, error) {
	return found(e.db.GetEx(k, mayfly.ExpireAfter(ttl)))
}

func (e *mayflyEngine) Touch(k []byte, ttl time.Duration) (bool, error) {
	return e.db.Touch(k, mayfly.ExpireAfter(ttl))
}

func (e *mayflyEngine) PutIfAbsent(k, v []byte, ttl time.Duration) (bool, error) {
	return e.db.PutIfAbsent(k, v, mayfly.ExpireAfter(ttl))
}

func (e *mayflyEngine) GetDel(k, dst []byte) ([]byte, bool, error) { return found(e.db.GetDel(k)) }

// found maps Mayfly's ErrNotFound to found=false.
func found(v []byte, err error) ([]byte, bool, error) {
	if errors.Is(err, mayfly.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (e *mayflyEngine) WALBytes() uint64 { return e.db.Metrics().WALBytes }
