package mayfly

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/internal/manual"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

// commitGroupInline commits group as one commit group from this goroutine:
// the leader's part, then each logged batch's apply and publication in
// sequence order. Every waiter ends done with its outcome.
func commitGroupInline(db *DB, group []*commitWaiter) error {
	db.commitMu.Lock()
	err := db.commitGroup(group)
	db.commitMu.Unlock()
	for _, g := range group {
		switch {
		case g.mem != nil:
			g.err = db.applyLogged(g)
		case !g.done:
			g.err = err
		}
		g.done = true
	}
	return err
}

// runWriters runs op(w, i) for i in [0, perWriter) on each of writers
// goroutines and fails t with the first error of each writer (which stops
// that writer).
func runWriters(t *testing.T, writers, perWriter int, op func(w, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if err := op(w, i); err != nil {
					errs <- fmt.Errorf("writer %d op %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestCommitReleasesEveryWriter runs writers of several kinds at once
// (puts, synced puts, batches, a batch that fails its condition) beside
// flushes, so that commit groups form, leaders hand over to writers queued
// meanwhile, and a group mixes outcomes. Every call returns its own
// outcome: each acknowledged row is readable, the failing batches get their
// errors and leave nothing, and the committed-batch count is exact. A
// writer left without a leader, or never published, hangs the test.
func TestCommitReleasesEveryWriter(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	const writers, perWriter = 8, 300
	runWriters(t, writers, perWriter, func(w, i int) error {
		key := fmt.Appendf(nil, "w%d-%04d", w, i)
		switch i % 6 {
		case 0:
			return db.PutWith(key, key, TTL{}, Sync)
		case 1:
			b := db.NewBatch()
			defer b.Close()
			_ = b.Put(key, key)
			_ = b.Put(append(key, 'b'), key)
			return b.Write(nil)
		case 2:
			// A condition that cannot hold: nothing of it is written.
			b := db.NewBatch()
			defer b.Close()
			_ = b.Put(key, key)
			_ = b.PutIfPresent(append(key, 'x'), key, TTL{})
			if err := b.Write(nil); !errors.Is(err, ErrConditionFailed) {
				return fmt.Errorf("%s: failed condition returned %v", key, err)
			}
		case 3:
			if i%12 == 3 {
				if err := db.Flush(); err != nil {
					return err
				}
			}
		}
		return db.Put(key, key)
	})
	for w := range writers {
		for i := range perWriter {
			key := fmt.Appendf(nil, "w%d-%04d", w, i)
			if v, err := db.Get(key); err != nil || !bytes.Equal(v, key) {
				t.Fatalf("%s: got %q, %v", key, v, err)
			}
			if _, err := db.Get(append(key, 'x')); !errors.Is(err, ErrNotFound) {
				t.Fatalf("%sx (a failed condition's row): %v", key, err)
			}
		}
	}
	// Per writer: 50 of each of the six kinds, case 2 commits one batch.
	if got, want := db.Metrics().BatchesCommitted, uint64(writers*perWriter); got != want {
		t.Fatalf("batches committed: %d, want %d", got, want)
	}
}

// TestCommitVisibleWithoutGaps runs writers of batches of one to three rows
// of new keys against readers. Each writer reads its batch back right after
// its commit returns (read-your-writes), and each reader counts the rows a
// snapshot sees: since every row has its own sequence number from 1 up, a
// snapshot at sequence number S must see exactly S rows. Fewer means the
// visible sequence number passed a batch not yet in the memtable (a gap);
// part of a batch would show the same way.
func TestCommitVisibleWithoutGaps(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	base := db.visibleSeq.Load()
	const writers, perWriter = 4, 400
	var readers sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 2)
	defer func() {
		close(stop)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}()
	// The writers start once every reader has made its first check, so
	// that readers check while the writers commit however they are
	// scheduled.
	var checking sync.WaitGroup
	for range 2 {
		checking.Add(1)
		readers.Go(func() {
			checked := sync.OnceFunc(checking.Done)
			defer checked() // a reader that fails at once must not hold the writers
			for checks := 0; ; checks++ {
				if checks == 1 {
					checked()
				}
				select {
				case <-stop:
					return
				default:
				}
				snap, err := db.NewSnapshot()
				if err != nil {
					errs <- err
					return
				}
				it, err := snap.NewIter(nil)
				if err != nil {
					errs <- err
					return
				}
				n := uint64(0)
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				err = errors.Join(it.Close(), snap.Close())
				if want := snap.seq - base; err == nil && n != want {
					err = fmt.Errorf("snapshot at sequence %d sees %d rows, want %d", snap.seq, n, want)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	checking.Wait()
	runWriters(t, writers, perWriter, func(w, i int) error {
		b := db.NewBatch()
		defer b.Close()
		rows := 1 + (w+i)%3
		for r := range rows {
			key := fmt.Appendf(nil, "w%d-%04d-%d", w, i, r)
			_ = b.Put(key, key)
		}
		if err := b.Write(nil); err != nil {
			return err
		}
		for r := range rows {
			key := fmt.Appendf(nil, "w%d-%04d-%d", w, i, r)
			if v, err := db.Get(key); err != nil || !bytes.Equal(v, key) {
				return fmt.Errorf("%s right after its commit: %q, %v", key, v, err)
			}
		}
		return nil
	})
}

// TestLeaderAppliesUnstartedMembers: a leader whose group holds a member
// that has not started its apply (its goroutine waits for a processor)
// applies and publishes that member's batch itself, so that batches logged
// after it do not wait for the member's goroutine; the member, when it
// runs, finds its batch published and applies nothing twice.
func TestLeaderAppliesUnstartedMembers(t *testing.T) {
	dir, clk := t.TempDir(), clock.NewManual(epoch)
	db := openTestDB(t, dir, clk, nil)
	group := make([]*commitWaiter, 2)
	for i := range group {
		b := db.NewBatch()
		defer b.Close()
		must(t, b.Put(fmt.Appendf(nil, "k%d", i), []byte("v")))
		group[i] = &commitWaiter{batch: b, wake: make(chan struct{}, 1)}
	}
	leader, member := group[0], group[1]
	db.commitMu.Lock()
	err := db.commitGroup(group)
	db.commitMu.Unlock()
	must(t, err)
	// What leadGroup does for a member logged in its group.
	leader.helps = append(leader.helps, helpRef{member, member.last})
	member.release(waiterApply)
	must(t, db.applyLogged(leader))
	if got := db.visibleSeq.Load(); got != member.last {
		t.Fatalf("visible sequence %d, want the member's last %d", got, member.last)
	}
	mustGet(t, db, "k1", "v")
	if n := db.Metrics().BatchesAppliedByOthers; n != 1 {
		t.Fatalf("BatchesAppliedByOthers = %d, want 1", n)
	}
	rows := db.Metrics().RowsWritten
	must(t, db.applyLogged(member)) // the member's goroutine runs at last
	if got := db.Metrics().RowsWritten; got != rows {
		t.Fatalf("rows written %d after the member ran, want %d", got, rows)
	}
	must(t, db.Close())
}

// TestConditionSeesUnappliedBatches races a blind Put and a PutIfAbsent on
// each key. Whatever the order, the blind value must be the one left: the
// conditional write either commits first (and the Put overwrites it) or
// after the Put, and then its condition fails. Its condition is evaluated
// while the Put's writer may still be inserting it, so the leader must
// wait for every batch logged before its group first.
func TestConditionSeesUnappliedBatches(t *testing.T) {
	db, _, _ := condDB(t)
	const pairs, keys = 2, 1500
	key := func(p, i int) []byte { return fmt.Appendf(nil, "k%d-%05d", p, i) }
	runWriters(t, 2*pairs, keys, func(w, i int) error {
		if w < pairs {
			return db.Put(key(w, i), []byte("blind"))
		}
		_, err := db.PutIfAbsent(key(w-pairs, i), []byte("cond"), NoExpiry())
		return err
	})
	for p := range pairs {
		for i := range keys {
			mustGet(t, db, string(key(p, i)), "blind")
		}
	}
}

// TestAddSeesEveryEarlierBatch runs answering adds on a few counters from
// several writers beside blind puts: a group with a condition waits until
// every batch logged before it is applied before it reads a counter, so
// the adds of each counter return 1, 2, ... n, each once.
func TestAddSeesEveryEarlierBatch(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), func(o *Options) { o.MergeOperator = Int64Add })
	defer db.Close()
	const writers, perWriter, counters = 4, 400, 3
	got := make([][]int64, writers)
	runWriters(t, writers, perWriter, func(w, i int) error {
		n, err := db.Add(fmt.Appendf(nil, "c%d", i%counters), 1, TTL{})
		if err != nil {
			return err
		}
		got[w] = append(got[w], n)
		return db.Put(fmt.Appendf(nil, "p%d-%d", w, i), nil)
	})
	// Writer w's i-th add went to counter i%counters.
	seen := make([]map[int64]bool, counters)
	for c := range seen {
		seen[c] = make(map[int64]bool)
	}
	for w := range writers {
		for i, n := range got[w] {
			c := i % counters
			if seen[c][n] {
				t.Fatalf("counter %d returned %d twice", c, n)
			}
			seen[c][n] = true
		}
	}
	for c := range seen {
		want := writers * ((perWriter - c + counters - 1) / counters) // i%counters == c, i < perWriter
		for n := int64(1); n <= int64(want); n++ {
			if !seen[c][n] {
				t.Fatalf("counter %d never returned %d (of %d adds)", c, n, want)
			}
		}
	}
}

// TestFirstFailedWriteWrapsErrBackground checks that the write that meets a
// failure of the WAL reports it as every later write does: wrapping
// ErrBackground and the cause, for a synced and for an unsynced write and
// for the WAL sync of FlushWAL.
func TestFirstFailedWriteWrapsErrBackground(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule faultfs.Rule
		do   func(db *DB) error
	}{
		{"sync write", faultfs.Rule{Op: faultfs.OpSync, Name: "wal/"}, func(db *DB) error {
			return db.PutWith([]byte("k"), []byte("v"), TTL{}, Sync)
		}},
		{"unsynced write", faultfs.Rule{Op: faultfs.OpLogWrite, Name: "wal/", Count: -1}, func(db *DB) error {
			// The flusher's failure surfaces at a later append or flush.
			if err := db.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
			return db.FlushWAL(false)
		}},
		{"FlushWAL sync", faultfs.Rule{Op: faultfs.OpSync, Name: "wal/"}, func(db *DB) error {
			if err := db.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
			return db.FlushWAL(true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := faultfs.New(storage.NewMem())
			db, err := Open("", &Options{Storage: fs})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			fs.Inject(tc.rule)
			first := tc.do(db)
			if !errors.Is(first, ErrBackground) || !errors.Is(first, faultfs.ErrInjected) {
				t.Fatalf("first failing call: %v, want ErrBackground wrapping the injected fault", first)
			}
			later := db.Put([]byte("k2"), []byte("v"))
			if !errors.Is(later, ErrBackground) {
				t.Fatalf("later write: %v, want ErrBackground", later)
			}
		})
	}
}

// TestCloseReportsAFailureOnce checks that Close after a failed WAL write
// does not repeat the WAL's sticky error (its Sync and Close both return it).
func TestCloseReportsAFailureOnce(t *testing.T) {
	fs := faultfs.New(storage.NewMem())
	db, err := Open("", &Options{Storage: fs})
	if err != nil {
		t.Fatal(err)
	}
	fs.Inject(faultfs.Rule{Op: faultfs.OpSync, Name: "wal/"})
	if err := db.PutWith([]byte("k"), []byte("v"), TTL{}, Sync); err == nil {
		t.Fatal("synced write with a failing sync succeeded")
	}
	err = db.Close()
	if err == nil {
		t.Fatal("Close after a failed WAL sync returned nil")
	}
	msg := err.Error()
	if n := strings.Count(msg, faultfs.ErrInjected.Error()); n != 1 {
		t.Fatalf("Close reported the injected fault %d times: %q", n, msg)
	}
}

// gatedStorage holds back the creation of table objects until open is
// closed, so that flushes cannot finish and frozen memtables pile up.
type gatedStorage struct {
	storage.Storage
	open chan struct{}
}

func (g *gatedStorage) Create(name string) (storage.ObjectWriter, error) {
	if strings.HasSuffix(name, ".sst") {
		<-g.open
	}
	return g.Storage.Create(name)
}

// TestWritePathManualMemoryReturned: the write path's buffers outside the
// Go heap (WAL pending buffers, table writers' filter hashes, local object
// write buffers) are all given back: after flushes, compactions, a flush
// that fails part-way through writing its table (the table writer is
// abandoned), Close, and the close of the storage that holds the idle
// object write buffers, manual memory is where it started.
func TestWritePathManualMemoryReturned(t *testing.T) {
	m0, n0 := manual.Allocated()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fs := faultfs.New(local)
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = fs
		o.MemtableSize = 256 << 10
		o.BloomBitsPerKey = 10
	})
	put := func(gen, n int) {
		t.Helper()
		for i := range n {
			if err := db.Put(fmt.Appendf(nil, "k%06d", i), fmt.Appendf(nil, "v%d-%06d-%0100d", gen, i, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 6000) // several memtables: flushes and a compaction or two
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	put(1, 6000)
	// The next table write fails at its third block: the flush abandons
	// its table writer and aborts the object.
	fs.Inject(faultfs.Rule{Op: faultfs.OpWrite, Name: "sst/", N: 3})
	for i := range 2000 { // the failure may stop the writes (a background error)
		if db.Put(fmt.Appendf(nil, "k%06d", i), []byte("after")) != nil {
			break
		}
	}
	err = db.Flush()
	if len(fs.Injected()) == 0 {
		t.Fatalf("no table write failed (Flush: %v)", err)
	}
	fs.Clear()
	db.Close()
	if err := local.Close(); err != nil {
		t.Fatal(err)
	}
	if m, n := manual.Allocated(); m != m0 || n != n0 {
		t.Fatalf("manual.Allocated = %d bytes in %d buffers after Close, want %d in %d", m, n, m0, n0)
	}
}

// TestSyncedPutStorageOps: once the WAL segment exists, each synced Put
// costs the storage exactly one log write and one log sync, and no other
// operation (no directory sync, no reopen, no extra write).
func TestSyncedPutStorageOps(t *testing.T) {
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fs := faultfs.New(local)
	db, err := Open("", &Options{Storage: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The first synced write may create the segment and sync its header.
	if err := db.PutWith([]byte("warm"), []byte("up"), DefaultTTL(), Sync); err != nil {
		t.Fatal(err)
	}
	// The next segment's log is created in the background from open on
	// (prepareLogSegment), at whatever moment the scheduler runs it: wait
	// for it, so that its creation is not counted among the puts'.
	db.walRot.mu.Lock()
	spare := db.walRot.spareDone
	db.walRot.mu.Unlock()
	if spare != nil {
		<-spare
	}
	const puts = 50
	var before [32]int64
	for op := faultfs.OpAny + 1; op <= faultfs.OpClose; op++ {
		before[op] = fs.Count(op)
	}
	for i := range puts {
		if err := db.PutWith([]byte(fmt.Sprintf("key%03d", i)), []byte("value"), DefaultTTL(), Sync); err != nil {
			t.Fatal(err)
		}
	}
	for op := faultfs.OpAny + 1; op <= faultfs.OpClose; op++ {
		want := int64(0)
		if op == faultfs.OpLogWrite || op == faultfs.OpSync {
			want = puts
		}
		if got := fs.Count(op) - before[op]; got != want {
			t.Errorf("%d synced puts made %d %v operations, want %d", puts, got, op, want)
		}
	}
}

// randomKey fills k with random bytes.
func randomKey(r *rand.Rand, k []byte) {
	binary.LittleEndian.PutUint64(k[0:8], r.Uint64())
	binary.LittleEndian.PutUint64(k[8:16], r.Uint64())
}

// reportWriteMetrics adds the write stalls seen during the benchmark as a metric.
func reportWriteMetrics(b *testing.B, db *DB, ops int) {
	m := db.Metrics()
	if ops > 0 {
		b.ReportMetric(float64(m.WALSyncs)/float64(ops), "syncs/op")
	}
	b.ReportMetric(float64(m.Flushes), "flushes")
	b.ReportMetric(float64(m.WriteStalls), "stalls")
}

// BenchmarkPut measures single-row, non-synced puts of random keys, with
// and without a TTL. The TTL case is the engine's main promise: it should
// cost within a few percent of the plain case.
func BenchmarkPut(b *testing.B) {
	b.Run("noTTL", func(b *testing.B) {
		benchPut(b, false, func(db *DB, k, v []byte) error { return db.Put(k, v) })
	})
	b.Run("TTL", func(b *testing.B) {
		benchPut(b, false, func(db *DB, k, v []byte) error {
			return db.PutTTL(k, v, ExpireAfter(time.Hour))
		})
	})
}

// benchPut measures put, one writer, on random keys; synced reports the
// WAL syncs per put.
func benchPut(b *testing.B, synced bool, put func(db *DB, k, v []byte) error) {
	db := openBenchDB(b, nil)
	vals := benchValuePool()
	r := rand.New(rand.NewPCG(3, 4))
	k := make([]byte, benchKeySize)
	b.SetBytes(benchRowBytes)
	b.ReportAllocs()
	i := 0
	cpu := startCPU()
	for b.Loop() {
		randomKey(r, k)
		if err := put(db, k, vals[i%benchValues]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	cpu.report(b)
	if !synced {
		i = 0
	}
	reportWriteMetrics(b, db, i)
}

// BenchmarkPutBatch measures atomic batches of 100 rows; one op is one
// batch.
func BenchmarkPutBatch(b *testing.B) {
	const perBatch = 100
	db := openBenchDB(b, nil)
	vals := benchValuePool()
	r := rand.New(rand.NewPCG(5, 6))
	k := make([]byte, benchKeySize)
	b.SetBytes(perBatch * benchRowBytes)
	b.ReportAllocs()
	i := 0
	cpu := startCPU()
	for b.Loop() {
		bt := db.NewBatch()
		for j := 0; j < perBatch; j++ {
			randomKey(r, k)
			if err := bt.Put(k, vals[i%benchValues]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		if err := bt.Write(nil); err != nil {
			b.Fatal(err)
		}
		bt.Close()
	}
	b.StopTimer()
	cpu.report(b)
	reportWriteMetrics(b, db, 0)
}

// BenchmarkPutSync measures puts that wait for a WAL fsync, one writer.
func BenchmarkPutSync(b *testing.B) {
	benchPut(b, true, func(db *DB, k, v []byte) error { return db.PutWith(k, v, DefaultTTL(), Sync) })
}

// BenchmarkPutSyncParallel measures synced puts from 16 writers per CPU.
// Group commit lets one fsync cover many writers: syncs/op well below 1 is
// the evidence.
func BenchmarkPutSyncParallel(b *testing.B) {
	db := openBenchDB(b, nil)
	vals := benchValuePool()
	b.SetBytes(benchRowBytes)
	b.ReportAllocs()
	b.SetParallelism(16)
	var seed uint64
	var seedMu = make(chan struct{}, 1)
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		seedMu <- struct{}{}
		seed++
		r := rand.New(rand.NewPCG(seed, 9))
		<-seedMu
		k := make([]byte, benchKeySize)
		i := 0
		for pb.Next() {
			randomKey(r, k)
			if err := db.PutWith(k, vals[i%benchValues], DefaultTTL(), Sync); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.StopTimer()
	cpu.report(b)
	reportWriteMetrics(b, db, b.N)
}

// BenchmarkPutParallel measures non-synced puts of random keys from four
// writers: the commit pipeline's hand-off between a group's leader and its
// members and the members' own memtable inserts, which one writer never
// pays.
func BenchmarkPutParallel(b *testing.B) {
	db := openBenchDB(b, nil)
	vals := benchValuePool()
	b.SetBytes(benchRowBytes)
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	runFour(b, b.N, func(i int) error {
		var k [benchKeySize]byte
		benchKey(k[:], uint64(i))
		return db.Put(k[:], vals[i%benchValues])
	})
	b.StopTimer()
	cpu.report(b)
	reportWriteMetrics(b, db, b.N)
}

// BenchmarkFillSmallMemtable measures sustained sequential ingest through
// 16 MiB memtables (fillseq: one put per op; fillbatch: batches of 100,
// one row per op), including the flushes and compactions it causes: the
// timer stops only once WaitForCompactions returns. Run it with a fixed
// -benchtime such as 1000000x so that every run does the same level-0
// work; cpu-ns/op (the whole process) is the load-robust figure, wa the
// engine's write amplification.
func BenchmarkFillSmallMemtable(b *testing.B) {
	for _, batch := range []int{1, 100} {
		name := "fillseq"
		if batch > 1 {
			name = "fillbatch"
		}
		b.Run(name, func(b *testing.B) {
			db := openBenchDB(b, func(o *Options) { o.MemtableSize = 16 << 20 })
			vals := benchValuePool()
			k := make([]byte, benchKeySize)
			b.SetBytes(benchRowBytes)
			cpu := startCPU()
			bt := db.NewBatch()
			i := 0
			for b.Loop() {
				binary.BigEndian.PutUint64(k[0:8], uint64(i))
				if err := bt.Put(k, vals[i%benchValues]); err != nil {
					b.Fatal(err)
				}
				i++
				if bt.Len() >= batch {
					if err := bt.Write(nil); err != nil {
						b.Fatal(err)
					}
					bt.Reset()
				}
			}
			if err := bt.Write(nil); err != nil {
				b.Fatal(err)
			}
			bt.Close()
			if err := db.WaitForCompactions(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu.report(b)
			m := db.Metrics()
			b.ReportMetric(m.WriteAmplification(), "wa")
			b.ReportMetric(float64(m.TrivialMoves), "moves")
			reportWriteMetrics(b, db, 0)
		})
	}
}

// BenchmarkPutUnderReads measures the latency of sparse writes (one Put
// every 200 µs) with no reader and with three goroutines reading
// memtable-resident keys without pause, the shape of YCSB's read-mostly
// workloads. It reports the writes' p99 and max: a write that parks
// anywhere (a lock, the memtable's RWMutex) waits for a P that busy readers
// do not give up until the scheduler preempts them (bench/HISTORY.md,
// "Sparse writes under busy readers").
func BenchmarkPutUnderReads(b *testing.B) {
	for _, readers := range []int{0, 3} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) { benchPutUnderReads(b, readers) })
	}
}

func benchPutUnderReads(b *testing.B, readers int) {
	db := openBenchDB(b, nil)
	val := make([]byte, 1000)
	const keys = 20000
	key := func(i int) []byte { return fmt.Appendf(nil, "k%06d", i%keys) }
	for i := range keys {
		must(b, db.Put(key(i), val))
	}
	var stop sync.WaitGroup
	done := make(chan struct{})
	for r := range readers {
		stop.Go(func() {
			for i := r; ; i += 7919 {
				select {
				case <-done:
					return
				default:
				}
				db.Get(key(i))
			}
		})
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		must(b, db.Put(key(i*13), val))
		lat = append(lat, time.Since(t0))
		time.Sleep(200 * time.Microsecond)
	}
	b.StopTimer()
	close(done)
	stop.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}
