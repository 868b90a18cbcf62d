//go:build !linux

package sstable

// threadCPU is not measured outside Linux; the metric then reads 0.
func threadCPU() int64 { return 0 }
