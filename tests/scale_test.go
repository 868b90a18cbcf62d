package tests

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// TestScale100kTTL writes 100,000 keys in a scattered order, half expiring after 1s and half
// after 1h, with a 768 KiB memtable, which the rows fill many times over, so
// that flushes and automatic compactions run, and checks counts before expiry, after it, after a full compaction
// (the expired rows are gone from disk) and after reopen.
func TestScale100kTTL(t *testing.T) {
	t.Parallel()
	const n = 100_000
	e := newEnv(t, func(o *mayfly.Options) { o.MemtableSize = 768 << 10 })
	value := strings.Repeat("v", 40)
	b := e.db.NewBatch()
	for i := range n {
		// A fixed permutation of the keys: in key order every level-0
		// table would be disjoint from the others and go down by trivial
		// moves, and the automatic compactions would not run.
		j := i * 7919 % n
		ttl := time.Hour
		if j%2 == 0 {
			ttl = time.Second
		}
		must(t, b.PutTTL([]byte(key(j)), []byte(value), mayfly.ExpireAfter(ttl)))
		if b.Len() == 1000 {
			must(t, b.Write(nil))
			b.Reset()
		}
	}
	must(t, b.Write(nil))

	count := func() int {
		var err error
		c := 0
		for range e.db.Scan(nil, nil, &err) {
			c++
		}
		must(t, err)
		return c
	}
	spot := func(expired bool) {
		t.Helper()
		for i := 0; i < n; i += 997 {
			if i%2 == 0 && expired {
				wantAbsent(t, e.db, key(i))
			} else {
				wantValue(t, e.db, key(i), value)
			}
		}
	}
	if c := count(); c != n {
		t.Fatalf("before expiry: scan counts %d keys; want %d", c, n)
	}
	spot(false)
	must(t, e.db.WaitForCompactions(t.Context()))
	m := e.db.Metrics()
	if m.RowsWritten != n || m.Flushes < 2 || m.Compactions == 0 {
		t.Fatalf("RowsWritten %d, Flushes %d, Compactions %d; want %d and several flushes and automatic compactions with a 768 KiB memtable",
			m.RowsWritten, m.Flushes, m.Compactions, n)
	}

	e.clk.Advance(time.Second)
	if c := count(); c != n {
		t.Fatalf("at the deadline: scan counts %d keys; want %d", c, n)
	}
	e.clk.Advance(time.Millisecond)
	if c := count(); c != n/2 {
		t.Fatalf("after 1s+1ms: scan counts %d keys; want %d", c, n/2)
	}
	spot(true)

	e.compact()
	m = e.db.Metrics()
	var rows, ttlRows uint64
	for _, l := range m.Levels {
		rows += l.Rows
		ttlRows += l.TTLRows
	}
	if rows != n/2 || ttlRows != n/2 || m.Levels[0].Files != 0 {
		t.Fatalf("after Compact: %d rows (%d with TTL) on disk, %d L0 files; want %d, %d, 0", rows, ttlRows, m.Levels[0].Files, n/2, n/2)
	}
	if c := count(); c != n/2 {
		t.Fatalf("after Compact: scan counts %d keys; want %d", c, n/2)
	}
	spot(true)

	e.reopen()
	if c := count(); c != n/2 {
		t.Fatalf("after reopen: scan counts %d keys; want %d", c, n/2)
	}
	spot(true)
	wantTTL(t, e.db, key(1), time.Hour-time.Second-time.Millisecond)

	e.clk.Advance(time.Hour)
	if c := count(); c != 0 {
		t.Fatalf("after 1h: scan counts %d keys; want 0", c)
	}
	e.compact()
	if m := e.db.Metrics(); m.DiskBytes() != 0 {
		t.Fatalf("after everything expired and Compact: %d bytes on disk", m.DiskBytes())
	}
}

// TestConcurrentOperations runs writers, point readers, iterators,
// snapshots and Flush/Compact calls at once for a bounded number of
// operations. Each writer owns its keys and writes increasing versions, so
// every reader can check that versions never go backwards, and at the end
// every key holds its last written value.
func TestConcurrentOperations(t *testing.T) {
	t.Parallel()
	const writers, keysPerWriter, opsPerWriter = 4, 50, 600
	e := newEnv(t, func(o *mayfly.Options) {
		o.MemtableSize = 32 << 10
		o.L0CompactionThreshold = 2
	})
	wkey := func(w, i int) string { return fmt.Sprintf("w%d-%03d", w, i) }
	// value encodes the version so readers can check monotonicity.
	version := func(v []byte) int {
		n, err := strconv.Atoi(strings.SplitN(string(v), "|", 2)[0])
		if err != nil {
			panic(fmt.Sprintf("bad value %q", v))
		}
		return n
	}

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	last := make([][]string, writers) // final value per key, per writer
	for w := range writers {
		last[w] = make([]string, keysPerWriter)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for op := 1; op <= opsPerWriter; op++ {
				i := rng.IntN(keysPerWriter)
				v := fmt.Sprintf("%d|%s", op, strings.Repeat("x", rng.IntN(100)))
				var err error
				switch rng.IntN(4) {
				case 0:
					err = e.db.PutWith([]byte(wkey(w, i)), []byte(v), mayfly.ExpireAfter(24*time.Hour), mayfly.Sync)
				case 1:
					b := e.db.NewBatch()
					j := (i + 1) % keysPerWriter
					b.Put([]byte(wkey(w, i)), []byte(v))
					b.Put([]byte(wkey(w, j)), []byte(v))
					err = b.Write(nil)
					last[w][j] = v
				default:
					err = e.db.Put([]byte(wkey(w, i)), []byte(v))
				}
				if err != nil {
					report(fmt.Errorf("writer %d: %v", w, err))
					return
				}
				last[w][i] = v
			}
		}()
	}
	// Point readers: versions of a key never go backwards.
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			seen := map[string]int{}
			for range 3000 {
				k := wkey(rng.IntN(writers), rng.IntN(keysPerWriter))
				v, err := e.db.Get([]byte(k))
				if isErr(err, mayfly.ErrNotFound) {
					if seen[k] > 0 {
						report(fmt.Errorf("reader: %s vanished after version %d", k, seen[k]))
					}
					continue
				}
				if err != nil {
					report(err)
					return
				}
				if ver := version(v); ver < seen[k] {
					report(fmt.Errorf("reader: %s went back from version %d to %d", k, seen[k], ver))
				} else {
					seen[k] = ver
				}
			}
		}()
	}
	// Iterators and snapshots: sorted, and a snapshot reads the same twice.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 40 {
			s, err := e.db.NewSnapshot()
			if err != nil {
				report(err)
				return
			}
			it, err := s.NewIter(nil)
			if err != nil {
				report(err)
				return
			}
			first := map[string]string{}
			var prev string
			for ok := it.First(); ok; ok = it.Next() {
				if k := string(it.Key()); k <= prev {
					report(fmt.Errorf("iterator out of order: %q after %q", k, prev))
				} else {
					prev = k
				}
				first[string(it.Key())] = string(it.Value())
			}
			if err := it.Close(); err != nil {
				report(err)
			}
			for k, v := range first {
				got, err := s.Get([]byte(k))
				if err != nil || string(got) != v {
					report(fmt.Errorf("snapshot not repeatable: %s = %q, %v; iterator saw %q", k, got, err, v))
					break
				}
			}
			s.Close()
		}
	}()
	// Maintenance and a clock that moves (never enough to expire anything).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 30 {
			var err error
			if i%3 == 2 {
				err = e.db.Compact(t.Context(), nil, nil)
			} else {
				err = e.db.Flush()
			}
			if err != nil {
				report(err)
				return
			}
			e.clk.Advance(time.Second)
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	check := func(stage string) {
		t.Helper()
		for w := range writers {
			for i, v := range last[w] {
				if v == "" {
					wantAbsent(t, e.db, wkey(w, i))
					continue
				}
				got, err := e.db.Get([]byte(wkey(w, i)))
				if err != nil || string(got) != v {
					t.Fatalf("%s: %s = %.20q, %v; want last written %.20q", stage, wkey(w, i), got, err, v)
				}
			}
		}
	}
	check("after the run")
	e.compact()
	check("after Compact")
	e.reopen()
	check("after reopen")
}

// TestScaleTTLChurnMixed is the short version of the ttlscale benchmark
// (bench/workloads_ttlscale.go): 10,000 keys rewritten at random, each put
// with a TTL of 1 minute to 1 day (Zipf: short ones most frequent), for two
// simulated days on the manual clock, with a 256 KiB memtable so flushes
// and compactions run. Every simulated hour after the first half day it
// checks that the SSTables hold at most 1.2 bytes per live user byte (key +
// value of the rows whose latest version has not expired) and that
// Mayfly's estimate of expired bytes still in them is at most what expired
// within the documented reclamation bound (PeriodicCompactionInterval, 1 h,
// plus one compaction: the step). With automatic compaction disabled every
// one of these checks fails. Then writes stop and, as the clock passes
// every deadline plus the bound, the SSTables must empty by themselves.
func TestScaleTTLChurnMixed(t *testing.T) {
	t.Parallel()
	const (
		keys      = 10_000
		putsPer   = 80 // puts per step
		step      = 5 * time.Minute
		days      = 2
		valueSize = 100
		rowBytes  = 16 + valueSize
		bound     = time.Hour + step
	)
	e := newEnv(t, func(o *mayfly.Options) { o.MemtableSize = 256 << 10 })
	rng := rand.New(rand.NewPCG(21, 3))
	zipf := rand.NewZipf(rng, 1.1, 1, 24*60-1)
	value := make([]byte, valueSize)
	// Random printable values that Snappy barely compresses, so that the
	// 1.2 bound measures reclamation, not compression.
	newValue := func() []byte {
		for i := range value {
			value[i] = byte(' ' + rng.IntN(95))
		}
		return value
	}
	start := e.clk.NowMillis()
	latest := make([]int64, keys) // deadline (ms) of each key's latest row; 0: never written
	var deadlines []int64         // every row written, for the bytes that expired within the bound
	sample := func(now int64) (live, window int64) {
		for _, d := range latest {
			if d >= now {
				live += rowBytes
			}
		}
		for _, d := range deadlines {
			if d < now && d >= now-bound.Milliseconds() {
				window += rowBytes
			}
		}
		return live, window
	}
	var maxAmp, maxExpired float64 // for the log
	steps := int(days * 24 * time.Hour / step)
	for s := range steps {
		for range putsPer {
			k := rng.IntN(keys)
			ttl := time.Duration(zipf.Uint64()+1) * time.Minute
			now := e.clk.NowMillis()
			must(t, e.db.PutTTL([]byte(key(k)), newValue(), mayfly.ExpireAfter(ttl)))
			latest[k] = now + ttl.Milliseconds()
			deadlines = append(deadlines, latest[k])
		}
		e.clk.Advance(step)
		must(t, e.db.WaitForCompactions(t.Context()))
		now := e.clk.NowMillis()
		if sim := time.Duration(now-start) * time.Millisecond; sim < 12*time.Hour || (s+1)%12 != 0 {
			continue
		}
		m := e.db.Metrics()
		live, window := sample(now)
		var expired uint64
		for _, l := range m.Levels {
			expired += l.ExpiredBytes
		}
		amp := float64(m.DiskBytes()) / float64(live)
		maxAmp, maxExpired = max(maxAmp, amp), max(maxExpired, float64(expired)/float64(window))
		if amp > 1.2 {
			t.Errorf("at %v: %d bytes in SSTables for %d live bytes: space amplification %.2f > 1.2",
				time.Duration(now-start)*time.Millisecond, m.DiskBytes(), live, amp)
		}
		if expired > uint64(window) {
			t.Errorf("at %v: %d expired bytes still in SSTables, more than the %d that expired within the last %v",
				time.Duration(now-start)*time.Millisecond, expired, window, bound)
		}
	}
	t.Logf("highest space amplification %.2f; highest expired bytes in SSTables / bytes expired within the bound %.2f", maxAmp, maxExpired)
	// No more writes: every row expires within a day, and is off disk one
	// bound later without any call but the clock's advances.
	for range (24*time.Hour + 2*bound) / (30 * time.Minute) {
		e.clk.Advance(30 * time.Minute)
		must(t, e.db.WaitForCompactions(t.Context()))
	}
	if m := e.db.Metrics(); m.DiskBytes() != 0 {
		t.Fatalf("a day and two reclamation bounds after the last write: %d bytes in %d files still in SSTables",
			m.DiskBytes(), m.Levels[0].Files+m.Levels[len(m.Levels)-1].Files)
	}
}
