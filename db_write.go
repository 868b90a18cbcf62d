package mayfly

import (
	"fmt"
	"sync"

	"github.com/mayflydb/mayfly/wal"
)

var (
	batchPool  = sync.Pool{New: func() any { return &Batch{} }}
	waiterPool = sync.Pool{New: func() any { return &commitWaiter{wake: make(chan struct{}, 1)} }}
)

const (
	// minBatchCap is the buffer capacity of a new batch.
	minBatchCap = 1 << 10
	// maxPooledBatchCap bounds the buffer of a batch kept for reuse, so
	// that one huge batch does not pin its memory in the pool.
	maxPooledBatchCap = 1 << 20
)

// Put writes key=value with the default TTL, without waiting for an fsync.
func (db *DB) Put(key, value []byte) error { return db.PutWith(key, value, TTL{}, nil) }

// PutTTL writes key=value expiring as ttl says, without waiting for an fsync.
func (db *DB) PutTTL(key, value []byte, ttl TTL) error { return db.PutWith(key, value, ttl, nil) }

// Delete removes key, without waiting for an fsync. Deleting a missing key
// is not an error.
func (db *DB) Delete(key []byte) error { return db.DeleteWith(key, nil) }

// PutWith writes key=value expiring as ttl says; opts (nil for NoSync)
// chooses durability. An invalid key, value or TTL returns an error and
// writes nothing.
func (db *DB) PutWith(key, value []byte, ttl TTL, opts *WriteOptions) error {
	b := db.pooledBatch(0)
	defer b.Close()
	if err := b.PutTTL(key, value, ttl); err != nil {
		return err
	}
	return b.Write(opts)
}

// DeleteWith removes key; opts (nil for NoSync) chooses durability.
func (db *DB) DeleteWith(key []byte, opts *WriteOptions) error {
	b := db.pooledBatch(0)
	defer b.Close()
	if err := b.Delete(key); err != nil {
		return err
	}
	return b.Write(opts)
}

// pooledBatch returns an empty batch for db from the pool, with room for
// at least sizeHint encoded bytes.
func (db *DB) pooledBatch(sizeHint int) *Batch {
	b := batchPool.Get().(*Batch)
	b.db = db
	if want := max(sizeHint, minBatchCap); cap(b.data) < want {
		b.data = make([]byte, 0, want)
	}
	b.Reset()
	return b
}

// releaseBatch puts a closed batch back in the pool unless its buffers are
// too large to keep.
func releaseBatch(b *Batch) {
	if cap(b.data) > maxPooledBatchCap || cap(b.relative) > maxPooledBatchCap/16 {
		return
	}
	batchPool.Put(b)
}

// commit writes b to the WAL and the memtable and returns once its rows are
// visible. An unsynced batch without conditions is logged by its own writer
// (commitAlone). Other concurrent callers form groups: a caller that finds no leader
// becomes it, takes commitMu, stamps and logs every queued batch with one
// WAL write and at most one fsync, and pushes the logged ones onto the
// publish queue (db_write_publish.go). It then releases commitMu, promotes
// the first caller queued meanwhile to lead the next group (so exactly one
// leader runs at a time and no queued batch is left without one), and
// releases the members of its group. Each writer of a logged batch applies
// it to the memtable itself, concurrently with the others and with the next
// leader, and waits until the batch is published; only a group with
// conditions its leader could not prove from the calls' peeks is applied
// and published by its leader (applyGroup). No member
// waits on commitMu.
func (db *DB) commit(b *Batch, sync bool) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	w := waiterPool.Get().(*commitWaiter)
	w.batch, w.sync, w.done, w.err, w.mem, w.last, w.applied, w.noop = b, sync, false, nil, nil, 0, false, false
	w.claim.Store(0)
	w.state.Store(waiterWaiting)
	defer func() {
		w.batch, w.err, w.mem, w.gsync = nil, nil, nil, nil
		waiterPool.Put(w) // no group or queue refers to w once commit returns
	}()
	active := db.committers.Add(1) <= db.procs
	defer db.committers.Add(-1)
	if !sync && len(b.cond.list) == 0 {
		return db.commitAlone(w)
	}
	db.queueMu.Lock()
	db.queue = append(db.queue, w)
	lead := !db.leading
	db.leading = true
	db.queueMu.Unlock()
	if lead || w.await(!sync, active) == waiterLead {
		db.leadGroup(w)
	}
	var err error
	if w.done {
		db.applyHelped(w) // members of its group may have been logged
		err = w.err
	} else {
		err = db.applyLogged(w)
	}
	if w.gsync != nil && err == nil {
		err = db.waitSynced(w.gsync)
	}
	return err
}

// applyLogged applies the logged batch of w to its memtable unless its
// group's leader or another writer did, reports it applied, applies the
// batches of its own group's members that have not started theirs (w.helps,
// when w led) and, while w waits for publication, those logged before w
// that nobody has started (helpEarlier), and returns w's outcome once it is
// published (or failed).
//
// Why the leader helps: a member is released to apply once its batch is
// logged, but on a busy machine it may wait milliseconds for a processor,
// and every later batch waits for its publication; the leader is running
// and applies it at once instead.
func (db *DB) applyLogged(w *commitWaiter) error {
	if w.claim.CompareAndSwap(w.last, 0) {
		err := db.applyOne(w)
		// Nothing else touches w's state until it is applied: only the
		// claim's winner reports it.
		w.state.Store(waiterWaiting)
		db.pub.applied(w, err, &db.visibleSeq, &db.metrics)
	} else if !w.state.CompareAndSwap(waiterApply, waiterWaiting) {
		// The leader applied it, and published it (waiterFinished).
		return w.err
	}
	db.applyHelped(w)
	if w.state.Load() == waiterWaiting {
		db.helpEarlier(w)
	}
	w.await(true, db.committers.Load() <= db.procs)
	return w.err
}

// maxHelpEarlier bounds the batches helpEarlier applies for others.
const maxHelpEarlier = 8

// helpEarlier applies batches logged before w's whose writers have not
// started them (their claims still set), so that w's publication does not
// wait until those writers get a processor again: on a busy machine a
// writer descheduled between logging its batch and applying it holds up
// every later batch for milliseconds. Any writer may apply a logged batch
// that it claims, as a leader does for its group's members (applyHelped).
func (db *DB) helpEarlier(w *commitWaiter) {
	var local [maxHelpEarlier]helpRef
	for _, h := range db.pub.unclaimedBefore(w, local[:0]) {
		db.applyFor(h)
	}
}

// applyFor applies another writer's logged batch h and reports it applied,
// if its claim is still h's: the claim's compare-and-swap makes exactly one
// writer apply each batch.
func (db *DB) applyFor(h helpRef) {
	if h.w.claim.CompareAndSwap(h.last, 0) {
		db.pub.applied(h.w, db.applyOne(h.w), &db.visibleSeq, &db.metrics)
		db.metrics.batchesHelped.Add(1)
	}
}

// applyOne inserts w's batch into its memtable; a no-op waiter's outcome
// is its own failure.
func (db *DB) applyOne(w *commitWaiter) error {
	if db.pub.beforeApply != nil {
		db.pub.beforeApply(w.batch)
	}
	if w.noop {
		return w.err
	}
	if err := w.mem.ApplyBatch(w.batch.data); err != nil {
		return db.setBackgroundError(fmt.Errorf("memtable apply: %w", err))
	}
	if n := w.batch.cond.newKeys; n > 0 {
		w.mem.NoteNewKeys(n)
	}
	return nil
}

// applyHelped applies the batches of w.helps whose writers have not
// claimed them yet, and empties the list.
func (db *DB) applyHelped(w *commitWaiter) {
	for i, h := range w.helps {
		db.applyFor(h)
		w.helps[i] = helpRef{}
	}
	w.helps = w.helps[:0]
}

// leadGroup commits the queued batches, the leader's own w among them, as
// one group: it returns when w's outcome is decided (w.done) or w is logged.
func (db *DB) leadGroup(w *commitWaiter) {
	db.commitMu.Lock()
	db.queueMu.Lock()
	group := db.queue
	// The spare slice is lent to the queue until this leader returns its
	// group to be the next spare: a promoted leader may take the queue
	// before then.
	db.queue, db.spareQueue = db.spareQueue[:0], nil
	db.queueMu.Unlock()
	err := db.commitGroup(group)
	for _, g := range group {
		if !g.done && g.mem == nil {
			g.done, g.err = true, err
		}
	}
	db.commitMu.Unlock()

	db.queueMu.Lock()
	var next *commitWaiter
	if len(db.queue) > 0 {
		next = db.queue[0]
	} else {
		db.leading = false
	}
	db.queueMu.Unlock()
	if next != nil {
		next.release(waiterLead)
	}
	for _, g := range group {
		if g == w {
			continue
		}
		switch {
		case g.done:
			g.release(waiterFinished)
		case g.noop: // nothing to apply; its writer reports it
			g.release(waiterApply)
		default:
			w.helps = append(w.helps, helpRef{g, g.last})
			g.release(waiterApply)
		}
	}
	clear(group)
	db.queueMu.Lock()
	if db.spareQueue == nil {
		db.spareQueue = group[:0]
	}
	db.queueMu.Unlock()
}

// commitGroup is run by the leader with commitMu held: it makes room, stamps
// the group's batches, evaluates their conditions and logs those that hold.
// Each logged waiter gets its memtable and sequence range and is pushed onto
// the publish queue, or, in a group with conditions not proven by their
// peeks, is applied, published and done; a waiter whose batch failed alone
// is done with its error; on a returned error nothing was logged.
//
// A group with conditions takes one of two paths (RFC 0009, "Single-key
// calls"). If the table of recent writes proves every conditional batch's
// peek current (recentWrites.peekProof), the conditions are evaluated on
// the peeks and the group is pushed like a blind one: nothing waits for
// earlier batches to be applied. Otherwise the leader first waits until
// every batch logged before the group is applied and visible, evaluates the
// conditions against the latest state and applies the group itself
// (applyGroup). A proof can still fail within the group (an earlier batch
// of the group writes the key's slot): the group is then stamped again on
// the draining path.
func (db *DB) commitGroup(group []*commitWaiter) error {
	groupBytes := 0
	for _, g := range group {
		groupBytes += len(g.batch.data)
	}
	// One clock reading serves the room check and the stamp, unless
	// making room waited.
	now := db.clock.NowMillis()
	if !db.roomAtOnce(now) {
		if err := db.makeRoomForWrite(groupBytes); err != nil {
			return err
		}
		now = db.clock.NowMillis()
	}
	lastCond := lastConditional(group)
	proven := lastCond >= 0 && db.recent.provable(group[:lastCond+1], db.mem.LogNum())
	st, ok, err := db.stampGroup(group, lastCond, proven, now)
	if !ok {
		for _, g := range group {
			g.done, g.err, g.noop = false, nil, false
		}
		proven = false
		st, _, err = db.stampGroup(group, lastCond, false, now)
	}
	switch {
	case lastCond < 0:
	case proven:
		db.metrics.condGroupsProven.Add(1)
	default:
		db.metrics.condGroupsDrained.Add(1)
	}
	buf := st.buf
	if buf != nil && cap(buf) <= 4<<20 {
		db.walBuf = buf[:0]
	}
	// A group of calls whose failures rest on earlier groups' batches
	// (cond_left.go) logs nothing, but its calls queue behind those.
	if err != nil || len(buf) == 0 && !hasNoop(group) {
		return err
	}
	if err := db.writeWAL(buf, st.sync); err != nil {
		return err
	}
	db.metrics.walBytes.Add(uint64(len(buf)))
	if st.sync && len(buf) > 0 {
		// The fsync runs once commitMu is released (waitSynced): later
		// groups log meanwhile, and the next fsync covers them.
		gs := &groupSync{seg: db.logWriter, end: db.logWriter.Size()}
		for _, g := range group {
			if g.sync {
				g.gsync = gs
			}
		}
	}
	db.lastSeq = st.next - 1
	if lastCond >= 0 && !proven {
		db.applyGroup(group, db.lastSeq)
		return nil
	}
	// The logged waiters go to the publish queue in sequence order, before
	// commitMu is released: the next group's batches queue after them.
	var local [16]*commitWaiter
	ws := local[:0]
	for _, g := range group {
		if !g.done {
			g.mem = db.mem
			ws = append(ws, g)
		}
	}
	db.pub.push(ws)
	return nil
}

// writeWAL appends a group's records to the WAL, for the flusher to hand
// to the operating system, or, if sync, for the group's sync (waitSynced)
// to write; nothing if there are none. A failure poisons the database.
func (db *DB) writeWAL(buf []byte, sync bool) error {
	if len(buf) == 0 {
		return nil
	}
	write := db.logWriter.Write
	if sync {
		write = db.logWriter.Append
	}
	if err := write(buf); err != nil {
		// The segment may now end in a partial record; nothing more may be
		// appended after it.
		return db.setBackgroundError(fmt.Errorf("WAL write: %w", err))
	}
	return nil
}

// hasNoop reports whether a waiter of group is a call not logged whose
// failure rests on an earlier batch (commitWaiter.noop).
func hasNoop(group []*commitWaiter) bool {
	for _, g := range group {
		if g.noop && !g.done {
			return true
		}
	}
	return false
}

// stampGroup stamps the batches of group from sequence number lastSeq+1,
// evaluates the conditions of group[:lastCond+1] in commit order, records
// each batch that is to be logged in the table of recent writes and
// returns them stamped (stampedGroup). A batch whose stamp or condition
// fails is done with its error. If proven, each condition is evaluated on
// its batch's peek, which must still be proven current
// (recentWrites.peekProof); if one is not, stampGroup returns ok false
// having logged nothing (the slots it raised stay raised: a raised slot
// only withholds proofs), and the group must be stamped again with proven
// false. Otherwise it first waits until every batch logged before the group
// is applied and visible. The batches are stamped at the clock reading now,
// or at one taken after that wait.
func (db *DB) stampGroup(group []*commitWaiter, lastCond int, proven bool, now int64) (st stampedGroup, ok bool, err error) {
	if lastCond >= 0 && !proven {
		// Conditions see the latest committed state: every batch logged
		// before this group must be in the memtable and visible first,
		// and the commit time is read after that wait.
		if err := db.pub.wait(); err != nil {
			return st, true, err
		}
		now = db.clock.NowMillis()
	}
	seq := db.lastSeq + 1
	buf := db.walBuf[:0]
	if lastCond >= 0 {
		db.condOv.begin(db, now)
	}
	logNum := db.mem.LogNum()
	for i, g := range group {
		if err := g.batch.stamp(seq, now); err != nil {
			g.done, g.err = true, err
			continue
		}
		// Conditions are evaluated in commit order, after stamping; a batch
		// whose condition fails is not logged (cond_eval.go).
		if i <= lastCond {
			var err error
			switch {
			case !proven:
				err = db.condOv.admit(g.batch, i < lastCond)
			case len(g.batch.cond.list) > 0:
				proved, rests, aerr := db.condOv.admitPeeked(g.batch, logNum, i < lastCond)
				if !proved {
					return stampedGroup{buf: buf}, false, nil
				}
				if aerr != nil && rests {
					// Decided on a write of this group: returned once
					// that write is published.
					g.err, g.noop = aerr, true
					continue
				}
				err = aerr
			}
			if err != nil {
				g.done, g.err = true, err
				continue
			}
		}
		buf = wal.AppendRecord(buf, g.batch.data)
		seq += uint64(g.batch.count)
		g.last = seq - 1
		g.claim.Store(g.last) // before g is released (applyLogged)
		db.recent.note(g.batch.data, g.last)
		st.sync = st.sync || g.sync
	}
	if proven {
		db.recent.leave(db.condOv.left)
	}
	st.buf, st.next = buf, seq
	return st, true, nil
}

// stampedGroup is what stampGroup made of a group: the WAL records of the
// batches to log (empty if none), whether one of them asks for a sync, and
// the sequence number after them.
type stampedGroup struct {
	buf  []byte
	sync bool
	next uint64
}

// applyGroup applies the logged batches of a group with conditions not
// proven by their peeks from the leader, under commitMu, with one memtable
// lock, publishes them up to last and marks their waiters done. The publish
// queue is empty (the leader waited for it before evaluating the
// conditions, and nothing is pushed while it holds commitMu), so no other
// writer publishes meanwhile. Such a group has stopped the pipeline
// already; applying it here lets the next group, often conditional too,
// start without waiting for this group's members to be scheduled. A failed
// apply fails every batch of the group and publishes none.
func (db *DB) applyGroup(group []*commitWaiter, last uint64) {
	var local [16][]byte
	logged := local[:0]
	rows := uint64(0)
	for _, g := range group {
		if !g.done {
			logged = append(logged, g.batch.data)
			rows += uint64(g.batch.count)
		}
	}
	var err error
	if _, aerr := db.mem.ApplyBatches(logged); aerr != nil {
		err = db.setBackgroundError(fmt.Errorf("memtable apply: %w", aerr))
	} else {
		db.visibleSeq.Store(last)
		db.metrics.rowsWritten.Add(rows)
		db.metrics.batchesCommitted.Add(uint64(len(logged)))
	}
	for _, g := range group {
		if !g.done {
			g.done, g.err = true, err
		}
	}
}
