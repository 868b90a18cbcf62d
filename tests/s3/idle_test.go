package s3test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// TestIdleWriterSendsNoRequests: after a write and a Flush, an idle writer
// sends no request at all. This file's tests are the only ones that wait in
// real time (about 1 s each).
func TestIdleWriterSendsNoRequests(t *testing.T) {
	loc := location(t)
	w := open(t, loc, &mayfly.Options{Clock: manual()})
	defer w.Close()
	for i := range 100 {
		if err := w.Put(key("i", i), val("i", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutWith([]byte("synced"), []byte("1"), mayfly.NoExpiry(), mayfly.Sync); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let a pending WAL upload timer (100ms) fire
	before := w.Metrics().Storage
	time.Sleep(time.Second)
	if d := storageDelta(before, w.Metrics().Storage); len(d) != 0 {
		t.Errorf("idle writer sent requests over 1s: %v", d)
	}
}

// TestIdleFollowerOneGETPerPoll: an idle follower sends about one GET per
// poll interval (Options.FollowInterval's documented cost) and no PUT,
// LIST or DELETE; the idle writer beside it sends nothing.
func TestIdleFollowerOneGETPerPoll(t *testing.T) {
	loc := location(t)
	w := open(t, loc, &mayfly.Options{Clock: manual()})
	defer w.Close()
	if err := w.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	before := w.Metrics().Storage

	const interval = 100 * time.Millisecond
	f := open(t, loc, &mayfly.Options{ReadOnly: true, FollowInterval: interval})
	defer f.Close()
	fb := f.Metrics().Storage
	start := time.Now()
	time.Sleep(time.Second)
	fd := storageDelta(fb, f.Metrics().Storage)
	polls := uint64(time.Since(start) / interval)
	t.Logf("idle follower over %v (%d poll intervals): %v", time.Since(start).Round(time.Millisecond), polls, fd)
	// Each poll is one small request for the next manifest version (a HEAD
	// that finds nothing, priced like a GET), plus one LIST every tenth poll
	// to catch up if the writer moved several versions ahead.
	probes := fd["get"] + fd["head"]
	if probes > polls+2 {
		t.Errorf("idle follower sent %d GET/HEAD requests in %d poll intervals, want <= %d", probes, polls, polls+2)
	}
	if probes < polls/2 {
		t.Errorf("idle follower sent only %d GET/HEAD requests in %d poll intervals: is it polling?", probes, polls)
	}
	if fd["list"] > polls/10+1 {
		t.Errorf("idle follower sent %d LISTs in %d poll intervals, want <= %d", fd["list"], polls, polls/10+1)
	}
	for _, k := range []string{"put", "delete", "post", "range_get"} {
		if fd[k] != 0 {
			t.Errorf("idle follower sent %d %s requests, want 0", fd[k], k)
		}
	}
	// The writer stayed idle while the follower polled.
	if d := storageDelta(before, w.Metrics().Storage); len(d) != 0 {
		t.Errorf("idle writer sent requests: %v", d)
	}
}

// TestIdleWriterNoRequestsAsClockAdvances: once the work its writes made
// due is done, a writer sends no request however far its clock moves. The
// manual clock is advanced in steps well past every interval the engine
// keys on the DB's clock (the WAL collection's rescan interval, every TTL
// written, the periodic compaction interval 720 times over), and
// WaitForCompactions after each step lets whatever a step made due run
// before the next, so nothing here waits in real time. The S3 log's
// FlushInterval timer runs only while its buffer holds bytes: FlushWAL(true)
// empties it before the count starts. Obsolete-table grace is off because
// its deadline is in real time, which this test does not advance.
func TestIdleWriterNoRequestsAsClockAdvances(t *testing.T) {
	clk := manual()
	w := open(t, location(t), &mayfly.Options{Clock: clk, DisableObsoleteFileGrace: true})
	defer w.Close()
	ctx := context.Background()
	const month = 30 * 24 * time.Hour
	// Rows of every kind background work acts on: without expiry, expiring
	// within the first hour, expiring after the counted month, and deletes,
	// over two flushed tables and a memtable.
	for table := range 3 {
		for i := range 200 {
			k := key(fmt.Sprint("t", table), i)
			var err error
			switch i % 4 {
			case 0:
				err = w.PutWith(k, val("n", i), mayfly.NoExpiry(), nil)
			case 1:
				err = w.PutWith(k, val("s", i), mayfly.ExpireAfter(time.Minute), nil)
			case 2:
				err = w.PutWith(k, val("l", i), mayfly.ExpireAfter(3*month), nil)
			case 3:
				err = w.Delete(key("t0", i-3))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if table < 2 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	advance := func(total, step time.Duration) {
		t.Helper()
		for d := time.Duration(0); d < total; d += step {
			clk.Advance(step)
			if err := w.WaitForCompactions(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The work the writes made due: memtable rotation by age, expiry
	// reclamation, periodic compaction, WAL collection.
	start := w.Metrics().Storage
	advance(48*time.Hour, 10*time.Minute)
	if err := w.FlushWAL(true); err != nil {
		t.Fatal(err)
	}
	before := w.Metrics().Storage
	t.Logf("requests of the work due in the first 48h: %v", storageDelta(start, before))
	advance(month, time.Hour)
	if d := storageDelta(before, w.Metrics().Storage); len(d) != 0 {
		t.Errorf("idle writer sent requests while its clock advanced %v: %v", month, d)
	}
	// The rows are what the clock says: the long-lived and unexpiring ones
	// read back, the short-lived ones are gone.
	mustGet(t, w, key("t2", 0), string(val("n", 0)))
	mustGet(t, w, key("t2", 2), string(val("l", 2)))
	mustMiss(t, w, key("t2", 1))
	mustMiss(t, w, key("t0", 0))
}
