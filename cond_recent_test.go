package mayfly

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/format"
)

// TestRecentWritesNote: note raises the slot of every key of a batch to the
// batch's last sequence number and no other slot but by chance; an
// undecodable batch raises every slot; without tracking nothing is proven.
func TestRecentWritesNote(t *testing.T) {
	var rw recentWrites
	if rw.unchangedSince(recentSlot([]byte("k")), 100) {
		t.Fatal("untracked: proved a key unchanged")
	}
	rw.slots = new([recentSlots]uint64)
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	b := db.NewBatch()
	defer b.Close()
	must(t, b.Put([]byte("k"), []byte("v")))
	must(t, b.Delete([]byte("gone")))
	must(t, b.stamp(6, epoch.UnixMilli()))
	rw.note(b.data, 7)
	for _, key := range []string{"k", "gone"} {
		if rw.unchangedSince(recentSlot([]byte(key)), 6) {
			t.Errorf("%s logged at 7: proved unchanged since 6", key)
		}
		if !rw.unchangedSince(recentSlot([]byte(key)), 7) {
			t.Errorf("%s logged at 7: not proved unchanged since 7", key)
		}
	}
	proved := 0
	for i := range 1000 {
		if rw.unchangedSince(recentSlot(fmt.Appendf(nil, "other%d", i)), 0) {
			proved++
		}
	}
	if proved < 990 {
		t.Errorf("only %d of 1000 keys never logged proved unchanged", proved)
	}
	rw.note([]byte{1, 2, 3}, 9)
	if rw.unchangedSince(recentSlot([]byte("other0")), 8) {
		t.Fatal("proved a key unchanged past a batch that did not decode")
	}
}

// blockedApply arranges that the next batch applied by its writer on db
// with a row of key blocks, once logged, until released: by unblock, or by
// any other batch reaching its writer's apply (it was logged after the
// blocked one, and its writer waits for the blocked one to be published).
// drain, if set, runs when the leader is about to wait for the publish
// queue to empty.
type blockedApply struct {
	key      string
	logged   chan struct{} // closed when the batch is logged and blocked
	release  chan struct{}
	once     sync.Once
	releases sync.Once
}

func blockApplyOf(db *DB, key string, drain func()) *blockedApply {
	ba := &blockedApply{key: key, logged: make(chan struct{}), release: make(chan struct{})}
	db.pub.beforeApply = func(b *Batch) {
		br, err := format.NewBatchReader(b.data)
		var r format.Row
		if err != nil {
			return
		}
		if ok, _ := br.Next(&r); !ok {
			return
		}
		blocked := false
		if string(r.Key) == ba.key {
			ba.once.Do(func() { blocked = true })
		}
		if !blocked {
			ba.unblock()
			return
		}
		close(ba.logged)
		<-ba.release
	}
	db.pub.beforeDrain = drain
	return ba
}

func (ba *blockedApply) unblock() { ba.releases.Do(func() { close(ba.release) }) }

// startBlockedPut puts key=value from another goroutine, whose apply ba
// blocks, and returns once the put is logged; the put's outcome arrives on
// the returned channel once released.
func startBlockedPut(t *testing.T, db *DB, ba *blockedApply, value string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- db.Put([]byte(ba.key), []byte(value)) }()
	<-ba.logged
	return done
}

// sameSlotKey returns a key other than key in key's slot.
func sameSlotKey(t *testing.T, key string) string {
	t.Helper()
	want := recentSlot([]byte(key))
	for i := range 1 << 20 {
		k := fmt.Sprintf("collide%d", i)
		if recentSlot([]byte(k)) == want {
			return k
		}
	}
	t.Fatal("no key shares the slot")
	return ""
}

// TestRecentWritesRaisedAtLogTime: a blind write raises its key's slot when
// it is logged, before it is applied.
func TestRecentWritesRaisedAtLogTime(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	if _, err := db.PutIfAbsent([]byte("on"), []byte("v"), NoExpiry()); err != nil {
		t.Fatal(err)
	}
	ba := blockApplyOf(db, "k", nil)
	defer ba.unblock()
	done := startBlockedPut(t, db, ba, "v")
	db.commitMu.Lock()
	slot, last := db.recent.slots[recentSlot([]byte("k"))], db.lastSeq
	db.commitMu.Unlock()
	if visible := db.visibleSeq.Load(); visible >= last {
		t.Fatalf("visible %d: the blocked put (seq %d) is not pending", visible, last)
	}
	if slot != last {
		t.Fatalf("slot of a logged, unapplied put is %d, want its sequence number %d", slot, last)
	}
	ba.unblock()
	must(t, <-done)
}

// TestProofSeesLoggedUnappliedWrite: a put of the key logged after a
// single-key call's read but not yet applied when the call commits must
// decide the call: the peek is not proven, the leader drains and sees it.
func TestProofSeesLoggedUnappliedWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup bool // the key holds "v1" first
		call  func(db *DB) (string, error)
		want  string
	}{
		{"PutIfAbsent", false, func(db *DB) (string, error) {
			ok, err := db.PutIfAbsent([]byte("k"), []byte("mine"), NoExpiry())
			return fmt.Sprint(ok), err
		}, "false"},
		{"GetDel", true, func(db *DB) (string, error) {
			v, err := db.GetDel([]byte("k"))
			return string(v), err
		}, "v2"},
		{"CompareAndSwap", true, func(db *DB) (string, error) {
			ok, err := db.CompareAndSwap([]byte("k"), []byte("v1"), []byte("mine"), NoExpiry())
			return fmt.Sprint(ok), err
		}, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
			defer db.Close()
			if tc.setup {
				must(t, db.Put([]byte("k"), []byte("v1")))
			}
			if _, err := db.PutIfAbsent([]byte("on"), []byte("v"), NoExpiry()); err != nil {
				t.Fatal(err)
			}
			var ba *blockedApply
			ba = blockApplyOf(db, "k", func() { ba.unblock() })
			defer ba.unblock()
			done := startBlockedPut(t, db, ba, "v2")
			m0 := db.Metrics()
			got, err := tc.call(db)
			if err != nil || got != tc.want {
				t.Fatalf("%s after a logged, unapplied put = %q, %v; want %q", tc.name, got, err, tc.want)
			}
			must(t, <-done)
			if m := db.Metrics(); m.CondGroupsDrained != m0.CondGroupsDrained+1 || m.CondGroupsProven != m0.CondGroupsProven {
				t.Fatalf("proven %d, drained %d groups; want 0, 1", m.CondGroupsProven-m0.CondGroupsProven, m.CondGroupsDrained-m0.CondGroupsDrained)
			}
		})
	}
}

// TestProofSameSlotFallsBack: a write of another key in the call's slot,
// logged and not applied, only sends the call to the draining path, whose
// answer is still right.
func TestProofSameSlotFallsBack(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	if _, err := db.PutIfAbsent([]byte("on"), []byte("v"), NoExpiry()); err != nil {
		t.Fatal(err)
	}
	var ba *blockedApply
	ba = blockApplyOf(db, sameSlotKey(t, "k"), func() { ba.unblock() })
	defer ba.unblock()
	done := startBlockedPut(t, db, ba, "v")
	m0 := db.Metrics()
	if ok, err := db.PutIfAbsent([]byte("k"), []byte("mine"), NoExpiry()); !ok || err != nil {
		t.Fatalf("PutIfAbsent of an absent key = %v, %v", ok, err)
	}
	must(t, <-done)
	if m := db.Metrics(); m.CondGroupsDrained != m0.CondGroupsDrained+1 || m.CondGroupsProven != m0.CondGroupsProven {
		t.Fatalf("proven %d, drained %d groups; want 0, 1", m.CondGroupsProven-m0.CondGroupsProven, m.CondGroupsDrained-m0.CondGroupsDrained)
	}
	mustGet(t, db, "k", "mine")
}

// TestProvenCallDoesNotDrain: a call whose peek is proven commits while an
// earlier batch of another slot is logged and not applied: it does not wait
// for that batch (the leader never drains; the call's own apply releases
// the earlier one), and returns once both are visible.
func TestProvenCallDoesNotDrain(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	if _, err := db.PutIfAbsent([]byte("on"), []byte("v"), NoExpiry()); err != nil {
		t.Fatal(err)
	}
	must(t, db.Put([]byte("tok"), []byte("t1")))
	other := "k"
	for recentSlot([]byte(other)) == recentSlot([]byte("tok")) || recentSlot([]byte(other)) == recentSlot([]byte("blocked")) {
		other += "x"
	}
	var ba *blockedApply
	ba = blockApplyOf(db, "blocked", func() {
		t.Error("the leader of a proven group drained the publish queue")
		ba.unblock()
	})
	defer ba.unblock()
	done := startBlockedPut(t, db, ba, "v")
	m0 := db.Metrics()
	if ok, err := db.PutIfAbsent([]byte(other), []byte("mine"), NoExpiry()); !ok || err != nil {
		t.Fatalf("PutIfAbsent of an absent key = %v, %v", ok, err)
	}
	must(t, <-done)
	if v, err := db.GetDel([]byte("tok")); err != nil || string(v) != "t1" {
		t.Fatalf("GetDel = %q, %v", v, err)
	}
	if m := db.Metrics(); m.CondGroupsProven != m0.CondGroupsProven+2 || m.CondGroupsDrained != m0.CondGroupsDrained {
		t.Fatalf("proven %d, drained %d groups; want 2, 0", m.CondGroupsProven-m0.CondGroupsProven, m.CondGroupsDrained-m0.CondGroupsDrained)
	}
	mustGet(t, db, other, "mine")
	if _, err := db.Get([]byte("tok")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after GetDel: %v", err)
	}
}

// TestEnableRecentWritesDrains: a batch logged before tracking starts is in
// no slot; turning tracking on waits until it is visible, so the first
// call's read sees it.
func TestEnableRecentWritesDrains(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	var ba *blockedApply
	ba = blockApplyOf(db, "k", func() { ba.unblock() })
	defer ba.unblock()
	done := startBlockedPut(t, db, ba, "v")
	if ok, err := db.PutIfAbsent([]byte("k"), []byte("mine"), NoExpiry()); ok || err != nil {
		t.Fatalf("first PutIfAbsent after a logged, unapplied put = %v, %v; want false", ok, err)
	}
	must(t, <-done)
	mustGet(t, db, "k", "v")
}

// commitAsGroup commits batches as one group, as a leader does, and has
// each batch pushed to the publish queue applied by a writer of its own;
// after[i], if set, runs right after the writer of batch i returns. It
// returns the group's waiters, each with its outcome.
func commitAsGroup(t *testing.T, db *DB, batches []*Batch, after map[int]func()) []*commitWaiter {
	t.Helper()
	group := make([]*commitWaiter, len(batches))
	for i, b := range batches {
		group[i] = &commitWaiter{batch: b, wake: make(chan struct{}, 1)}
	}
	db.commitMu.Lock()
	err := db.commitGroup(group)
	db.commitMu.Unlock()
	must(t, err)
	var wg sync.WaitGroup
	for i, g := range group {
		if !g.done { // pushed to the publish queue
			wg.Go(func() {
				g.err = db.applyLogged(g)
				if f := after[i]; f != nil {
					f()
				}
			})
		}
	}
	wg.Wait()
	return group
}

// TestProofFailsWithinGroup: in one group, a blind put of the key before a
// call whose peek predates it: the table proved the peek before the group,
// the put raises the slot within it, and the group is stamped again on the
// draining path, where the call's condition fails.
func TestProofFailsWithinGroup(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	put, call := db.NewBatch(), db.NewBatch()
	defer put.Close()
	defer call.Close()
	must(t, put.Put([]byte("k"), []byte("v")))
	must(t, call.PutIfAbsent([]byte("k"), []byte("mine"), NoExpiry()))
	must(t, db.peekKey([]byte("k"), false, &call.cond.peek))
	db.commitMu.Lock()
	provable := db.recent.provable([]*commitWaiter{{batch: call}}, db.mem.LogNum())
	db.commitMu.Unlock()
	if !provable {
		t.Fatal("the call's peek is not provable before the group")
	}
	m0 := db.Metrics()
	group := commitAsGroup(t, db, []*Batch{put, call}, nil)
	must(t, group[0].err)
	if !errors.Is(group[1].err, ErrConditionFailed) {
		t.Fatalf("PutIfAbsent after a put of the key in its group: %v, want ErrConditionFailed", group[1].err)
	}
	if m := db.Metrics(); m.CondGroupsDrained != m0.CondGroupsDrained+1 {
		t.Fatalf("drained %d groups, want 1", m.CondGroupsDrained-m0.CondGroupsDrained)
	}
	mustGet(t, db, "k", "v")
}
