package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The scale curve keeps the data out of memory two ways: every worker runs
// in a cgroup v1 memory cgroup whose memory.limit_in_bytes bounds the
// worker's RSS and the page cache it charges, and before every read
// workload the database's files are synced and dropped from the page cache
// with posix_fadvise(POSIX_FADV_DONTNEED), so each read run starts cold
// whatever an earlier run left cached.

// memCgroup is a memory cgroup created for the benchmark's workers.
type memCgroup struct{ dir string }

// ownMemCgroup returns the directory of the memory cgroup this process is
// in, from /proc/self/cgroup and the cgroup v1 mount.
func ownMemCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.Contains(","+f[1]+",", ",memory,") {
			continue
		}
		// The mount shows either the whole hierarchy or (in a cgroup
		// namespace) this process's own cgroup as its root.
		for _, dir := range []string{filepath.Join("/sys/fs/cgroup/memory", f[2]), "/sys/fs/cgroup/memory"} {
			if _, err := os.Stat(filepath.Join(dir, "memory.limit_in_bytes")); err == nil {
				return dir, nil
			}
		}
	}
	return "", errors.New("no cgroup v1 memory controller for this process")
}

// newMemCgroup creates a child of this process's memory cgroup limited to
// limit bytes (RSS and page cache together).
func newMemCgroup(limit int64) (*memCgroup, error) {
	parent, err := ownMemCgroup()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(parent, fmt.Sprintf("mayfly-bench-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("set memory.limit_in_bytes: %w", err)
	}
	return &memCgroup{dir: dir}, nil
}

// oomKills is the oom_kill count of memory.oom_control: workers the kernel
// killed because their RSS alone reached the limit.
func (c *memCgroup) oomKills() int64 {
	b, _ := os.ReadFile(filepath.Join(c.dir, "memory.oom_control"))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove deletes the cgroup (its workers have exited; the kernel moves what
// they charged to the parent).
func (c *memCgroup) remove() error { return os.Remove(c.dir) }

// joinCgroup moves this process into the cgroup at dir ("" = stay). A
// worker calls it first thing, before it maps or caches anything.
func joinCgroup(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("join memory cgroup %s: %w", dir, err)
	}
	return nil
}

// dropCache syncs every file under dir and asks the kernel to drop its
// pages from the page cache.
func dropCache(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", path, err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("fadvise %s: %w", path, err)
		}
		return nil
	})
}

// cachedBytes is how many bytes of the files under dir are in the page
// cache (mincore over a read-only mapping of each file).
func cachedBytes(dir string) (int64, error) {
	var n int64
	page := int64(os.Getpagesize())
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil || info.Size() == 0 {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		m, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("mmap %s: %w", path, err)
		}
		defer unix.Munmap(m)
		vec := make([]byte, (info.Size()+page-1)/page)
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			return fmt.Errorf("mincore %s: %w", path, errno)
		}
		for _, v := range vec {
			if v&1 != 0 {
				n += page
			}
		}
		return nil
	})
	return n, err
}
