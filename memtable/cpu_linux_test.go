//go:build linux

package memtable

import "syscall"

// processCPU returns the CPU time the process has used, in nanoseconds,
// garbage collection and kernel time (mmap, page zeroing) included;
// benchmarks report it as cpu-ns/op, which, unlike ns/op, does not count
// time spent waiting for a CPU on a loaded machine.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
