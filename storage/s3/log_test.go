package s3

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

func TestLogWriteSyncReopen(t *testing.T) {
	s := openStore(t, func(c *Config) { c.FlushInterval = time.Hour })
	lw, err := s.CreateLog("wal/000007.wal")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 20 {
		p := bytes.Repeat([]byte{byte('a' + i)}, 1000*i+1)
		want = append(want, p...)
		if _, err := lw.Write(p); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			if err := lw.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := lw.Sync(); err != nil {
		t.Fatal(err)
	}
	// A second store (another process) sees every synced byte.
	other := openWith(t, s.Config())
	if got := mustRead(t, other, "wal/000007.wal"); !bytes.Equal(got, want) {
		t.Fatalf("reopened log: %d bytes, want %d", len(got), len(want))
	}
	// Sync with nothing new sends nothing.
	before := s.Metrics()
	if err := lw.Sync(); err != nil {
		t.Fatal(err)
	}
	if d := s.Metrics().Requests() - before.Requests(); d != 0 {
		t.Fatalf("empty Sync sent %d requests", d)
	}
	// Close uploads what is still buffered.
	lw.Write([]byte("tail"))
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	want = append(want, "tail"...)
	if got := mustRead(t, other, "wal/000007.wal"); !bytes.Equal(got, want) {
		t.Fatalf("log after Close: %d bytes, want %d", len(got), len(want))
	}
	if _, err := lw.Write([]byte("x")); err == nil {
		t.Fatal("write after Close succeeded")
	}
	if err := lw.Sync(); err == nil {
		t.Fatal("Sync after Close succeeded")
	}
	if err := lw.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
}

func TestLogFlushInterval(t *testing.T) {
	s := openStore(t, func(c *Config) { c.FlushInterval = 50 * time.Millisecond })
	lw, err := s.CreateLog("wal/000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	puts := s.Metrics().Puts
	if _, err := lw.Write([]byte("unsynced but flushed")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the flush timer's upload", func() bool { return s.Metrics().Puts > puts })
	waitFor(t, "the flushed bytes to be readable", func() bool {
		b, err := storage.ReadAll(s, "wal/000001.wal")
		return err == nil && string(b) == "unsynced but flushed"
	})
	// Another round: the timer re-arms on the next write.
	puts = s.Metrics().Puts
	lw.Write([]byte("; more"))
	waitFor(t, "the second timed upload", func() bool { return s.Metrics().Puts > puts })
	waitFor(t, "the second flush to be readable", func() bool {
		b, err := storage.ReadAll(s, "wal/000001.wal")
		return err == nil && string(b) == "unsynced but flushed; more"
	})
}

func TestLogFlushBytes(t *testing.T) {
	s := openStore(t, func(c *Config) {
		c.FlushInterval = time.Hour
		c.FlushBytes = 1000
	})
	lw, err := s.CreateLog("wal/000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	lw.Write(bytes.Repeat([]byte("x"), 600))
	if got := mustRead(t, s, "wal/000001.wal"); len(got) != 0 {
		t.Fatalf("uploaded %d bytes below FlushBytes", len(got))
	}
	lw.Write(bytes.Repeat([]byte("y"), 600)) // crosses FlushBytes: uploaded by Write
	got := mustRead(t, s, "wal/000001.wal")
	if len(got) != 1200 || !bytes.Equal(got[600:], bytes.Repeat([]byte("y"), 600)) {
		t.Fatalf("after crossing FlushBytes the log holds %d bytes, want 1200", len(got))
	}
}

func TestFenceLog(t *testing.T) {
	s := openStore(t, func(c *Config) { c.FlushInterval = time.Hour })
	lw, err := s.CreateLog("wal/000003.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	lw.Write([]byte("synced before the fence;"))
	if err := lw.Sync(); err != nil {
		t.Fatal(err)
	}
	lw.Write([]byte("written before, synced after;"))

	// The fence comes from another process: a second store on the prefix.
	other := openWith(t, s.Config())
	if err := other.FenceLog("wal/000003.wal"); err != nil {
		t.Fatal(err)
	}
	err = lw.Sync()
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("Sync after fence: %v, want ErrFenced", err)
	}
	if _, err := lw.Write([]byte("after")); !errors.Is(err, ErrFenced) {
		t.Fatalf("Write after fence: %v, want ErrFenced", err)
	}
	if err := lw.Sync(); !errors.Is(err, ErrFenced) {
		t.Fatalf("second Sync after fence: %v, want ErrFenced", err)
	}
	if got := mustRead(t, other, "wal/000003.wal"); string(got) != "synced before the fence;" {
		t.Fatalf("fenced log holds %q", got)
	}
	// Fencing twice is fine; fencing a missing log is not.
	if err := other.FenceLog("wal/000003.wal"); err != nil {
		t.Fatal(err)
	}
	if err := other.FenceLog("wal/000099.wal"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("fence of a missing log: %v", err)
	}
	if got := mustList(t, other, "wal"); len(got) != 1 || got[0] != "wal/000003.wal" {
		t.Fatalf("list = %q", got)
	}
}

// TestFenceRace fences a log while its writer keeps syncing: the log then
// holds exactly the bytes whose Sync succeeded.
func TestFenceRace(t *testing.T) {
	s := openStore(t, func(c *Config) { c.FlushInterval = time.Hour })
	other := openWith(t, s.Config())
	for round := range 3 {
		name := fmt.Sprintf("wal/%06d.wal", round)
		lw, err := s.CreateLog(name)
		if err != nil {
			t.Fatal(err)
		}
		var acked []byte
		var wg sync.WaitGroup
		wg.Add(1)
		var werr error
		go func() {
			defer wg.Done()
			for i := 0; i < 1500; i++ {
				rec := []byte(fmt.Sprintf("r%d;", i))
				if _, err := lw.Write(rec); err != nil {
					werr = err
					return
				}
				if err := lw.Sync(); err != nil {
					werr = err
					return
				}
				acked = append(acked, rec...)
			}
		}()
		time.Sleep(time.Duration(20*(round+1)) * time.Millisecond) // let the writer get going
		if err := other.FenceLog(name); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if werr == nil {
			// The writer finished all its syncs before the fence landed (a
			// loaded machine); its next upload must still be refused.
			lw.Write([]byte("late;"))
			werr = lw.Sync()
		}
		lw.Close()
		if !errors.Is(werr, ErrFenced) {
			t.Fatalf("writer stopped with %v, want ErrFenced", werr)
		}
		if got := mustRead(t, other, name); !bytes.Equal(got, acked) {
			t.Fatalf("log holds %d bytes, the writer had %d acknowledged", len(got), len(acked))
		}
	}
}

// TestIdleLogSendsNothing: an open log with nothing new to write sends no
// requests, however long the flush timer would have run.
func TestIdleLogSendsNothing(t *testing.T) {
	const interval = 50 * time.Millisecond
	s := openStore(t, func(c *Config) { c.FlushInterval = interval })
	lw, err := s.CreateLog("wal/000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	lw.Write([]byte("one record"))
	if err := lw.Sync(); err != nil {
		t.Fatal(err)
	}
	before := s.Metrics()
	time.Sleep(4 * interval) // a bounded idle period spanning several intervals
	if after := s.Metrics(); after.Requests() != before.Requests() {
		t.Fatalf("idle log sent requests: before %+v, after %+v", before, after)
	}
	// A write flushed by the timer, then idle again.
	lw.Write([]byte("two"))
	waitFor(t, "the timed upload", func() bool { return s.Metrics().Puts > before.Puts })
	time.Sleep(interval / 2)
	before = s.Metrics()
	time.Sleep(4 * interval)
	if after := s.Metrics(); after.Requests() != before.Requests() {
		t.Fatalf("idle log sent requests after a timed flush: before %+v, after %+v", before, after)
	}
}

// TestFenceJumpsAheadOfBusyWriter makes the writer win the fence's first
// claims (it uploads parts right after each of the fence's LISTs): the
// fence must then jump ahead, fill the gap below its claim, and leave a log
// without gaps that holds exactly the acknowledged bytes.
func TestFenceJumpsAheadOfBusyWriter(t *testing.T) {
	s := openStore(t, func(c *Config) { c.FlushInterval = time.Hour })
	other := openWith(t, s.Config())
	const name = "wal/000001.wal"
	lw, err := s.CreateLog(name)
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	var acked []byte
	write := func(n int) {
		for range n {
			rec := []byte(fmt.Sprintf("r%d;", len(acked)))
			lw.Write(rec)
			if err := lw.Sync(); err != nil {
				t.Errorf("sync before the fence: %v", err)
				return
			}
			acked = append(acked, rec...)
		}
	}
	write(3) // parts 2..4
	// After the first LIST the writer uploads 6 parts: the claim of part 5
	// and the jump to part 9 both lose; after the second LIST it is idle.
	lists := 0
	fenceTestHook = func(event string) {
		if event != "listed" {
			return
		}
		if lists++; lists == 1 {
			write(6)
		}
	}
	defer func() { fenceTestHook = nil }()
	putsBefore := other.Metrics().Puts
	if err := other.FenceLog(name); err != nil {
		t.Fatal(err)
	}
	if lists != 2 {
		t.Fatalf("FenceLog listed %d times, want 2 (one jump lost)", lists)
	}
	// Claims: 5 (lost), 9 (lost), 10+8=18 (won), then 17..11 filled.
	if puts := other.Metrics().Puts - putsBefore; puts != 10 {
		t.Errorf("FenceLog sent %d PUTs, want 10", puts)
	}
	lw.Write([]byte("late;"))
	if err := lw.Sync(); !errors.Is(err, ErrFenced) {
		t.Fatalf("writer's Sync after the fence = %v, want ErrFenced", err)
	}
	parts, err := other.listParts(name)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if p.n != int64(i+1) {
			t.Fatalf("part %d missing: the fence left a gap (parts %v)", i+1, parts)
		}
	}
	if got := mustRead(t, other, name); !bytes.Equal(got, acked) {
		t.Fatalf("log holds %q, the writer acknowledged %q", got, acked)
	}
}

// TestFenceLogRemovedMidRace: the log disappears while the fence is racing
// its writer (after a lost jump-ahead claim, before the re-LIST). FenceLog
// must report ErrNotExist, as for a log that never existed, not fail on the
// empty listing.
func TestFenceLogRemovedMidRace(t *testing.T) {
	s := openStore(t, func(c *Config) { c.FlushInterval = time.Hour })
	other := openWith(t, s.Config())
	const name = "wal/000002.wal"
	lw, err := s.CreateLog(name)
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	write := func(n int) {
		for i := range n {
			lw.Write([]byte(fmt.Sprintf("r%d;", i)))
			if err := lw.Sync(); err != nil {
				t.Errorf("sync: %v", err)
				return
			}
		}
	}
	write(2)
	lists := 0
	fenceTestHook = func(event string) {
		switch event {
		case "listed":
			if lists++; lists == 1 {
				write(6) // the first claim and the first jump both lose
			}
		case "lost":
			if err := other.Remove(name); err != nil {
				t.Errorf("remove: %v", err)
			}
		}
	}
	defer func() { fenceTestHook = nil }()
	if err := other.FenceLog(name); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("FenceLog of a log removed mid-race = %v, want ErrNotExist", err)
	}
}
