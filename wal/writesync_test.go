package wal

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/storage"
)

// callerLog counts the log writes made by the flusher goroutine and by
// anyone else.
type callerLog struct {
	failLog
	mu                  sync.Mutex
	byFlusher, byOthers int
}

func (c *callerLog) Write(p []byte) (int, error) {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	flusher := false
	for {
		f, more := frames.Next()
		flusher = flusher || strings.HasSuffix(f.Function, ".flushLoop")
		if !more {
			break
		}
	}
	c.mu.Lock()
	if flusher {
		c.byFlusher++
	} else {
		c.byOthers++
	}
	c.mu.Unlock()
	return c.failLog.Write(p)
}

// A synced commit is written by the committing goroutine itself: WriteSync
// with an idle flusher makes one log write and one sync from the caller and
// never hands the bytes to the flusher (which would cost two goroutine
// wake-ups per commit). The header goes out in NewWriter, also from the
// caller. (The sync mark in front of each commit after the first is part
// of the commit's own write.)
func TestWriteSyncWritesInline(t *testing.T) {
	cl := &callerLog{}
	w, err := NewWriter(cl, 1)
	if err != nil {
		t.Fatal(err)
	}
	const commits = 20
	for i := range commits {
		if err := w.WriteSync(AppendRecord(nil, []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if cl.byFlusher != 0 || cl.byOthers != 1+commits || cl.syncs != commits {
		t.Errorf("%d synced commits: %d writes by the flusher, %d by the caller (header included), %d syncs; want 0, %d, %d",
			commits, cl.byFlusher, cl.byOthers, cl.syncs, 1+commits, commits)
	}
}

// Writers mixing Write and WriteSync concurrently: records reach the log in
// each writer's order, and whatever a WriteSync covered survives a crash
// taken right after it returns.
func TestWriteSyncConcurrent(t *testing.T) {
	m := storage.NewMem()
	w := newTestWriter(t, m, "wal/000001.wal")
	const writers, perWriter = 4, 300
	rec := func(g, i int) []byte {
		return AppendRecord(nil, binary.LittleEndian.AppendUint32([]byte{byte(g)}, uint32(i)))
	}
	// check replays s and verifies each writer's records are in order; it
	// returns how many of each writer's records it found.
	check := func(s storage.Storage) ([writers]int, error) {
		var next [writers]int
		_, err := Replay(s, "wal/000001.wal", testSeg, func(p []byte) error {
			g, i := int(p[0]), int(binary.LittleEndian.Uint32(p[1:]))
			if i != next[g] {
				return fmt.Errorf("writer %d: record %d after %d", g, i, next[g]-1)
			}
			next[g]++
			return nil
		})
		return next, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if i%3 != 2 {
					if err := w.Write(rec(g, i)); err != nil {
						errs <- err
						return
					}
					continue
				}
				if err := w.WriteSync(rec(g, i)); err != nil {
					errs <- err
					return
				}
				if i%30 == 29 {
					got, err := check(m.CrashClone())
					if err == nil && got[g] < i+1 {
						err = fmt.Errorf("writer %d: %d records survive a crash after syncing record %d", g, got[g], i)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := check(m)
	if err != nil {
		t.Fatal(err)
	}
	for g, n := range got {
		if n != perWriter {
			t.Errorf("writer %d: %d of %d records in the log", g, n, perWriter)
		}
	}
}

// WriteSync's failures are sticky like Write's and Sync's.
func TestWriteSyncStickyErrors(t *testing.T) {
	fl := &failLog{failWrite: true}
	w, err := NewWriter(&failLog{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	w.lw = fl
	if err := w.WriteSync(AppendRecord(nil, []byte("a"))); err == nil {
		t.Fatal("WriteSync of a failed write succeeded")
	}
	fl.failWrite = false
	if err := w.WriteSync(AppendRecord(nil, []byte("b"))); err == nil {
		t.Fatal("WriteSync after a failed write succeeded")
	}
	if fl.syncs != 0 {
		t.Errorf("%d syncs after a failed write", fl.syncs)
	}

	fl = &failLog{failSync: true}
	w, _ = NewWriter(fl, 1)
	if err := w.WriteSync(AppendRecord(nil, []byte("c"))); err == nil {
		t.Fatal("WriteSync with a failed sync succeeded")
	}
	fl.failSync = false
	if err := w.WriteSync(AppendRecord(nil, []byte("d"))); err == nil {
		t.Fatal("WriteSync after a failed sync succeeded")
	}
	if err := w.Write(AppendRecord(nil, []byte("e"))); err == nil {
		t.Fatal("Write after a failed sync succeeded")
	}

	w, _ = NewWriter(&failLog{}, 1)
	w.Close()
	if err := w.WriteSync(AppendRecord(nil, nil)); err == nil {
		t.Fatal("WriteSync after close succeeded")
	}
}
