package mayfly

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

// TestSyncedCommitReleasesCommitLock: while a synced write's fsync runs,
// the commit lock is free, an unsynced write commits, and the synced write
// is visible but its call has not returned (docs/usage.md, "Durability",
// "Group commit"). Once the fsync ends the call returns nil.
func TestSyncedCommitReleasesCommitLock(t *testing.T) {
	fs := faultfs.New(storage.NewMem())
	var hold atomic.Bool
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	fs.SetHook(func(e faultfs.Event) {
		if e.Phase == faultfs.Before && e.Op == faultfs.OpSync && strings.HasPrefix(e.Name, "wal/") && hold.Load() {
			entered <- struct{}{}
			<-release
		}
	})
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = fs
		o.MemtableSize = 64 << 20 // no rotation: its seal would sync too
	})
	defer db.Close()
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	defer open() // before Close, which syncs the WAL, on a failure too

	hold.Store(true)
	synced := make(chan error, 1)
	go func() { synced <- db.PutWith([]byte("durable"), []byte("v1"), TTL{}, Sync) }()
	<-entered
	hold.Store(false)

	if !db.commitMu.TryLock() {
		t.Fatal("the commit lock is held while a synced write's fsync runs")
	}
	db.commitMu.Unlock()
	if err := db.Put([]byte("beside"), []byte("v2")); err != nil {
		t.Fatalf("unsynced Put during the fsync: %v", err)
	}
	for _, k := range []string{"durable", "beside"} {
		if _, err := db.Get([]byte(k)); err != nil {
			t.Fatalf("Get %q during the fsync: %v", k, err)
		}
	}
	select {
	case err := <-synced:
		t.Fatalf("the synced write returned (%v) before its fsync ended", err)
	default:
	}
	open()
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if got := db.Metrics().WALSyncs; got != 1 {
		t.Fatalf("WALSyncs = %d, want 1", got)
	}
}

// BenchmarkPutBesideSyncedWriter measures unsynced puts from one writer
// while another writes synced puts back to back: what a synced group's
// fsync costs the writers that did not ask for one. p99-ns is the unsynced
// puts' 99th percentile latency.
func BenchmarkPutBesideSyncedWriter(b *testing.B) {
	db := openBenchDB(b, nil)
	vals := benchValuePool()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		k := make([]byte, benchKeySize)
		for i := uint64(1 << 40); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			benchKey(k, i)
			if err := db.PutWith(k, vals[i%benchValues], DefaultTTL(), Sync); err != nil {
				b.Error(err)
				return
			}
		}
	})
	lat := make([]time.Duration, b.N)
	b.SetBytes(benchRowBytes)
	b.ResetTimer()
	var k [benchKeySize]byte
	for i := range b.N {
		benchKey(k[:], uint64(i))
		t0 := time.Now()
		if err := db.Put(k[:], vals[i%benchValues]); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
	b.ReportMetric(float64(db.Metrics().WALSyncs)/float64(b.N), "syncs/op")
}
