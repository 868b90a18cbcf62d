package mayfly

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

// gatedStorage holds back the creation of table objects until open is
// closed, so that flushes cannot finish and frozen memtables pile up.
type gatedStorage struct {
	storage.Storage
	open chan struct{}
}

func (g *gatedStorage) Create(name string) (storage.ObjectWriter, error) {
	if strings.HasSuffix(name, ".sst") {
		<-g.open
	}
	return g.Storage.Create(name)
}

// TestActiveMemtableBoundedWhileFlushesWait: while MaxImmutableMemtables
// frozen memtables wait for a flush that cannot finish, writes stall once
// the active memtable holds a quarter of MemtableSize (lastMemtableDiv),
// not MemtableSize:
// at most 2 + 1/lastMemtableDiv memtables are alive at the peak of a load
// that outruns its flushes. Every row written reads back once the flushes
// may go on.
func TestActiveMemtableBoundedWhileFlushesWait(t *testing.T) {
	gate := &gatedStorage{Storage: storage.NewMem(), open: make(chan struct{})}
	stalled := make(chan struct{})
	var once sync.Once
	const memSize = 64 << 10
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = gate
		o.MemtableSize = memSize
		o.MaxImmutableMemtables = 2
		o.DisableAutoCompaction = true
		o.EventListener = &EventListener{WriteStallBegin: func(StallInfo) { once.Do(func() { close(stalled) }) }}
	})
	val := bytes.Repeat([]byte{'v'}, 200)
	const rows = 1200 // about 4 memtables: more than the flushes can hold back
	done := make(chan error, 1)
	go func() {
		for i := range rows {
			if err := db.Put(fmt.Appendf(nil, "k%06d", i), val); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	<-stalled
	db.mu.Lock()
	frozen, active := len(db.imm), db.mem.Size()
	db.mu.Unlock()
	if frozen != 2 {
		t.Errorf("stalled with %d frozen memtables, want 2", frozen)
	}
	// The stall comes at the first write that finds the active memtable
	// at or past the bound: it holds the bound plus at most one row.
	// The bound is a quarter of MemtableSize (lastMemtableDiv), written
	// out here so that a change of policy shows.
	row := int64(len(val) + 128) // value, key and per-row overheads of Size
	if bound := int64(memSize / 4); active < bound || active > bound+row {
		t.Errorf("stalled with an active memtable of %d bytes, want %d to %d", active, bound, bound+row)
	}
	close(gate.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		mustGet(t, db, fmt.Sprintf("k%06d", i), string(val))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
