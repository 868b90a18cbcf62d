package storage

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// Mem is an in-memory Storage for tests. It follows the same naming rules
// as Local and models durability so that tests can simulate a crash:
//
//   - an object is durable once Commit or PutIfAbsent returns;
//   - a log exists durably from CreateLog on, and its bytes up to the last
//     Sync are durable; later bytes are lost in a crash;
//   - Remove is durable when it returns (as Local's is).
//
// CrashClone returns the state a machine would find after losing power at
// that moment. Close is a no-op, so a test can reopen a database on the
// same Mem.
type Mem struct {
	mu        sync.Mutex
	files     map[string]*memFile
	exclusive bool // an exclusive lock is held
	shared    int  // number of shared locks held
}

type memFile struct {
	data    []byte // bytes written; only ever appended to
	durable int    // data[:durable] survives a crash
	log     bool
}

var _ Storage = (*Mem)(nil)

// NewMem returns an empty Mem.
func NewMem() *Mem {
	return &Mem{files: make(map[string]*memFile)}
}

// CrashClone returns a new Mem holding only m's durable state: committed
// objects and the synced prefix of every log. Unsynced log tails and
// uncommitted writers are dropped; locks are not carried over.
func (m *Mem) CrashClone() *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	for name, f := range m.files {
		c.files[name] = &memFile{
			data:    append([]byte(nil), f.data[:f.durable]...),
			durable: f.durable,
			log:     f.log,
		}
	}
	return c
}

// Create implements Storage.
func (m *Mem) Create(name string) (ObjectWriter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return &memObjectWriter{m: m, name: name}, nil
}

type memObjectWriter struct {
	m    *Mem
	name string
	buf  []byte
	done bool
}

func (w *memObjectWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("mayfly/storage: write to %s after Commit or Abort", w.name)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *memObjectWriter) Commit() error {
	if w.done {
		return fmt.Errorf("mayfly/storage: Commit of %s after Commit or Abort", w.name)
	}
	w.done = true
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	w.m.files[w.name] = &memFile{data: w.buf, durable: len(w.buf)}
	w.buf = nil
	return nil
}

func (w *memObjectWriter) Abort() error {
	w.done = true
	w.buf = nil
	return nil
}

// Open implements Storage. Reading a log sees every byte written before
// Open, synced or not, as reading a file through the page cache does.
func (m *Mem) Open(name string) (ObjectReader, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.files[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, name)
	}
	// data is append-only, so this prefix never changes under the reader.
	return &memReader{data: f.data[:len(f.data):len(f.data)]}, nil
}

type memReader struct {
	data []byte
}

func (r *memReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("mayfly/storage: negative offset %d", off)
	}
	if off >= int64(len(r.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, r.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (r *memReader) Size() int64  { return int64(len(r.data)) }
func (r *memReader) Close() error { return nil }

// PutIfAbsent implements Storage.
func (m *Mem) PutIfAbsent(name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		return fmt.Errorf("%w: %s", ErrExists, name)
	}
	m.files[name] = &memFile{data: append([]byte(nil), data...), durable: len(data)}
	return nil
}

// List implements Storage.
func (m *Mem) List(dir string) ([]string, error) {
	if err := checkPath(dir); err != nil {
		return nil, err
	}
	prefix := dir + "/"
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for name := range m.files {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Remove implements Storage. A log writer still open on a removed log keeps
// writing to the orphaned bytes, as with an unlinked file.
func (m *Mem) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, name)
	return nil
}

// CreateLog implements Storage. It fails with an error wrapping ErrExists if
// name exists.
func (m *Mem) CreateLog(name string) (LogWriter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		return nil, fmt.Errorf("%w: %s", ErrExists, name)
	}
	f := &memFile{log: true}
	m.files[name] = f
	return &memLog{m: m, f: f, name: name}, nil
}

type memLog struct {
	m      *Mem
	f      *memFile
	name   string
	closed bool
}

func (w *memLog) Write(p []byte) (int, error) {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("mayfly/storage: write to closed log %s", w.name)
	}
	w.f.data = append(w.f.data, p...)
	return len(p), nil
}

func (w *memLog) Sync() error {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.closed {
		return fmt.Errorf("mayfly/storage: sync of closed log %s", w.name)
	}
	w.f.durable = len(w.f.data)
	return nil
}

// Close closes the log without syncing it: unsynced bytes stay volatile.
func (w *memLog) Close() error {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.closed {
		return fmt.Errorf("mayfly/storage: log %s closed twice", w.name)
	}
	w.closed = true
	return nil
}

// Lock implements Storage: one exclusive holder or any number of shared
// holders per Mem.
func (m *Mem) Lock(exclusive bool) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exclusive || (exclusive && m.shared > 0) {
		return nil, fmt.Errorf("%w: in-memory storage", ErrLocked)
	}
	if exclusive {
		m.exclusive = true
	} else {
		m.shared++
	}
	return &memLock{m: m, exclusive: exclusive}, nil
}

type memLock struct {
	m         *Mem
	exclusive bool
	released  bool
}

func (k *memLock) Close() error {
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	if k.released {
		return nil
	}
	k.released = true
	if k.exclusive {
		k.m.exclusive = false
	} else {
		k.m.shared--
	}
	return nil
}

// Close implements Storage; it is a no-op so that the Mem can be reopened.
func (m *Mem) Close() error { return nil }
