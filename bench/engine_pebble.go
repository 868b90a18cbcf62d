package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

type pebbleEngine struct {
	// l6Filters makes Get use an iterator with IterOptions.UseL6Filters
	// and SeekPrefixGE: Pebble's DB.Get never reads the bloom filters of L6
	// tables (by design), which is where a settled database keeps most keys.
	l6Filters bool
	// fixedBloom, if > 0, is the filter's bits per key on every level,
	// whatever Open is given (the "pebble-bloom" variant).
	fixedBloom int
	db         *pebble.DB
	cache      *pebble.Cache
	dir        string
	ttl        pebbleTTL // TTLOps state (engine_pebble_ttl.go)
}

func (e *pebbleEngine) Name() string {
	if e.fixedBloom > 0 {
		return "pebble-bloom"
	}
	if e.l6Filters {
		return "pebble-l6f"
	}
	return "pebble"
}

func (e *pebbleEngine) Open(dir string, cacheBytes int64, bloomBits int) error {
	o := &pebble.Options{Logger: quietLogger{}, Merger: pebbleCounterMerger}
	if e.fixedBloom > 0 {
		bloomBits = e.fixedBloom
	}
	if cacheBytes > 0 {
		e.cache = pebble.NewCache(cacheBytes)
		o.Cache = e.cache
	}
	if bloomBits > 0 {
		for i := range o.Levels {
			o.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBits)
		}
	}
	o.EnsureDefaults()
	db, err := pebble.Open(dir, o)
	if err != nil {
		return err
	}
	e.db, e.dir = db, dir
	return nil
}

func (e *pebbleEngine) Put(k, v []byte) error { return e.db.Set(k, v, pebble.NoSync) }

func (e *pebbleEngine) PutTTL(k, v []byte, ttl time.Duration) error { return ErrNoTTL }

func (e *pebbleEngine) SyncPut(k, v []byte) error { return e.db.Set(k, v, pebble.Sync) }

func (e *pebbleEngine) Batch(keys, values [][]byte) error {
	b := e.db.NewBatch()
	for i := range keys {
		b.Set(keys[i], values[i], nil)
	}
	err := b.Commit(pebble.NoSync)
	b.Close()
	return err
}

var l6FilterIterOpts = &pebble.IterOptions{UseL6Filters: true}

func (e *pebbleEngine) Get(k, dst []byte) ([]byte, bool, error) {
	if e.l6Filters {
		it, err := e.db.NewIter(l6FilterIterOpts)
		if err != nil {
			return dst, false, err
		}
		found := it.SeekPrefixGE(k) && string(it.Key()) == string(k)
		if found {
			dst = append(dst, it.Value()...)
		}
		return dst, found, it.Close()
	}
	v, closer, err := e.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	dst = append(dst, v...)
	closer.Close()
	return dst, true, nil
}

func (e *pebbleEngine) NewIter() (Iter, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return pebbleIter{it}, nil
}

type pebbleIter struct{ *pebble.Iterator }

func (it pebbleIter) SeekGE(k []byte) bool { return it.Iterator.SeekGE(k) }

func (e *pebbleEngine) Settle(ctx context.Context) error {
	if err := e.db.Flush(); err != nil {
		return err
	}
	// Pebble has no "wait for compactions": poll until nothing has run for
	// five consecutive polls 100ms apart. (EstimatedDebt is not used: it can
	// stay above zero while no compaction is due.)
	quiet := 0
	for quiet < 5 {
		m := e.db.Metrics()
		if m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
			quiet++
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func (e *pebbleEngine) Stats() map[string]float64 {
	m := e.db.Metrics()
	t := m.Total()
	wa := 0.0
	if t.TableBytesFlushed > 0 {
		// Same definition as Mayfly's: SSTable bytes written by flushes and
		// compactions per byte flushed.
		wa = float64(t.TableBytesFlushed+t.TableBytesCompacted) / float64(t.TableBytesFlushed)
	}
	return map[string]float64{
		"write_amp":       wa,
		"pebble_writeamp": t.WriteAmp(),
		"compactions":     float64(m.Compact.Count),
		"l0_files":        float64(m.Levels[0].TablesCount),
		"cache_hits":      float64(m.BlockCache.Hits),
		"cache_misses":    float64(m.BlockCache.Misses),
	}
}

func (e *pebbleEngine) Close() error {
	err := e.db.Close()
	if e.cache != nil {
		e.cache.Unref()
	}
	return err
}

func (e *pebbleEngine) DiskBytes() int64 { return DirBytes(e.dir) }

// quietLogger drops Pebble's informational messages (WAL replay on every
// Open) so that they do not interleave with the report; errors still show.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(2)
}
