// Package storage is the only door between Mayfly and the bytes it keeps.
//
// The engine sees three kinds of things:
//
//   - immutable objects (SSTables), written once through an ObjectWriter that
//     makes them visible, durably, only on Commit;
//   - small objects created atomically if absent (manifest versions), the
//     primitive that fencing and crash-safe manifest updates rest on;
//   - appendable logs (WAL segments on a local disk) with explicit Sync.
//
// Names are slash-separated paths such as "sst/000012.sst". No name is ever a
// folder prefix of another name, so the layout maps onto object stores whose
// servers keep objects as files.
//
// This package is a stable API: custom backends implement Storage, and
// drivers register URL schemes with RegisterScheme.
package storage

import (
	"errors"
	"io"
)

// ErrExists is returned by PutIfAbsent when the name already exists.
var ErrExists = errors.New("mayfly/storage: object already exists")

// ErrNotExist is returned when a named object does not exist.
var ErrNotExist = errors.New("mayfly/storage: object does not exist")

// ErrReadOnly is returned by every method of a read-only storage
// (ReadOnly, OpenLocalReadOnly) that could change what is stored: the call
// is refused, not performed.
var ErrReadOnly = errors.New("mayfly/storage: storage is read-only")

// ErrFenced is returned when another writer has taken over the database:
// a newer manifest version or a fence on a log this writer was appending to.
// The fenced writer must stop; nothing it did corrupts the database.
var ErrFenced = errors.New("mayfly: fenced by another writer")

// LogFencer is implemented by backends without locks (object stores): it
// seals log name so that its current writer, in any process, fails with
// ErrFenced on its next append.
type LogFencer interface {
	FenceLog(name string) error
}

// ListedLog is one log found by ListLogs.
type ListedLog struct {
	// Name is the log's name.
	Name string
	// Reader presents the log's bytes as they were when listed: the bytes
	// Open would have presented then. It is nil if none are readable (the
	// log's beginning is gone). The caller closes it.
	Reader ObjectReader
	// FenceOnly reports that nothing is left of the log but the marker that
	// stops a fenced writer (see LogReleaser.ReleaseLog).
	FenceOnly bool
}

// LogLister is implemented by backends on which opening a log costs
// requests (object stores). ListLogs describes every log under dir with one
// listing; the readers it returns cost no request until read, and a read
// fetches only what its range touches, so a caller that remembers how far
// it has read a log fetches only what was appended since.
type LogLister interface {
	ListLogs(dir string) ([]ListedLog, error)
}

// LogReleaser is implemented by backends without locks (with LogFencer).
// ReleaseLog deletes log name except, if the log was fenced, the one empty
// marker its writer would meet next: a writer that has not noticed the
// fence yet still fails with ErrFenced instead of appending to a log nobody
// will read again. It reports whether that marker was kept. Releasing a
// missing log, or one already reduced to its marker, changes nothing.
type LogReleaser interface {
	ReleaseLog(name string) (kept bool, err error)
}

// TempRemover is implemented by backends on which a crash can leave
// temporary objects behind (a local directory's partly written files, an
// object store's unfinished multipart uploads). RemoveTemps deletes those
// under dir; the engine calls it for its directories when a writer opens.
type TempRemover interface {
	RemoveTemps(dir string) error
}

// As returns s, or the first storage s wraps (through Unwrap methods),
// that implements T.
func As[T any](s Storage) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		u, ok := s.(interface{ Unwrap() Storage })
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	var zero T
	return zero, false
}

// ListLogs lists the logs under dir with readers of their current bytes:
// with one listing on a LogLister, else with List and one Open per log (a
// log removed in between is left out).
func ListLogs(s Storage, dir string) ([]ListedLog, error) {
	if l, ok := As[LogLister](s); ok {
		return l.ListLogs(dir)
	}
	names, err := s.List(dir)
	if err != nil {
		return nil, err
	}
	logs := make([]ListedLog, 0, len(names))
	for _, name := range names {
		r, err := s.Open(name)
		if errors.Is(err, ErrNotExist) {
			continue
		}
		if err != nil {
			for _, l := range logs {
				l.Reader.Close()
			}
			return nil, err
		}
		logs = append(logs, ListedLog{Name: name, Reader: r})
	}
	return logs, nil
}

// LogPreallocator is implemented by backends that can create a log whose
// space is reserved ahead of its writes, so that a Sync does not have to
// commit a change of the log's size. Such a log reads back as the bytes
// written followed by zeros up to the end of the reserved space; only a
// log format that recognises a zero tail as its end (the WAL) may use it.
type LogPreallocator interface {
	CreatePreallocatedLog(name string) (LogWriter, error)
}

// CreateLogPreallocated creates log name in s, preallocated where s itself
// is a LogPreallocator. A wrapper is not looked through: a storage that
// wraps another (fault injection, a cache) sees every write of its logs
// only if the log is created through it.
func CreateLogPreallocated(s Storage, name string) (LogWriter, error) {
	if p, ok := s.(LogPreallocator); ok {
		return p.CreatePreallocatedLog(name)
	}
	return s.CreateLog(name)
}

// ErrLocked is returned by Lock when another process or another open DB in
// this process holds the lock.
var ErrLocked = errors.New("mayfly/storage: database is locked by another process or handle")

// Storage is implemented by every backend. All methods are safe for
// concurrent use.
type Storage interface {
	// Create starts writing a new immutable object. Nothing is visible under
	// name until the writer's Commit returns nil; Commit makes the object
	// durable before it returns.
	Create(name string) (ObjectWriter, error)

	// Open opens an object for random-access reads. It returns an error
	// wrapping ErrNotExist if there is none.
	Open(name string) (ObjectReader, error)

	// PutIfAbsent durably creates name holding data, atomically: if name
	// already exists (or another caller wins a race) it returns ErrExists and
	// changes nothing.
	PutIfAbsent(name string, data []byte) error

	// List returns the names of the objects whose names start with dir + "/",
	// sorted. A missing dir yields an empty list.
	List(dir string) ([]string, error)

	// Remove deletes an object. Removing a missing object is not an error.
	Remove(name string) error

	// CreateLog creates a new, empty appendable log. It fails if name exists.
	CreateLog(name string) (LogWriter, error)

	// Lock takes the writer lock (exclusive) or a reader lock (shared) on the
	// database. It fails fast with ErrLocked if it cannot be had. Release by
	// closing the returned Closer.
	Lock(exclusive bool) (io.Closer, error)

	// Close releases the backend's resources.
	Close() error
}

// ObjectWriter writes a new immutable object.
type ObjectWriter interface {
	io.Writer
	// Commit makes the object durable and visible under its name.
	Commit() error
	// Abort discards everything written; the name stays absent.
	Abort() error
}

// ObjectReader reads an immutable object.
type ObjectReader interface {
	io.ReaderAt
	// Size returns the object's length in bytes.
	Size() int64
	Close() error
}

// RandomReadAdviser is implemented by ObjectReaders that can tell the
// operating system that their reads are random, as an SSTable's are (point
// lookups read one block; scans and compactions read ahead in windows of
// their own): it then reads from the device only what each read asks for,
// instead of reading ahead of it. The advice changes no result.
type RandomReadAdviser interface {
	AdviseRandomReads()
}

// LogWriter appends to a log. Written bytes are durable only after Sync.
// Writes are not concurrent with each other, but Sync may run while a
// Write does.
type LogWriter interface {
	io.Writer
	// Sync makes every byte written before it began durable (bytes a
	// concurrent Write adds may or may not be).
	Sync() error
	Close() error
}

// ReadAll reads a whole object.
func ReadAll(s Storage, name string) ([]byte, error) {
	r, err := s.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	buf := make([]byte, r.Size())
	if _, err := r.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf, nil
}
