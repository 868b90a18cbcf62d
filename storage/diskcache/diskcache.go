// Package diskcache keeps local copies of immutable objects (SSTables) of a
// remote storage backend, within a byte budget, so that reads of a database
// on an object store are served from the local disk after the first touch.
//
// Only immutable objects under the configured directories (by default
// "sst/") are cached; logs, manifests and everything else pass through. An
// object is copied when it is created through the cache (write-through, so a
// writer never downloads its own tables) or on its first Open, read in
// pieces of up to fillChunk bytes: one ranged GET for a table of the default
// target size, instead of a GET per small read. When the budget is exceeded the
// least recently opened copies are deleted. Copies are verified by size
// only; the SSTable format's block checksums catch any damage.
//
// This package is a stable API (Options.ObjectCacheDir uses it; Wrap puts
// it in front of any Storage).
package diskcache

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

// Cache wraps a Storage with a local disk cache of immutable objects. Its
// Unwrap returns the wrapped storage, so that storage.As and
// storage.TraitsOf find the wrapped backend's optional interfaces and
// traits through it.
type Cache struct {
	storage.Storage
	dir     string
	budget  int64
	dirs    []string
	mu      sync.Mutex
	entries map[string]*entry // by object name
	size    int64
	hits    atomic.Uint64
	misses  atomic.Uint64
}

type entry struct {
	size    int64
	lastUse time.Time
}

// Wrap returns inner behind a cache of at most budget bytes in dir (created
// 0700 if missing; copies left from an earlier run are reused). cached lists
// the object directories to cache; nil means just "sst". The result fences
// logs (storage.LogFencer, itself or through a wrapper storage.As sees
// through) exactly when inner does.
func Wrap(inner storage.Storage, dir string, budget int64, cached []string) (storage.Storage, error) {
	c, err := New(inner, dir, budget, cached)
	if err != nil {
		return nil, err
	}
	if _, ok := storage.As[storage.LogFencer](inner); ok {
		return fencingCache{c}, nil
	}
	return c, nil
}

// New is Wrap returning the concrete *Cache, which is no LogFencer itself:
// storage.As finds the wrapped storage's through Unwrap.
func New(inner storage.Storage, dir string, budget int64, cached []string) (*Cache, error) {
	if budget <= 0 {
		return nil, fmt.Errorf("diskcache: budget %d must be positive", budget)
	}
	if cached == nil {
		cached = []string{"sst"}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	c := &Cache{Storage: inner, dir: dir, budget: budget, dirs: cached, entries: make(map[string]*entry)}
	for _, d := range cached {
		names, _ := filepath.Glob(filepath.Join(dir, d, "*"))
		for _, p := range names {
			if strings.HasSuffix(p, ".tmp") {
				os.Remove(p)
				continue
			}
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				name := d + "/" + filepath.Base(p)
				c.entries[name] = &entry{size: st.Size(), lastUse: st.ModTime()}
				c.size += st.Size()
			}
		}
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return c, nil
}

// Metrics returns the cache's hit and miss counts and bytes held.
func (c *Cache) Metrics() (hits, misses uint64, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits.Load(), c.misses.Load(), c.size
}

func (c *Cache) cacheable(name string) bool {
	for _, d := range c.dirs {
		if strings.HasPrefix(name, d+"/") {
			return true
		}
	}
	return false
}

func (c *Cache) path(name string) string { return filepath.Join(c.dir, filepath.FromSlash(name)) }

// Open serves cached objects from the local copy, fetching it first if
// needed; other names go to the wrapped storage.
func (c *Cache) Open(name string) (storage.ObjectReader, error) {
	if !c.cacheable(name) {
		return c.Storage.Open(name)
	}
	if r, ok := c.openLocal(name); ok {
		c.hits.Add(1)
		return r, nil
	}
	c.misses.Add(1)
	src, err := c.Storage.Open(name)
	if err != nil {
		return nil, err
	}
	if src.Size() > c.budget {
		return src, nil // too big to cache: read it remotely
	}
	defer src.Close()
	if err := c.fill(name, src, src.Size()); err != nil {
		return nil, err
	}
	if r, ok := c.openLocal(name); ok {
		return r, nil
	}
	return c.Storage.Open(name)
}

func (c *Cache) openLocal(name string) (storage.ObjectReader, bool) {
	c.mu.Lock()
	e := c.entries[name]
	if e != nil {
		e.lastUse = time.Now()
	}
	c.mu.Unlock()
	if e == nil {
		return nil, false
	}
	f, err := os.Open(c.path(name))
	if err != nil {
		c.forget(name)
		return nil, false
	}
	st, err := f.Stat()
	if err != nil || st.Size() != e.size {
		f.Close()
		c.forget(name)
		return nil, false
	}
	return &localReader{f: f, size: st.Size()}, true
}

// fillChunk is the largest read fill makes of the object it copies: each
// is one ranged GET on an object store. Tables are split at
// Options.TargetFileSize (8 MiB by default), so most take one.
const fillChunk = 16 << 20

// copyObject copies the first size bytes of src to w, reading at most
// fillChunk bytes at a time. (io.Copy into an *os.File would read in 32 KiB
// pieces: a GET each.)
func copyObject(w io.Writer, src io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, min(size, fillChunk))
	var n int64
	for n < size {
		chunk := buf[:min(size-n, int64(len(buf)))]
		m, err := src.ReadAt(chunk, n)
		if m == len(chunk) && err == io.EOF {
			err = nil // the last piece: EOF with every byte asked for
		}
		if err != nil {
			return n, err
		}
		if _, err := w.Write(chunk); err != nil {
			return n, err
		}
		n += int64(m)
	}
	return n, nil
}

// fill copies size bytes from r into the cache under name.
func (c *Cache) fill(name string, r io.ReaderAt, size int64) error {
	p := c.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("diskcache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".*.tmp")
	if err != nil {
		return fmt.Errorf("diskcache: %w", err)
	}
	n, err := copyObject(tmp, r, size)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("copied %d of %d bytes", n, size)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("diskcache: caching %s: %w", name, err)
	}
	c.mu.Lock()
	if old := c.entries[name]; old != nil {
		c.size -= old.size
	}
	c.entries[name] = &entry{size: size, lastUse: time.Now()}
	c.size += size
	c.evictLocked()
	c.mu.Unlock()
	return nil
}

// evictLocked deletes least recently used copies until within budget.
func (c *Cache) evictLocked() {
	for c.size > c.budget {
		var victim string
		var oldest time.Time
		for name, e := range c.entries {
			if victim == "" || e.lastUse.Before(oldest) {
				victim, oldest = name, e.lastUse
			}
		}
		if victim == "" {
			return
		}
		c.size -= c.entries[victim].size
		delete(c.entries, victim)
		os.Remove(c.path(victim)) // open readers keep their file (unlinked)
	}
}

func (c *Cache) forget(name string) {
	c.mu.Lock()
	if e := c.entries[name]; e != nil {
		c.size -= e.size
		delete(c.entries, name)
	}
	c.mu.Unlock()
	os.Remove(c.path(name))
}

// Create writes through: the object goes to the wrapped storage and, once
// committed there, its bytes are kept as the local copy.
func (c *Cache) Create(name string) (storage.ObjectWriter, error) {
	w, err := c.Storage.Create(name)
	if err != nil || !c.cacheable(name) {
		return w, err
	}
	tmp, err := os.CreateTemp(c.dir, "create-*.tmp")
	if err != nil {
		return w, nil // caching is best effort
	}
	return &writeThrough{ObjectWriter: w, c: c, name: name, tmp: tmp}, nil
}

// Remove deletes the object and its local copy.
func (c *Cache) Remove(name string) error {
	if c.cacheable(name) {
		c.forget(name)
	}
	return c.Storage.Remove(name)
}

type writeThrough struct {
	storage.ObjectWriter
	c    *Cache
	name string
	tmp  *os.File
	n    int64
	bad  bool
}

func (w *writeThrough) Write(p []byte) (int, error) {
	n, err := w.ObjectWriter.Write(p)
	if !w.bad {
		if _, terr := w.tmp.Write(p[:n]); terr != nil {
			w.bad = true
		}
		w.n += int64(n)
	}
	return n, err
}

func (w *writeThrough) Commit() error {
	if err := w.ObjectWriter.Commit(); err != nil {
		w.discard()
		return err
	}
	if !w.bad && w.n <= w.c.budget {
		_ = w.c.fill(w.name, w.tmp, w.n) // best effort
	}
	w.discard()
	return nil
}

func (w *writeThrough) Abort() error {
	w.discard()
	return w.ObjectWriter.Abort()
}

func (w *writeThrough) discard() {
	w.tmp.Close()
	os.Remove(w.tmp.Name())
}

type localReader struct {
	f    *os.File
	size int64
}

func (r *localReader) ReadAt(p []byte, off int64) (int, error) { return r.f.ReadAt(p, off) }
func (r *localReader) Size() int64                             { return r.size }
func (r *localReader) Close() error                            { return r.f.Close() }

// Unwrap returns the wrapped storage.
func (c *Cache) Unwrap() storage.Storage { return c.Storage }

// fencingCache is a Cache over a backend that fences logs.
type fencingCache struct{ *Cache }

// FenceLog passes fencing through to the wrapped storage.
func (c fencingCache) FenceLog(name string) error {
	f, _ := storage.As[storage.LogFencer](c.Storage) // Wrap checked it
	return f.FenceLog(name)
}
