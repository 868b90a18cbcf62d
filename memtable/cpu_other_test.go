//go:build !linux

package memtable

// processCPU is not measured outside Linux; the metric then reads 0.
func processCPU() int64 { return 0 }
