//go:build !linux

package storage

import "os"

// syncData flushes a log with File.Sync (F_FULLFSYNC on darwin).
func syncData(f *os.File) error { return f.Sync() }
