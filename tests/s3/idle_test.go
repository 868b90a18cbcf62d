package s3test

import (
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
