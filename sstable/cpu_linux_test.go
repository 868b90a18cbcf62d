//go:build linux

package sstable

import "syscall"

// threadCPU returns the CPU time the calling OS thread has used, in
// nanoseconds; benchmarks lock their goroutine to a thread and report it as
// thread-cpu-ns/op, which, unlike ns/op, does not count time spent waiting
// for a CPU on a loaded machine.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
