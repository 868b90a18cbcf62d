package mayfly

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

func TestEventListener(t *testing.T) {
	var mu sync.Mutex
	var events []string
	rec := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
	// Flush returns once the flushed table is installed; the flush goroutine
	// deletes the WAL segment and reports FlushEnd right after.
	flushEnded := make(chan struct{})
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) {
		o.EventListener = &EventListener{
			FlushBegin: func(FlushInfo) { rec("flush-begin") },
			FlushEnd: func(i FlushInfo) {
				rec(fmt.Sprintf("flush-end rows=%d", i.Rows))
				close(flushEnded)
			},
			CompactionBegin: func(i CompactionInfo) { rec("compaction-begin " + i.Kind) },
			CompactionEnd: func(i CompactionInfo) {
				rec(fmt.Sprintf("compaction-end %s dropped=%d", i.Kind, i.ExpiredDropped))
			},
			WALCreated: func(WALInfo) { rec("wal-created") },
			WALDeleted: func(WALInfo) { rec("wal-deleted") },
		}
	})
	defer db.Close()
	db.PutTTL([]byte("a"), []byte("1"), ExpireAfter(time.Second))
	db.Put([]byte("b"), []byte("2"))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	<-flushEnded
	mu.Lock()
	defer mu.Unlock()
	// The flush goroutine and the compaction interleave; each one's own
	// events are ordered.
	want := []string{"compaction-begin manual", "compaction-end manual dropped=1", "flush-begin", "flush-end rows=2", "wal-created", "wal-created", "wal-deleted"}
	got := slices.Sorted(slices.Values(events))
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events:\n got %s\nwant %s", strings.Join(got, "|"), strings.Join(want, "|"))
	}
	before := func(a, b string) {
		if slices.Index(events, a) > slices.Index(events, b) {
			t.Errorf("%q after %q in %v", a, b, events)
		}
	}
	before("flush-begin", "flush-end rows=2")
	before("compaction-begin manual", "compaction-end manual dropped=1")
}
