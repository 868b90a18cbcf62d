package crash

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

// Deterministic reproductions of the engine bugs the fault sweeps found.
// Each runs on storage.Mem and on storage.Local, both behind faultfs.

func backends(t *testing.T) map[string]func() storage.Storage {
	return map[string]func() storage.Storage{
		"mem": func() storage.Storage { return storage.NewMem() },
		"local": func() storage.Storage {
			l, err := storage.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
	}
}

func smallOpts(s storage.Storage) *mayfly.Options {
	return &mayfly.Options{Storage: s, Clock: clock.NewManual(epoch), MemtableSize: 1 << 10, DisableAutoCompaction: true}
}

func syncedPuts(t *testing.T, db *mayfly.DB, prefix string, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("%s%03d", prefix, i)
		if err := db.PutWith([]byte(k), []byte("v-"+k), mayfly.NoExpiry(), mayfly.Sync); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		keys = append(keys, k)
	}
	return keys
}

func reopenAndCheck(t *testing.T, s storage.Storage, keys []string) {
	t.Helper()
	db, err := mayfly.Open("", smallOpts(s))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	for _, k := range keys {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != "v-"+k {
			t.Errorf("acknowledged synced write %s: got %q, %v", k, v, err)
		}
	}
}

// TestRegressManifestErrorAfterWrite: a manifest version whose PutIfAbsent
// reported an error after the version was in fact stored (storage.Local
// does this when the directory fsync, or removing the temporary name,
// fails after the link). logAndApply returns the error, and its caller
// (flushMemtable, runPick, recover) then deletes the tables the edit added
// — which the stored version lists. The next Open fails with "open table
// listed in manifest ... does not exist": the database cannot be opened
// again and its flushed rows are gone.
func TestRegressManifestErrorAfterWrite(t *testing.T) {
	for name, mk := range backends(t) {
		for _, path := range []string{"flush", "compaction"} {
			t.Run(name+"/"+path, func(t *testing.T) {
				inner := mk()
				fs := faultfs.New(inner)
				db, err := mayfly.Open("", smallOpts(fs))
				if err != nil {
					t.Fatal(err)
				}
				keys := syncedPuts(t, db, "a", 20)
				if path == "compaction" {
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				fs.Inject(faultfs.Rule{Op: faultfs.OpPutIfAbsent, Name: "manifest/", Kind: faultfs.ErrorAfter})
				if path == "flush" {
					err = db.Flush()
				} else {
					err = db.Compact(context.Background(), nil, nil)
				}
				if !errors.Is(err, faultfs.ErrInjected) {
					t.Fatalf("%s: err = %v, want the injected manifest error", path, err)
				}
				db.Close()
				fs.Clear()
				reopenAndCheck(t, inner, keys)
			})
		}
	}
}

// TestRegressAbandonedWALSegment: rotateMemtable creates WAL segment N, and
// creating it fails after the log exists — CreateLog's directory fsync
// fails (storage.Local leaves the file), or writing the segment header
// fails. The write returns the error without setting a background error,
// so the next write rotates again into segment N+1 and succeeds. Segment N
// stays behind, empty or with a partial header, between the old segment
// and N+1. Until the old memtable's flush moves the manifest's MinLogNum
// past N, every Open treats it as a torn non-final segment and fails with
// ErrCorruption: a crash or a Close in that window leaves a database that
// never opens again (the clean-reopen runs of the sweep hit it too).
func TestRegressAbandonedWALSegment(t *testing.T) {
	for name, mk := range backends(t) {
		for _, fault := range []string{"create-log error-after", "header write error", "header short write"} {
			t.Run(name+"/"+strings.ReplaceAll(fault, " ", "-"), func(t *testing.T) {
				inner := mk()
				fs := faultfs.New(inner)
				db, err := mayfly.Open("", smallOpts(fs))
				if err != nil {
					t.Fatal(err)
				}
				var (
					mu       sync.Mutex
					segments []string
					state    storage.Storage // the storage as a crash right after N+1 exists leaves it
					keys     []string
					acked    int // len(keys) when state was captured
				)
				fs.SetHook(func(e faultfs.Event) {
					if e.Op != faultfs.OpCreateLog {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if e.Phase == faultfs.Before && len(segments) == 0 {
						// The header is written after CreateLog returns.
						switch fault {
						case "header write error":
							fs.Inject(faultfs.Rule{Op: faultfs.OpLogWrite, Name: e.Name, Kind: faultfs.Error})
						case "header short write":
							fs.Inject(faultfs.Rule{Op: faultfs.OpLogWrite, Name: e.Name, Kind: faultfs.ShortWrite})
						}
					}
					if e.Phase == faultfs.After {
						segments = append(segments, e.Name)
						if len(segments) == 2 {
							acked = len(keys)
							// Segment N+1 exists and the old memtable is not
							// yet queued for flushing: the state a crash now
							// leaves (for Local, a process crash: a copy of
							// the directory).
							switch s := inner.(type) {
							case *storage.Mem:
								state = s.CrashClone()
							case *storage.Local:
								dst := t.TempDir()
								if err := os.CopyFS(dst, os.DirFS(s.Dir())); err != nil {
									t.Errorf("copy: %v", err)
								}
								os.Remove(filepath.Join(dst, "LOCK"))
								state, _ = storage.NewLocal(dst)
							}
						}
					}
				})
				if fault == "create-log error-after" {
					fs.Inject(faultfs.Rule{Op: faultfs.OpCreateLog, Kind: faultfs.ErrorAfter})
				}
				failures := 0
				for i := 0; len(keys) < 40; i++ {
					k := fmt.Sprintf("k%03d", i)
					err := db.PutWith([]byte(k), []byte("v-"+k+strings.Repeat("x", 100)), mayfly.NoExpiry(), mayfly.Sync)
					if err != nil {
						failures++
						if failures > 3 {
							t.Fatalf("write %s: %v (and %d failures before)", k, err, failures-1)
						}
						continue
					}
					mu.Lock()
					keys = append(keys, k)
					mu.Unlock()
				}
				fs.SetHook(nil)
				// A log created ahead of need (the next segment, made in the
				// background) whose creation fails costs no write: the
				// rotation creates its segment itself. A header is written
				// when a rotation takes the log, so its failure fails that
				// write.
				want := 1
				if fault == "create-log error-after" {
					want = 0
				}
				if failures != want {
					t.Fatalf("%d writes failed, want %d", failures, want)
				}
				mu.Lock()
				t.Logf("segments created: %v", segments)
				mu.Unlock()
				db.Close()
				fs.Clear()
				if state == nil {
					t.Fatal("no second segment was created")
				}
				db2, err := mayfly.Open("", smallOpts(state))
				if err != nil {
					t.Fatalf("reopen after the failed rotation: %v", err)
				}
				defer db2.Close()
				// Every write acknowledged (synced) before the crash point.
				for _, k := range keys[:acked] {
					if _, err := db2.Get([]byte(k)); err != nil {
						t.Errorf("acknowledged synced write %s: %v", k, err)
					}
				}
				if acked == 0 {
					t.Fatal("no write was acknowledged before the crash point")
				}
			})
		}
	}
}
