package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dropCache leaves none of a directory's files in the page cache, and
// cachedBytes sees them there after a read.
func TestDropCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if n, err := cachedBytes(dir); err != nil || n == 0 {
		t.Fatalf("after a read: %d bytes cached, %v; want some", n, err)
	}
	if err := dropCache(dir); err != nil {
		t.Fatal(err)
	}
	if n, err := cachedBytes(dir); err != nil || n != 0 {
		t.Fatalf("after dropCache: %d bytes cached, %v; want 0", n, err)
	}
}

// Joining no cgroup is a no-op; joining a directory that is no cgroup is
// an error naming it.
func TestJoinCgroup(t *testing.T) {
	if err := joinCgroup(""); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "missing")
	if err := joinCgroup(dir); err == nil {
		t.Fatal("joined a missing cgroup")
	}
}

// Where this process may create memory cgroups (root on cgroup v1), the
// benchmark's cgroup carries the asked limit.
func TestMemCgroup(t *testing.T) {
	cg, err := newMemCgroup(64 << 20)
	if err != nil {
		t.Skipf("no memory cgroup here: %v", err)
	}
	defer cg.remove()
	b, err := os.ReadFile(filepath.Join(cg.dir, "memory.limit_in_bytes"))
	if err != nil || strings.TrimSpace(string(b)) != "67108864" {
		t.Fatalf("memory.limit_in_bytes %q, %v; want 67108864", b, err)
	}
	// A process that joins it and holds 150 MB is killed, and counted.
	script := fmt.Sprintf("echo $$ > %s/cgroup.procs && head -c 200000000 /dev/zero | tail -c 150000000 > /dev/null", cg.dir)
	if err := exec.Command("sh", "-c", script).Run(); err == nil {
		t.Fatal("a process holding 150 MB survived a 64 MiB cgroup")
	}
	if n := cg.oomKills(); n != 1 {
		t.Fatalf("oom_kill count %d; want 1", n)
	}
}
