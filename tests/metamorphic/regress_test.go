package metamorphic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

func levelFiles(db *mayfly.DB) string {
	m := db.Metrics()
	s := ""
	for l, lm := range m.Levels {
		if lm.Files > 0 {
			s += fmt.Sprintf(" L%d:%d(%dB)", l, lm.Files, lm.Bytes)
		}
	}
	return s
}

// TestRegressBaseLevelMovesDown reproduces a stale read / resurrection
// found by TestMetamorphic (seed=271828 and seed=1, config=levels), fixed by
// the engine in commit 330e3db ("the base level never lies below a level
// holding data"); kept as a regression test. When the bottom
// level shrinks (here: its rows expire and are reclaimed), the base level
// computed by compaction.Targets moves down, and the L0 compaction writes
// newer data into the new base level, below a level that still holds older
// versions of the same keys. Reads search levels top-down and return the
// older version.
func TestRegressBaseLevelMovesDown(t *testing.T) {
	clk := clock.NewManual(epoch)
	db, err := mayfly.Open("memdb", &mayfly.Options{
		Clock:                 clk,
		Storage:               storage.NewMem(),
		MemtableSize:          1 << 20,
		TargetFileSize:        4 << 10,
		LBaseMaxBytes:         4 << 10,
		LevelSizeRatio:        2,
		L0CompactionThreshold: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// 1. A large bottom level of rows that expire in 10s: the base level
	//    moves up (L2 with these options).
	val := make([]byte, 100)
	for i := range 600 {
		must(db.PutTTL([]byte(fmt.Sprintf("a%05d", i)), val, mayfly.ExpireAfter(10*time.Second)))
	}
	must(db.Compact(ctx, nil, nil))
	t.Logf("after bulk load:%s", levelFiles(db))

	// 2. k=v1 (no expiry) reaches the base level through an L0 compaction.
	must(db.Put([]byte("k"), []byte("v1")))
	must(db.Flush())
	must(db.Put([]byte("k0"), []byte("x")))
	must(db.Flush())
	must(db.WaitForCompactions(ctx))
	t.Logf("after v1:%s", levelFiles(db))

	// 3. The bottom level expires and is reclaimed: the base level is now L6.
	clk.Advance(11 * time.Second)
	must(db.ReclaimExpired(ctx))
	must(db.WaitForCompactions(ctx))
	t.Logf("after reclaim:%s", levelFiles(db))

	// 4. k=v2 goes through an L0 compaction into the new base level.
	must(db.Put([]byte("k"), []byte("v2")))
	must(db.Flush())
	must(db.Put([]byte("k0"), []byte("y")))
	must(db.Flush())
	must(db.WaitForCompactions(ctx))
	t.Logf("after v2:%s", levelFiles(db))

	got, err := db.Get([]byte("k"))
	if err != nil || string(got) != "v2" {
		t.Errorf("Get(k) = %q, %v; want \"v2\" (the newest write)", got, err)
	}
	// A delete must not uncover v1 either.
	must(db.Delete([]byte("k")))
	must(db.Flush())
	must(db.Put([]byte("k0"), []byte("z")))
	must(db.Flush())
	must(db.WaitForCompactions(ctx))
	t.Logf("after delete:%s", levelFiles(db))
	if got, err := db.Get([]byte("k")); !errors.Is(err, mayfly.ErrNotFound) {
		t.Errorf("Get(k) after Delete = %q, %v; want ErrNotFound", got, err)
	}
}

func snapKeys(t *testing.T, s *mayfly.Snapshot, opts *mayfly.IterOptions) []string {
	t.Helper()
	it, err := s.NewIter(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
	}
	return keys
}

// TestRegressSnapshotOfEmptyDBSeesLaterWrites reproduces TestMetamorphic
// seed=10123 (every config, op #26): a snapshot taken before the first
// write pins sequence number 0, which newIter and lookup (since commit
// 330e3db) take to mean "the latest committed state", so the snapshot's
// Get, TTL and iterators see every later write, from the memtable and from
// tables alike. The snapshot is not repeatable.
func TestRegressSnapshotOfEmptyDBSeesLaterWrites(t *testing.T) {
	for _, flushFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeBeforeSnapshot=%v", flushFirst), func(t *testing.T) {
			db, err := mayfly.Open("memdb", &mayfly.Options{Clock: clock.NewManual(epoch), Storage: storage.NewMem()})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if flushFirst {
				if err := db.Put([]byte("a"), []byte("0")); err != nil {
					t.Fatal(err)
				}
			}
			s, err := db.NewSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			before := snapKeys(t, s, nil)
			for _, k := range []string{"k1", "k2"} {
				if err := db.Put([]byte(k), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if got := snapKeys(t, s, nil); !slices.Equal(got, before) {
				t.Errorf("memtable: snapshot iterator = %q, want %q", got, before)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := snapKeys(t, s, nil); !slices.Equal(got, before) {
				t.Errorf("after flush: snapshot iterator = %q, want %q", got, before)
			}
			if got := snapKeys(t, s, &mayfly.IterOptions{UpperBound: []byte("k3")}); !slices.Equal(got, before) {
				t.Errorf("after flush, upper bound k3: snapshot iterator = %q, want %q", got, before)
			}
			if v, err := s.Get([]byte("k1")); !errors.Is(err, mayfly.ErrNotFound) {
				t.Errorf("after flush: snapshot Get(k1) = %q, %v; want ErrNotFound", v, err)
			}
		})
	}
}
