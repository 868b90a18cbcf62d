package mayfly

import (
	"fmt"
	"sync"
	"time"

	"github.com/mayflydb/mayfly/wal"
)

// commitWaiter is one batch waiting in the commit queue.
type commitWaiter struct {
	batch *Batch
	sync  bool
	done  bool
	err   error
}

var (
	batchPool  = sync.Pool{New: func() any { return &Batch{} }}
	waiterPool = sync.Pool{New: func() any { return &commitWaiter{} }}
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

// commit writes b to the WAL and the memtable. Concurrent callers form a
// group: the first to take commitMu becomes the leader and writes every
// queued batch with one WAL write and at most one fsync; the others find
// their work done when they get the lock.
func (db *DB) commit(b *Batch, sync bool) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	w := waiterPool.Get().(*commitWaiter)
	*w = commitWaiter{batch: b, sync: sync}
	defer waiterPool.Put(w) // no group refers to w once commit returns
	db.queueMu.Lock()
	db.queue = append(db.queue, w)
	db.queueMu.Unlock()

	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	if w.done {
		return w.err
	}
	db.queueMu.Lock()
	group := db.queue
	db.queue = db.spareQueue[:0]
	db.queueMu.Unlock()

	err := db.commitGroup(group)
	for _, g := range group {
		if !g.done {
			g.done, g.err = true, err
		}
	}
	clear(group)
	db.spareQueue = group[:0] // the leader alone touches spareQueue
	return w.err
}

// commitGroup is run by the leader with commitMu held.
func (db *DB) commitGroup(group []*commitWaiter) error {
	groupBytes := 0
	for _, g := range group {
		groupBytes += len(g.batch.data)
	}
	if err := db.makeRoomForWrite(groupBytes); err != nil {
		return err
	}
	now := db.clock.NowMillis()
	seq := db.lastSeq + 1
	buf := db.walBuf[:0]
	needSync := false
	applied := 0 // waiters still !done after stamping are the ones logged
	rows := uint64(0)
	lastCond := lastConditional(group)
	if lastCond >= 0 {
		db.condOv.begin(db, now)
	}
	for i, g := range group {
		if err := g.batch.stamp(seq, now); err != nil {
			g.done, g.err = true, err
			continue
		}
		// Conditions are evaluated in commit order, after stamping; a batch
		// whose condition fails is not logged (cond_eval.go).
		if i <= lastCond {
			if err := db.condOv.admit(g.batch, i < lastCond); err != nil {
				g.done, g.err = true, err
				continue
			}
		}
		buf = wal.AppendRecord(buf, g.batch.data)
		seq += uint64(g.batch.count)
		rows += uint64(g.batch.count)
		needSync = needSync || g.sync
		applied++
	}
	if cap(buf) <= 4<<20 {
		db.walBuf = buf[:0]
	}
	if applied == 0 {
		return nil
	}
	if needSync {
		// Written and synced from this goroutine: one write and one sync,
		// no hand-off to the WAL's flusher.
		if err := db.logWriter.WriteSync(buf); err != nil {
			// A failed write may leave a partial record, a failed fsync
			// the written bytes in an unknown state: nothing more may be
			// appended, nothing treated as durable or retried.
			return db.setBackgroundError(fmt.Errorf("WAL write and sync: %w", err))
		}
		db.metrics.walSyncs.Add(1)
	} else if err := db.logWriter.Write(buf); err != nil {
		// The segment may now end in a partial record; nothing more may be
		// appended after it.
		return db.setBackgroundError(fmt.Errorf("WAL write: %w", err))
	}
	db.metrics.walBytes.Add(uint64(len(buf)))
	// One memtable lock acquisition for the whole group. Waiters that
	// failed to stamp were not logged and are skipped.
	var local [16][]byte
	logged := local[:0]
	for _, g := range group {
		if !g.done {
			logged = append(logged, g.batch.data)
		}
	}
	n, err := db.mem.ApplyBatches(logged)
	for _, g := range group {
		if !g.done && n > 0 {
			g.done, n = true, n-1
		}
	}
	if err != nil {
		return db.setBackgroundError(fmt.Errorf("memtable apply: %w", err))
	}
	db.lastSeq = seq - 1
	db.visibleSeq.Store(db.lastSeq)
	db.metrics.rowsWritten.Add(rows)
	db.metrics.batchesCommitted.Add(uint64(applied))
	return nil
}

// lastMemtableDiv bounds the active memtable while MaxImmutableMemtables
// frozen memtables wait for their flush: it takes writes up to
// MemtableSize/lastMemtableDiv, then writes stall until a flush ends
// (rather than at MemtableSize, as when fewer wait).
//
// Why: a flush that falls behind a bulk load otherwise lets three full
// memtables live at once (the flushing one, one waiting and the active
// one), and that third arena sets the fill's peak resident memory. With a
// quarter at most 2.25 memtables are live, and writes still run on while
// the second frozen memtable waits instead of stalling on every flush
// (RFC 0003, "Memtables alive at the fill peak").
const lastMemtableDiv = 4

// makeRoomForWrite rotates a full memtable, or one due for rotation by the
// age of its rows with an expiry (dueForAgeRotation), stalls while flushes or
// level-0 compactions are too far behind, and delays a commit group of bytes
// while level 0 is between the slowdown and stop thresholds
// (db_write_slowdown.go). The caller holds commitMu.
func (db *DB) makeRoomForWrite(bytes int) error {
	var stallStart, slowStart time.Time
	var reason string
	defer func() {
		if !stallStart.IsZero() {
			d := time.Since(stallStart)
			db.metrics.stallNanos.Add(uint64(d))
			db.opts.EventListener.stallEnd(StallInfo{Reason: reason, Duration: d})
		}
		if !slowStart.IsZero() {
			db.metrics.slowdowns.Add(1)
			db.metrics.slowdownNanos.Add(uint64(time.Since(slowStart)))
		}
	}()
	charged := false
	db.mu.Lock()
	for {
		if db.closed {
			db.mu.Unlock()
			return ErrClosed
		}
		if db.bgErr != nil {
			err := db.bgErr
			db.mu.Unlock()
			return err
		}
		// Level 0 as the thresholds see it, counted once per pass (it walks
		// level 0's tables); 0 when nothing would compact it.
		l0 := 0
		if !db.opts.DisableAutoCompaction {
			l0 = db.l0StallFiles()
		}
		switch {
		case l0 >= db.opts.L0StopWritesThreshold,
			len(db.imm) >= db.opts.MaxImmutableMemtables && db.mem.Size() >= db.opts.MemtableSize/lastMemtableDiv:
			if stallStart.IsZero() {
				stallStart = time.Now()
				reason = "memtables"
				if l0 >= db.opts.L0StopWritesThreshold {
					reason = "l0"
				}
				db.opts.EventListener.stallBegin(StallInfo{Reason: reason})
				db.metrics.stalls.Add(1)
				db.log.Info("mayfly: write stall", "l0Files", len(db.current.levels[0]), "immutableMemtables", len(db.imm))
			}
			db.kickFlush()
			db.kickCompaction()
			db.cond.Wait()
		case db.mem.Size() >= db.opts.MemtableSize, db.logWriter.Sealed(),
			len(db.imm) < db.opts.MaxImmutableMemtables && db.dueForAgeRotation():
			db.mu.Unlock()
			if err := db.rotateMemtable(); err != nil {
				return err
			}
			db.mu.Lock()
		default:
			db.mu.Unlock()
			if l0 < db.opts.L0SlowdownWritesThreshold {
				db.slowdown.debt = 0 // level 0 caught up: nothing more is owed
				return nil
			}
			if !charged {
				charged = true
				db.slowdown.debt += slowdownDelay(l0, db.opts.L0SlowdownWritesThreshold, db.opts.L0StopWritesThreshold, bytes)
			}
			d := db.slowdown.next()
			if d == 0 {
				return nil
			}
			if slowStart.IsZero() {
				slowStart = time.Now()
				db.kickCompaction()
			}
			db.slowdown.sleep(d)
			// Level 0 is looked at again before sleeping on: a compaction
			// that finished meanwhile forgives the rest of the debt.
			db.mu.Lock()
		}
	}
}

// rotateMemtable freezes the active memtable and starts a new WAL segment
// for its successor. The old segment is sealed first (sealActiveLog): the
// seal reaches the operating system before any record of the new segment
// does, and its sync runs in the background, which every sync of the new
// segment waits for (wal package, "Seals"). Caller holds commitMu.
func (db *DB) rotateMemtable() error {
	seal, err := db.sealActiveLog()
	if err != nil {
		return db.setBackgroundError(fmt.Errorf("WAL seal at rotation: %w", err))
	}
	w, num, err := db.nextLogSegment()
	if err != nil {
		// Nothing else changed: the sealed segment takes no more records,
		// so the next write rotates again (makeRoomForWrite).
		db.watchSeal(seal, nil)
		return err
	}
	w.After(seal)
	// On a lock-free backend a writer that took over after our last
	// manifest write would not know this segment: refuse to use it.
	if err := db.checkFenced(); err != nil {
		w.Close()
		db.watchSeal(seal, nil)
		return db.setBackgroundError(err)
	}
	old := db.logWriter
	db.mu.Lock()
	db.imm = append(db.imm, db.mem)
	db.mem = db.newMemtable(num)
	db.logWriter, db.logNum = w, num
	db.publishReadState()
	db.mu.Unlock()
	db.watchSeal(seal, old) // closes old once its seal is durable
	db.kickFlush()
	return nil
}

func (db *DB) kickFlush() {
	select {
	case db.flushKick <- struct{}{}:
	default:
	}
}

func (db *DB) kickCompaction() {
	select {
	case db.compKick <- struct{}{}:
	default:
	}
}
