// Package tests is Mayfly's black-box integration suite. It uses only the
// public API of mayfly, mayfly/clock and mayfly/storage, drives all time
// through a manual clock (never time.Sleep) and must pass under -race.
//
// Tests open their database with newEnv, on the backend MAYFLY_TEST_BACKEND
// selects (local directory by default, or s3; see internal/s3test), so the
// same suite runs on both: scripts/test.sh runs it once per backend. Tests
// of power loss use newMemEnv (storage.Mem's CrashClone); tests about the
// local directory itself use newLocalEnv.
package tests

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/internal/s3test"
	"github.com/mayflydb/mayfly/storage"
)

// epoch is the manual clock's starting time in every test.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is one database under test plus what is needed to reopen it: its
// location (a local directory, an s3:// URL, or a name on an in-memory
// storage) and the manual clock.
type env struct {
	t      *testing.T
	dir    string       // the location given to Open
	local  bool         // dir is a local directory
	mem    *storage.Mem // nil unless in memory
	clk    *clock.Manual
	mutate func(*mayfly.Options)
	db     *mayfly.DB
}

// newEnv opens a fresh database on the backend MAYFLY_TEST_BACKEND selects
// (see internal/s3test): a temporary local directory by default, or a
// fresh prefix of the S3 server with MAYFLY_TEST_BACKEND=s3.
func newEnv(t *testing.T, mutate func(*mayfly.Options)) *env {
	t.Helper()
	if s3test.MustBackend(t) == s3test.S3 {
		return startEnv(t, &env{dir: s3test.Location(t)}, mutate)
	}
	return newLocalEnv(t, mutate)
}

// newLocalEnv opens a fresh database in a temporary local directory. Only
// tests about the directory itself use it (its lock file, copying it,
// editing its files); each says why. Such a test does not depend on the
// selected backend, so with MAYFLY_TEST_BACKEND=s3 it is skipped: the
// default (local) run covers it.
func newLocalEnv(t *testing.T, mutate func(*mayfly.Options)) *env {
	t.Helper()
	skipUnlessLocalBackend(t, "a local-directory test")
	return startEnv(t, &env{dir: t.TempDir(), local: true}, mutate)
}

// newMemEnv opens a fresh database on a storage.Mem (for power-loss tests:
// CrashClone). Like newLocalEnv, it skips with MAYFLY_TEST_BACKEND=s3.
func newMemEnv(t *testing.T, mutate func(*mayfly.Options)) *env {
	t.Helper()
	skipUnlessLocalBackend(t, "an in-memory (storage.Mem) test")
	return startEnv(t, &env{dir: "memdb", mem: storage.NewMem()}, mutate)
}

func skipUnlessLocalBackend(t *testing.T, what string) {
	t.Helper()
	if s3test.MustBackend(t) != s3test.Local {
		t.Skipf("%s, independent of %s: runs in the default (local) run", what, s3test.BackendEnv)
	}
}

func startEnv(t *testing.T, e *env, mutate func(*mayfly.Options)) *env {
	t.Helper()
	e.t, e.clk, e.mutate = t, clock.NewManual(epoch), mutate
	e.open()
	t.Cleanup(e.closeQuietly)
	return e
}

func (e *env) options() *mayfly.Options {
	o := &mayfly.Options{Clock: e.clk}
	if e.mem != nil {
		o.Storage = e.mem
	}
	if e.mutate != nil {
		e.mutate(o)
	}
	return o
}

func (e *env) open() {
	e.t.Helper()
	db, err := mayfly.Open(e.dir, e.options())
	if err != nil {
		e.t.Fatalf("Open %s: %v", s3test.Redact(e.dir), err)
	}
	e.db = db
}

// reopen closes the database cleanly and opens it again at the same
// location (on S3: Close, then Open of the same URL).
func (e *env) reopen() {
	e.t.Helper()
	if err := e.db.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.open()
}

// crashReopen simulates a power loss on a Mem-backed env: the running
// database is abandoned (not closed) and a new one is opened on the durable
// state of its storage. The abandoned handle is closed afterwards only to
// stop its goroutines; it writes to the old Mem, which nothing reads again.
func (e *env) crashReopen() {
	e.t.Helper()
	if e.mem == nil {
		e.t.Fatal("crashReopen needs a Mem-backed env")
	}
	old := e.db
	e.mem = e.mem.CrashClone()
	e.open()
	e.t.Cleanup(func() { old.Close() })
}

func (e *env) closeQuietly() {
	if e.db != nil {
		e.db.Close() // ErrClosed if the test closed it already
	}
}

func (e *env) flush() {
	e.t.Helper()
	if err := e.db.Flush(); err != nil {
		e.t.Fatalf("Flush: %v", err)
	}
}

func (e *env) compact() {
	e.t.Helper()
	if err := e.db.Compact(context.Background(), nil, nil); err != nil {
		e.t.Fatalf("Compact: %v", err)
	}
}

// --- assertions shared by every file ---

type getter interface {
	Get(key []byte) ([]byte, error)
}

type ttler interface {
	TTL(key []byte) (time.Duration, bool, error)
}

func put(t testing.TB, db *mayfly.DB, key, value string) {
	t.Helper()
	if err := db.Put([]byte(key), []byte(value)); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func putTTL(t testing.TB, db *mayfly.DB, key, value string, ttl mayfly.TTL) {
	t.Helper()
	if err := db.PutTTL([]byte(key), []byte(value), ttl); err != nil {
		t.Fatalf("PutTTL(%q, %v): %v", key, ttl, err)
	}
}

func del(t testing.TB, db *mayfly.DB, key string) {
	t.Helper()
	if err := db.Delete([]byte(key)); err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
}

// wantValue asserts that key reads as want.
func wantValue(t testing.TB, g getter, key, want string) {
	t.Helper()
	v, err := g.Get([]byte(key))
	if err != nil || string(v) != want {
		t.Fatalf("Get(%q) = %q, %v; want %q", key, v, err, want)
	}
}

// wantAbsent asserts that key reads as ErrNotFound.
func wantAbsent(t testing.TB, g getter, key string) {
	t.Helper()
	v, err := g.Get([]byte(key))
	if !errors.Is(err, mayfly.ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
	}
}

// wantTTL asserts TTL(key) == (remaining, true, nil).
func wantTTL(t testing.TB, g ttler, key string, remaining time.Duration) {
	t.Helper()
	d, expires, err := g.TTL([]byte(key))
	if err != nil || !expires || d != remaining {
		t.Fatalf("TTL(%q) = %v, %v, %v; want %v, true, nil", key, d, expires, err, remaining)
	}
}

// wantNoExpiry asserts TTL(key) == (0, false, nil).
func wantNoExpiry(t testing.TB, g ttler, key string) {
	t.Helper()
	d, expires, err := g.TTL([]byte(key))
	if err != nil || expires || d != 0 {
		t.Fatalf("TTL(%q) = %v, %v, %v; want 0, false, nil", key, d, expires, err)
	}
}

// wantTTLNotFound asserts TTL(key) fails with ErrNotFound.
func wantTTLNotFound(t testing.TB, g ttler, key string) {
	t.Helper()
	d, expires, err := g.TTL([]byte(key))
	if !errors.Is(err, mayfly.ErrNotFound) {
		t.Fatalf("TTL(%q) = %v, %v, %v; want ErrNotFound", key, d, expires, err)
	}
}

// kv is one key/value pair as read by a scan.
type kv struct{ k, v string }

// scanAll reads every live pair of db in order with a fresh iterator,
// checking the iterator's error.
func scanAll(t testing.TB, newIter func(*mayfly.IterOptions) (*mayfly.Iterator, error)) []kv {
	t.Helper()
	it, err := newIter(nil)
	if err != nil {
		t.Fatalf("NewIter: %v", err)
	}
	var out []kv
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, kv{string(it.Key()), string(it.Value())})
	}
	if err := it.Close(); err != nil {
		t.Fatalf("iterator: %v", err)
	}
	return out
}

func key(i int) string { return fmt.Sprintf("key%06d", i) }

func isErr(err, target error) bool { return errors.Is(err, target) }

// diskRows returns the rows (tombstones included) in all SSTables.
func diskRows(m mayfly.Metrics) uint64 {
	var n uint64
	for _, l := range m.Levels {
		n += l.Rows
	}
	return n
}

// diskTTLRows returns the rows with an expiry in all SSTables.
func diskTTLRows(m mayfly.Metrics) uint64 {
	var n uint64
	for _, l := range m.Levels {
		n += l.TTLRows
	}
	return n
}
