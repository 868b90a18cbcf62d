package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/trace"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/bench"
	// The S3 driver, so that mayfly.Open takes s3:// locations.
	_ "github.com/mayflydb/mayfly/storage/s3"
)

// params are one run's settings (the command's flags).
type params struct {
	base      string        // the S3 location of MAYFLY_S3_URL
	prefix    string        // this run's sub-prefix of base
	bandwidth int64         // bytes per second per connection and direction; 0: unlimited
	valueSize int           // bytes per value
	writers   int           // goroutines of the synced and unsynced write phases
	writeDur  time.Duration // length of each of those phases
	rate      int           // writes per second of the steady phase
	steadyDur time.Duration // length of the steady phase
	idleDur   time.Duration // length of the idle phase
	grace     time.Duration // wait before it, for the deletions of obsolete tables
	keys      int           // keys of the read fixture
	coldReads int           // reads timed right after an open with an empty disk cache
	warmReads int           // reads timed once the disk cache holds every table
	readers   int           // goroutines of the read throughput phase
	readDur   time.Duration // length of the read throughput phase
	tmp       string        // local directory for the disk caches
	blockMiB  int64         // block cache of the read phases, MiB
	traceDir  string        // if set: runtime traces of the write phases go here
}

// result is what one added round trip measured.
type result struct {
	rtt                    time.Duration
	sync, nosync, steady   *load
	mixedSync, mixedNoSync *load // the synced writers and the unsynced one, side by side
	syncReqs, steadyReqs   map[string]uint64
	idleReqs               map[string]uint64
	drainReqs              map[string]uint64 // after the writes, before idle: the grace period's deletions
	idle                   time.Duration
	fixtureTables          int
	fixtureBytes           uint64
	fixtureLoad            time.Duration
	open                   time.Duration
	openReqs               map[string]uint64
	first                  time.Duration
	cold, warm, readTput   *load
	coldReqs, warmReqs     map[string]uint64
	coldCopies, warmMisses uint64
	copied, whole          fetch
}

// delta returns after-before for every counter that changed.
func delta(before, after map[string]uint64) map[string]uint64 {
	d := make(map[string]uint64)
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// runOne measures every phase at one added round trip, through a proxy it
// starts and stops.
func runOne(p params, rtt time.Duration, logf func(string, ...any)) (*result, error) {
	_, upstream, err := throughProxy(p.base, "unused:0", "")
	if err != nil {
		return nil, err
	}
	px, err := startProxy(upstream, rtt, p.bandwidth)
	if err != nil {
		return nil, err
	}
	defer px.Stop()
	loc := func(phase string) (string, error) {
		l, _, err := throughProxy(p.base, px.Listen, filepath.Join(p.prefix, rtt.String(), phase))
		return l, err
	}
	r := &result{rtt: rtt}
	if err := writes(p, r, loc, logf); err != nil {
		return nil, err
	}
	if err := reads(p, r, loc, logf); err != nil {
		return nil, err
	}
	return r, nil
}

// writes runs the write phases: synced writers sharing group commits,
// unsynced writers, then a steady paced writer whose database is then
// left idle.
func writes(p params, r *result, loc func(string) (string, error), logf func(string, ...any)) error {
	vals := bench.NewValueGen(p.valueSize)
	value := vals.Next()
	put := func(db *mayfly.DB, opts *mayfly.WriteOptions) func(w, i int) error {
		return func(w, i int) error {
			var k [bench.KeySize]byte
			return db.PutWith(bench.PutKey(k[:], rand.Uint64N(uint64(max(p.keys, 1)))), value, mayfly.NoExpiry(), opts)
		}
	}
	l, err := loc("writes")
	if err != nil {
		return err
	}
	db, err := mayfly.Open(l, nil)
	if err != nil {
		return err
	}
	before := db.Metrics().Storage
	if r.sync, err = traced(p, "sync-"+r.rtt.String(), func() (*load, error) {
		return driveFor(p.writers, p.writeDur, put(db, mayfly.Sync))
	}); err != nil {
		db.Close()
		return fmt.Errorf("synced writes: %w", err)
	}
	r.syncReqs = delta(before, db.Metrics().Storage)
	logf("%v synced writes: %.0f/s p99 %v", r.rtt, r.sync.perSec(), r.sync.hist.Quantile(0.99))
	if r.nosync, err = traced(p, "nosync-"+r.rtt.String(), func() (*load, error) {
		return driveFor(p.writers, p.writeDur, put(db, nil))
	}); err != nil {
		db.Close()
		return fmt.Errorf("unsynced writes: %w", err)
	}
	logf("%v unsynced writes: %.0f/s", r.rtt, r.nosync.perSec())
	if r.mixedSync, r.mixedNoSync, err = mixed(p, db, put); err != nil {
		db.Close()
		return fmt.Errorf("mixed writes: %w", err)
	}
	logf("%v one unsynced writer beside synced ones: p99 %v", r.rtt, r.mixedNoSync.hist.Quantile(0.99))
	if err := db.Close(); err != nil {
		return err
	}

	if l, err = loc("steady"); err != nil {
		return err
	}
	if db, err = mayfly.Open(l, nil); err != nil {
		return err
	}
	defer db.Close()
	before = db.Metrics().Storage
	one := put(db, nil)
	if r.steady, err = drivePaced(p.rate, p.steadyDur, func(i int) error { return one(0, i) }); err != nil {
		return fmt.Errorf("steady writes: %w", err)
	}
	r.steadyReqs = delta(before, db.Metrics().Storage)
	logf("%v steady writes: %.0f/s, %d requests", r.rtt, r.steady.perSec(), requests(r.steadyReqs))

	// Idle: what the writes left to do is done (the WAL buffer uploaded,
	// due compactions run, the tables they made obsolete deleted once
	// their grace period has passed), then nothing is asked of the
	// database.
	if err := db.FlushWAL(true); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.WaitForCompactions(ctx); err != nil {
		return err
	}
	before = db.Metrics().Storage
	time.Sleep(p.grace)
	r.drainReqs = delta(before, db.Metrics().Storage)
	logf("%v waited out the grace period of obsolete tables: %d requests", r.rtt, requests(r.drainReqs))
	before = db.Metrics().Storage
	t0 := time.Now()
	time.Sleep(p.idleDur)
	r.idle = time.Since(t0)
	r.idleReqs = delta(before, db.Metrics().Storage)
	logf("%v idle %v: %d requests", r.rtt, r.idle.Round(time.Millisecond), requests(r.idleReqs))
	return nil
}

// objectStoreGrace is Options.ObsoleteFileGracePeriod's default on an
// object store (docs/usage.md, "Options"): tables a compaction made
// obsolete are deleted up to this long after it. The idle phase starts
// once it, and 2 s more, have passed since the writes.
const objectStoreGrace = time.Minute

// mixed runs p.writers synced writers and one unsynced writer paced at
// p.rate side by side for p.writeDur: what the synced writers' WAL uploads
// cost a writer that did not ask for one.
func mixed(p params, db *mayfly.DB, put func(*mayfly.DB, *mayfly.WriteOptions) func(w, i int) error) (synced, unsynced *load, err error) {
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		synced, serr = driveFor(p.writers, p.writeDur, put(db, mayfly.Sync))
	}()
	one := put(db, nil)
	unsynced, err = drivePaced(p.rate, p.writeDur, func(i int) error { return one(0, i) })
	<-done
	return synced, unsynced, errors.Join(err, serr)
}

// traced runs phase, writing a runtime trace of it to p.traceDir/name.trace
// if p.traceDir is set.
func traced(p params, name string, phase func() (*load, error)) (*load, error) {
	if p.traceDir == "" {
		return phase()
	}
	f, err := os.Create(filepath.Join(p.traceDir, name+".trace"))
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	l, err := phase()
	trace.Stop()
	return l, errors.Join(err, f.Close())
}

// reads loads the fixture, reopens it with an empty disk cache and times
// the reads that fill the cache (cold), then reads once it holds every
// table (warm).
func reads(p params, r *result, loc func(string) (string, error), logf func(string, ...any)) error {
	l, err := loc("fixture")
	if err != nil {
		return err
	}
	loadCache, err := os.MkdirTemp(p.tmp, "load-cache-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(loadCache)
	t0 := time.Now()
	if err := loadFixture(l, loadCache, p); err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	r.fixtureLoad = time.Since(t0)
	if r.copied, r.whole, err = fetchTable(l, p.tmp); err != nil {
		return fmt.Errorf("table fetch: %w", err)
	}

	cache, err := os.MkdirTemp(p.tmp, "cache-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	t0 = time.Now()
	db, err := mayfly.Open(l, &mayfly.Options{ObjectCacheDir: cache, BlockCacheSize: p.blockMiB << 20})
	if err != nil {
		return err
	}
	defer db.Close()
	r.open = time.Since(t0)
	m := db.Metrics()
	r.openReqs = m.Storage
	for _, lv := range m.Levels {
		r.fixtureTables += lv.Files
		r.fixtureBytes += lv.Bytes
	}
	get := func(i int) error {
		var k [bench.KeySize]byte
		_, err := db.Get(bench.PutKey(k[:], rand.Uint64N(uint64(p.keys))))
		return err
	}
	t0 = time.Now()
	if err := get(0); err != nil {
		return fmt.Errorf("first read: %w", err)
	}
	r.first = time.Since(t0)
	before, misses := db.Metrics().Storage, db.Metrics().ObjectCacheMisses
	if r.cold, err = driveCount(p.coldReads, get); err != nil {
		return fmt.Errorf("cold reads: %w", err)
	}
	m = db.Metrics()
	r.coldReqs, r.coldCopies = delta(before, m.Storage), m.ObjectCacheMisses-misses
	logf("%v cold reads: p99 %v", r.rtt, r.cold.hist.Quantile(0.99))

	// Fill the cache: a scan opens every table, which copies it.
	if err := scanAll(db, p.keys); err != nil {
		return err
	}
	before, misses = db.Metrics().Storage, db.Metrics().ObjectCacheMisses
	if r.warm, err = driveCount(p.warmReads, get); err != nil {
		return fmt.Errorf("warm reads: %w", err)
	}
	m = db.Metrics()
	r.warmReqs, r.warmMisses = delta(before, m.Storage), m.ObjectCacheMisses-misses
	logf("%v warm reads: p99 %v", r.rtt, r.warm.hist.Quantile(0.99))
	if r.readTput, err = driveFor(p.readers, p.readDur, func(_, i int) error { return get(i) }); err != nil {
		return fmt.Errorf("read throughput: %w", err)
	}
	return nil
}

// loadFixture writes keys 0..p.keys-1 in random order without sync,
// flushes them and lets compactions finish.
func loadFixture(loc, cacheDir string, p params) error {
	db, err := mayfly.Open(loc, &mayfly.Options{ObjectCacheDir: cacheDir})
	if err != nil {
		return err
	}
	vals := bench.NewValueGen(p.valueSize)
	order := rand.Perm(p.keys)
	var k [bench.KeySize]byte
	for _, i := range order {
		if err := db.Put(bench.PutKey(k[:], uint64(i)), vals.Next()); err != nil {
			db.Close()
			return err
		}
	}
	if err := db.Flush(); err != nil {
		db.Close()
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := db.WaitForCompactions(ctx); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

// scanAll iterates the whole database and checks it holds want keys.
func scanAll(db *mayfly.DB, want int) error {
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	err = errors.Join(it.Error(), it.Close())
	if err == nil && n != want {
		err = fmt.Errorf("scan found %d keys, want %d", n, want)
	}
	return err
}
