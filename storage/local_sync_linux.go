//go:build linux

package storage

import (
	"errors"
	"os"
	"syscall"
)

// syncData flushes a log's data and the metadata needed to read it back
// (its size) with fdatasync(2).
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
