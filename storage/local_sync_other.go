//go:build !linux

package storage

import "os"

// syncData flushes a log with File.Sync (F_FULLFSYNC on darwin).
func syncData(f *os.File) error { return f.Sync() }

// preallocate is a no-op here: the caller's zero writes allocate the
// blocks.
func preallocate(f *os.File, off, n int64) error { return nil }

// startWriteback is a no-op here: the platform has no request to start
// writeback without waiting for it.
func startWriteback(f *os.File, off, n int64) {}

// adviseRandom is a no-op here.
func adviseRandom(f *os.File) {}
