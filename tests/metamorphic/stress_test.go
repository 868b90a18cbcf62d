package metamorphic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

const (
	stressWriters      = 4
	stressKeysPerWrite = 50
)

func stressKey(w, i int) string { return fmt.Sprintf("w%d/k%03d", w, i) }

// stressValue embeds the key so readers can check that every value they
// see belongs to the key it is returned under.
func stressValue(key string, n int, rng *rand.Rand) string {
	pad := strings.Repeat("x", rng.IntN(64))
	return fmt.Sprintf("%s#%d#%s", key, n, pad)
}

func valueMatchesKey(k, v []byte) bool {
	return bytes.HasPrefix(v, append(append([]byte{}, k...), '#'))
}

// lastWrite is what a writer last wrote to a key. For a relative TTL the
// commit time is only known to lie between the clock readings taken just
// before and just after the write, so the deadline is a range.
type lastWrite struct {
	written bool
	deleted bool
	value   string
	expires bool
	lo, hi  int64 // deadline range, Unix ms
}

// stressErrs collects failures from many goroutines.
type stressErrs struct {
	mu   sync.Mutex
	errs []string
	stop atomic.Bool
}

func (e *stressErrs) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) < 20 {
		e.errs = append(e.errs, fmt.Sprintf(format, args...))
	}
	e.stop.Store(true)
}

// TestConcurrentStress runs writers on disjoint key ranges, readers using
// iterators and snapshots, and a maintenance goroutine doing flushes,
// compactions, reclamation and clock advances, all at once; then checks
// that every key holds its writer's last write, before and after a reopen.
// Run it under -race.
func TestConcurrentStress(t *testing.T) {
	writerOps, readerRounds, maintOps := 1500, 150, 120
	if testing.Short() {
		writerOps, readerRounds, maintOps = 500, 50, 40
	}
	seed := *flagSeed
	if seed == 0 {
		seed = 1
	}
	t.Logf("seed=%d", seed)

	clk := clock.NewManual(epoch)
	mem := storage.NewMem()
	opts := &mayfly.Options{
		Clock:                      clk,
		Storage:                    mem,
		MemtableSize:               32 << 10,
		TargetFileSize:             8 << 10,
		LBaseMaxBytes:              32 << 10,
		LevelSizeRatio:             4,
		L0CompactionThreshold:      2,
		PeriodicCompactionInterval: 5 * time.Second,
	}
	db, err := mayfly.Open("stress", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()

	var errs stressErrs
	models := make([][]lastWrite, stressWriters)
	var writersDone atomic.Int32
	var wg sync.WaitGroup

	for w := range stressWriters {
		models[w] = make([]lastWrite, stressKeysPerWrite)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer writersDone.Add(1)
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			stressWriter(db, clk, w, rng, writerOps, models[w], &errs)
		}()
	}
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(100+r)))
			for i := 0; i < readerRounds && !errs.stop.Load(); i++ {
				stressReadRound(db, rng, &errs)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 200))
		for i := 0; i < maintOps && !errs.stop.Load(); i++ {
			stressMaint(db, clk, rng, &errs)
		}
	}()
	wg.Wait()
	if len(errs.errs) > 0 {
		t.Fatalf("seed=%d: %d failures during the concurrent phase:\n%s\nreproduce (timing-dependent): go test ./tests/metamorphic -run TestConcurrentStress -race -seed=%d",
			seed, len(errs.errs), strings.Join(errs.errs, "\n"), seed)
	}

	c, cancel := context.WithTimeout(context.Background(), blockingTimeout)
	defer cancel()
	if err := db.WaitForCompactions(c); err != nil {
		t.Fatalf("WaitForCompactions: %v", err)
	}
	if err := db.Check(c); err != nil {
		t.Fatalf("Check: %v", err)
	}
	before := stressVerify(t, db, clk.NowMillis(), models)
	m := db.Metrics()
	t.Logf("flushes=%d compactions=%d %v stalls=%d levels=%s", m.Flushes, m.Compactions, m.CompactionsByKind, m.WriteStalls, levelFiles(db))
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db = nil
	db2, err := mayfly.Open("stress", opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	db = db2
	after := stressVerify(t, db, clk.NowMillis(), models)
	if before != after {
		t.Errorf("state changed across reopen: %s", firstDiff(before, after))
	}
	if err := db.Check(c); err != nil {
		t.Fatalf("Check after reopen: %v", err)
	}
}

func stressWriter(db *mayfly.DB, clk *clock.Manual, w int, rng *rand.Rand, n int, model []lastWrite, errs *stressErrs) {
	for i := 0; i < n && !errs.stop.Load(); i++ {
		if rng.IntN(10) == 0 { // batch
			type pending struct {
				idx int
				lw  lastWrite
				d   time.Duration // relative TTL, 0 if none
			}
			b := db.NewBatch()
			var ps []pending
			bad := rng.IntN(8) == 0
			for range 2 + rng.IntN(5) {
				k := rng.IntN(stressKeysPerWrite)
				key := stressKey(w, k)
				if rng.IntN(4) == 0 {
					b.Delete([]byte(key))
					ps = append(ps, pending{idx: k, lw: lastWrite{written: true, deleted: true}})
					continue
				}
				v := stressValue(key, i, rng)
				d := time.Duration(1+rng.IntN(3000)) * time.Millisecond
				if rng.IntN(2) == 0 {
					d = time.Hour
				}
				b.PutTTL([]byte(key), []byte(v), mayfly.ExpireAfter(d))
				ps = append(ps, pending{idx: k, lw: lastWrite{written: true, value: v, expires: true}, d: d})
			}
			if bad {
				b.PutTTL([]byte(stressKey(w, 0)), []byte("bad"), mayfly.ExpireAfter(0))
			}
			t0 := clk.NowMillis()
			err := b.Write(nil)
			t1 := clk.NowMillis()
			if bad {
				if !errors.Is(err, mayfly.ErrInvalidTTL) {
					errs.add("writer %d: batch with an invalid TTL: Write = %v, want ErrInvalidTTL", w, err)
				}
				continue
			}
			if err != nil {
				errs.add("writer %d: batch Write: %v", w, err)
				return
			}
			for _, p := range ps {
				if p.d > 0 {
					p.lw.lo, p.lw.hi = t0+p.d.Milliseconds(), t1+p.d.Milliseconds()
				}
				model[p.idx] = p.lw
			}
			continue
		}
		k := rng.IntN(stressKeysPerWrite)
		key := stressKey(w, k)
		v := stressValue(key, i, rng)
		t0 := clk.NowMillis()
		var err error
		var lw lastWrite
		switch r := rng.IntN(10); {
		case r < 3:
			err = db.PutWith([]byte(key), []byte(v), mayfly.NoExpiry(), nil)
			lw = lastWrite{written: true, value: v}
		case r < 5:
			err = db.PutTTL([]byte(key), []byte(v), mayfly.ExpireAfter(time.Hour))
			lw = lastWrite{written: true, value: v, expires: true}
		case r < 7:
			d := time.Duration(1+rng.IntN(2000)) * time.Millisecond
			err = db.PutTTL([]byte(key), []byte(v), mayfly.ExpireAfter(d))
			t1 := clk.NowMillis()
			lw = lastWrite{written: true, value: v, expires: true, lo: t0 + d.Milliseconds(), hi: t1 + d.Milliseconds()}
		case r < 8:
			at := time.UnixMilli(t0).Add(-time.Duration(rng.IntN(5000)) * time.Millisecond)
			err = db.PutTTL([]byte(key), []byte(v), mayfly.ExpireAt(at))
			lw = lastWrite{written: true, value: v, expires: true, lo: at.UnixMilli(), hi: at.UnixMilli()}
		default:
			err = db.Delete([]byte(key))
			lw = lastWrite{written: true, deleted: true}
		}
		t1 := clk.NowMillis()
		if lw.expires && lw.lo == 0 { // ExpireAfter(time.Hour)
			lw.lo, lw.hi = t0+time.Hour.Milliseconds(), t1+time.Hour.Milliseconds()
		}
		if err != nil {
			errs.add("writer %d: write %q: %v", w, key, err)
			return
		}
		model[k] = lw
	}
}

// stressReadRound checks what can be checked while writes race: iterator
// order, bounds and key/value pairing; that an iterator's view is fixed
// (a backward pass mirrors the forward one); and that a snapshot is
// repeatable across concurrent writes, compactions and clock movement.
func stressReadRound(db *mayfly.DB, rng *rand.Rand, errs *stressErrs) {
	var lo, hi []byte
	if rng.IntN(2) == 0 {
		lo = []byte(stressKey(rng.IntN(stressWriters), rng.IntN(stressKeysPerWrite)))
	}
	if rng.IntN(2) == 0 {
		hi = []byte(stressKey(rng.IntN(stressWriters), rng.IntN(stressKeysPerWrite)))
	}
	if lo != nil && hi != nil && bytes.Compare(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	it, err := db.NewIter(&mayfly.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		errs.add("NewIter: %v", err)
		return
	}
	fwd, err := stressPass(it, lo, hi, false)
	if err == nil {
		var bwd []kv
		bwd, err = stressPass(it, lo, hi, true)
		slices.Reverse(bwd)
		if err == nil && !slices.Equal(fwd, bwd) {
			err = fmt.Errorf("iterator [%q, %q): forward pass saw %d keys, backward %d (view not fixed)", lo, hi, len(fwd), len(bwd))
		}
	}
	if cerr := it.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		errs.add("reader: %v", err)
		return
	}

	s, err := db.NewSnapshot()
	if err != nil {
		errs.add("NewSnapshot: %v", err)
		return
	}
	defer s.Close()
	first, err := snapScan(s)
	if err != nil {
		errs.add("snapshot scan: %v", err)
		return
	}
	live := make(map[string]string, len(first))
	for _, e := range first {
		live[e.key] = e.value
	}
	for range 20 {
		key := stressKey(rng.IntN(stressWriters), rng.IntN(stressKeysPerWrite))
		v, err := s.Get([]byte(key))
		want, ok := live[key]
		switch {
		case ok && (err != nil || string(v) != want):
			errs.add("snapshot at %v: Get(%q) = %q, %v; its scan saw %q", s.Time(), key, v, err, want)
			return
		case !ok && !errors.Is(err, mayfly.ErrNotFound):
			errs.add("snapshot at %v: Get(%q) = %q, %v; its scan did not see the key", s.Time(), key, v, err)
			return
		}
		runtimeYield()
	}
	second, err := snapScan(s)
	if err != nil {
		errs.add("snapshot rescan: %v", err)
		return
	}
	if !slices.Equal(first, second) {
		errs.add("snapshot at %v not repeatable: %d keys then %d keys", s.Time(), len(first), len(second))
	}
}

func runtimeYield() { time.Sleep(50 * time.Microsecond) }

func snapScan(s *mayfly.Snapshot) ([]kv, error) {
	it, err := s.NewIter(nil)
	if err != nil {
		return nil, err
	}
	got, err := stressPass(it, nil, nil, false)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return got, err
}

func stressPass(it *mayfly.Iterator, lo, hi []byte, reverse bool) ([]kv, error) {
	var out []kv
	var prev []byte
	ok := it.First()
	if reverse {
		ok = it.Last()
	}
	for ; ok; ok = step(it, reverse) {
		k, v := it.Key(), it.Value()
		if lo != nil && bytes.Compare(k, lo) < 0 || hi != nil && bytes.Compare(k, hi) >= 0 {
			return nil, fmt.Errorf("key %q outside [%q, %q)", k, lo, hi)
		}
		if prev != nil {
			c := bytes.Compare(prev, k)
			if !reverse && c >= 0 || reverse && c <= 0 {
				return nil, fmt.Errorf("keys out of order (reverse=%v): %q then %q", reverse, prev, k)
			}
		}
		if !valueMatchesKey(k, v) {
			return nil, fmt.Errorf("key %q has value %q of another key", k, v)
		}
		prev = append(prev[:0], k...)
		out = append(out, kv{string(k), string(v)})
	}
	return out, it.Error()
}

func step(it *mayfly.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

func stressMaint(db *mayfly.DB, clk *clock.Manual, rng *rand.Rand, errs *stressErrs) {
	c, cancel := context.WithTimeout(context.Background(), blockingTimeout)
	defer cancel()
	var err error
	what := ""
	switch r := rng.IntN(10); {
	case r < 3:
		what = "Flush"
		err = db.Flush()
	case r < 5:
		w := rng.IntN(stressWriters)
		lo, hi := []byte(stressKey(w, rng.IntN(25))), []byte(stressKey(w, 25+rng.IntN(25)))
		what = fmt.Sprintf("Compact[%s, %s]", lo, hi)
		err = db.Compact(c, lo, hi)
	case r < 6:
		what = "ReclaimExpired"
		err = db.ReclaimExpired(c)
	case r < 7:
		what = "WaitForCompactions"
		err = db.WaitForCompactions(c)
	case r < 8:
		what = "Check"
		err = db.Check(c)
	default:
		clk.Advance(time.Duration(rng.IntN(100)) * time.Millisecond)
	}
	if err != nil {
		errs.add("maintenance %s: %v", what, err)
	}
	time.Sleep(time.Millisecond)
}

// stressVerify checks every key against its writer's last write at now and
// returns the database's state rendered as text.
func stressVerify(t *testing.T, db *mayfly.DB, now int64, models [][]lastWrite) string {
	t.Helper()
	var sb strings.Builder
	gets := make(map[string]string)
	for w, model := range models {
		for i, lw := range model {
			key := stressKey(w, i)
			v, err := db.Get([]byte(key))
			rem, exp, terr := db.TTL([]byte(key))
			present := err == nil
			if err != nil && !errors.Is(err, mayfly.ErrNotFound) {
				t.Errorf("Get(%q): %v", key, err)
				continue
			}
			if present != (terr == nil) {
				t.Errorf("%q: Get says present=%v but TTL returned %v", key, present, terr)
			}
			switch {
			case !lw.written || lw.deleted:
				if present {
					t.Errorf("%q: got %q, want not found (last write: deleted=%v)", key, v, lw.deleted)
				}
			case !lw.expires:
				if !present || string(v) != lw.value || exp {
					t.Errorf("%q: got %q, %v (expires=%v), want %q without expiry", key, v, err, exp, lw.value)
				}
			case lw.hi < now:
				if present {
					t.Errorf("%q: got %q, want not found (deadline in [%d, %d] < now %d)", key, v, lw.lo, lw.hi, now)
				}
			case lw.lo >= now && !present:
				t.Errorf("%q: not found, want %q (deadline in [%d, %d] >= now %d)", key, lw.value, lw.lo, lw.hi, now)
			}
			if present && lw.written && !lw.deleted {
				if string(v) != lw.value {
					t.Errorf("%q: got %q, want %q", key, v, lw.value)
				}
				if lw.expires {
					dl := now + rem.Milliseconds()
					if !exp || dl < lw.lo || dl > lw.hi {
						t.Errorf("%q: TTL = %v, %v: deadline %d outside [%d, %d]", key, rem, exp, dl, lw.lo, lw.hi)
					}
				}
			}
			if present {
				gets[key] = string(v)
				fmt.Fprintf(&sb, "%s=%s/%v/%v\n", key, v, rem, exp)
			}
		}
	}
	var scanErr error
	n := 0
	for k, v := range db.Scan(nil, nil, &scanErr) {
		n++
		if want, ok := gets[string(k)]; !ok || want != string(v) {
			t.Errorf("scan returned %q=%q, Get returned %q (present=%v)", k, v, want, ok)
		}
	}
	if scanErr != nil {
		t.Errorf("Scan: %v", scanErr)
	}
	if n != len(gets) {
		t.Errorf("scan returned %d keys, Gets found %d", n, len(gets))
	}
	return sb.String()
}
