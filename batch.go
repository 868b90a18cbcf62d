package mayfly

import (
	"encoding/binary"
	"fmt"

	"github.com/mayflydb/mayfly/format"
)

// Batch collects writes that commit atomically: after a crash either every
// write in the batch is present or none is. A Batch is not safe for
// concurrent use. Build one with DB.NewBatch, fill it, and Write it once.
//
// Ownership: a batch belongs to its caller from NewBatch until Close. Write
// keeps no reference to the batch or its memory once it returns (the WAL
// and the memtable copy what they keep), so after Write the caller may
// Reset and refill the batch, or Close it. Close hands the batch's memory to
// a pool that later NewBatch calls (and single-row writes) draw from; the
// caller must not touch the batch after Close. Closing is optional: a batch
// that is dropped without Close is simply garbage collected.
type Batch struct {
	db        *DB    // nil after Close
	data      []byte // format batch encoding; header filled at commit
	count     uint32
	relative  []relativeTTL // expire slots to stamp at commit
	cond      batchConds    // conditions the leader checks (cond_eval.go)
	committed bool
	err       error // first invalid write; Write returns it
}

// NewBatch returns an empty batch for this database, reusing the memory of
// a closed batch when one is available.
func (db *DB) NewBatch() *Batch { return db.pooledBatch(0) }

// NewBatchWithSize is NewBatch for a batch expected to grow to about size
// encoded bytes: its buffer starts with room for that many, so filling it
// does not reallocate. size is a hint, not a limit.
func (db *DB) NewBatchWithSize(size int) *Batch { return db.pooledBatch(size) }

// Close releases the batch for reuse by later NewBatch calls. The batch
// must not be used afterwards (a Put, Delete or Write on a closed batch
// returns ErrBatchClosed as long as the pool has not handed it out again).
// Close of a closed batch does nothing.
func (b *Batch) Close() {
	if b.db == nil {
		return
	}
	b.db = nil
	releaseBatch(b)
}

// Put adds a write of key=value with the database's default TTL.
func (b *Batch) Put(key, value []byte) error { return b.PutTTL(key, value, TTL{}) }

// PutTTL adds a write of key=value expiring as ttl says. An invalid key,
// value or TTL is reported here and again by Write, and the batch then
// commits nothing.
func (b *Batch) PutTTL(key, value []byte, ttl TTL) error {
	if err := b.check(key); err != nil {
		return err
	}
	if len(value) > MaxValueSize {
		return b.fail(fmt.Errorf("%w: %d bytes (limit %d)", ErrValueTooLarge, len(value), MaxValueSize))
	}
	return b.appendWithTTL(0, key, value, ttl)
}

// appendDeadline adds a deadline row for key: the key's deadline becomes
// what ttl says (NoExpiry, or the default TTL when that is none: the key
// no longer expires), its value stays. The callers (Expire and its kin)
// attach the condition that the key is live, since a deadline row applies
// to the value beneath it.
func (b *Batch) appendDeadline(key []byte, ttl TTL) error {
	if err := b.check(key); err != nil {
		return err
	}
	return b.appendWithTTL(format.FlagDeadline, key, nil, ttl)
}

// appendWithTTL appends an entry of kind flags (0: a value row) expiring as
// ttl says; a relative TTL leaves its slot to be stamped at commit.
func (b *Batch) appendWithTTL(flags uint8, key, value []byte, ttl TTL) error {
	expires, relative, v, err := ttl.resolve(b.db.opts.DefaultTTL)
	if err != nil {
		return b.fail(err)
	}
	if expires {
		flags |= format.FlagHasExpire
	}
	var slot int
	b.data, slot = format.AppendBatchEntry(b.data, flags, v, key, value)
	if relative {
		b.relative = append(b.relative, relativeTTL{offset: slot, millis: v})
	}
	return b.added()
}

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) error {
	if err := b.check(key); err != nil {
		return err
	}
	b.data, _ = format.AppendBatchEntry(b.data, format.FlagTombstone, 0, key, nil)
	return b.added()
}

// Len returns the number of writes in the batch.
func (b *Batch) Len() int { return int(b.count) }

// Size returns the encoded size of the batch in bytes.
func (b *Batch) Size() int { return len(b.data) }

// Reset empties the batch so it can be reused, also after Write.
func (b *Batch) Reset() {
	b.data = b.data[:format.BatchHeaderLen]
	b.count = 0
	b.relative = b.relative[:0]
	b.cond.reset()
	b.committed = false
	b.err = nil
}

// Write commits the batch atomically. opts may be nil (NoSync).
func (b *Batch) Write(opts *WriteOptions) error {
	if b.db == nil {
		return ErrBatchClosed
	}
	if b.committed {
		return ErrBatchCommitted
	}
	if b.err != nil {
		return b.err
	}
	if b.count == 0 {
		return nil
	}
	err := b.db.commit(b, opts != nil && opts.Sync)
	if err == nil {
		b.committed = true
	}
	return err
}

func (b *Batch) check(key []byte) error {
	if b.db == nil {
		return ErrBatchClosed
	}
	if b.committed {
		return ErrBatchCommitted
	}
	if len(key) == 0 {
		return b.fail(ErrEmptyKey)
	}
	if len(key) > MaxKeySize {
		return b.fail(fmt.Errorf("%w: %d bytes (limit %d)", ErrKeyTooLarge, len(key), MaxKeySize))
	}
	return nil
}

func (b *Batch) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return err
}

func (b *Batch) added() error {
	b.count++
	if len(b.data) > MaxBatchSize {
		return b.fail(fmt.Errorf("%w: %d bytes (limit %d)", ErrBatchTooLarge, len(b.data), MaxBatchSize))
	}
	return nil
}

// relativeTTL is an expire slot that holds a TTL to add to the commit time.
type relativeTTL struct {
	offset int
	millis int64
}

// stamp fills in the header and turns relative TTLs into deadlines at
// commit time now. On error the batch is unchanged; stamping again (a
// retried Write) recomputes every deadline from the new commit time.
func (b *Batch) stamp(seq uint64, now int64) error {
	for _, r := range b.relative {
		if _, err := deadlineFrom(now, r.millis); err != nil {
			return err
		}
	}
	for _, r := range b.relative {
		binary.LittleEndian.PutUint64(b.data[r.offset:], uint64(now+r.millis))
	}
	b.cond.stampTokens(b.data, seq)
	format.PutBatchHeader(b.data, format.BatchHeader{Seq: seq, Count: b.count, CommitTS: now})
	return nil
}
