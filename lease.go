package mayfly

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// Leases with fencing tokens (RFC 0009, "Leases and fencing tokens").
//
// A lease is one row with a deadline:
//
//	+----------------------+-------------+
//	| token u64 (LE)       | holder      |
//	+----------------------+-------------+
//
// The token is the sequence number the granting row commits at, written into
// the value by the commit leader (Batch.stamp), so tokens strictly increase
// across keys, expiries and restarts. A renewal keeps the token; renewal and
// release compare the whole value, so only the holder of that grant can make
// them. Every lease write is synced: a grant lost in a crash would let the
// next grant after recovery commit at the same sequence number and hand out
// its token a second time.

// leaseTokenLen is the size of the token at the start of a lease's value.
const leaseTokenLen = 8

// Lease is a grant of a lease key to a holder until Deadline. Token is the
// grant's fencing token: every grant, of any key, gets a larger token than
// every earlier grant, so a resource that remembers the largest token it has
// seen can reject a request from a holder whose lease has since expired and
// been granted to someone else.
type Lease struct {
	Key      []byte
	Holder   []byte
	Token    uint64
	Deadline time.Time // the lease is held while the clock reads <= Deadline
}

// AcquireLease grants key to holder for ttl if key has no live value (never
// written, deleted, released or expired), and reports whether it did. A key
// that is held, also by the same holder, is not granted again: the holder
// renews with RenewLease. The grant is synced before AcquireLease returns.
func (db *DB) AcquireLease(key, holder []byte, ttl time.Duration) (Lease, bool, error) {
	if len(holder) > MaxValueSize-leaseTokenLen {
		return Lease{}, false, fmt.Errorf("%w: lease holder of %d bytes (limit %d)", ErrValueTooLarge, len(holder), MaxValueSize-leaseTokenLen)
	}
	b := db.pooledBatch(0)
	defer b.Close()
	value := leaseValue(0, holder)
	if err := b.PutIfAbsent(key, value, ExpireAfter(ttl)); err != nil {
		return Lease{}, false, err
	}
	b.cond.tokens = append(b.cond.tokens, tokenSlot{offset: len(b.data) - len(value), entry: b.count - 1})
	return b.writeLease(key, holder)
}

// RenewLease extends l to ttl from now if l is still held (its key holds the
// same grant: holder and token) and reports whether it did; the renewed
// lease keeps l's token. An expired or released lease is not renewed, even
// if nobody has acquired it since. The renewal is synced.
func (db *DB) RenewLease(l Lease, ttl time.Duration) (Lease, bool, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	value := leaseValue(l.Token, l.Holder)
	if err := b.CompareAndSwap(l.Key, value, value, ExpireAfter(ttl)); err != nil {
		return Lease{}, false, err
	}
	return b.writeLease(l.Key, l.Holder)
}

// ReleaseLease ends l if it is still held (same holder and token), so the
// key can be acquired at once, and reports whether it did. The release is
// synced.
func (db *DB) ReleaseLease(l Lease) (bool, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	if err := b.CompareAndDelete(l.Key, leaseValue(l.Token, l.Holder)); err != nil {
		return false, err
	}
	return condApplied(b.Write(Sync))
}

// writeLease writes b, holding one conditional lease row for key, synced,
// and returns the lease the stamped row grants.
func (b *Batch) writeLease(key, holder []byte) (Lease, bool, error) {
	if ok, err := condApplied(b.Write(Sync)); !ok {
		return Lease{}, false, err
	}
	// The row is the batch's only entry and its value ends the encoding:
	// the stamped deadline and token are read back from it.
	deadline := int64(binary.LittleEndian.Uint64(b.data[b.relative[0].offset:]))
	token := binary.LittleEndian.Uint64(b.data[len(b.data)-len(holder)-leaseTokenLen:])
	return Lease{Key: bytes.Clone(key), Holder: bytes.Clone(holder), Token: token, Deadline: time.UnixMilli(deadline)}, true, nil
}

// leaseValue is the value of a lease row.
func leaseValue(token uint64, holder []byte) []byte {
	v := make([]byte, leaseTokenLen, leaseTokenLen+len(holder))
	binary.LittleEndian.PutUint64(v, token)
	return append(v, holder...)
}
