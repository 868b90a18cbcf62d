package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTTLOpsCommands: expire (with its conditions), persist, getex, putnx,
// cas and getdel do what their Redis namesakes do, report a condition that
// did not hold with exit status 1, and their effects are durable (each
// command is its own process).
func TestTTLOpsCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ok(t, "put", "--dir", dir, "--ttl", "1h", "s", "alice")
	at := func() time.Time {
		t.Helper()
		out := strings.TrimSpace(ok(t, "ttl", "--dir", dir, "--at", "s"))
		v, err := time.Parse(time.RFC3339Nano, out)
		if err != nil {
			t.Fatalf("ttl --at printed %q: %v", out, err)
		}
		return v
	}
	first := at()
	if left := time.Until(first); left < 59*time.Minute || left > time.Hour {
		t.Fatalf("deadline %v is not an hour away", first)
	}
	ok(t, "expire", "--dir", dir, "--ttl", "2h", "--gt", "s")
	if second := at(); second.Sub(first) < 59*time.Minute {
		t.Fatalf("expire --gt to 2h moved the deadline from %v to %v", first, second)
	}
	fails(t, 1, `not applied: expire "s"`, "expire", "--dir", dir, "--ttl", "1m", "--gt", "s")
	fails(t, 1, `not applied: expire "s"`, "expire", "--dir", dir, "--ttl", "1m", "--nx", "s")
	fails(t, 2, "mutually exclusive", "expire", "--dir", dir, "--ttl", "1m", "--nx", "--xx", "s")
	fails(t, 2, "give --ttl or --expire-at", "expire", "--dir", dir, "s")
	ok(t, "persist", "--dir", dir, "s")
	if out := ok(t, "ttl", "--dir", dir, "s"); out != "no expiry\n" {
		t.Fatalf("ttl after persist: %q", out)
	}
	fails(t, 1, `not applied: persist "s"`, "persist", "--dir", dir, "s")
	if out := ok(t, "getex", "--dir", dir, "--ttl", "30m", "s"); out != "alice\n" {
		t.Fatalf("getex printed %q", out)
	}
	if out := ok(t, "ttl", "--dir", dir, "--ms", "s"); out == "no expiry\n" {
		t.Fatal("getex --ttl 30m left no deadline")
	}
	fails(t, 1, "not found", "getex", "--dir", dir, "--ttl", "30m", "missing")
	fails(t, 1, `not applied: expire "missing"`, "expire", "--dir", dir, "--ttl", "1m", "missing")

	ok(t, "putnx", "--dir", dir, "--ttl", "24h", "req-1", "done")
	fails(t, 1, `not applied: putnx "req-1"`, "putnx", "--dir", dir, "req-1", "again")
	fails(t, 1, `not applied: cas "req-1"`, "cas", "--dir", dir, "req-1", "wrong", "x")
	ok(t, "cas", "--dir", dir, "req-1", "done", "done2")
	if out := ok(t, "getdel", "--dir", dir, "--raw", "req-1"); out != "done2" {
		t.Fatalf("getdel printed %q", out)
	}
	fails(t, 1, "not found", "getdel", "--dir", dir, "req-1")
	fails(t, 1, "not found", "get", "--dir", dir, "req-1")
}
