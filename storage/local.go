package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/mayflydb/mayfly/internal/manual"
)

// Local is a Storage backed by a directory of the local file system.
//
// A name such as "sst/000012.sst" is the file dir/sst/000012.sst;
// subdirectories are created (mode 0700) on first use and files are created
// with mode 0600. Durability follows the usual POSIX recipe:
//
//   - Create writes a temporary file "<name>.<random>.tmp" next to the
//     final name; Commit fsyncs it, renames it into place and fsyncs the
//     directory. Abort removes it.
//   - PutIfAbsent writes and fsyncs a temporary file, then hard-links it to
//     the final name (link fails with EEXIST if the name exists, which makes
//     the creation atomic even between processes), removes the temporary
//     name and fsyncs the directory.
//   - CreateLog creates the file exclusively and fsyncs the directory, so
//     the log's existence is durable once CreateLog returns; its contents
//     are durable after LogWriter.Sync. CreatePreallocatedLog does the same
//     for a log written in place into space reserved and zero-filled ahead
//     of its writes, LogPreallocSize bytes at a time (see localLog): its
//     file size runs ahead of its contents, and the bytes past the last
//     write read as zeros.
//   - Remove fsyncs the directory, so a removal is durable when it returns.
//
// Temporary files left behind by a crash are ignored by List; the engine
// may delete them with RemoveTemps. A Local from OpenLocalReadOnly changes
// nothing: every call above that would write fails with ErrReadOnly.
type Local struct {
	dir string
	// readOnly refuses every mutating call (OpenLocalReadOnly).
	readOnly bool

	// madeDirs caches the subdirectories known to exist (and to be
	// durable in their parents), keyed by slash-separated relative path.
	madeDirs sync.Map

	// objectBufs recycles the write buffers of this Local's object
	// writers; Close frees the idle ones.
	objectBufs *manual.FreeList
}

var _ Storage = (*Local)(nil)

// NewLocal returns a Local storing its files under dir, creating dir (mode
// 0700) if it does not exist.
func NewLocal(dir string) (*Local, error) {
	if dir == "" {
		return nil, errors.New("mayfly/storage: empty directory name")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mayfly/storage: create directory %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("mayfly/storage: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("mayfly/storage: %s is not a directory", dir)
	}
	return &Local{dir: dir, objectBufs: manual.NewFreeListFor(manual.PurposeObjectWriter, objectWriteBuf, objectBufsIdle)}, nil
}

// Dir returns the directory the storage lives in.
func (l *Local) Dir() string { return l.dir }

func (l *Local) path(name string) string {
	return filepath.Join(l.dir, filepath.FromSlash(name))
}

// ensureParent makes sure the directory holding name exists, creating
// missing directories and fsyncing each parent whose entries changed.
func (l *Local) ensureParent(name string) error {
	rel := path.Dir(name)
	if rel == "." {
		return nil
	}
	if _, ok := l.madeDirs.Load(rel); ok {
		return nil
	}
	// Walk down from the top so that each new directory is made durable in
	// its parent before anything goes into it.
	elems := strings.Split(rel, "/")
	for i := range elems {
		sub := strings.Join(elems[:i+1], "/")
		if _, ok := l.madeDirs.Load(sub); ok {
			continue
		}
		p := l.path(sub)
		err := os.Mkdir(p, 0o700)
		switch {
		case err == nil:
			if err := syncDir(filepath.Dir(p)); err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
			fi, serr := os.Stat(p)
			if serr != nil {
				return fmt.Errorf("mayfly/storage: %w", serr)
			}
			if !fi.IsDir() {
				return fmt.Errorf("mayfly/storage: %s exists and is not a directory", p)
			}
		default:
			return fmt.Errorf("mayfly/storage: create directory: %w", err)
		}
		l.madeDirs.Store(sub, struct{}{})
	}
	return nil
}

// syncDir fsyncs a directory so that changes to its entries are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("mayfly/storage: sync directory: %w", err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("mayfly/storage: sync directory %s: %w", dir, serr)
	}
	if cerr != nil {
		return fmt.Errorf("mayfly/storage: close directory %s: %w", dir, cerr)
	}
	return nil
}

// createTemp creates the temporary file for name in name's directory.
func (l *Local) createTemp(name string) (*os.File, error) {
	if err := l.ensureParent(name); err != nil {
		return nil, err
	}
	p := l.path(name)
	// CreateTemp opens with O_EXCL and mode 0600.
	f, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".*"+tempSuffix)
	if err != nil {
		return nil, fmt.Errorf("mayfly/storage: create temporary file for %s: %w", p, err)
	}
	return f, nil
}

// Create implements Storage.
func (l *Local) Create(name string) (ObjectWriter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := l.refuseWrite("create", name); err != nil {
		return nil, err
	}
	f, err := l.createTemp(name)
	if err != nil {
		return nil, err
	}
	return &localObjectWriter{f: f, bufs: l.objectBufs, buf: l.objectBufs.Get()[:0], final: l.path(name)}, nil
}

// objectWriteBuf is how many bytes a local object writer gathers before
// it writes them to its file: an SSTable is written one ~4 KiB block at a
// time, and a write system call per block cost a flush a quarter of its
// CPU time.
const objectWriteBuf = 256 << 10

// objectBufsIdle is how many object write buffers a Local keeps for
// reuse: one for a flush and one for a compaction writing at the same time.
//
// The buffers live outside the Go heap (internal/manual), where a buffer
// costs the pages written to it rather than up to twice its size under the
// garbage collector's heap goal. A sync.Pool cannot free manual memory, so
// they sit in a bounded free list (Local.objectBufs) instead: a table write
// takes one and gives it back at Commit or Abort; one given back while
// objectBufsIdle are already idle is unmapped at once, and the idle ones
// are unmapped by Local.Close, so that a table write does not map and fault
// in a new buffer. An open Local holds at most objectBufsIdle *
// objectWriteBuf (512 KiB) of idle buffers.
const objectBufsIdle = 2

// localObjectWriter gathers writes in buf (a buffer from bufs) and
// writes it to f when it is full, at Commit, or directly when a write is
// at least a whole buffer long.
type localObjectWriter struct {
	f     *os.File
	bufs  *manual.FreeList
	buf   []byte // bytes not yet written to f; nil after Commit or Abort
	final string
	done  bool
	err   error // first write error; Commit refuses after one
	off   int64 // bytes written to f
	wb    writeback
}

// releaseBuf returns the write buffer to its free list; buffered bytes not
// yet written are dropped. w.buf is cleared, so the buffer is given back
// once.
func (w *localObjectWriter) releaseBuf() {
	if w.buf != nil {
		w.bufs.Put(w.buf)
		w.buf = nil
	}
}

// flushBuf writes the buffered bytes to the file.
func (w *localObjectWriter) flushBuf() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.f.Write(w.buf)
	w.wrote(n)
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return err
	}
	w.buf = w.buf[:0]
	return nil
}

// wrote counts n bytes written to f.
func (w *localObjectWriter) wrote(n int) {
	w.off += int64(n)
	w.wb.wrote(w.f, w.off)
}

func (w *localObjectWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("mayfly/storage: write to %s after Commit or Abort", w.final)
	}
	if w.err != nil {
		return 0, w.err
	}
	written := 0
	for len(p) > 0 {
		var err error
		if len(w.buf) == 0 && len(p) >= cap(w.buf) {
			// A whole buffer or more: skip the copy.
			var n int
			n, err = w.f.Write(p)
			w.wrote(n)
			written += n
			p = p[n:]
			if err == nil && len(p) > 0 {
				err = io.ErrShortWrite
			}
		} else {
			n := copy(w.buf[len(w.buf):cap(w.buf)], p)
			w.buf = w.buf[:len(w.buf)+n]
			written += n
			p = p[n:]
			if len(w.buf) == cap(w.buf) {
				err = w.flushBuf()
			}
		}
		if err != nil {
			w.err = fmt.Errorf("mayfly/storage: write %s: %w", w.f.Name(), err)
			return written, w.err
		}
	}
	return written, nil
}

func (w *localObjectWriter) Commit() error {
	if w.done {
		return fmt.Errorf("mayfly/storage: Commit of %s after Commit or Abort", w.final)
	}
	w.done = true
	tmp := w.f.Name()
	fail := func(err error) error {
		w.f.Close()
		os.Remove(tmp)
		return err
	}
	if w.err == nil {
		if err := w.flushBuf(); err != nil {
			w.err = fmt.Errorf("mayfly/storage: write %s: %w", tmp, err)
		}
	}
	w.releaseBuf()
	if w.err != nil {
		return fail(w.err)
	}
	if err := w.f.Sync(); err != nil {
		return fail(fmt.Errorf("mayfly/storage: sync %s: %w", tmp, err))
	}
	if err := w.f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mayfly/storage: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, w.final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mayfly/storage: publish %s: %w", w.final, err)
	}
	return syncDir(filepath.Dir(w.final))
}

func (w *localObjectWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.releaseBuf()
	tmp := w.f.Name()
	w.f.Close()
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mayfly/storage: abort %s: %w", w.final, err)
	}
	return nil
}

// Open implements Storage.
func (l *Local) Open(name string) (ObjectReader, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	p := l.path(name)
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotExist, p)
		}
		return nil, fmt.Errorf("mayfly/storage: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("mayfly/storage: %w", err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is a directory", ErrNotExist, p)
	}
	return &localReader{f: f, size: fi.Size()}, nil
}

var _ RandomReadAdviser = (*localReader)(nil)

// AdviseRandomReads implements RandomReadAdviser (posix_fadvise RANDOM on
// Linux; nothing elsewhere).
func (r *localReader) AdviseRandomReads() { adviseRandom(r.f) }

type localReader struct {
	f    *os.File
	size int64
}

func (r *localReader) ReadAt(p []byte, off int64) (int, error) { return r.f.ReadAt(p, off) }
func (r *localReader) Size() int64                             { return r.size }
func (r *localReader) Close() error                            { return r.f.Close() }

// PutIfAbsent implements Storage.
func (l *Local) PutIfAbsent(name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := l.refuseWrite("put", name); err != nil {
		return err
	}
	final := l.path(name)
	// A cheap early answer; the link below is what decides races.
	if _, err := os.Lstat(final); err == nil {
		return fmt.Errorf("%w: %s", ErrExists, final)
	}
	f, err := l.createTemp(name)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful link this only drops the temporary name
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("mayfly/storage: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("mayfly/storage: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("mayfly/storage: close %s: %w", tmp, err)
	}
	if err := os.Link(tmp, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, final)
		}
		return fmt.Errorf("mayfly/storage: publish %s: %w", final, err)
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("mayfly/storage: remove %s: %w", tmp, err)
	}
	return syncDir(filepath.Dir(final))
}

// List implements Storage. Temporary files are skipped.
func (l *Local) List(dir string) ([]string, error) {
	if err := checkPath(dir); err != nil {
		return nil, err
	}
	root := l.path(dir)
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, tempSuffix) {
			return nil
		}
		rel, err := filepath.Rel(l.dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mayfly/storage: list %s: %w", root, err)
	}
	if len(names) == 1 && names[0] == dir {
		// dir names a file, not a directory: nothing is under dir + "/".
		return nil, nil
	}
	sort.Strings(names)
	return names, nil
}

// Remove implements Storage. The removal is durable when Remove returns.
func (l *Local) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := l.refuseWrite("remove", name); err != nil {
		return err
	}
	p := l.path(name)
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("mayfly/storage: remove: %w", err)
	}
	return syncDir(filepath.Dir(p))
}

// RemoveTemps deletes the temporary files a crash left in the directories
// holding dir's names (dir as for List). Call it only while holding the
// exclusive lock, when no Create or PutIfAbsent is in flight.
func (l *Local) RemoveTemps(dir string) error {
	if err := checkPath(dir); err != nil {
		return err
	}
	if err := l.refuseWrite("remove temporary files under", dir); err != nil {
		return err
	}
	root := l.path(dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, tempSuffix) {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mayfly/storage: remove temporary files under %s: %w", root, err)
	}
	return nil
}

var _ LogPreallocator = (*Local)(nil)

// CreateLog implements Storage. It fails with an error wrapping ErrExists if
// name exists.
func (l *Local) CreateLog(name string) (LogWriter, error) { return l.createLog(name, false) }

// CreatePreallocatedLog implements LogPreallocator: like CreateLog, but
// once the log has been synced it reserves and zero-fills its space ahead
// of its writes.
func (l *Local) CreatePreallocatedLog(name string) (LogWriter, error) {
	return l.createLog(name, true)
}

func (l *Local) createLog(name string, prealloc bool) (LogWriter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := l.refuseWrite("create log", name); err != nil {
		return nil, err
	}
	if err := l.ensureParent(name); err != nil {
		return nil, err
	}
	p := l.path(name)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s", ErrExists, p)
		}
		return nil, fmt.Errorf("mayfly/storage: create log: %w", err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		f.Close()
		return nil, err
	}
	return &localLog{f: f, armed: prealloc}, nil
}

// LogPreallocSize is how much file space a preallocated local log
// reserves and zero-fills at a time, ahead of its writes. Small steps keep
// the unused tail of the active segment small (it counts as disk use); a
// step costs one zero write and makes the next fdatasync carry a file-size
// change, once per 64 KiB of log (every few hundred small synced commits).
const LogPreallocSize = 64 << 10

// zeroChunk is a source of zeros for initialising preallocated log space,
// one page per write: zero-filling with larger writes lets the kernel cache
// the space in large folios (Linux 6.x), and a later commit that dirties a
// few bytes of one then writes the whole folio back at every fdatasync
// (bench/HISTORY.md, "WAL zero-fill: one page per write").
var zeroChunk [4 << 10]byte

// localLog writes a log at its own offset (the file has one writer). A
// preallocated log writes in place into space reserved ahead of the
// writes: when a write would pass the end of the reserved space, the next
// LogPreallocSize bytes are allocated (fallocate where the platform has
// it) and written with zeros. The zeros
// are real writes, so that the file's blocks are initialised: a later
// fdatasync then flushes only data, not a file-size change or the
// conversion of unwritten extents, which is what makes synced commits
// cheap. The cost is one extra zero write (and one metadata-carrying sync)
// per LogPreallocSize bytes of log. The zero tail is part of the log as
// the reader sees it; the WAL format ends its records at the first
// all-zero record header (see package wal).
//
// Reserving starts at the log's first Sync: a log that is never synced
// (a database writing without Sync rotates its segments without syncing
// them in between) gains nothing from it, and the zero writes would double
// its write I/O (bench/HISTORY.md, "Lead checks, second round of merges").
// Until then the file grows with its writes.
//
// Sync may run while a Write does (storage.LogWriter): mu orders Writes
// and guards the fields, and the fdatasync itself runs without it.
type localLog struct {
	f        *os.File
	mu       sync.Mutex
	armed    bool  // created preallocated: reserve once synced
	prealloc bool  // reserving: the log has been synced
	off      int64 // bytes written
	alloc    int64 // reserving: bytes reserved and zero-filled (the file size)
	err      error // sticky: after a failed write the tail is unknown
	wb       writeback
}

func (w *localLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if end := w.off + int64(len(p)); w.prealloc && end > w.alloc {
		if err := w.reserve(end); err != nil {
			w.err = err
			return 0, err
		}
	}
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	if err != nil {
		w.err = fmt.Errorf("mayfly/storage: append to %s: %w", w.f.Name(), err)
		return n, w.err
	}
	w.wb.wrote(w.f, w.off)
	return n, nil
}

// reserve grows the reserved space to cover at least end bytes, in whole
// multiples of LogPreallocSize.
func (w *localLog) reserve(end int64) error {
	to := (end + LogPreallocSize - 1) / LogPreallocSize * LogPreallocSize
	if err := preallocate(w.f, w.alloc, to-w.alloc); err != nil {
		return fmt.Errorf("mayfly/storage: preallocate %s: %w", w.f.Name(), err)
	}
	for off := w.alloc; off < to; {
		n, err := w.f.WriteAt(zeroChunk[:min(int64(len(zeroChunk)), to-off)], off)
		off += int64(n)
		if err != nil {
			return fmt.Errorf("mayfly/storage: zero-fill %s at %d: %w", w.f.Name(), off, err)
		}
	}
	w.alloc = to
	return nil
}

func (w *localLog) Sync() error {
	if err := syncData(w.f); err != nil {
		return fmt.Errorf("mayfly/storage: sync %s: %w", w.f.Name(), err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed && !w.prealloc {
		w.prealloc, w.alloc = true, w.off // the file ends at its bytes
	}
	return nil
}

// Close releases the reserved space past the bytes written (the segment is
// complete; its tail of zeros would only take disk space) and closes the
// file. The truncation is not synced: a crash may leave the zeros, which
// read as the end of the log either way.
func (w *localLog) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.prealloc && w.err == nil && w.alloc > w.off {
		if err := w.f.Truncate(w.off); err != nil {
			w.f.Close()
			return fmt.Errorf("mayfly/storage: trim %s: %w", w.f.Name(), err)
		}
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("mayfly/storage: %w", err)
	}
	return nil
}

// Lock implements Storage with flock(2) on the file LOCK in the directory.
// flock locks belong to open file descriptions, so two Locks in the same
// process conflict just as two processes do.
func (l *Local) Lock(exclusive bool) (io.Closer, error) {
	if err := l.refuseWrite("lock", lockName); err != nil {
		return nil, err
	}
	p := filepath.Join(l.dir, lockName)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("mayfly/storage: open lock file: %w", err)
	}
	if err := flock(f, exclusive); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, l.dir)
		}
		return nil, fmt.Errorf("mayfly/storage: lock %s: %w", p, err)
	}
	return &localLock{f: f}, nil
}

type localLock struct {
	mu sync.Mutex
	f  *os.File
}

// Close releases the lock; closing the file drops the flock.
func (k *localLock) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.f == nil {
		return nil
	}
	err := k.f.Close()
	k.f = nil
	if err != nil {
		return fmt.Errorf("mayfly/storage: release lock: %w", err)
	}
	return nil
}

// Close implements Storage. It frees the idle object write buffers (an
// object writer still open frees its buffer at its Commit or Abort);
// readers, writers and locks are released by their own Close. The Local
// remains usable.
func (l *Local) Close() error {
	l.objectBufs.Close()
	return nil
}
