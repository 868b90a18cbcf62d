//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package storage

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

var errWouldBlock = errors.New("mayfly/storage: lock would block")

// flock is not implemented on this platform: Local.Lock fails rather than
// pretend to exclude other processes.
func flock(f *os.File, exclusive bool) error {
	return fmt.Errorf("file locking on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
