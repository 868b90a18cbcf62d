package faultfs_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantInjected(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, faultfs.ErrInjected) {
		t.Fatalf("err = %v, want one wrapping ErrInjected", err)
	}
}

func exists(t *testing.T, s storage.Storage, name string) bool {
	t.Helper()
	_, err := storage.ReadAll(s, name)
	if errors.Is(err, storage.ErrNotExist) {
		return false
	}
	mustNil(t, err)
	return true
}

func TestPassThroughAndCounts(t *testing.T) {
	mem := storage.NewMem()
	fs := faultfs.New(mem)
	w, err := fs.Create("sst/000001.sst")
	mustNil(t, err)
	_, err = w.Write([]byte("hello"))
	mustNil(t, err)
	mustNil(t, w.Commit())
	mustNil(t, fs.PutIfAbsent("manifest/1", []byte("m")))
	lw, err := fs.CreateLog("wal/000002.wal")
	mustNil(t, err)
	_, err = lw.Write([]byte("rec"))
	mustNil(t, err)
	mustNil(t, lw.Sync())
	mustNil(t, lw.Close())
	got, err := storage.ReadAll(fs, "sst/000001.sst") // open, readat, reader-close
	mustNil(t, err)
	if string(got) != "hello" {
		t.Fatalf("read %q", got)
	}
	names, err := fs.List("sst")
	mustNil(t, err)
	if !slices.Equal(names, []string{"sst/000001.sst"}) {
		t.Fatalf("List = %v", names)
	}
	mustNil(t, fs.Remove("manifest/1"))
	if exists(t, mem, "manifest/1") {
		t.Fatal("Remove did not reach the backend")
	}
	// create write commit put create-log log-write sync log-close open readat
	// reader-close list remove
	if got := fs.Ops(); got != 13 {
		t.Fatalf("Ops() = %d, want 13", got)
	}
	for op, want := range map[faultfs.Op]int64{
		faultfs.OpCreate: 1, faultfs.OpWrite: 1, faultfs.OpCommit: 1, faultfs.OpSync: 1,
		faultfs.OpReadAt: 1, faultfs.OpList: 1, faultfs.OpAny: 13, faultfs.OpAbort: 0,
	} {
		if got := fs.Count(op); got != want {
			t.Errorf("Count(%s) = %d, want %d", op, got, want)
		}
	}
	if len(fs.Injected()) != 0 {
		t.Fatal("faults injected without a rule")
	}
}

func TestNthMatchingOperation(t *testing.T) {
	fs := faultfs.New(storage.NewMem())
	lw, err := fs.CreateLog("wal/000001.wal")
	mustNil(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpSync, N: 3})
	for i := 1; i <= 5; i++ {
		_, err := lw.Write([]byte{byte(i)})
		mustNil(t, err)
		err = lw.Sync()
		if i == 3 {
			wantInjected(t, err)
		} else {
			mustNil(t, err)
		}
	}
	inj := fs.Injected()
	if len(inj) != 1 || inj[0].Op != faultfs.OpSync || inj[0].Name != "wal/000001.wal" || inj[0].NameSeq != 3 {
		t.Fatalf("Injected() = %+v", inj)
	}
}

func TestCountAndClear(t *testing.T) {
	fs := faultfs.New(storage.NewMem())
	fs.Inject(faultfs.Rule{Op: faultfs.OpPutIfAbsent, N: 2, Count: -1})
	mustNil(t, fs.PutIfAbsent("m/1", nil))
	wantInjected(t, fs.PutIfAbsent("m/2", nil))
	wantInjected(t, fs.PutIfAbsent("m/3", nil))
	fs.Clear()
	mustNil(t, fs.PutIfAbsent("m/4", nil))

	fs.Inject(faultfs.Rule{Op: faultfs.OpRemove, N: 1, Count: 2})
	wantInjected(t, fs.Remove("m/1"))
	wantInjected(t, fs.Remove("m/1"))
	mustNil(t, fs.Remove("m/1"))
}

func TestNamePrefix(t *testing.T) {
	mem := storage.NewMem()
	fs := faultfs.New(mem)
	fs.Inject(faultfs.Rule{Op: faultfs.OpAny, Name: "manifest/", N: 1})
	mustNil(t, fs.PutIfAbsent("other/1", []byte("x")))
	wantInjected(t, fs.PutIfAbsent("manifest/1", []byte("x")))
	if exists(t, mem, "manifest/1") {
		t.Fatal("Error kind performed the operation")
	}
	_, err := fs.List("manifest")
	mustNil(t, err) // the rule fired once
}

func TestErrorAfterPerforms(t *testing.T) {
	mem := storage.NewMem()
	fs := faultfs.New(mem)

	fs.Inject(faultfs.Rule{Op: faultfs.OpPutIfAbsent, Kind: faultfs.ErrorAfter})
	wantInjected(t, fs.PutIfAbsent("manifest/1", []byte("x")))
	if !exists(t, mem, "manifest/1") {
		t.Fatal("ErrorAfter did not perform PutIfAbsent")
	}

	w, err := fs.Create("sst/1.sst")
	mustNil(t, err)
	_, err = w.Write([]byte("data"))
	mustNil(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpCommit, Kind: faultfs.ErrorAfter})
	wantInjected(t, w.Commit())
	if !exists(t, mem, "sst/1.sst") {
		t.Fatal("ErrorAfter did not perform Commit")
	}

	fs.Inject(faultfs.Rule{Op: faultfs.OpCreateLog, Kind: faultfs.ErrorAfter})
	_, err = fs.CreateLog("wal/2.wal")
	wantInjected(t, err)
	if !exists(t, mem, "wal/2.wal") {
		t.Fatal("ErrorAfter did not perform CreateLog")
	}

	// A log Sync that reports failure after syncing: the bytes are durable.
	lw, err := fs.CreateLog("wal/3.wal")
	mustNil(t, err)
	_, err = lw.Write([]byte("abc"))
	mustNil(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpSync, Kind: faultfs.ErrorAfter})
	wantInjected(t, lw.Sync())
	got, err := storage.ReadAll(mem.CrashClone(), "wal/3.wal")
	mustNil(t, err)
	if string(got) != "abc" {
		t.Fatalf("after ErrorAfter sync the durable log is %q", got)
	}
}

func TestErrorDoesNotPerform(t *testing.T) {
	mem := storage.NewMem()
	fs := faultfs.New(mem)
	lw, err := fs.CreateLog("wal/1.wal")
	mustNil(t, err)
	_, err = lw.Write([]byte("abc"))
	mustNil(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpSync})
	wantInjected(t, lw.Sync())
	got, err := storage.ReadAll(mem.CrashClone(), "wal/1.wal")
	mustNil(t, err)
	if len(got) != 0 {
		t.Fatalf("failed sync made %q durable", got)
	}

	w, err := fs.Create("sst/1.sst")
	mustNil(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpCommit})
	wantInjected(t, w.Commit())
	if exists(t, mem, "sst/1.sst") {
		t.Fatal("failed Commit published the object")
	}
	mustNil(t, w.Abort())

	fs.Inject(faultfs.Rule{Op: faultfs.OpCreate})
	_, err = fs.Create("sst/2.sst")
	wantInjected(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpAbort})
	w, err = fs.Create("sst/3.sst")
	mustNil(t, err)
	wantInjected(t, w.Abort())

	mustNil(t, mem.PutIfAbsent("x/1", []byte("1")))
	fs.Inject(faultfs.Rule{Op: faultfs.OpRemove})
	wantInjected(t, fs.Remove("x/1"))
	if !exists(t, mem, "x/1") {
		t.Fatal("failed Remove removed")
	}
	fs.Inject(faultfs.Rule{Op: faultfs.OpList})
	_, err = fs.List("x")
	wantInjected(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpCreateLog})
	_, err = fs.CreateLog("wal/9.wal")
	wantInjected(t, err)
	if exists(t, mem, "wal/9.wal") {
		t.Fatal("failed CreateLog created the log")
	}
}

func TestShortWrite(t *testing.T) {
	mem := storage.NewMem()
	fs := faultfs.New(mem)
	lw, err := fs.CreateLog("wal/1.wal")
	mustNil(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpLogWrite, Kind: faultfs.ShortWrite})
	n, err := lw.Write([]byte("abcdef"))
	wantInjected(t, err)
	if n != 3 {
		t.Fatalf("short write wrote %d bytes, want 3", n)
	}
	got, err := storage.ReadAll(mem, "wal/1.wal")
	mustNil(t, err)
	if string(got) != "abc" {
		t.Fatalf("log holds %q after a short write", got)
	}

	w, err := fs.Create("sst/1.sst")
	mustNil(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpWrite, Kind: faultfs.ShortWrite})
	n, err = w.Write([]byte("0123"))
	wantInjected(t, err)
	if n != 2 {
		t.Fatalf("short write wrote %d bytes, want 2", n)
	}
	// A short write on a non-write operation is a plain error.
	fs.Inject(faultfs.Rule{Op: faultfs.OpCommit, Kind: faultfs.ShortWrite})
	wantInjected(t, w.Commit())
	if exists(t, mem, "sst/1.sst") {
		t.Fatal("ShortWrite on Commit performed it")
	}
}

func TestReadFaults(t *testing.T) {
	mem := storage.NewMem()
	mustNil(t, mem.PutIfAbsent("sst/1.sst", []byte("payload")))
	fs := faultfs.New(mem)
	fs.Inject(faultfs.Rule{Op: faultfs.OpOpen})
	_, err := fs.Open("sst/1.sst")
	wantInjected(t, err)
	r, err := fs.Open("sst/1.sst")
	mustNil(t, err)
	defer r.Close()
	if r.Size() != 7 {
		t.Fatalf("Size = %d", r.Size())
	}
	fs.Inject(faultfs.Rule{Op: faultfs.OpReadAt, Kind: faultfs.ErrorAfter})
	buf := make([]byte, 3)
	n, err := r.ReadAt(buf, 0)
	wantInjected(t, err)
	if n != 0 {
		t.Fatalf("failed ReadAt returned %d bytes", n)
	}
	n, err = r.ReadAt(buf, 4)
	if err != nil && err != io.EOF || n != 3 || string(buf) != "oad" {
		t.Fatalf("ReadAt = %d, %v, %q", n, err, buf)
	}
}

func TestLockFaultAndRelease(t *testing.T) {
	mem := storage.NewMem()
	fs := faultfs.New(mem)
	fs.Inject(faultfs.Rule{Op: faultfs.OpLock, Kind: faultfs.ErrorAfter})
	_, err := fs.Lock(true)
	wantInjected(t, err)
	// ErrorAfter must not leave the lock held.
	c, err := fs.Lock(true)
	mustNil(t, err)
	fs.Inject(faultfs.Rule{Op: faultfs.OpUnlock})
	wantInjected(t, c.Close())
	c, err = mem.Lock(true) // released despite the error
	mustNil(t, err)
	mustNil(t, c.Close())
}

func TestCustomErr(t *testing.T) {
	fs := faultfs.New(storage.NewMem())
	sentinel := errors.New("disk on fire")
	fs.Inject(faultfs.Rule{Op: faultfs.OpPutIfAbsent, Err: sentinel})
	err := fs.PutIfAbsent("a/b", nil)
	wantInjected(t, err)
	if !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want it to wrap the rule's Err", err)
	}
	var fe *faultfs.FaultError
	if !errors.As(fmt.Errorf("wrapped: %w", err), &fe) || fe.Op != faultfs.OpPutIfAbsent || fe.Name != "a/b" || fe.Seq != 1 {
		t.Fatalf("errors.As gave %+v", fe)
	}
}

func TestHook(t *testing.T) {
	mem := storage.NewMem()
	fs := faultfs.New(mem)
	var (
		mu     sync.Mutex
		events []faultfs.Event
	)
	fs.SetHook(func(e faultfs.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		if e.Op == faultfs.OpPutIfAbsent && e.Phase == faultfs.After {
			// The hook runs with no lock held: it may use the storage.
			if !exists(t, mem, e.Name) && e.Err == nil {
				t.Errorf("object %s missing after a successful PutIfAbsent", e.Name)
			}
		}
	})
	mustNil(t, fs.PutIfAbsent("m/1", nil))
	fs.Inject(faultfs.Rule{Op: faultfs.OpPutIfAbsent})
	wantInjected(t, fs.PutIfAbsent("m/2", nil))
	fs.SetHook(nil)
	mustNil(t, fs.PutIfAbsent("m/3", nil))
	if len(events) != 4 {
		t.Fatalf("%d events, want 4", len(events))
	}
	want := []struct {
		seq   int64
		phase faultfs.Phase
		fault bool
	}{{1, faultfs.Before, false}, {1, faultfs.After, false}, {2, faultfs.Before, true}, {2, faultfs.After, true}}
	for i, w := range want {
		e := events[i]
		if e.Seq != w.seq || e.Phase != w.phase || (e.Fault != nil) != w.fault || e.Name == "" {
			t.Errorf("event %d = %+v, want %+v", i, e, w)
		}
	}
	if events[3].Err == nil {
		t.Error("After event of the failed operation has no Err")
	}
}

func TestConcurrentCounting(t *testing.T) {
	fs := faultfs.New(storage.NewMem())
	fs.Inject(faultfs.Rule{Op: faultfs.OpList, N: 50})
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := 0
	for range 4 {
		wg.Go(func() {
			for range 25 {
				if _, err := fs.List("x"); err != nil {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if failures != 1 || fs.Ops() != 100 {
		t.Fatalf("failures = %d, ops = %d; want 1 and 100", failures, fs.Ops())
	}
}

func TestWrapsLocal(t *testing.T) {
	local, err := storage.NewLocal(t.TempDir())
	mustNil(t, err)
	fs := faultfs.New(local)
	fs.Inject(faultfs.Rule{Op: faultfs.OpWrite, Kind: faultfs.ShortWrite})
	w, err := fs.Create("sst/000001.sst")
	mustNil(t, err)
	_, err = w.Write([]byte("abcd"))
	wantInjected(t, err)
	mustNil(t, w.Abort())
	mustNil(t, fs.RemoveTemps("sst"))
	names, err := fs.List("sst")
	mustNil(t, err)
	if len(names) != 0 {
		t.Fatalf("List = %v after Abort", names)
	}
	if fs.Count(faultfs.OpRemoveTemps) != 1 {
		t.Fatal("RemoveTemps not counted")
	}
}

func TestStrings(t *testing.T) {
	r := faultfs.Rule{Op: faultfs.OpSync, N: 7, Kind: faultfs.Error, Name: "wal/"}
	if got := r.String(); got != "sync #7 error on wal/*" {
		t.Fatalf("Rule.String() = %q", got)
	}
	if faultfs.OpCreateLog.String() != "create-log" || faultfs.ShortWrite.String() != "short-write" {
		t.Fatal("names")
	}
	if !faultfs.OpSync.Mutating() || faultfs.OpReadAt.Mutating() {
		t.Fatal("Mutating")
	}
}
