// Package bench compares Mayfly with other embedded Go key-value stores
// (Pebble, Badger, goleveldb) on db_bench-style workloads. It lives in its
// own module so that the library never depends on the other engines.
package bench

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// ErrNoTTL is returned by PutTTL on engines without native per-row TTL.
var ErrNoTTL = errors.New("bench: engine has no native TTL")

// Config is what every engine is opened with: the same block-cache budget
// and the same bloom filter setting for all of them. Everything else stays
// at each engine's defaults.
type Config struct {
	CacheBytes      int64 // block cache budget
	BloomBitsPerKey int   // bloom filter bits per key (10 ≈ 1% false positives); 0 = none
}

// Engine is the small surface the workloads need.
type Engine interface {
	Name() string
	// Open opens (creating if needed) the database in dir.
	Open(dir string, cacheBytes int64, bloomBitsPerKey int) error
	// Put writes one row without waiting for an fsync.
	Put(key, value []byte) error
	// PutTTL writes one row that expires after ttl (ErrNoTTL if unsupported).
	PutTTL(key, value []byte, ttl time.Duration) error
	// SyncPut writes one row and makes it durable before returning.
	SyncPut(key, value []byte) error
	// Batch writes keys[i]=values[i] atomically, without an fsync.
	Batch(keys, values [][]byte) error
	// Get appends key's value to dst; found is false for a missing key.
	Get(key, dst []byte) (value []byte, found bool, err error)
	// NewIter returns an iterator over the whole key space.
	NewIter() (Iter, error)
	// Settle lets background work (flushes, compactions) finish where the
	// engine offers a way to wait for it; it is used to prepare read
	// fixtures and is never timed.
	Settle(ctx context.Context) error
	// Stats returns engine-reported figures, such as "write_amp", where
	// the engine exposes them.
	Stats() map[string]float64
	Close() error
	// DiskBytes is the space the database directory takes on disk.
	DiskBytes() int64
}

// Iter is a forward iterator. Key and Value are valid until the next move.
type Iter interface {
	SeekGE(key []byte) bool
	First() bool
	Next() bool
	Key() []byte
	Value() []byte
	Close() error
}

// Engines lists the engine names in report order. "pebble-l6f" (Pebble
// reading point keys through an iterator that uses L6 bloom filters) and
// "pebble-bloom" (the same with a 10-bit filter on every level whatever
// -bloom says: the like-for-like point-read baseline) can be asked for by
// name, as can "badger-smallmem" (Badger with smallMemtableCount memtables
// of smallMemtableBytes, for runs under a memory limit that Badger's
// defaults alone exceed).
var Engines = []string{"mayfly", "pebble", "badger", "goleveldb"}

// NewEngine returns an unopened engine by name.
func NewEngine(name string) (Engine, error) {
	switch name {
	case "mayfly":
		return &mayflyEngine{}, nil
	case "pebble":
		return &pebbleEngine{}, nil
	case "pebble-l6f": // Pebble, point reads through SeekPrefixGE with L6 filters
		return &pebbleEngine{l6Filters: true}, nil
	case "pebble-bloom": // Pebble, 10-bit filters on every level, all of them read
		return &pebbleEngine{l6Filters: true, fixedBloom: 10}, nil
	case "badger":
		return &badgerEngine{}, nil
	case "badger-smallmem": // Badger with memtables sized like the others' (memory-bound runs)
		return &badgerEngine{smallMemtables: true}, nil
	case "goleveldb":
		return &leveldbEngine{}, nil
	}
	return nil, errors.New("bench: unknown engine " + name)
}

// HasTTL reports whether the engine has native per-row TTL.
func HasTTL(name string) bool { return name == "mayfly" || name == "badger" }

// DirBytes returns the bytes allocated on disk (st_blocks × 512) by the
// files under dir. Allocated rather than apparent size, because some
// engines map sparse files far larger than what they hold.
func DirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += info.Size()
		}
		return nil
	})
	return n
}

// sortedKeys returns a map's keys in order (for stable output).
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
