package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

// fetch is the cost of copying one table from the object store to a local
// file: wall time and requests by kind.
type fetch struct {
	table string
	size  int64
	took  time.Duration
	reqs  map[string]uint64
}

// fetchTable copies the largest table of the database at loc into a
// temporary file of dir twice and returns both costs: first with io.Copy
// from a section reader (one ranged read, a GET, per io.Copy buffer), then
// with one read of the whole object, as storage/diskcache fills its cache
// for a table no larger than its fill chunk.
func fetchTable(loc, dir string) (copied, whole fetch, err error) {
	s, err := openStorage(loc)
	if err != nil {
		return copied, whole, err
	}
	defer s.Close()
	names, err := s.List("sst")
	if err != nil {
		return copied, whole, err
	}
	for _, n := range names {
		r, err := s.Open(n)
		if err != nil {
			return copied, whole, err
		}
		if r.Size() > copied.size {
			copied.table, copied.size = n, r.Size()
		}
		r.Close()
	}
	if copied.table == "" {
		return copied, whole, fmt.Errorf("no table under %s", loc)
	}
	whole.table, whole.size = copied.table, copied.size
	err = errors.Join(
		timeFetch(s, &copied, dir, func(r storage.ObjectReader, f *os.File) error {
			_, err := io.Copy(f, io.NewSectionReader(r, 0, r.Size()))
			return err
		}),
		timeFetch(s, &whole, dir, func(r storage.ObjectReader, f *os.File) error {
			buf := make([]byte, r.Size())
			if _, err := r.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			_, err := f.Write(buf)
			return err
		}))
	return copied, whole, err
}

// timeFetch opens fc.table, copies it into a new temporary file of dir with
// cp and records the wall time and the requests of open and copy.
func timeFetch(s storage.Storage, fc *fetch, dir string, cp func(storage.ObjectReader, *os.File) error) error {
	f, err := os.CreateTemp(dir, "fetch-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	before := counts(s)
	t0 := time.Now()
	r, err := s.Open(fc.table)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := cp(r, f); err != nil {
		return fmt.Errorf("copy %s: %w", fc.table, err)
	}
	fc.took = time.Since(t0)
	fc.reqs = delta(before, counts(s))
	if st, err := f.Stat(); err != nil || st.Size() != fc.size {
		return fmt.Errorf("copy %s: %d bytes copied of %d (%v)", fc.table, st.Size(), fc.size, err)
	}
	return nil
}

// openStorage opens the storage of a Mayfly location, read-only, with the
// driver its scheme names, or a local directory.
func openStorage(loc string) (storage.Storage, error) {
	scheme, ok := storage.SchemeOf(loc)
	if !ok {
		l, err := storage.OpenLocalReadOnly(loc)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	open, ok := storage.LookupScheme(scheme)
	if !ok {
		return nil, fmt.Errorf("no storage driver for %s://", scheme)
	}
	return open(context.Background(), loc, true)
}

// counts returns s's request counters by name (nil if it has none).
func counts(s storage.Storage) map[string]uint64 {
	if m, ok := storage.As[storage.RequestMetrics](s); ok {
		return m.RequestCounts().Counters()
	}
	return nil
}
