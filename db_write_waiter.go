package mayfly

import (
	"runtime"
	"sync/atomic"

	"github.com/mayflydb/mayfly/memtable"
)

// The waiter of a batch in the commit pipeline (db_write.go): how a writer
// learns what to do next and waits for it (RFC 0003, "Group commit").

// commitWaiter is one batch in the commit pipeline, from its queueing to
// its outcome.
type commitWaiter struct {
	batch *Batch
	sync  bool
	// Set by the leader under commitMu, before it releases the waiter:
	// done says the outcome (err) is decided and the batch was not logged;
	// a logged batch has mem, the memtable it goes to, and last, its last
	// sequence number.
	done bool
	err  error
	mem  *memtable.Memtable
	last uint64
	// gsync, on a synced writer's waiter whose group logged records, is the
	// group's fsync, which the writer waits for after its batch is
	// published (waitSynced).
	gsync *groupSync
	// noop marks a batch not logged whose outcome err the leader decided on
	// an earlier batch of its group: it goes through the publish queue, in
	// order, applying nothing, so that its writer returns only once that
	// batch is published (or with the failure of an earlier apply).
	noop bool
	// applied is set under the publish queue's lock once the batch is in
	// mem or failed to go in (publishQueue.applied); err is then its
	// outcome.
	applied bool
	// claim is last while the logged batch waits for whoever applies it:
	// its writer, or its group's leader helping (applyHelped); the one
	// whose compare-and-swap to 0 succeeds applies it. Sequence numbers
	// are never reused, so a stale claim on a recycled waiter fails.
	claim atomic.Uint64
	// helps, on a leader's waiter, lists the members of its group it
	// released to apply their batches, each with its batch's last
	// sequence number (its claim).
	helps []helpRef
	// alone is the group of one commitAlone logs: w itself.
	alone [1]*commitWaiter
	// state is how the waiter learns what to do next (waiterWaiting until
	// it is released); wake carries a release to a parked waiter.
	state atomic.Uint32
	wake  chan struct{}
}

// helpRef names a logged batch a leader may apply for its writer.
type helpRef struct {
	w    *commitWaiter
	last uint64
}

// The states of a commitWaiter.
const (
	waiterWaiting  uint32 = iota
	waiterParked          // blocked on wake
	waiterFinished        // its outcome is err
	waiterLead            // promoted: it leads the next group
	waiterApply           // logged: its writer applies the batch to mem
)

// commitSpins is how many times a waiter yields its processor, checking
// its state between yields, before it parks. A group's leader work and a
// batch's memtable insert take a few microseconds, less than waking a
// parked goroutine on an idle processor; yielding lets other goroutines run
// meanwhile. A synced writer waits for an fsync to be released and parks at
// once.
const commitSpins = 64

// activeSpins is how many times a waiter checks its state without giving
// up its processor (spinPause between checks, a few microseconds in all)
// before it yields, when active spinning is allowed. A yielded goroutine
// goes to the scheduler's global queue, which processors busy with other
// goroutines (readers, say) look at only when those block or are preempted,
// up to milliseconds later; a leader that releases the waiter within the
// spin spares it that wait. Spinning only helps while what the waiter waits
// for runs on another processor, so commit allows it only while the
// committers fit on the processors (DB.committers).
const activeSpins = 300

// spinPause burns a few nanoseconds between two checks of an active spin,
// touching no shared memory; the caller passes 30 and ignores the sum.
//
//go:noinline
func spinPause(n int) int {
	x := 0
	for i := range n {
		x += i
	}
	return x
}

// await blocks until w is released and returns the state it was released
// with; spin yields first (see commitSpins), after checking activeSpins
// times without yielding if active.
func (w *commitWaiter) await(spin, active bool) uint32 {
	if spin && active {
		for range activeSpins {
			if s := w.state.Load(); s != waiterWaiting {
				return s
			}
			spinPause(30)
		}
	}
	if spin {
		for range commitSpins {
			if s := w.state.Load(); s != waiterWaiting {
				return s
			}
			runtime.Gosched()
		}
	}
	if w.state.CompareAndSwap(waiterWaiting, waiterParked) {
		<-w.wake
	}
	return w.state.Load()
}

// release hands w its next state. The caller must not touch w afterwards:
// its owner may return and reuse it.
func (w *commitWaiter) release(s uint32) {
	if w.state.Swap(s) == waiterParked {
		w.wake <- struct{}{}
	}
}
