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
// after 1h, with a 1 MiB memtable so that flushes and automatic compactions
// run, and checks counts before expiry, after it, after a full compaction
// (the expired rows are gone from disk) and after reopen.
func TestScale100kTTL(t *testing.T) {
	t.Parallel()
	const n = 100_000
	e := newEnv(t, func(o *mayfly.Options) { o.MemtableSize = 1 << 20 })
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
		t.Fatalf("RowsWritten %d, Flushes %d, Compactions %d; want %d and several flushes and automatic compactions with a 1 MiB memtable",
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
