package mayfly

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// TestAgeRotation: a memtable of TTL rows is rotated once half the time to
// its first expiry has passed — by the next write, or, with no writes, by
// the scheduler — but not before, and not by age when it holds no TTL rows.
func TestAgeRotation(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(epoch)
	// 64 MiB memtable: never full here. The fraction is set to one half
	// (the default is a quarter) so that the steps below read as halves.
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.MemtableExpiryFraction = 0.5 })
	defer db.Close()
	put := func(k string, ttl time.Duration) {
		t.Helper()
		if err := db.PutTTL([]byte(k), []byte("v-"+k), ExpireAfter(ttl)); err != nil {
			t.Fatal(err)
		}
	}
	wantFlushes := func(want uint64, what string) {
		t.Helper()
		if err := db.WaitForCompactions(ctx); err != nil {
			t.Fatal(err)
		}
		if n := db.Metrics().Flushes; n != want {
			t.Fatalf("%s: %d flushes, want %d", what, n, want)
		}
	}

	// Rows without expiry never rotate by age.
	if err := db.Put([]byte("plain"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if err := db.Put([]byte("plain2"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	wantFlushes(0, "memtable without TTL rows")

	// First TTL row at T with a 10 s TTL: due at T+5 s.
	put("a", 10*time.Second)
	clk.Advance(4 * time.Second)
	put("b", 10*time.Second)
	wantFlushes(0, "rotated at 40% of the TTL")
	clk.Advance(time.Second) // exactly half
	put("c", 10*time.Second)
	wantFlushes(1, "not rotated at 50% of the TTL by a write")

	// Idle: no write after the first TTL row; the scheduler rotates.
	put("d", 4*time.Second)
	clk.Advance(2 * time.Second)
	wantFlushes(2, "idle memtable not rotated at 50% of the TTL")

	// Very short TTLs: never rotated before one second.
	put("e", 100*time.Millisecond)
	clk.Advance(999 * time.Millisecond)
	put("f", 100*time.Millisecond)
	wantFlushes(2, "rotated younger than 1 s")
	clk.Advance(time.Millisecond)
	wantFlushes(3, "not rotated at 1 s")

	// Disabled: rotation by size only.
	db2 := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.MemtableExpiryFraction = -1 })
	defer db2.Close()
	if err := db2.PutTTL([]byte("a"), []byte("v"), ExpireAfter(time.Second)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if err := db2.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	if n := db2.Metrics().Flushes; n != 0 {
		t.Fatalf("rotation by age disabled but %d flushes", n)
	}
}

// churnKey is the i-th write-once key of the churn workload: random order,
// like a session ID.
func churnKey(i int) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(i)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	return k
}

// churnValue is the value of the i-th row: 50 pseudo-random printable bytes
// repeated twice, so that it compresses to about half, like the values of
// the bench/ harness.
func churnValue(i int) []byte {
	v := make([]byte, 100)
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	for j := range 50 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[j] = byte(' ' + x%95)
	}
	copy(v[50:], v[:50])
	return v
}

// runChurn writes rate rows/s of 5 s TTL in 10 ms steps of manual time for
// secs seconds, letting the background catch up every second, and returns
// the mean ratio of directory bytes to live logical bytes sampled each
// second after the first 3 TTL periods (as the bench/ harness measures). Every 5 s it reads back every row still within its
// TTL and some already expired.
func runChurn(t *testing.T, fraction float64, rate, secs int) float64 {
	ctx := context.Background()
	const ttl = 5 * time.Second
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	db := openTestDB(t, dir, clk, func(o *Options) { o.MemtableExpiryFraction = fraction })
	defer db.Close()
	perStep := rate / 100
	rowBytes := int64(len(churnKey(0)) + len(churnValue(0)))
	liveRows := rate * int(ttl/time.Second)
	sum, samples := 0.0, 0
	n := 0
	for step := 0; step < secs*100; step++ {
		for j := 0; j < perStep; j++ {
			if err := db.PutTTL(churnKey(n), churnValue(n), ExpireAfter(ttl)); err != nil {
				t.Fatal(err)
			}
			n++
		}
		clk.Advance(10 * time.Millisecond)
		if step%100 != 99 {
			continue
		}
		if err := db.WaitForCompactions(ctx); err != nil {
			t.Fatal(err)
		}
		sec := (step + 1) / 100
		if sec >= 3*int(ttl/time.Second) {
			sum += float64(dirBytes(t, dir)) / float64(int64(liveRows)*rowBytes)
			samples++
		}
		if sec%5 != 0 {
			continue
		}
		// Rows written in the last 5 s (500 steps) are live: the oldest
		// of them was written 4.99 s ago. Rows older than 5.01 s are gone.
		for i := max(0, n-liveRows); i < n; i++ {
			v, err := db.Get(churnKey(i))
			if err != nil || string(v) != string(churnValue(i)) {
				t.Fatalf("second %d: live row %d: %q, %v", sec, i, v, err)
			}
		}
		for i := max(0, n-liveRows-3*perStep); i < n-liveRows-perStep; i++ {
			if v, err := db.Get(churnKey(i)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second %d: expired row %d: %q, %v", sec, i, v, err)
			}
		}
	}
	return sum / float64(samples)
}

// TestChurnSpaceBound: under a steady stream of 5 s TTL rows, rotation by
// age keeps the directory within 1.4 times the live bytes on average (RFC
// 0004, "Memtable rotation by age": the WAL and level 0 span L + f*L/2 of
// writes on average, 1.125 TTL periods, the WAL part with ~40% framing, the
// SSTables compressing these values to ~0.9, plus up to 64 KiB of
// preallocated WAL tail; measured 0.96-1.06 at the default fraction 0.25,
// 1.05-1.22 at the former default 0.5 with the preallocated WAL,
// under -race and a loaded machine included — the scheduler's rotation on a
// clock advance races with the writer, so the figure varies). Without it
// the WAL of a memtable that never fills grows without bound (measured
// 5.3-6.3).
func TestChurnSpaceBound(t *testing.T) {
	const rate, secs = 1000, 25
	if amp := runChurn(t, 0, rate, secs); amp > 1.4 {
		t.Fatalf("space amplification %.2f with rotation by age, want <= 1.4", amp)
	} else {
		t.Logf("space amplification with rotation by age: %.2f", amp)
	}
	if amp := runChurn(t, -1, rate, secs); amp <= 1.4 {
		t.Fatalf("space amplification %.2f without rotation by age: the bound is not what keeps it low", amp)
	} else {
		t.Logf("space amplification without rotation by age: %.2f", amp)
	}
}

// TestExpiredRowHidesOlderVersion: a row that expires in the memtable is
// flushed as it is (not as a tombstone) and must keep hiding the older
// version beneath it through the flush, compactions and a reopen; where no
// older version can exist the flush drops it.
func TestExpiredRowHidesOlderVersion(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	db := openTestDB(t, dir, clk, nil)
	mustPut := func(k, v string, ttl TTL) {
		t.Helper()
		if err := db.PutTTL([]byte(k), []byte(v), ttl); err != nil {
			t.Fatal(err)
		}
	}
	mustMissing := func(stage, k string) {
		t.Helper()
		if v, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: %s = %q, %v; want not found", stage, k, v, err)
		}
	}
	for i := 0; i < 100; i++ {
		mustPut(fmt.Sprintf("k%03d", i), "old", DefaultTTL())
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i += 2 {
		mustPut(fmt.Sprintf("k%03d", i), "new", ExpireAfter(2*time.Second))
	}
	// Keys after every table: nothing older beneath them.
	mustPut("z-expiring", "x", ExpireAfter(2*time.Second))
	mustPut("z-live", "y", ExpireAfter(time.Hour))
	clk.Advance(3 * time.Second) // expired in the memtable; due for rotation
	if err := db.WaitForCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Flushes != 2 || m.MemtableBytes != 0 {
		t.Fatalf("idle memtable not flushed: %d flushes, %d bytes left", m.Flushes, m.MemtableBytes)
	}
	check := func(stage string) {
		t.Helper()
		for i := 0; i < 100; i++ {
			k := fmt.Sprintf("k%03d", i)
			if i%2 == 0 {
				mustMissing(stage, k)
			} else {
				mustGet(t, db, k, "old")
			}
		}
		mustMissing(stage, "z-expiring")
		mustGet(t, db, "z-live", "y")
	}
	check("after flush")
	if m.ExpiredToTombstone != 0 {
		t.Fatalf("flush turned %d expired rows into tombstones", m.ExpiredToTombstone)
	}
	if err := db.ReclaimExpired(ctx); err != nil {
		t.Fatal(err)
	}
	check("after ReclaimExpired")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, dir, clk, nil)
	defer db.Close()
	check("after reopen")
}

// TestFlushDropsExpiredAtBottom: a flush whose key range overlaps no table
// drops the rows that expired in the memtable, and keeps the rest.
func TestFlushDropsExpiredAtBottom(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, func(o *Options) { o.MemtableExpiryFraction = -1 })
	defer db.Close()
	for i := 0; i < 100; i++ {
		ttl := ExpireAfter(time.Second)
		if i%4 == 0 {
			ttl = DefaultTTL()
		}
		if err := db.PutTTL([]byte(fmt.Sprintf("k%03d", i)), []byte("v"), ttl); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Second)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.ExpiredDropped != 75 || m.Levels[0].Rows != 25 {
		t.Fatalf("flush dropped %d expired rows and kept %d rows; want 75 and 25", m.ExpiredDropped, m.Levels[0].Rows)
	}
	for i := 0; i < 100; i++ {
		if v, err := db.Get([]byte(fmt.Sprintf("k%03d", i))); i%4 == 0 && (err != nil || string(v) != "v") || i%4 != 0 && !errors.Is(err, ErrNotFound) {
			t.Fatalf("k%03d: %q, %v", i, v, err)
		}
	}
}

// TestRecoveryKeepsTombstoneOverEarlierMemtable: recovery flushes several
// memtables before recording any of their tables, so a later one must not
// be treated as the bottom: its tombstone still hides the value an earlier
// one holds.
func TestRecoveryKeepsTombstoneOverEarlierMemtable(t *testing.T) {
	clk := clock.NewManual(epoch)
	dir := t.TempDir()
	db := openTestDB(t, dir, clk, func(o *Options) { o.MemtableExpiryFraction = -1 })
	if err := db.Put([]byte("k"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if err := db.Put([]byte(fmt.Sprintf("f%04d", i)), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Delete([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Replayed into 4 KiB memtables: the put and the delete land in
	// different ones.
	db = openTestDB(t, dir, clk, func(o *Options) { o.MemtableSize = 4 << 10 })
	defer db.Close()
	if m := db.Metrics(); m.Levels[0].Files < 2 {
		t.Fatalf("recovery wrote %d tables, want several", m.Levels[0].Files)
	}
	if v, err := db.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key after recovery: %q, %v", v, err)
	}
}

// TestDefaultMemtableSize checks that a zero Options.MemtableSize means
// DefaultMemtableSize: the active memtable is not rotated while it is below
// that size and is rotated by the first write that finds it full.
func TestDefaultMemtableSize(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	if db.opts.MemtableSize != DefaultMemtableSize {
		t.Fatalf("resolved MemtableSize = %d, want %d", db.opts.MemtableSize, DefaultMemtableSize)
	}
	val := make([]byte, 4<<10)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%08d", i) }
	i := 0
	for ; db.Metrics().MemtableBytes < DefaultMemtableSize; i++ {
		if err := db.Put(key(i), val); err != nil {
			t.Fatal(err)
		}
		if m := db.Metrics(); m.ImmutableMemtables != 0 || m.Flushes != 0 {
			t.Fatalf("memtable rotated at %d bytes, below the default %d", m.MemtableBytes, DefaultMemtableSize)
		}
	}
	if err := db.Put(key(i), val); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.ImmutableMemtables+int(m.Flushes) == 0 || m.MemtableBytes >= DefaultMemtableSize {
		t.Fatalf("full memtable not rotated: active %d bytes, %d immutable, %d flushes",
			m.MemtableBytes, m.ImmutableMemtables, m.Flushes)
	}
}
