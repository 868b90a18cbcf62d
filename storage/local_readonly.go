package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/mayflydb/mayfly/internal/manual"
)

// OpenLocalReadOnly returns a Local that reads the existing directory dir
// and never changes anything in it: it creates no directory and no file,
// and Create, PutIfAbsent, Remove, RemoveTemps, CreateLog,
// CreatePreallocatedLog and Lock (shared or exclusive: a lock needs the
// lock file) fail with an error wrapping ErrReadOnly without touching the
// file system. A missing dir is an error wrapping fs.ErrNotExist; a dir
// that is not a directory, one wrapping syscall.ENOTDIR.
func OpenLocalReadOnly(dir string) (*Local, error) {
	if dir == "" {
		return nil, errors.New("mayfly/storage: empty directory name")
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("mayfly/storage: directory %s does not exist: %w", dir, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("mayfly/storage: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("mayfly/storage: %s is not a directory: %w", dir, syscall.ENOTDIR)
	}
	return &Local{dir: dir, readOnly: true, objectBufs: manual.NewFreeListFor(manual.PurposeObjectWriter, objectWriteBuf, objectBufsIdle)}, nil
}

// refuseWrite returns the error of a mutating call on a read-only Local,
// or nil on a writable one.
func (l *Local) refuseWrite(op, name string) error {
	if !l.readOnly {
		return nil
	}
	return fmt.Errorf("mayfly/storage: %s %s in %s: %w", op, name, l.dir, ErrReadOnly)
}
