package mayfly

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

// TestSlowdownDelayRate: the delay charged for a commit is its bytes at a
// rate that is (stop-slow)^2 times slowdownStopRate at the slowdown
// threshold and falls to slowdownStopRate one file below the stop threshold,
// strictly increasing in between; no delay
// below the slowdown threshold or at the stop threshold (there writes stop).
func TestSlowdownDelayRate(t *testing.T) {
	const slow, stop = 16, 24
	const mib = 1 << 20
	if d := slowdownDelay(slow-1, slow, stop, mib); d != 0 {
		t.Errorf("below the slowdown threshold: delay %v, want 0", d)
	}
	if d := slowdownDelay(stop, slow, stop, mib); d != 0 {
		t.Errorf("at the stop threshold: delay %v, want 0 (a stall, not a delay)", d)
	}
	if d := slowdownDelay(slow, slow, 24, 0); d != 0 {
		t.Errorf("empty commit: delay %v, want 0", d)
	}
	// 16 MiB at 16 MiB/s one file below the stop: one second.
	if d := slowdownDelay(stop-1, slow, stop, slowdownStopRate); d != time.Second {
		t.Errorf("one file below the stop threshold: %d bytes delayed %v, want 1s", slowdownStopRate, d)
	}
	// At the slowdown threshold the rate is 8^2 times higher.
	if d, want := slowdownDelay(slow, slow, stop, slowdownStopRate), time.Second/((stop-slow)*(stop-slow)); d != want {
		t.Errorf("at the slowdown threshold: delayed %v, want %v", d, want)
	}
	prev := time.Duration(0)
	for l0 := slow; l0 < stop; l0++ {
		d := slowdownDelay(l0, slow, stop, mib)
		if d <= prev {
			t.Errorf("level 0 at %d files: delay %v, not above %v at one file fewer", l0, d, prev)
		}
		prev = d
	}
	// A 1-byte commit is charged proportionally, not a fixed quantum.
	if d := slowdownDelay(stop-1, slow, stop, 100); d <= 0 || d >= 10*time.Microsecond {
		t.Errorf("100 bytes one file below the stop threshold: %v, want (0, 10µs)", d)
	}
}

// openSlowedDB opens a database with level 0 held at its slowdown
// threshold: 3 flushed tables, slowdown at 3, stop and compaction at 4 (so
// nothing compacts level 0), and sleeps recorded instead of slept.
func openSlowedDB(t *testing.T) (*DB, *[]time.Duration) {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "db"), &Options{
		Clock:                     clock.NewManual(epoch),
		L0CompactionThreshold:     4,
		L0SlowdownWritesThreshold: 3,
		L0StopWritesThreshold:     4,
	})
	if err != nil {
		t.Fatal(err)
	}
	var sleeps []time.Duration
	db.commitMu.Lock()
	db.slowdown.sleepFn = func(d time.Duration) time.Duration {
		sleeps = append(sleeps, d)
		return d
	}
	db.commitMu.Unlock()
	for i := range 3 {
		// Overlapping tables: key-disjoint ones would count as one file
		// (compaction.SliceRun).
		for _, k := range []string{"flushed-a", "flushed-z"} {
			if err := db.Put([]byte(k), fmt.Appendf(nil, "v%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if n := db.Metrics().Levels[0].Files; n != 3 {
		t.Fatalf("level 0 has %d files, want 3", n)
	}
	return db, &sleeps
}

func sumDurations(ds []time.Duration) (sum time.Duration) {
	for _, d := range ds {
		sum += d
	}
	return sum
}

// TestSlowdownIsARateNotACliff: a single writer of small rows with level 0
// in the slowdown zone is held to the slowdown rate: its delay is its bytes
// at that rate, slept in a few quanta, not one sleep per commit (the old
// rule slept 1 ms for each of the 10,000 puts here: 10 s, about 1k puts/s).
func TestSlowdownIsARateNotACliff(t *testing.T) {
	db, sleeps := openSlowedDB(t)
	defer db.Close()
	*sleeps = nil
	before := db.Metrics()
	const n = 10000
	value := make([]byte, 100)
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "key%08d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	m := db.Metrics()
	walBytes := int(m.WALBytes - before.WALBytes)
	// Level 0 one file below the stop threshold: slowdownStopRate.
	want := time.Duration(float64(walBytes) / slowdownStopRate * float64(time.Second))
	got := sumDurations(*sleeps)
	t.Logf("%d puts, %d WAL bytes: %d sleeps totalling %v (want about %v), %d slowed commits",
		n, walBytes, len(*sleeps), got, want, m.WriteSlowdowns-before.WriteSlowdowns)
	if got < want*8/10 || got > want*12/10 {
		t.Errorf("slept %v for %d bytes, want %v ±20%% (%d bytes/s)", got, walBytes, want, slowdownStopRate)
	}
	if len(*sleeps) > n/10 {
		t.Errorf("%d sleeps for %d puts: a delay per commit, not a rate", len(*sleeps), n)
	}
	for _, d := range *sleeps {
		if d < slowdownQuantum || d > slowdownSlice {
			t.Fatalf("a sleep of %v, outside [%v, %v]", d, slowdownQuantum, slowdownSlice)
		}
	}
	if s := m.WriteSlowdowns - before.WriteSlowdowns; s == 0 || s > uint64(len(*sleeps)) {
		t.Errorf("WriteSlowdowns grew by %d with %d sleeps", s, len(*sleeps))
	}
}

// TestSlowdownLargeBatchSlicedAndForgiven: a large batch's delay is slept in
// slices of at most slowdownSlice; once level 0 is compacted below the
// slowdown threshold, nothing more is owed and writes are not delayed.
func TestSlowdownLargeBatchSlicedAndForgiven(t *testing.T) {
	db, sleeps := openSlowedDB(t)
	defer db.Close()
	*sleeps = nil
	b := db.NewBatch()
	value := make([]byte, 1000)
	for i := range 1000 { // about 1 MB: about 60 ms at 16 MiB/s
		b.Put(fmt.Appendf(nil, "big%06d", i), value)
	}
	size := b.Size()
	if err := b.Write(nil); err != nil {
		t.Fatal(err)
	}
	want := slowdownDelay(3, 3, 4, size)
	got := sumDurations(*sleeps)
	if len(*sleeps) < int(want/slowdownSlice) || got < want-slowdownQuantum || got > want {
		t.Errorf("a %d-byte batch slept %v in %d slices, want %v in slices of at most %v", size, got, len(*sleeps), want, slowdownSlice)
	}
	for _, d := range *sleeps {
		if d > slowdownSlice {
			t.Errorf("a slice of %v, above %v", d, slowdownSlice)
		}
	}
	// Compact level 0 away: the slowdown ends and no debt is carried.
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := db.Metrics().Levels[0].Files; n >= 3 {
		t.Fatalf("level 0 still has %d files after Compact", n)
	}
	*sleeps = nil
	slowed := db.Metrics().WriteSlowdowns
	for i := range 1000 {
		if err := db.Put(fmt.Appendf(nil, "after%06d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	if len(*sleeps) != 0 || db.Metrics().WriteSlowdowns != slowed {
		t.Errorf("%d sleeps (%v) and %d slowed commits after level 0 was compacted",
			len(*sleeps), sumDurations(*sleeps), db.Metrics().WriteSlowdowns-slowed)
	}
}

// TestSlowdownOversleepCredited: a sleep that overruns its request (a
// loaded machine's timer) is credited to the following commits, up to
// slowdownSlice, so that the writer is held to the rate and not below it.
func TestSlowdownOversleepCredited(t *testing.T) {
	var s slowdownState
	var asked []time.Duration
	s.sleepFn = func(d time.Duration) time.Duration {
		asked = append(asked, d)
		return 3 * d
	}
	slept := time.Duration(0)
	for range 100 { // 100 commits owing 0.5 ms each: 50 ms owed
		s.debt += slowdownQuantum / 2
		if d := s.next(); d > 0 {
			s.sleep(d)
			slept += 3 * d
		}
	}
	if want := 50 * time.Millisecond; slept < want-slowdownQuantum || slept > want+3*slowdownQuantum {
		t.Errorf("slept %v in %d sleeps for 50ms owed, want 50ms within the last overrun", slept, len(asked))
	}
	// The credit is bounded: a long overrun does not buy a long unthrottled burst.
	s.debt = slowdownQuantum
	s.sleepFn = func(time.Duration) time.Duration { return time.Second }
	s.sleep(s.next())
	if s.debt != -slowdownSlice {
		t.Errorf("after a 1s overrun the debt is %v, want %v", s.debt, -slowdownSlice)
	}
}
