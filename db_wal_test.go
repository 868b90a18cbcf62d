package mayfly

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

// rotateNow rotates db's memtable as a full memtable would.
func rotateNow(db *DB) error {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	return db.rotateMemtable()
}

// gatedWAL opens a DB on a Mem behind a fault injector whose hook holds,
// until release is closed, every table creation (so flushes wait and the
// WAL segments stay live) and every sync of the log named by sealName
// (once set), reporting that sync on entered.
type gatedWAL struct {
	mem      *storage.Mem
	fs       *faultfs.FS
	db       *DB
	mu       sync.Mutex
	sealName string
	entered  chan struct{}
	release  chan struct{}
}

func newGatedWAL(t *testing.T, mutate func(*Options)) *gatedWAL {
	g := &gatedWAL{mem: storage.NewMem(), entered: make(chan struct{}, 16), release: make(chan struct{})}
	g.fs = faultfs.New(g.mem)
	g.fs.SetHook(func(e faultfs.Event) {
		if e.Phase != faultfs.Before {
			return
		}
		g.mu.Lock()
		seal := g.sealName
		g.mu.Unlock()
		switch {
		case e.Op == faultfs.OpCreate && strings.HasPrefix(e.Name, "sst/"):
			<-g.release
		case e.Op == faultfs.OpSync && seal != "" && e.Name == seal:
			g.entered <- struct{}{}
			<-g.release
		}
	})
	g.db = openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = g.fs
		if mutate != nil {
			mutate(o)
		}
	})
	t.Cleanup(func() {
		g.open()
		g.db.Close()
	})
	return g
}

// holdSyncsOf makes the hook hold the syncs of the active segment.
func (g *gatedWAL) holdSyncsOf(name string) {
	g.mu.Lock()
	g.sealName = name
	g.mu.Unlock()
}

// open lets every held operation through, once.
func (g *gatedWAL) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// TestRotationDoesNotWaitForSealSync: a rotation returns while the old
// segment's sync is still running; unsynced writes go on into the new
// segment, a synced one waits for that sync. A crash at that moment
// reopens with every synced write and a prefix of the unsynced ones, with
// no error.
func TestRotationDoesNotWaitForSealSync(t *testing.T) {
	g := newGatedWAL(t, nil)
	db := g.db
	var order []string // unsynced writes, in write order
	for i := range 5 {
		if err := db.PutWith(fmt.Appendf(nil, "synced-%d", i), []byte("v"), NoExpiry(), Sync); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		k := fmt.Sprintf("old-unsynced-%d", i)
		if err := db.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
		order = append(order, k)
	}
	g.holdSyncsOf(logName(db.logNum))
	rotated := make(chan error, 1)
	go func() { rotated <- rotateNow(db) }()
	<-g.entered // the old segment's sync has begun and is held
	select {
	case err := <-rotated:
		if err != nil {
			t.Fatalf("rotation: %v", err)
		}
	case <-time.After(10 * time.Second): // a watchdog: the rotation is expected to have returned already
		t.Fatal("the rotation waited for the old segment's sync")
	}
	for i := range 3 {
		k := fmt.Sprintf("new-unsynced-%d", i)
		if err := db.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
		order = append(order, k)
	}
	synced := make(chan error, 1)
	go func() { synced <- db.PutWith([]byte("synced-late"), []byte("v"), NoExpiry(), Sync) }()

	crash := g.mem.CrashClone()
	select {
	case err := <-synced:
		t.Fatalf("a synced write returned (%v) before the older segment's seal was durable", err)
	default:
	}
	db2 := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) { o.Storage = crash })
	defer db2.Close()
	for i := range 5 {
		mustGet(t, db2, fmt.Sprintf("synced-%d", i), "v")
	}
	gap := ""
	for _, k := range order {
		_, err := db2.Get([]byte(k))
		switch {
		case err == nil && gap != "":
			t.Fatalf("unsynced write %s survived the crash, but the earlier %s did not", k, gap)
		case errors.Is(err, ErrNotFound):
			gap = k
		case err != nil:
			t.Fatalf("Get(%s): %v", k, err)
		}
	}

	g.open()
	if err := <-synced; err != nil {
		t.Fatalf("synced write after the seal's sync: %v", err)
	}
}

// TestFailedSealSyncPoisons: a failed sync of a sealed segment, in the
// background, puts the database in its error state as a failed synchronous
// seal would: writes are refused, and a synced write into the newer
// segment fails rather than claim durability.
func TestFailedSealSyncPoisons(t *testing.T) {
	bg := make(chan error, 1)
	g := newGatedWAL(t, func(o *Options) {
		o.EventListener = &EventListener{BackgroundError: func(err error) { bg <- err }}
	})
	db := g.db
	if err := db.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	g.fs.Inject(faultfs.Rule{Op: faultfs.OpSync, Name: logName(db.logNum), Kind: faultfs.Error})
	g.holdSyncsOf(logName(db.logNum))
	if err := rotateNow(db); err != nil {
		t.Fatalf("rotation: %v", err)
	}
	<-g.entered
	synced := make(chan error, 1)
	go func() { synced <- db.PutWith([]byte("b"), []byte("2"), NoExpiry(), Sync) }()
	g.open()
	if err := <-bg; !errors.Is(err, faultfs.ErrInjected) {
		t.Fatalf("background error %v; want the injected sync failure", err)
	}
	if err := <-synced; err == nil {
		t.Fatal("a synced write succeeded after the older segment's sync failed")
	}
	if err := db.Put([]byte("c"), []byte("3")); !errors.Is(err, ErrBackground) {
		t.Fatalf("write after the failed seal sync: %v; want ErrBackground", err)
	}
}

// TestSpareSegmentOpensCleanly: the next segment, created ahead of need,
// is left empty by a crash; Open reads it as a segment that never held
// data (no torn tail, no error) and never reuses its number.
func TestSpareSegmentOpensCleanly(t *testing.T) {
	mem := storage.NewMem()
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) { o.Storage = mem })
	defer db.Close()
	if err := db.PutWith([]byte("k"), []byte("v"), NoExpiry(), Sync); err != nil {
		t.Fatal(err)
	}
	db.walRot.mu.Lock()
	done, spare := db.walRot.spareDone, db.walRot.spareNum
	db.walRot.mu.Unlock()
	if done == nil {
		t.Fatal("no segment was created ahead of need")
	}
	<-done
	if data, err := storage.ReadAll(mem, logName(spare)); err != nil || len(data) != 0 {
		t.Fatalf("spare segment %s: %d bytes, %v; want an empty log", logName(spare), len(data), err)
	}
	crash := mem.CrashClone()
	db2 := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) { o.Storage = crash })
	defer db2.Close()
	mustGet(t, db2, "k", "v")
	if m := db2.Metrics(); m.WALTornTails != 0 || m.WALRecordsDropped != 0 {
		t.Fatalf("WALTornTails %d, WALRecordsDropped %d after a crash with an unused spare segment; want 0", m.WALTornTails, m.WALRecordsDropped)
	}
	if db2.logNum <= spare {
		t.Fatalf("reopened writer uses segment %d, not above the spare %d", db2.logNum, spare)
	}
}

// TestWALBacklogWaitsCounted: while the log's writes are held, unsynced
// commits go on without waiting until as much of the WAL is unwritten as
// docs/usage.md "Durability" promises (the WAL's spill chunks); the commit
// past that waits, and Metrics counts it in WALBacklogWaits. Once the log
// is released every write lands and reads back.
func TestWALBacklogWaitsCounted(t *testing.T) {
	fs := faultfs.New(storage.NewMem())
	var hold atomic.Bool
	release := make(chan struct{})
	fs.SetHook(func(e faultfs.Event) {
		if e.Phase == faultfs.Before && e.Op == faultfs.OpLogWrite && hold.Load() {
			<-release
		}
	})
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) {
		o.Storage = fs
		o.MemtableSize = 64 << 20 // no rotation: its new segment's header would be held too
	})
	defer db.Close()
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	defer open() // before Close, which writes the held bytes, on a failure too
	if got := db.Metrics().WALBacklogWaits; got != 0 {
		t.Fatalf("WALBacklogWaits %d before any write, want 0", got)
	}
	hold.Store(true)
	value := make([]byte, 1024)
	const promised = 4 << 20              // docs/usage.md "Durability"
	puts := 3 * promised / 2 / len(value) // past the bound and the chunk being written
	var done atomic.Int64
	wrote := make(chan error, 1)
	go func() {
		for i := range puts {
			if err := db.Put(fmt.Appendf(nil, "k%05d", i), value); err != nil {
				wrote <- err
				return
			}
			done.Add(1)
		}
		wrote <- nil
	}()
	for db.Metrics().WALBacklogWaits == 0 {
		select {
		case err := <-wrote:
			t.Fatalf("all %d puts returned (err %v) while the log's writes were held: none waited", puts, err)
		default:
			runtime.Gosched()
		}
	}
	// The puts before the waiting one did not wait for the log: the
	// records they appended while its writes were held came to the bound,
	// less at most one record (the one that waited did not fit).
	if b := db.Metrics().WALBytes; b < promised-4<<10 {
		t.Fatalf("only %d KiB of WAL records (%d puts) were appended before a put waited for the held log, want about %d KiB", b>>10, done.Load(), promised>>10)
	}
	open()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if got := db.Metrics().WALBacklogWaits; got < 1 {
		t.Fatalf("WALBacklogWaits %d, want at least 1", got)
	}
	for _, i := range []int{0, puts / 2, puts - 1} {
		if v, err := db.Get(fmt.Appendf(nil, "k%05d", i)); err != nil || len(v) != len(value) {
			t.Fatalf("key %d after the log was released: %d bytes, %v", i, len(v), err)
		}
	}
}
