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

// preallocate reserves n bytes of f's blocks from off on with fallocate(2),
// extending the file. File systems without fallocate are left to the
// caller's zero writes, which allocate the blocks as they go.
func preallocate(f *os.File, off, n int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, off, n)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
			return nil
		default:
			return err
		}
	}
}

// startWriteback asks the kernel to start writing f's dirty pages in
// [off, off+n) back, without waiting for them (see writeback).
func startWriteback(f *os.File, off, n int64) {
	_ = syscall.SyncFileRange(int(f.Fd()), off, n, syncFileRangeWrite)
}

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE from <linux/fs.h>.
const syncFileRangeWrite = 2

// adviseRandom tells the kernel that f is read at random offsets
// (posix_fadvise(2) POSIX_FADV_RANDOM): it turns off f's readahead. A
// failure is ignored: the advice is only a hint.
func adviseRandom(f *os.File) {
	_, _, _ = syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvRandom, 0, 0)
}

// fadvRandom is POSIX_FADV_RANDOM from <linux/fadvise.h>.
const fadvRandom = 1
