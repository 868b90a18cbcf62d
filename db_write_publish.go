package mayfly

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Publication of applied batches (RFC 0003, "Group commit").
//
// A commit group's leader logs the group under commitMu and pushes each
// logged batch onto the publish queue, in sequence order, before it releases
// commitMu; so the queue holds every logged batch not yet published, in
// sequence order across groups. Each batch's own writer then applies it to
// the memtable, concurrently with the other writers and with the next
// group's leader, and reports it applied. Whoever reports a batch applied
// pops the applied batches at the head of the queue: the visible sequence
// number moves to the last sequence number of the last batch popped, so it
// never passes a batch that is not wholly in the memtable, and it moves in
// sequence order. A writer returns once its own batch is popped: its rows
// are visible to every read that starts after.
//
// A batch that failed to apply (a malformed batch: the DB is poisoned, see
// setBackgroundError) is popped without publishing it, and every batch
// popped after it fails with the same error: the visible sequence number
// stays below it for good, so no read ever sees part of it.
//
// A no-op waiter (commitWaiter.noop) is a call not logged whose failure the
// leader decided on an earlier batch of its group: it is queued after that
// batch, applies nothing and publishes nothing, and its writer learns its
// outcome when it is popped, once that batch is published.

// publishQueue is the queue of logged, unpublished batches.
type publishQueue struct {
	mu   sync.Mutex
	q    []*commitWaiter // q[head:] are logged and unpublished, in sequence order
	head int
	// pending is len(q) - head, written under mu, read by wait without it.
	pending atomic.Int64
	// err is the first apply failure: every batch popped after it fails.
	err error
	// drain, when not nil, is signalled once the queue is empty; the
	// commitMu holder alone waits on it (wait), drainCh is its reused
	// channel.
	drain   chan struct{}
	drainCh chan struct{}
	// Test hooks, nil outside tests and set before the database is used:
	// beforeApply runs in a writer before it applies its logged batch,
	// beforeDrain in wait before it blocks until the queue is empty.
	beforeApply func(*Batch)
	beforeDrain func()
}

// minQueueCompact is the smallest head offset at which push moves the
// unpublished batches to the front of the queue's array.
const minQueueCompact = 64

// push appends the logged batches of a group, in sequence order. The
// caller holds commitMu and has not released any of them yet.
func (q *publishQueue) push(ws []*commitWaiter) {
	q.mu.Lock()
	if q.head >= minQueueCompact && 2*q.head >= len(q.q) {
		n := copy(q.q, q.q[q.head:])
		clear(q.q[n:])
		q.q, q.head = q.q[:n], 0
	}
	q.q = append(q.q, ws...)
	q.pending.Add(int64(len(ws)))
	q.mu.Unlock()
}

// applied records that w's batch is in the memtable (err nil) or failed to
// go in, pops the applied batches at the head of the queue, publishes the
// last of them that may be published in visible, counts what it published
// in m, and releases the writers of the popped batches (w's own included:
// its state must be waiterWaiting when applied is called, and it learns its
// outcome from await).
func (q *publishQueue) applied(w *commitWaiter, err error, visible *atomic.Uint64, m *metricsCounters) {
	var local [8]*commitWaiter
	popped := local[:0]
	var rows, batches uint64
	q.mu.Lock()
	w.applied, w.err = true, err
	for q.head < len(q.q) && q.q[q.head].applied {
		h := q.q[q.head]
		q.q[q.head] = nil
		q.head++
		switch {
		case h.noop: // its outcome stands unless an earlier apply failed
			if q.err != nil {
				h.err = q.err
			}
		case q.err != nil:
			if h.err == nil {
				h.err = q.err
			}
		case h.err != nil:
			q.err = h.err
		default:
			visible.Store(h.last)
			rows += uint64(h.batch.count)
			batches++
		}
		popped = append(popped, h)
	}
	q.pending.Add(-int64(len(popped)))
	if q.head == len(q.q) {
		q.q, q.head = q.q[:0], 0
		if q.drain != nil {
			q.drain <- struct{}{}
			q.drain = nil
		}
	}
	m.rowsWritten.Add(rows)
	m.batchesCommitted.Add(batches)
	q.mu.Unlock()
	for _, h := range popped {
		h.release(waiterFinished) // h may be reused from here on
	}
}

// unclaimedBefore appends to buf, up to its capacity, the batches queued
// before w (sequence numbers below w's) that are not applied, whose claims
// are still set and whose writers have been released to apply them
// (waiterApply), each with its claim, and returns it. A batch it lists may
// be claimed by its writer or another helper meanwhile: the caller's
// compare-and-swap of the claim decides.
//
// Why only released writers: a writer not released yet (a member its
// leader has not released, or a leader's own batch) would not learn that
// its batch was taken. A member's release to waiterApply would then
// overwrite the waiterFinished its publication set, on a waiter its writer
// may already have returned and reused, and a leader would return before
// its batch is published.
func (q *publishQueue) unclaimedBefore(w *commitWaiter, buf []helpRef) []helpRef {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, h := range q.q[q.head:] {
		if h == w || len(buf) == cap(buf) {
			break
		}
		if h.noop || h.applied {
			continue
		}
		if h.last > w.last {
			break
		}
		if c := h.claim.Load(); c != 0 && c == h.last && h.state.Load() == waiterApply {
			buf = append(buf, helpRef{h, h.last})
		}
	}
	return buf
}

// wait returns once every pushed batch is popped, with the first apply
// failure if any. The caller holds commitMu, so nothing is pushed
// meanwhile and it is the only caller waiting. It yields first, as a
// waiter does (commitSpins): the batches it waits for are being inserted.
func (q *publishQueue) wait() error {
	for i := 0; i < commitSpins && q.pending.Load() > 0; i++ {
		runtime.Gosched()
	}
	q.mu.Lock()
	if q.head == len(q.q) {
		err := q.err
		q.mu.Unlock()
		return err
	}
	if q.drainCh == nil {
		q.drainCh = make(chan struct{}, 1)
	}
	q.drain = q.drainCh
	q.mu.Unlock()
	if q.beforeDrain != nil {
		q.beforeDrain()
	}
	<-q.drainCh
	q.mu.Lock()
	err := q.err
	q.mu.Unlock()
	return err
}
