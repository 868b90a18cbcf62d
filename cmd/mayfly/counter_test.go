package main

import (
	"path/filepath"
	"testing"
)

// TestCounterCommands: add prints each new count and creates the database
// (recording Int64Add); counter prints it; every other command opens the
// database with the recorded operator; bad input changes nothing.
func TestCounterCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	if out := ok(t, "add", "--dir", dir, "--ttl", "1h", "hits", "5"); out != "5\n" {
		t.Fatalf("add printed %q", out)
	}
	if out := ok(t, "add", "--dir", dir, "hits", "-2"); out != "3\n" {
		t.Fatalf("add printed %q", out)
	}
	if out := ok(t, "counter", "--dir", dir, "hits"); out != "3\n" {
		t.Fatalf("counter printed %q", out)
	}
	if out := ok(t, "ttl", "--dir", dir, "hits"); out == "no expiry\n" {
		t.Fatal("the first add's --ttl did not start a window")
	}
	fails(t, 2, "not a 64-bit integer", "add", "--dir", dir, "hits", "x")
	fails(t, 1, "not found", "counter", "--dir", dir, "missing")
	ok(t, "put", "--dir", dir, "name", "ada")
	fails(t, 1, "not a counter", "counter", "--dir", dir, "name")
	fails(t, 1, "not a counter", "add", "--dir", dir, "name", "1")
	if out := ok(t, "get", "--dir", dir, "name"); out != "ada\n" {
		t.Fatalf("get after a refused add: %q", out)
	}
	ok(t, "compact", "--dir", dir)
	if out := ok(t, "counter", "--dir", dir, "hits"); out != "3\n" {
		t.Fatalf("counter after compact printed %q", out)
	}
}
