package mayfly

import (
	"strings"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

// advisingStore records which objects were advised to be read at random.
type advisingStore struct {
	*storage.Mem
	mu      sync.Mutex
	advised map[string]int
}

type advisingReader struct {
	storage.ObjectReader
	s    *advisingStore
	name string
}

func (r advisingReader) AdviseRandomReads() {
	r.s.mu.Lock()
	r.s.advised[r.name]++
	r.s.mu.Unlock()
}

func (s *advisingStore) Open(name string) (storage.ObjectReader, error) {
	r, err := s.Mem.Open(name)
	if err != nil {
		return nil, err
	}
	return advisingReader{r, s, name}, nil
}

// TestTablesOpenedForRandomReads: every table the engine opens for reading
// is advised to be read at random (storage.RandomReadAdviser), and no
// other object is.
func TestTablesOpenedForRandomReads(t *testing.T) {
	s := &advisingStore{Mem: storage.NewMem(), advised: map[string]int{}}
	db := openTestDB(t, "", clock.NewManual(epoch), func(o *Options) { o.Storage = s })
	for i := range 3 {
		if err := db.Put([]byte{byte('a' + i)}, []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	mustGet(t, db, "b", "v")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tables := 0
	for name := range s.advised {
		if !strings.HasPrefix(name, "sst/") {
			t.Errorf("%s advised for random reads; only tables are", name)
		}
		tables++
	}
	if tables < 3 {
		t.Fatalf("%d tables advised for random reads (%v), want every one of the 3 flushed", tables, s.advised)
	}
}
