package storage

import (
	"errors"
	"slices"
	"testing"
)

// wantRefusesWrites checks that every mutating call on s fails with
// ErrReadOnly and that the names under dirs stay those listed before.
func wantRefusesWrites(t *testing.T, s Storage, dirs ...string) {
	t.Helper()
	list := func() []string {
		var all []string
		for _, d := range dirs {
			all = append(all, mustList(t, s, d)...)
		}
		return all
	}
	before := list()
	calls := map[string]func() error{
		"Create":      func() error { _, err := s.Create("sst/000009.sst"); return err },
		"PutIfAbsent": func() error { return s.PutIfAbsent("manifest/x", []byte("x")) },
		"Remove":      func() error { return s.Remove("sst/000001.sst") },
		"CreateLog":   func() error { _, err := s.CreateLog("wal/000009.wal"); return err },
		"Lock shared": func() error { _, err := s.Lock(false); return err },
		"Lock":        func() error { _, err := s.Lock(true); return err },
	}
	if p, ok := s.(LogPreallocator); ok {
		calls["CreatePreallocatedLog"] = func() error { _, err := p.CreatePreallocatedLog("wal/000010.wal"); return err }
	}
	if r, ok := s.(interface{ RemoveTemps(string) error }); ok {
		calls["RemoveTemps"] = func() error { return r.RemoveTemps("sst") }
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only storage = %v; want ErrReadOnly", name, err)
		}
	}
	if after := list(); !slices.Equal(before, after) {
		t.Fatalf("names changed: %q -> %q", before, after)
	}
}

// TestReadOnlyStorage: the ReadOnly view reads through and refuses every
// write; the writable optional interfaces of the storage it wraps are out
// of reach.
func TestReadOnlyStorage(t *testing.T) {
	m := NewMem()
	if err := m.PutIfAbsent("sst/000001.sst", []byte("table")); err != nil {
		t.Fatal(err)
	}
	lw, err := m.CreateLog("wal/000002.wal")
	if err != nil {
		t.Fatal(err)
	}
	lw.Write([]byte("log"))
	ro := ReadOnly(m)
	if got := string(mustRead(t, ro, "sst/000001.sst")); got != "table" {
		t.Fatalf("read through = %q", got)
	}
	logs, err := ListLogs(ro, "wal")
	if err != nil || len(logs) != 1 || logs[0].Name != "wal/000002.wal" {
		t.Fatalf("ListLogs = %v, %v", logs, err)
	}
	logs[0].Reader.Close()
	wantRefusesWrites(t, ro, "sst", "wal", "manifest")
	if _, ok := As[LogPreallocator](ReadOnly(&Local{})); ok {
		t.Fatal("a Local's CreatePreallocatedLog is reachable through ReadOnly")
	}
	// The log is still the Mem's to write: nothing was locked or fenced.
	if _, err := lw.Write([]byte("more")); err != nil {
		t.Fatal(err)
	}
}
