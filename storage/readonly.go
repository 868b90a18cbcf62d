package storage

import (
	"fmt"
	"io"
)

// ReadOnly returns a view of s that reads through to s and refuses, with an
// error wrapping ErrReadOnly, every call that could change what s stores or
// take its lock: Create, PutIfAbsent, Remove, CreateLog and Lock. Open and
// List go to s; ListLogs uses s's LogLister when s (or a storage it wraps)
// has one. The view has no Unwrap: the optional interfaces of s that write
// (LogFencer, LogReleaser, LogPreallocator, RemoveTemps) are out of reach
// through it. Close closes s.
func ReadOnly(s Storage) Storage { return readOnlyStorage{inner: s} }

type readOnlyStorage struct{ inner Storage }

var (
	_ Storage   = readOnlyStorage{}
	_ LogLister = readOnlyStorage{}
)

func refuse(op, name string) error {
	return fmt.Errorf("mayfly/storage: %s %s: %w", op, name, ErrReadOnly)
}

func (r readOnlyStorage) Open(name string) (ObjectReader, error) { return r.inner.Open(name) }
func (r readOnlyStorage) List(dir string) ([]string, error)      { return r.inner.List(dir) }
func (r readOnlyStorage) Close() error                           { return r.inner.Close() }

// ListLogs implements LogLister with the backend's own listing.
func (r readOnlyStorage) ListLogs(dir string) ([]ListedLog, error) { return ListLogs(r.inner, dir) }

func (readOnlyStorage) Create(name string) (ObjectWriter, error) { return nil, refuse("create", name) }
func (readOnlyStorage) PutIfAbsent(name string, _ []byte) error  { return refuse("put", name) }
func (readOnlyStorage) Remove(name string) error                 { return refuse("remove", name) }
func (readOnlyStorage) CreateLog(name string) (LogWriter, error) {
	return nil, refuse("create log", name)
}
func (readOnlyStorage) Lock(bool) (io.Closer, error) { return nil, refuse("lock", "the database") }
