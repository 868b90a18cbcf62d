package mayfly

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

// declaredStore is an in-memory store that declares its traits.
type declaredStore struct {
	*storage.Mem
	traits storage.Traits
}

func (s declaredStore) Traits() storage.Traits { return s.traits }

// TestStorageDefaultsFollowDeclaredTraits checks that the defaults that
// depend on the backend follow the traits it declares, not the interfaces
// it happens to implement.
func TestStorageDefaultsFollowDeclaredTraits(t *testing.T) {
	for _, c := range []struct {
		name              string
		store             storage.Storage
		grace             time.Duration
		readAhead         int
		compRA, raAfter   int
		independentMisses bool
	}{
		{"declared remote", declaredStore{storage.NewMem(), storage.Traits{Remote: true}}, time.Minute, defaultObjectReadAhead, 0, 0, false},
		{"declared local", declaredStore{storage.NewMem(), storage.Traits{}}, 0, defaultLocalReadAhead, -1, localReadAheadAfter, true},
		{"fencer declaring nothing", fencingMem{storage.NewMem()}, time.Minute, defaultObjectReadAhead, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &Options{Storage: c.store}
			db, err := Open("", o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if db.opts.ObsoleteFileGracePeriod != c.grace || db.opts.ReadAheadSize != c.readAhead {
				t.Errorf("grace %v, read-ahead %d; want %v, %d", db.opts.ObsoleteFileGracePeriod, db.opts.ReadAheadSize, c.grace, c.readAhead)
			}
			if db.compactionReadAhead != c.compRA || db.readAheadAfter != c.raAfter || db.localTables != c.independentMisses {
				t.Errorf("compaction read-ahead %d, read ahead after %d, independent misses %v; want %d, %d, %v",
					db.compactionReadAhead, db.readAheadAfter, db.localTables, c.compRA, c.raAfter, c.independentMisses)
			}
			if o.ObsoleteFileGracePeriod != 0 || o.ReadAheadSize != 0 {
				t.Error("Open changed the caller's Options")
			}
		})
	}
}

// TestOpenRefusesLockFreeWithoutFencing: a backend that declares itself
// lock-free but fences no log could not keep two writers apart.
func TestOpenRefusesLockFreeWithoutFencing(t *testing.T) {
	mem := storage.NewMem()
	_, err := Open("", &Options{Storage: declaredStore{mem, storage.Traits{Remote: true, LockFree: true}}})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "LogFencer") {
		t.Fatalf("Open = %v; want an error wrapping ErrInvalidOptions naming storage.LogFencer", err)
	}
	if names, _ := mem.List("manifest"); len(names) != 0 {
		t.Fatalf("the refused Open wrote %v", names)
	}
}
