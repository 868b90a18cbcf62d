package mayfly

import (
	"errors"
	"fmt"
)

// Conditional writes (RFC 0009): writes that apply only if their key's
// current state allows, decided in commit order against the latest state, so
// each one is linearizable. "Present" means what Get means: a live value,
// neither deleted nor expired at the commit time.

// ErrConditionFailed means a batch was not written because a condition on
// one of its entries did not hold; the error names the entry's index and
// key. Nothing of the batch was written. The DB-level conditional calls
// report a failed condition as false (GetDel as ErrNotFound), not as this
// error.
var ErrConditionFailed = errors.New("mayfly: condition failed")

// PutIfAbsent adds a write of key=value, expiring as ttl says, that applies
// only if key has no live value when the batch commits (Redis SET NX).
// Conditions see the batch's earlier entries: a second PutIfAbsent of the
// same key in one batch fails.
func (b *Batch) PutIfAbsent(key, value []byte, ttl TTL) error {
	return b.putIf(key, value, ttl, condAbsent, nil)
}

// PutIfPresent adds a write of key=value, expiring as ttl says, that applies
// only if key has a live value when the batch commits (Redis SET XX).
func (b *Batch) PutIfPresent(key, value []byte, ttl TTL) error {
	return b.putIf(key, value, ttl, condPresent, nil)
}

// CompareAndSwap adds a write of key=new, expiring as ttl says, that applies
// only if key's live value equals old when the batch commits. A missing key
// never matches (PutIfAbsent is the compare-with-nothing).
func (b *Batch) CompareAndSwap(key, old, new []byte, ttl TTL) error {
	if err := b.checkOperand(old); err != nil {
		return err
	}
	return b.putIf(key, new, ttl, condEqual, old)
}

// CompareAndDelete adds a deletion of key that applies only if key's live
// value equals old when the batch commits.
func (b *Batch) CompareAndDelete(key, old []byte) error {
	if err := b.checkOperand(old); err != nil {
		return err
	}
	if err := b.Delete(key); err != nil {
		return err
	}
	b.cond.add(b.count-1, condEqual, old, false)
	return nil
}

// deleteIfPresent adds a deletion of key that applies only if key has a live
// value, and captures that value (GetDel).
func (b *Batch) deleteIfPresent(key []byte) error {
	if err := b.Delete(key); err != nil {
		return err
	}
	b.cond.add(b.count-1, condPresent, nil, true)
	return nil
}

func (b *Batch) putIf(key, value []byte, ttl TTL, kind condKind, arg []byte) error {
	if err := b.PutTTL(key, value, ttl); err != nil {
		return err
	}
	b.cond.add(b.count-1, kind, arg, false)
	return nil
}

// checkOperand refuses an expected value no stored value can equal.
func (b *Batch) checkOperand(old []byte) error {
	if b.db == nil {
		return ErrBatchClosed
	}
	if len(old) > MaxValueSize {
		return b.fail(fmt.Errorf("%w: expected value of %d bytes (limit %d)", ErrValueTooLarge, len(old), MaxValueSize))
	}
	return nil
}

// PutIfAbsent writes key=value, expiring as ttl says, only if key has no
// live value (never written, deleted or expired) at the commit (Redis SET
// NX): the building block of idempotency keys and locks. It reports whether
// it wrote; of concurrent PutIfAbsent calls on an absent key exactly one
// returns true. A write that did not apply changed nothing and returns
// false, nil. Like Put it does not wait for an fsync; for a durable
// conditional write use Batch.PutIfAbsent and Write(Sync).
func (db *DB) PutIfAbsent(key, value []byte, ttl TTL) (bool, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	return b.writeCondOn(key, b.PutIfAbsent(key, value, ttl))
}

// PutIfPresent writes key=value, expiring as ttl says, only if key has a
// live value at the commit (Redis SET XX), and reports whether it wrote.
// Durability as PutIfAbsent.
func (db *DB) PutIfPresent(key, value []byte, ttl TTL) (bool, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	return b.writeCondOn(key, b.PutIfPresent(key, value, ttl))
}

// CompareAndSwap writes key=new, expiring as ttl says, only if key's live
// value equals old at the commit, and reports whether it wrote. A missing,
// deleted or expired key never matches. Durability as PutIfAbsent.
func (db *DB) CompareAndSwap(key, old, new []byte, ttl TTL) (bool, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	return b.writeCondOn(key, b.CompareAndSwap(key, old, new, ttl))
}

// CompareAndDelete deletes key only if its live value equals old at the
// commit, and reports whether it deleted. Durability as PutIfAbsent.
func (db *DB) CompareAndDelete(key, old []byte) (bool, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	return b.writeCondOn(key, b.CompareAndDelete(key, old))
}

// GetDel returns key's live value and deletes the key in one atomic step
// (Redis GETDEL): of concurrent GetDel calls on one key exactly one gets the
// value, which makes one-time tokens. A key with no live value returns
// ErrNotFound and writes nothing. The returned slice is the caller's.
// Durability as PutIfAbsent: after a crash an unsynced deletion may be lost
// and the value readable again.
func (db *DB) GetDel(key []byte) ([]byte, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	ok, err := b.writeCondOn(key, b.deleteIfPresent(key))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte{}, b.cond.got...), nil
}

// condApplied maps the error of a conditional batch's Write to whether it
// was written.
func condApplied(err error) (bool, error) {
	if errors.Is(err, ErrConditionFailed) {
		return false, nil
	}
	return err == nil, err
}
