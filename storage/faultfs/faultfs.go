// Package faultfs wraps a storage.Storage to count its operations and to
// inject faults into chosen ones, for crash and error-path tests.
//
// Every call that reaches the backend — on the Storage itself, on the object
// writers, readers and logs it hands out — is one operation with a 1-based
// sequence number (Ops returns how many so far). A Rule picks the N-th
// operation (counted from the moment the rule is injected) that matches its
// Op and Name prefix and makes it fail in one of three ways:
//
//   - Error: the operation is not performed and returns an error;
//   - ErrorAfter: the operation is performed, then reports an error, as a
//     backend does when, say, the rename of a committed object succeeded but
//     the directory fsync after it failed: the caller cannot tell whether it
//     took effect;
//   - ShortWrite: for Write operations, the first half of the bytes is
//     written and the call returns the short count with an error; for any
//     other operation it behaves as Error.
//
// Every injected error wraps ErrInjected. A Hook, if set, is called before
// and after every operation (outside any lock of this package), so that a
// test can, for instance, take a storage.Mem.CrashClone at each durability
// point.
package faultfs

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/storage"
)

// ErrInjected is wrapped by every error this package injects.
var ErrInjected = errors.New("faultfs: injected fault")

// Op names a kind of storage operation.
type Op uint8

// Operations. OpAny in a Rule matches every operation.
const (
	OpAny         Op = iota
	OpCreate         // Storage.Create
	OpWrite          // ObjectWriter.Write
	OpCommit         // ObjectWriter.Commit
	OpAbort          // ObjectWriter.Abort
	OpOpen           // Storage.Open
	OpReadAt         // ObjectReader.ReadAt
	OpReaderClose    // ObjectReader.Close
	OpPutIfAbsent    // Storage.PutIfAbsent
	OpList           // Storage.List
	OpRemove         // Storage.Remove
	OpCreateLog      // Storage.CreateLog
	OpLogWrite       // LogWriter.Write
	OpSync           // LogWriter.Sync
	OpLogClose       // LogWriter.Close
	OpLock           // Storage.Lock
	OpUnlock         // Close of the Closer Lock returned
	OpRemoveTemps    // RemoveTemps, forwarded when the backend has it
	OpClose          // Storage.Close
	numOps
)

var opNames = [numOps]string{
	OpAny: "any", OpCreate: "create", OpWrite: "write", OpCommit: "commit", OpAbort: "abort",
	OpOpen: "open", OpReadAt: "readat", OpReaderClose: "reader-close", OpPutIfAbsent: "put-if-absent",
	OpList: "list", OpRemove: "remove", OpCreateLog: "create-log", OpLogWrite: "log-write",
	OpSync: "sync", OpLogClose: "log-close", OpLock: "lock", OpUnlock: "unlock",
	OpRemoveTemps: "remove-temps", OpClose: "close",
}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Mutating reports whether the operation can change what is stored.
func (o Op) Mutating() bool {
	switch o {
	case OpCreate, OpWrite, OpCommit, OpAbort, OpPutIfAbsent, OpRemove, OpCreateLog,
		OpLogWrite, OpSync, OpLogClose, OpRemoveTemps:
		return true
	}
	return false
}

// Kind is how an operation fails.
type Kind uint8

// Fault kinds.
const (
	// Error fails the operation without performing it.
	Error Kind = iota
	// ErrorAfter performs the operation, then returns an error.
	ErrorAfter
	// ShortWrite writes half of the bytes of a Write or LogWrite and returns
	// the short count with an error; other operations behave as Error.
	ShortWrite
)

func (k Kind) String() string {
	switch k {
	case Error:
		return "error"
	case ErrorAfter:
		return "error-after"
	case ShortWrite:
		return "short-write"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Rule selects operations to fail.
type Rule struct {
	// Op is the operation to match; OpAny matches all.
	Op Op
	// Name, if not empty, restricts the rule to objects whose name starts
	// with it (e.g. "wal/", "sst/", "manifest/"). List matches on its dir.
	// Lock, Unlock and Close have the name "".
	Name string
	// N is the 1-based index, among the operations this rule matches counted
	// from when it was injected, of the first one to fail. Zero means 1.
	N int
	// Count is how many consecutive matching operations fail from the N-th
	// on. Zero means 1; negative means every one from the N-th on.
	Count int
	// Kind is how they fail.
	Kind Kind
	// Err, if set, is wrapped (with ErrInjected) in the injected error.
	Err error
}

func (r Rule) String() string {
	s := fmt.Sprintf("%s #%d %s", r.Op, max(r.N, 1), r.Kind)
	if r.Name != "" {
		s += " on " + r.Name + "*"
	}
	if r.Count < 0 {
		s += " (and all after)"
	} else if r.Count > 1 {
		s += fmt.Sprintf(" (x%d)", r.Count)
	}
	return s
}

// Phase says whether a Hook runs before or after an operation.
type Phase uint8

// Phases.
const (
	Before Phase = iota
	After
)

func (p Phase) String() string {
	if p == Before {
		return "before"
	}
	return "after"
}

// Event describes one operation to a Hook.
type Event struct {
	Seq   int64 // 1-based operation number
	Op    Op
	Name  string
	Phase Phase
	// Fault is the fault injected into the operation, if any (set in both
	// phases), and Err the error the operation returned (After only).
	Fault *Rule
	Err   error
}

// Hook is called before and after every operation, from the goroutine
// performing it, with no lock of this package held. It must be safe for
// concurrent use.
type Hook func(Event)

// Injection records one fault that was injected.
type Injection struct {
	Seq  int64
	Op   Op
	Name string
	// NameSeq is the 1-based index of the operation among the operations
	// of its kind on the same name: 1 for the first write to a log (a WAL
	// segment's header), for instance.
	NameSeq int64
	Rule    Rule
}

func (i Injection) String() string {
	return fmt.Sprintf("op %d (%s %s): %s", i.Seq, i.Op, i.Name, i.Rule.Kind)
}

// FS is a fault-injecting storage.Storage. All methods are safe for
// concurrent use.
type FS struct {
	inner storage.Storage
	seq   atomic.Int64

	mu       sync.Mutex
	rules    []*ruleState
	counts   [numOps]int64
	perName  map[opName]int64
	injected []Injection
	hook     Hook
}

type opName struct {
	op   Op
	name string
}

type ruleState struct {
	Rule
	seen int // matching operations so far
}

var _ storage.Storage = (*FS)(nil)

// New wraps inner. No fault is injected until Inject.
func New(inner storage.Storage) *FS { return &FS{inner: inner} }

// Inner returns the wrapped storage.
func (fs *FS) Inner() storage.Storage { return fs.inner }

// Inject adds a rule. Its N counts matching operations from now on.
func (fs *FS) Inject(r Rule) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.rules = append(fs.rules, &ruleState{Rule: r})
}

// Clear removes every rule; operations succeed again from now on.
func (fs *FS) Clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.rules = nil
}

// SetHook installs h (nil removes it).
func (fs *FS) SetHook(h Hook) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.hook = h
}

// Ops returns the number of operations performed (or attempted) so far.
func (fs *FS) Ops() int64 { return fs.seq.Load() }

// Count returns the number of operations of kind op so far (OpAny: all).
func (fs *FS) Count(op Op) int64 {
	if op == OpAny {
		return fs.Ops()
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.counts[op]
}

// Injected returns the faults injected so far, in order.
func (fs *FS) Injected() []Injection {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]Injection(nil), fs.injected...)
}

// begin numbers an operation, decides whether it fails and calls the hook.
func (fs *FS) begin(op Op, name string) (int64, int64, *Rule, Hook) {
	fs.mu.Lock()
	seq := fs.seq.Add(1)
	fs.counts[op]++
	if fs.perName == nil {
		fs.perName = map[opName]int64{}
	}
	key := opName{op, name}
	fs.perName[key]++
	nameSeq := fs.perName[key]
	var fault *Rule
	for _, r := range fs.rules {
		if r.Op != OpAny && r.Op != op {
			continue
		}
		if r.Name != "" && !strings.HasPrefix(name, r.Name) {
			continue
		}
		r.seen++
		n, count := max(r.N, 1), r.Count
		if count == 0 {
			count = 1
		}
		if fault == nil && r.seen >= n && (count < 0 || r.seen < n+count) {
			rule := r.Rule
			fault = &rule
			fs.injected = append(fs.injected, Injection{Seq: seq, Op: op, Name: name, NameSeq: nameSeq, Rule: rule})
		}
	}
	h := fs.hook
	fs.mu.Unlock()
	if h != nil {
		h(Event{Seq: seq, Op: op, Name: name, Phase: Before, Fault: fault})
	}
	return seq, nameSeq, fault, h
}

func (fs *FS) end(seq int64, op Op, name string, fault *Rule, h Hook, err error) {
	if h != nil {
		h(Event{Seq: seq, Op: op, Name: name, Phase: After, Fault: fault, Err: err})
	}
}

// FaultError is the error an injected fault returns. It wraps ErrInjected
// and the rule's Err, if any; use errors.As to learn which operation failed.
type FaultError struct {
	Seq     int64
	Op      Op
	Name    string
	NameSeq int64 // as in Injection
	Kind    Kind
	Err     error // the rule's Err, or nil
}

func (e *FaultError) Error() string {
	s := fmt.Sprintf("faultfs: %s %q (op %d, %s): %v", e.Op, e.Name, e.Seq, e.Kind, ErrInjected)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrInjected and the rule's Err.
func (e *FaultError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInjected, e.Err}
	}
	return []error{ErrInjected}
}

func injectedErr(seq, nameSeq int64, op Op, name string, r *Rule) error {
	return &FaultError{Seq: seq, Op: op, Name: name, NameSeq: nameSeq, Kind: r.Kind, Err: r.Err}
}

// do runs a simple operation f under the fault rules.
func (fs *FS) do(op Op, name string, f func() error) error {
	seq, nameSeq, fault, h := fs.begin(op, name)
	var err error
	switch {
	case fault == nil:
		err = f()
	case fault.Kind == ErrorAfter:
		f() // performed; its own result is replaced by the fault
		err = injectedErr(seq, nameSeq, op, name, fault)
	default:
		err = injectedErr(seq, nameSeq, op, name, fault)
	}
	fs.end(seq, op, name, fault, h, err)
	return err
}

// write runs a Write-like operation under the fault rules.
func (fs *FS) write(op Op, name string, p []byte, f func([]byte) (int, error)) (int, error) {
	seq, nameSeq, fault, h := fs.begin(op, name)
	var (
		n   int
		err error
	)
	switch {
	case fault == nil:
		n, err = f(p)
	case fault.Kind == ErrorAfter:
		n, _ = f(p)
		err = injectedErr(seq, nameSeq, op, name, fault)
	case fault.Kind == ShortWrite && len(p) > 0:
		n, _ = f(p[:len(p)/2])
		err = injectedErr(seq, nameSeq, op, name, fault)
	default:
		err = injectedErr(seq, nameSeq, op, name, fault)
	}
	fs.end(seq, op, name, fault, h, err)
	return n, err
}

// Create implements storage.Storage.
func (fs *FS) Create(name string) (storage.ObjectWriter, error) {
	var w storage.ObjectWriter
	err := fs.do(OpCreate, name, func() error {
		var err error
		w, err = fs.inner.Create(name)
		return err
	})
	if err != nil {
		if w != nil {
			w.Abort() // ErrorAfter: the caller never sees this writer
		}
		return nil, err
	}
	return &objectWriter{fs: fs, name: name, w: w}, nil
}

type objectWriter struct {
	fs   *FS
	name string
	w    storage.ObjectWriter
}

func (w *objectWriter) Write(p []byte) (int, error) {
	return w.fs.write(OpWrite, w.name, p, w.w.Write)
}

func (w *objectWriter) Commit() error { return w.fs.do(OpCommit, w.name, w.w.Commit) }
func (w *objectWriter) Abort() error  { return w.fs.do(OpAbort, w.name, w.w.Abort) }

// Open implements storage.Storage.
func (fs *FS) Open(name string) (storage.ObjectReader, error) {
	var r storage.ObjectReader
	err := fs.do(OpOpen, name, func() error {
		var err error
		r, err = fs.inner.Open(name)
		return err
	})
	if err != nil {
		if r != nil {
			r.Close()
		}
		return nil, err
	}
	return &objectReader{fs: fs, name: name, r: r}, nil
}

type objectReader struct {
	fs   *FS
	name string
	r    storage.ObjectReader
}

func (r *objectReader) ReadAt(p []byte, off int64) (int, error) {
	var n int
	err := r.fs.do(OpReadAt, r.name, func() error {
		var err error
		n, err = r.r.ReadAt(p, off)
		return err
	})
	if err != nil && errors.Is(err, ErrInjected) {
		// An injected read error returns no data.
		return 0, err
	}
	return n, err
}

func (r *objectReader) Size() int64  { return r.r.Size() }
func (r *objectReader) Close() error { return r.fs.do(OpReaderClose, r.name, r.r.Close) }

// PutIfAbsent implements storage.Storage.
func (fs *FS) PutIfAbsent(name string, data []byte) error {
	return fs.do(OpPutIfAbsent, name, func() error { return fs.inner.PutIfAbsent(name, data) })
}

// List implements storage.Storage.
func (fs *FS) List(dir string) ([]string, error) {
	var names []string
	err := fs.do(OpList, dir, func() error {
		var err error
		names, err = fs.inner.List(dir)
		return err
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// Remove implements storage.Storage.
func (fs *FS) Remove(name string) error {
	return fs.do(OpRemove, name, func() error { return fs.inner.Remove(name) })
}

// RemoveTemps forwards to the backend's RemoveTemps (storage.Local has one)
// and does nothing for a backend without it.
func (fs *FS) RemoveTemps(dir string) error {
	t, ok := fs.inner.(interface{ RemoveTemps(dir string) error })
	return fs.do(OpRemoveTemps, dir, func() error {
		if !ok {
			return nil
		}
		return t.RemoveTemps(dir)
	})
}

// CreateLog implements storage.Storage.
func (fs *FS) CreateLog(name string) (storage.LogWriter, error) {
	var lw storage.LogWriter
	err := fs.do(OpCreateLog, name, func() error {
		var err error
		lw, err = fs.inner.CreateLog(name)
		return err
	})
	if err != nil {
		if lw != nil {
			lw.Close() // ErrorAfter: the log exists, but the caller has no writer
		}
		return nil, err
	}
	return &logWriter{fs: fs, name: name, w: lw}, nil
}

type logWriter struct {
	fs   *FS
	name string
	w    storage.LogWriter
}

func (w *logWriter) Write(p []byte) (int, error) {
	return w.fs.write(OpLogWrite, w.name, p, w.w.Write)
}

func (w *logWriter) Sync() error  { return w.fs.do(OpSync, w.name, w.w.Sync) }
func (w *logWriter) Close() error { return w.fs.do(OpLogClose, w.name, w.w.Close) }

// Lock implements storage.Storage.
func (fs *FS) Lock(exclusive bool) (io.Closer, error) {
	var c io.Closer
	err := fs.do(OpLock, "", func() error {
		var err error
		c, err = fs.inner.Lock(exclusive)
		return err
	})
	if err != nil {
		if c != nil {
			c.Close() // ErrorAfter: release the lock nobody will hold
		}
		return nil, err
	}
	return &lock{fs: fs, c: c}, nil
}

type lock struct {
	fs *FS
	c  io.Closer
}

// Close releases the lock. An injected error is reported, but the lock is
// released whatever the fault kind: a failing unlock must not wedge the
// storage for every later test step.
func (k *lock) Close() error {
	seq, nameSeq, fault, h := k.fs.begin(OpUnlock, "")
	err := k.c.Close()
	if fault != nil {
		err = injectedErr(seq, nameSeq, OpUnlock, "", fault)
	}
	k.fs.end(seq, OpUnlock, "", fault, h, err)
	return err
}

// Close implements storage.Storage.
func (fs *FS) Close() error { return fs.do(OpClose, "", fs.inner.Close) }
