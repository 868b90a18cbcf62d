package s3test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// TestCrashTakeoverFencesOldWriter: writer A writes synced data (some of it
// flushed, some only in the WAL) and "crashes": the handle is abandoned
// without Close (there is no lock on S3). Writer B opens the same location:
// every synced write is there with its expiry, exactly once. A's next
// write and Flush fail with ErrFenced, and nothing A writes after that is
// visible to B or after a reopen.
func TestCrashTakeoverFencesOldWriter(t *testing.T) {
	loc := location(t)
	clk := manual()
	opts := &mayfly.Options{Clock: clk}
	a := open(t, loc, opts)
	// A is never closed before B's checks: it stands for a crashed process.
	// Its goroutines are released at the end of the test.
	t.Cleanup(func() { a.Close() })

	want := map[string]string{}
	deadlines := map[string]time.Time{}
	put := func(db *mayfly.DB, k, v []byte, ttl time.Duration) {
		t.Helper()
		tt := mayfly.NoExpiry()
		if ttl > 0 {
			tt = mayfly.ExpireAfter(ttl)
			deadlines[string(k)] = clk.Now().Add(ttl)
		}
		if err := db.PutWith(k, v, tt, mayfly.Sync); err != nil {
			t.Fatalf("synced put %s: %v", k, err)
		}
		want[string(k)] = string(v)
	}
	for i := range 300 {
		ttl := time.Duration(0)
		if i%2 == 0 {
			ttl = time.Duration(i+1) * time.Minute
		}
		put(a, key("flushed", i), val("flushed", i), ttl)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	for i := range 300 {
		ttl := time.Duration(0)
		if i%3 == 0 {
			ttl = time.Duration(i+1) * time.Minute
		}
		put(a, key("walonly", i), val("walonly", i), ttl)
	}
	// Deletes and overwrites of flushed keys, synced, still only in the WAL.
	for i := 0; i < 300; i += 10 {
		if err := a.DeleteWith(key("flushed", i), mayfly.Sync); err != nil {
			t.Fatal(err)
		}
		delete(want, string(key("flushed", i)))
		delete(deadlines, string(key("flushed", i)))
	}
	for i := 5; i < 300; i += 10 {
		put(a, key("flushed", i), []byte("overwritten"), 0)
		delete(deadlines, string(key("flushed", i)))
	}

	// "Crash": stop using a. B takes over.
	b := open(t, loc, opts)
	defer func() { b.Close() }()
	verify := func(db *mayfly.DB, stage string) {
		t.Helper()
		if d := diff(contents(t, db), want); d != "" {
			t.Fatalf("%s: %s", stage, d)
		}
		for k, dl := range deadlines {
			rem, expires, err := db.TTL([]byte(k))
			wantRem := dl.Sub(clk.Now())
			if err != nil || !expires || rem != wantRem {
				t.Fatalf("%s: TTL(%s) = %v, %v, %v; want %v, true", stage, k, rem, expires, err, wantRem)
			}
		}
		for k := range want {
			if _, ok := deadlines[k]; ok {
				continue
			}
			if _, expires, err := db.TTL([]byte(k)); err != nil || expires {
				t.Fatalf("%s: TTL(%s) expires=%v err=%v; want no expiry", stage, k, expires, err)
			}
		}
	}
	verify(b, "second writer")

	// A is fenced: its Flush, and every write after it, fail with
	// ErrFenced. (A synced write as A's first action after the takeover
	// is TestFencedWriterFirstSyncedPut, skipped for a bug.)
	if err := a.Flush(); !errors.Is(err, mayfly.ErrFenced) {
		t.Fatalf("fenced writer's Flush = %v, want ErrFenced", err)
	}
	err := a.PutWith([]byte("after-fence-1"), []byte("lost"), mayfly.NoExpiry(), mayfly.Sync)
	if !errors.Is(err, mayfly.ErrFenced) {
		t.Fatalf("fenced writer's synced put after Flush = %v, want ErrFenced", err)
	}
	for i := range 20 {
		a.Put(key("after-fence", i), []byte("lost")) // errors expected
	}

	// B keeps working and sees none of A's late writes. (B's Flush after
	// A's failed one is TestSurvivorFlushAfterZombieFlush, skipped for a
	// bug.)
	for i := range 50 {
		put(b, key("second", i), val("second", i), 0)
	}
	verify(b, "second writer after the old writer's late writes")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, loc, opts)
	verify(b, "reopen")
	check(t, b)
}

// TestFencedWriterFirstSyncedPut: writer A is idle while B opens (takes
// over, fences A's WAL segment, replays it, flushes it and deletes it).
// A's next synced write must fail with ErrFenced; if it is acknowledged,
// it is lost, since B never sees it.
func TestFencedWriterFirstSyncedPut(t *testing.T) {
	loc := location(t)
	clk := manual()
	opts := &mayfly.Options{Clock: clk}
	a := open(t, loc, opts)
	t.Cleanup(func() { a.Close() })
	if err := a.PutWith([]byte("before"), []byte("1"), mayfly.NoExpiry(), mayfly.Sync); err != nil {
		t.Fatal(err)
	}
	b := open(t, loc, opts)
	defer b.Close()
	err := a.PutWith([]byte("after"), []byte("2"), mayfly.NoExpiry(), mayfly.Sync)
	_, getErr := b.Get([]byte("after"))
	if !errors.Is(err, mayfly.ErrFenced) {
		t.Fatalf("fenced writer's first synced put after the takeover = %v, want ErrFenced (new writer's Get: %v)", err, getErr)
	}
	// The first failing write reports the DB's error state as every later
	// write does.
	if !errors.Is(err, mayfly.ErrBackground) {
		t.Fatalf("fenced writer's first synced put = %v, want ErrBackground too", err)
	}
	mustGet(t, b, []byte("before"), "1")
}

// TestSurvivorFlushAfterZombieFlush: the fenced writer A tries to Flush
// (it fails with ErrFenced); the new writer B's next Flush must still work.
func TestSurvivorFlushAfterZombieFlush(t *testing.T) {
	loc := location(t)
	opts := &mayfly.Options{Clock: manual()}
	a := open(t, loc, opts)
	t.Cleanup(func() { a.Close() })
	for i := range 50 {
		if err := a.PutWith(key("a", i), val("a", i), mayfly.NoExpiry(), mayfly.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 { // in A's WAL only when B takes over
		if err := a.PutWith(key("a2", i), val("a2", i), mayfly.NoExpiry(), mayfly.Sync); err != nil {
			t.Fatal(err)
		}
	}
	b := open(t, loc, opts)
	defer b.Close()
	// Each failed Flush of A retries the rotation with a new file number.
	for i := range 3 {
		if err := a.Flush(); !errors.Is(err, mayfly.ErrFenced) {
			t.Errorf("fenced writer's Flush #%d = %v, want ErrFenced", i, err)
		}
	}
	for i := range 50 {
		if err := b.PutWith(key("b", i), val("b", i), mayfly.NoExpiry(), mayfly.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatalf("survivor's Flush after the fenced writer's failed Flush: %v", err)
	}
}

// TestZombieCompactionCannotDamageSurvivor: the fenced writer A runs
// compactions after B took over and flushed. They must all fail with
// ErrFenced and leave B's database intact.
func TestZombieCompactionCannotDamageSurvivor(t *testing.T) {
	loc := location(t)
	opts := &mayfly.Options{Clock: manual(), DisableAutoCompaction: true}
	a := open(t, loc, opts)
	t.Cleanup(func() { a.Close() })
	want := map[string]string{}
	for j := range 2 {
		for i := range 100 {
			a.PutWith(key("a", i*2+j), val("a", i), mayfly.NoExpiry(), mayfly.Sync)
			want[string(key("a", i*2+j))] = string(val("a", i))
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	b := open(t, loc, opts)
	for i := range 100 {
		b.PutWith(key("b", i), val("b", i), mayfly.NoExpiry(), mayfly.Sync)
		want[string(key("b", i))] = string(val("b", i))
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if err := a.Compact(context.Background(), nil, nil); !errors.Is(err, mayfly.ErrFenced) {
			t.Errorf("fenced writer's Compact #%d = %v, want ErrFenced", i, err)
		}
	}
	a.Close() // releases grace-period deletes
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := mayfly.Open(loc, opts)
	if err != nil {
		t.Fatalf("reopen after the fenced writer's compactions: %v", err)
	}
	defer c.Close()
	if d := diff(contents(t, c), want); d != "" {
		t.Fatalf("after reopen: %s", d)
	}
	check(t, c)
}

// TestTwoWritersRace opens two writers on a fresh location at the same time
// and has both write synced keys. After both opens complete, the earlier one
// must be fenced (at its next write at the latest). The database then holds
// exactly the acknowledged writes of both: the survivor's, and the fenced
// writer's made before the takeover (an acknowledged synced write of the
// fenced writer after the takeover would be a fencing failure, and would
// show up as a lost write).
func TestTwoWritersRace(t *testing.T) {
	// B starts after a delay: 0 makes the two opens overlap (one of them
	// usually loses the race for the first manifest version); longer delays
	// let A finish opening and write before B takes over.
	for _, delay := range []time.Duration{0, 0, 20 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond} {
		t.Run(fmt.Sprint("delay", delay), func(t *testing.T) { twoWritersRound(t, delay) })
	}
}

type writerResult struct {
	name    string
	openErr error
	opened  time.Time
	acked   []int
	err     error // the write error that stopped it, if any
	db      *mayfly.DB
}

func twoWritersRound(t *testing.T, delay time.Duration) {
	loc := location(t)
	clk := manual()
	opts := &mayfly.Options{Clock: clk}

	results := []*writerResult{{name: "A"}, {name: "B"}}
	var opened sync.WaitGroup
	opened.Add(2)
	bothOpen := make(chan struct{})
	go func() { opened.Wait(); close(bothOpen) }()
	var done sync.WaitGroup
	for _, r := range results {
		done.Add(1)
		go func() {
			defer done.Done()
			if r.name == "B" {
				time.Sleep(delay)
			}
			db, err := mayfly.Open(loc, opts)
			r.opened = time.Now()
			r.openErr, r.db = err, db
			opened.Done()
			if err != nil {
				return
			}
			// Write until fenced; keep going for a while after both opens
			// completed so that the earlier writer meets the fence.
			after := -1
			for i := 0; ; i++ {
				select {
				case <-bothOpen:
					if after < 0 {
						after = i
					}
				default:
				}
				if after >= 0 && i-after >= 30 {
					return
				}
				if i > 20000 {
					r.err = errors.New("other writer never finished opening")
					return
				}
				if err := r.db.PutWith(key(r.name, i), val(r.name, i), mayfly.NoExpiry(), mayfly.Sync); err != nil {
					r.err = err
					return
				}
				r.acked = append(r.acked, i)
			}
		}()
	}
	done.Wait()
	defer func() {
		for _, r := range results {
			if r.db != nil {
				r.db.Close()
			}
		}
	}()

	var survivors, fenced []*writerResult
	for _, r := range results {
		switch {
		case r.openErr != nil:
			if !errors.Is(r.openErr, mayfly.ErrFenced) {
				t.Fatalf("writer %s: Open failed with %v, want success or ErrFenced", r.name, r.openErr)
			}
			fenced = append(fenced, r)
		case r.err != nil:
			if !errors.Is(r.err, mayfly.ErrFenced) {
				t.Fatalf("writer %s: write failed with %v, want ErrFenced", r.name, r.err)
			}
			fenced = append(fenced, r)
		default:
			survivors = append(survivors, r)
		}
		t.Logf("writer %s: open err %v, %d acknowledged writes, stopped by %v", r.name, r.openErr, len(r.acked), r.err)
	}
	if len(survivors) != 1 || len(fenced) != 1 {
		t.Fatalf("%d writers kept writing after both opened and %d were fenced; want exactly one of each",
			len(survivors), len(fenced))
	}
	s := survivors[0]

	want := map[string]string{}
	for _, r := range results {
		for _, i := range r.acked {
			want[string(key(r.name, i))] = string(val(r.name, i))
		}
	}
	if d := diff(contents(t, s.db), want); d != "" {
		t.Fatalf("survivor %s sees: %s", s.name, d)
	}
	check(t, s.db)
	if err := s.db.Close(); err != nil {
		t.Fatalf("closing survivor: %v", err)
	}
	s.db = nil
	db := open(t, loc, opts)
	defer db.Close()
	if d := diff(contents(t, db), want); d != "" {
		t.Fatalf("after reopen: %s", d)
	}
	check(t, db)
}
