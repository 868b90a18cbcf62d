package tests

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

func TestSnapshotRepeatableAsTimePasses(t *testing.T) {
	e := newEnv(t, nil)
	putTTL(t, e.db, "short", "s", mayfly.ExpireAfter(time.Second))
	put(t, e.db, "perm", "p")
	e.clk.Advance(250 * time.Millisecond)
	snap, err := e.db.NewSnapshot()
	must(t, err)
	defer snap.Close()
	if !snap.Time().Equal(epoch.Add(250 * time.Millisecond)) {
		t.Fatalf("Snapshot.Time = %v; want %v", snap.Time(), epoch.Add(250*time.Millisecond))
	}
	want := []kv{{"perm", "p"}, {"short", "s"}}

	for _, step := range []func(){func() {}, e.flush, e.compact} {
		step()
		e.clk.Advance(time.Hour)
		wantAbsent(t, e.db, "short")
		wantTTLNotFound(t, e.db, "short")
		wantValue(t, snap, "short", "s")
		wantTTL(t, snap, "short", 750*time.Millisecond) // as of the snapshot's time
		wantNoExpiry(t, snap, "perm")
		if got := scanAll(t, snap.NewIter); !slices.Equal(got, want) {
			t.Fatalf("snapshot scan = %v; want %v", got, want)
		}
		it, err := snap.NewIter(nil)
		must(t, err)
		if !it.Last() || string(it.Key()) != "short" || !it.Prev() || string(it.Key()) != "perm" || it.Prev() {
			t.Fatalf("snapshot reverse iteration wrong")
		}
		must(t, it.Close())
	}
}

func TestSnapshotIsolatedFromWrites(t *testing.T) {
	e := newEnv(t, func(o *mayfly.Options) { o.MemtableSize = 32 << 10 })
	const n = 200
	for i := range n {
		put(t, e.db, key(i), fmt.Sprintf("v0-%d", i))
	}
	snap, err := e.db.NewSnapshot()
	must(t, err)
	defer snap.Close()
	before := scanAll(t, snap.NewIter)
	if len(before) != n {
		t.Fatalf("snapshot scan has %d rows; want %d", len(before), n)
	}
	// Heavy churn, spread over memtables, L0 and the bottom level.
	for round := 1; round <= 5; round++ {
		for i := range n {
			switch i % 3 {
			case 0:
				put(t, e.db, key(i), fmt.Sprintf("v%d-%d", round, i))
			case 1:
				del(t, e.db, key(i))
			case 2:
				putTTL(t, e.db, key(i), "ttl", mayfly.ExpireAfter(time.Millisecond))
			}
		}
		put(t, e.db, fmt.Sprintf("new%d", round), "x")
		e.clk.Advance(time.Second)
		if round%2 == 0 {
			e.compact()
		} else {
			e.flush()
		}
		if got := scanAll(t, snap.NewIter); !slices.Equal(got, before) {
			t.Fatalf("round %d: snapshot scan changed (%d rows, want %d)", round, len(got), len(before))
		}
		for i := 0; i < n; i += 17 {
			wantValue(t, snap, key(i), fmt.Sprintf("v0-%d", i))
		}
		wantAbsent(t, snap, fmt.Sprintf("new%d", round))
	}
	// The live view is the latest state.
	wantValue(t, e.db, key(0), "v5-0")
	wantAbsent(t, e.db, key(1))
	wantAbsent(t, e.db, key(2))
}

// TestSnapshotCloseReleasesExpiredData: a snapshot keeps expired rows (and
// overwritten versions) on disk through compaction; closing it lets the
// next compaction reclaim them.
func TestSnapshotCloseReleasesExpiredData(t *testing.T) {
	e := newEnv(t, nil)
	const n = 500
	for i := range n {
		putTTL(t, e.db, key(i), fmt.Sprintf("%0100d", i), mayfly.ExpireAfter(time.Second))
	}
	put(t, e.db, "keep", "k")
	snap, err := e.db.NewSnapshot()
	must(t, err)
	if m := e.db.Metrics(); m.OpenSnapshots != 1 {
		t.Fatalf("OpenSnapshots = %d; want 1", m.OpenSnapshots)
	}
	e.clk.Advance(time.Minute)
	e.compact()
	m := e.db.Metrics()
	if rows, ttl := diskRows(m), diskTTLRows(m); rows != n+1 || ttl != n {
		t.Fatalf("with the snapshot open the tables hold %d rows (%d TTL); want %d (%d TTL)", rows, ttl, n+1, n)
	}
	wantValue(t, snap, key(7), fmt.Sprintf("%0100d", 7))
	wantAbsent(t, e.db, key(7))
	diskWithSnap := m.DiskBytes()

	must(t, snap.Close())
	if m := e.db.Metrics(); m.OpenSnapshots != 0 {
		t.Fatalf("OpenSnapshots = %d after Close; want 0", m.OpenSnapshots)
	}
	e.compact()
	m = e.db.Metrics()
	if rows, ttl := diskRows(m), diskTTLRows(m); rows != 1 || ttl != 0 {
		t.Fatalf("after closing the snapshot the tables hold %d rows (%d TTL); want 1 (0)", rows, ttl)
	}
	if m.DiskBytes() >= diskWithSnap/4 {
		t.Fatalf("disk bytes %d -> %d: expired data not reclaimed", diskWithSnap, m.DiskBytes())
	}
	if m.ExpiredDropped < n {
		t.Fatalf("ExpiredDropped = %d; want >= %d", m.ExpiredDropped, n)
	}
	wantValue(t, e.db, "keep", "k")
}

// TestSnapshotKeepsShadowedVersions: versions only a snapshot can read
// survive compaction, while versions no one can read go.
func TestSnapshotKeepsShadowedVersions(t *testing.T) {
	e := newEnv(t, nil)
	put(t, e.db, "k", "v1")
	s1, err := e.db.NewSnapshot()
	must(t, err)
	put(t, e.db, "k", "v2")
	put(t, e.db, "k", "v3") // v2 is invisible to everyone
	s2, err := e.db.NewSnapshot()
	must(t, err)
	del(t, e.db, "k")
	e.compact()
	wantValue(t, s1, "k", "v1")
	wantValue(t, s2, "k", "v3")
	wantAbsent(t, e.db, "k")
	if rows := diskRows(e.db.Metrics()); rows != 3 {
		t.Fatalf("rows on disk = %d; want 3 (v1, v3, tombstone)", rows)
	}
	must(t, s1.Close())
	e.compact()
	wantValue(t, s2, "k", "v3")
	must(t, s2.Close())
	e.compact()
	if m := e.db.Metrics(); m.DiskBytes() != 0 {
		t.Fatalf("deleted key still on disk with no snapshot open: %+v", m.Levels)
	}
}
