package main

import (
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestThroughProxy(t *testing.T) {
	raw := "s3://bucket/test?endpoint=http://127.0.0.1:9000&region=us-east-1&path_style=true"
	loc, up, err := throughProxy(raw, "127.0.0.1:5555", "run/20ms/writes")
	if err != nil {
		t.Fatal(err)
	}
	if up != "127.0.0.1:9000" {
		t.Errorf("upstream = %q, want 127.0.0.1:9000", up)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Scheme != "s3" || u.Host != "bucket" || u.Path != "/test/run/20ms/writes" ||
		q.Get("endpoint") != "http://127.0.0.1:5555" || q.Get("region") != "us-east-1" || q.Get("path_style") != "true" {
		t.Errorf("throughProxy = %s", loc)
	}
	for _, bad := range []string{"/tmp/db", "s3://bucket/p", "s3://bucket/p?endpoint=", "%zz"} {
		if _, _, err := throughProxy(bad, "127.0.0.1:5555", "x"); err == nil {
			t.Errorf("throughProxy(%q) succeeded", bad)
		}
	}
}

func TestStartProxyRejectsBadSettings(t *testing.T) {
	for _, c := range []struct {
		rtt time.Duration
		bw  int64
	}{{-time.Millisecond, 0}, {1500 * time.Microsecond, 0}, {0, -1}, {0, 999}} {
		if p, err := startProxy("127.0.0.1:1", c.rtt, c.bw); err == nil {
			p.Stop()
			t.Errorf("startProxy(rtt %v, bandwidth %d) succeeded", c.rtt, c.bw)
		}
	}
}

// echoServer accepts connections on a free port and echoes what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends msg through addr and reads its echo, returning the time
// from the first byte sent to the last byte read.
func roundTrip(t *testing.T, addr string, msg []byte) time.Duration {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make([]byte, len(msg))
	t0 := time.Now()
	go c.Write(msg)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	d := time.Since(t0)
	if string(got) != string(msg) {
		t.Fatalf("echo through %s changed the bytes", addr)
	}
	return d
}

// TestStartProxyAddsRoundTripAndLimitsBandwidth checks lower bounds only:
// a proxy may be slower than asked on a loaded machine, never faster.
func TestStartProxyAddsRoundTripAndLimitsBandwidth(t *testing.T) {
	upstream := echoServer(t)
	const rtt = 40 * time.Millisecond
	p, err := startProxy(upstream, rtt, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if d := roundTrip(t, p.Listen, []byte("x")); d < rtt {
		t.Errorf("one byte echoed through a proxy adding %v took %v", rtt, d)
	}

	// 100 kB each way at 1 MB/s: 100 ms upstream, then as much downstream
	// (the echo cannot start before the first bytes arrive, and the two
	// directions overlap by at most one chunk).
	const rate = 1_000_000
	q, err := startProxy(upstream, 0, rate)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Stop()
	msg := []byte(strings.Repeat("0123456789", 10_000))
	if d := roundTrip(t, q.Listen, msg); d < 100*time.Millisecond {
		t.Errorf("%d bytes echoed through a proxy limited to %d B/s took %v, want >= 100ms", len(msg), rate, d)
	}
}
