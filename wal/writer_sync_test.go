package wal

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/storage"
)

// syncingWriter returns a Writer on lw holding one record, the record, and
// the outcome of a SyncTo of it, which has entered lw's Sync (reported on
// entered) when syncingWriter returns.
func syncingWriter(t *testing.T, lw storage.LogWriter, entered <-chan struct{}) (*Writer, []byte, chan error) {
	t.Helper()
	w, err := NewWriter(lw, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := AppendRecord(nil, []byte("row"))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	end := w.Size()
	synced := make(chan error, 1)
	go func() { synced <- w.SyncTo(end) }()
	<-entered
	return w, rec, synced
}

// TestSyncToSharesSyncs: while one SyncTo is in the log's Sync, appends go
// on, a SyncTo of bytes that sync covers waits for it and syncs nothing,
// and any number of SyncTo calls of the bytes appended meanwhile share one
// more sync. A failed sync fails every caller waiting on it.
func TestSyncToSharesSyncs(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			g := newSyncGateLog()
			g.fail = fail
			w, rec, first := syncingWriter(t, g, g.entered)
			end1 := w.Size()

			if err := w.Write(rec); err != nil {
				t.Fatalf("Write while a SyncTo syncs: %v", err)
			}
			end2 := w.Size()
			const later = 3
			var wg sync.WaitGroup
			errs := make([]error, later+1)
			for i := range later {
				wg.Go(func() { errs[i] = w.SyncTo(end2) })
			}
			wg.Go(func() { errs[later] = w.SyncTo(end1) })
			// Every later caller waits for the sync in progress; none
			// begins one of its own.
			for {
				if len(g.entered) > 0 {
					t.Fatal("a second sync began while the first was in progress")
				}
				w.mu.Lock()
				waiting := w.syncWait
				w.mu.Unlock()
				if waiting == later+1 {
					break
				}
				runtime.Gosched()
			}
			close(g.gate)
			if err := <-first; (err != nil) != fail {
				t.Fatalf("first SyncTo = %v, want failure %v", err, fail)
			}
			wg.Wait()
			for i, err := range errs {
				if (err != nil) != fail {
					t.Fatalf("SyncTo %d = %v, want failure %v", i, err, fail)
				}
			}
			data, syncs := g.state()
			if fail {
				if syncs != 0 || len(g.entered) != 0 {
					t.Fatalf("%d syncs completed and %d more began after the first failed, want none", syncs, len(g.entered))
				}
				if err := w.Write(rec); err == nil {
					t.Fatal("Write after a failed SyncTo succeeded")
				}
			} else {
				if syncs != 2 {
					t.Fatalf("%d syncs for %d SyncTo calls, want 2 (the first, and one shared by the rest)", syncs, later+2)
				}
				if int64(len(data)) < end2 {
					t.Fatalf("the log holds %d bytes after the syncs, want the %d appended", len(data), end2)
				}
			}
			w.Close()
		})
	}
}

// closeOrderLog is a syncGateLog that records a Close made while a Sync
// is in progress.
type closeOrderLog struct {
	*syncGateLog
	mu           sync.Mutex
	inSync       bool
	closedInSync bool
}

func (c *closeOrderLog) Sync() error {
	c.mu.Lock()
	c.inSync = true
	c.mu.Unlock()
	err := c.syncGateLog.Sync()
	c.mu.Lock()
	c.inSync = false
	c.mu.Unlock()
	return err
}

func (c *closeOrderLog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closedInSync = c.closedInSync || c.inSync
	return nil
}

// TestSyncToAndClose: Close waits for a SyncTo's sync before it closes the
// log; after Close, SyncTo of bytes a sync covered returns nil and of bytes
// none did reports the writer closed.
func TestSyncToAndClose(t *testing.T) {
	g := &closeOrderLog{syncGateLog: newSyncGateLog()}
	w, _, syncErr := syncingWriter(t, g, g.entered)
	synced := w.Size()
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	// Let Close get as far as it can while the sync holds the log.
	for {
		w.mu.Lock()
		closing := w.closing
		w.mu.Unlock()
		if closing {
			break
		}
		runtime.Gosched()
	}
	for range 100 {
		runtime.Gosched()
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a SyncTo was in the log's Sync", err)
	default:
	}
	close(g.gate)
	if err := <-syncErr; err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if g.closedInSync {
		t.Fatal("Close closed the log while a SyncTo's sync was in progress")
	}
	if err := w.SyncTo(synced); err != nil {
		t.Fatalf("SyncTo of synced bytes after Close = %v, want nil", err)
	}
	if err := w.SyncTo(synced + 1); err == nil {
		t.Fatal("SyncTo of bytes no sync covered after Close = nil, want an error")
	}
}

// TestAppendThenSyncToWritesInline: records appended with Append are
// written by the SyncTo that follows, from its caller, not by the flusher
// (TestWriteSyncWritesInline for the DB's synced groups).
func TestAppendThenSyncToWritesInline(t *testing.T) {
	cl := &callerLog{}
	w, err := NewWriter(cl, 1)
	if err != nil {
		t.Fatal(err)
	}
	// One record through the flusher first: once Flush returns, the
	// flusher has written it and is parked (it holds mu until it waits),
	// so a flusher just starting cannot take the appends below.
	if err := w.Write(AppendRecord(nil, []byte("first"))); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	cl.byFlusher = 0
	const commits = 20
	for i := range commits {
		if err := w.Append(AppendRecord(nil, []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
		if err := w.SyncTo(w.Size()); err != nil {
			t.Fatal(err)
		}
	}
	checkWrittenInline(t, w, cl, commits)
}
