// Package heapmeter measures, in benchmarks, the Go heap a structure keeps
// live: read Live before building it and again after, and divide the
// difference by its size.
package heapmeter

import (
	"runtime"
	"testing"
)

// Live returns the bytes of live Go heap objects after a full garbage
// collection. b's timer is stopped while it runs, so the collection does not
// count toward the benchmark's time.
func Live(b *testing.B) int64 {
	b.StopTimer()
	defer b.StartTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
