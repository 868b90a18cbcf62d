package s3test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// Environment of the follower child process.
const (
	envChildLoc = "MAYFLY_S3TEST_FOLLOWER_LOCATION"
)

// TestFollowerChild is the follower run by TestFollowerInAnotherProcess in
// a separate process; on its own it skips. It opens the location read-only
// with FollowInterval 200ms and prints "COUNT n" every time the number of
// live keys changes, until it sees the key "zz-done" or 60 s pass.
func TestFollowerChild(t *testing.T) {
	loc := os.Getenv(envChildLoc)
	if loc == "" {
		t.Skip("runs only as the child of TestFollowerInAnotherProcess")
	}
	db, err := mayfly.Open(loc, &mayfly.Options{ReadOnly: true, FollowInterval: 200 * time.Millisecond})
	if err != nil {
		fmt.Printf("ERROR open: %v\n", err)
		t.Fatal(err)
	}
	defer db.Close()
	fmt.Println("READY")
	last := -1
	stop := time.Now().Add(60 * time.Second)
	for time.Now().Before(stop) {
		n := 0
		done := false
		it, err := db.NewIter(nil)
		if err != nil {
			fmt.Printf("ERROR iter: %v\n", err)
			return
		}
		for ok := it.First(); ok; ok = it.Next() {
			if string(it.Key()) == "zz-done" {
				done = true
			} else {
				n++
			}
		}
		if err := it.Close(); err != nil {
			fmt.Printf("ERROR iter: %v\n", err)
			return
		}
		if n != last {
			fmt.Printf("COUNT %d\n", n)
			last = n
		}
		if done {
			fmt.Println("DONE")
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFollowerInAnotherProcess: a follower in another process (this test
// binary re-executed) sees each flushed batch of keys within a bounded
// number of its 200ms poll intervals.
func TestFollowerInAnotherProcess(t *testing.T) {
	loc := location(t)
	opts := &mayfly.Options{Clock: manual()}
	w := open(t, loc, opts)
	defer w.Close()
	// The follower needs a manifest to open; put a first batch.
	put := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := w.Put(key("f", i), val("f", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 100)

	cmd := exec.Command(os.Args[0], "-test.run=^TestFollowerChild$", "-test.v")
	cmd.Env = append(os.Environ(), envChildLoc+"="+loc)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The child exits by itself on "zz-done"; make sure of it.
		timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		timer.Stop()
	}()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// waitFor reads the child's output until pred accepts a line, within a
	// bounded real-time deadline (50 poll intervals).
	waitFor := func(what string, pred func(string) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		var seen []string
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("follower exited before %s; its output: %q", what, seen)
				}
				if strings.HasPrefix(l, "ERROR") {
					t.Fatalf("follower: %s", l)
				}
				seen = append(seen, l)
				if pred(l) {
					return
				}
			case <-deadline:
				t.Fatalf("follower did not report %s within 10s (50 poll intervals); its output: %q", what, seen)
			}
		}
	}
	count := func(n int) func(string) bool {
		return func(l string) bool {
			c, ok := strings.CutPrefix(l, "COUNT ")
			v, err := strconv.Atoi(c)
			return ok && err == nil && v == n
		}
	}
	waitFor("COUNT 100", count(100))
	put(100, 250)
	waitFor("COUNT 250", count(250))
	for i := 0; i < 50; i++ {
		if err := w.Delete(key("f", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor("COUNT 200", count(200))
	if err := w.Put([]byte("zz-done"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor("DONE", func(l string) bool { return l == "DONE" })
}

// TestFollowerFollowWAL: an in-process follower with FollowWAL sees synced
// but unflushed writes after Refresh, and still sees them once the writer
// flushed them (and deleted the WAL segment).
func TestFollowerFollowWAL(t *testing.T) {
	loc := location(t)
	clk := manual()
	w := open(t, loc, &mayfly.Options{Clock: clk})
	defer w.Close()
	for i := range 20 {
		if err := w.PutWith(key("w", i), val("w", i), mayfly.NoExpiry(), mayfly.Sync); err != nil {
			t.Fatal(err)
		}
	}
	// A long interval: only explicit Refresh calls move the follower.
	f := open(t, loc, &mayfly.Options{Clock: clk, ReadOnly: true, FollowInterval: time.Hour, FollowWAL: true})
	defer f.Close()
	mustGet(t, f, key("w", 0), string(val("w", 0))) // replayed at open

	for i := 20; i < 60; i++ {
		if err := w.PutWith(key("w", i), val("w", i), mayfly.ExpireAfter(time.Minute), mayfly.Sync); err != nil {
			t.Fatal(err)
		}
	}
	mustMiss(t, f, key("w", 59))
	if _, err := f.Refresh(); err != nil {
		t.Fatal(err)
	}
	if n := len(contents(t, f)); n != 60 {
		t.Fatalf("follower sees %d keys after Refresh, want 60", n)
	}
	if rem, exp, err := f.TTL(key("w", 59)); err != nil || !exp || rem != time.Minute {
		t.Fatalf("follower TTL = %v, %v, %v; want 1m", rem, exp, err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Refresh(); err != nil {
		t.Fatal(err)
	}
	if n := len(contents(t, f)); n != 60 {
		t.Fatalf("follower sees %d keys after the writer flushed, want 60", n)
	}
	clk.Advance(time.Minute + time.Millisecond)
	if n := len(contents(t, f)); n != 20 {
		t.Fatalf("follower sees %d keys after the TTL, want 20", n)
	}
}

// TestFollowerCatchesUpAfterSeveralVersions: the writer writes several
// manifest versions between two polls of a follower (flushes, a
// compaction); the follower's next Refresh must load the newest.
func TestFollowerCatchesUpAfterSeveralVersions(t *testing.T) {
	loc := location(t)
	clk := manual()
	w := open(t, loc, &mayfly.Options{Clock: clk})
	defer w.Close()
	w.Put([]byte("first"), []byte("1"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f := open(t, loc, &mayfly.Options{Clock: clk, ReadOnly: true, FollowInterval: time.Hour})
	defer f.Close()
	mustGet(t, f, []byte("first"), "1")
	for i := range 3 {
		w.Put(key("later", i), val("later", i))
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	changed, err := f.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Errorf("Refresh reported no change although the writer wrote 3 manifest versions")
	}
	for i := range 3 {
		mustGet(t, f, key("later", i), string(val("later", i)))
	}
}
