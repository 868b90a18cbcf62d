package mayfly

import (
	"errors"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/format"
)

// TTL operations (RFC 0008): change a live key's deadline without writing
// its value again. Each writes a deadline row (format.FlagDeadline) under
// the condition, checked in the commit pipeline (RFC 0009), that the key
// is live and that the ExpireCond allows the change.

// ExpireCond says when Expire changes a key's deadline, as Redis's EXPIRE
// options do. No deadline counts as infinitely late.
type ExpireCond uint8

const (
	// ExpireAlways sets the deadline of any live key.
	ExpireAlways ExpireCond = iota
	// ExpireNX sets it only if the key has no deadline.
	ExpireNX
	// ExpireXX sets it only if the key has a deadline.
	ExpireXX
	// ExpireGT sets it only if the new deadline is later than the
	// current one; a key without a deadline never qualifies.
	ExpireGT
	// ExpireLT sets it only if the new deadline is earlier than the
	// current one; a key without a deadline always qualifies.
	ExpireLT

	// expirePersist is Persist's condition: the key has a deadline.
	expirePersist
)

// String names the condition as Redis does.
func (c ExpireCond) String() string {
	switch c {
	case ExpireAlways:
		return "always"
	case ExpireNX:
		return "NX"
	case ExpireXX:
		return "XX"
	case ExpireGT:
		return "GT"
	case ExpireLT:
		return "LT"
	case expirePersist:
		return "persist"
	}
	return fmt.Sprintf("ExpireCond(%d)", uint8(c))
}

// allows reports whether deadline row e may replace the deadline of the
// live key in state s.
func (c ExpireCond) allows(s keyState, e *format.Row) bool {
	switch c {
	case ExpireAlways:
		return true
	case ExpireNX:
		return !s.expires
	case ExpireXX, expirePersist:
		return s.expires
	case ExpireGT:
		return s.expires && (!e.HasExpiry() || e.ExpireTS > s.deadline)
	case ExpireLT:
		return e.HasExpiry() && (!s.expires || e.ExpireTS < s.deadline)
	}
	return false
}

// Expire adds a change of key's deadline to what ttl says (NoExpiry: no
// deadline), applied only if key is live when the batch commits and cond
// allows it; otherwise Write fails with ErrConditionFailed and writes
// nothing. The value is not written again.
func (b *Batch) Expire(key []byte, ttl TTL, cond ExpireCond) error {
	if cond > ExpireLT {
		return b.fail(fmt.Errorf("%w: unknown ExpireCond %d", ErrInvalidTTL, uint8(cond)))
	}
	return b.deadlineIf(key, ttl, cond, false)
}

// Persist adds a removal of key's deadline, applied only if key is live and
// has a deadline when the batch commits (Redis PERSIST).
func (b *Batch) Persist(key []byte) error {
	return b.deadlineIf(key, NoExpiry(), expirePersist, false)
}

func (b *Batch) deadlineIf(key []byte, ttl TTL, cond ExpireCond, capture bool) error {
	if err := b.appendDeadline(key, ttl); err != nil {
		return err
	}
	b.cond.add(b.count-1, condDeadline, []byte{byte(cond)}, capture)
	return nil
}

// Expire sets the deadline of a live key to what ttl says, if cond allows,
// and reports whether it did (Redis EXPIRE, PEXPIREAT and their NX, XX, GT
// and LT options). NoExpiry removes the deadline; a deadline already past
// expires the key at once. A missing, deleted or expired key is left alone
// (false). The change is decided in commit order against the latest state,
// so it is linearizable with every other write; the value is not written
// again. Like Put it does not wait for an fsync; Batch.Expire with
// Write(Sync) does.
func (db *DB) Expire(key []byte, ttl TTL, cond ExpireCond) (bool, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	return b.writeCondOn(key, b.Expire(key, ttl, cond))
}

// Persist removes the deadline of a live key and reports whether it did
// (Redis PERSIST): false for a missing or expired key and for one without
// a deadline. Durability as Expire.
func (db *DB) Persist(key []byte) (bool, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	return b.writeCondOn(key, b.Persist(key))
}

// Touch sets the deadline of a live key to what ttl says, counted from now
// (a sliding expiry), and reports whether the key is live. Unlike Expire it
// may spare the write: when the key's deadline is already within
// min(Options.TouchWindow, TTL/10) before the one asked, it writes nothing,
// so a hot key read and touched many times a second costs one write per
// window; the key may then expire up to that much earlier than asked, in
// memory and after a crash alike. Durability as Expire.
func (db *DB) Touch(key []byte, ttl TTL) (bool, error) {
	_, err := db.touch(key, ttl, false)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// GetEx returns key's live value and sets its deadline as Touch does
// (Redis GETEX): one call for the read and the extension of a sliding
// session. A missing, deleted or expired key returns ErrNotFound and writes
// nothing. When the deadline is changed, the value returned is the one the
// change applied to. The returned slice is the caller's.
func (db *DB) GetEx(key []byte, ttl TTL) ([]byte, error) {
	return db.touch(key, ttl, true)
}

// touch is Touch and GetEx: a read that decides whether the deadline is
// close enough to the one asked, else a deadline row under condDeadline
// (capturing the value for GetEx). The read is the batch's peek, so the
// leader need not look the key up again (cond_peek.go).
func (db *DB) touch(key []byte, ttl TTL, withValue bool) ([]byte, error) {
	expires, relative, v, err := ttl.resolve(db.opts.DefaultTTL)
	if err != nil {
		return nil, err
	}
	if db.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	b := db.pooledBatch(0)
	defer b.Close()
	p := &b.cond.peek
	if err := db.peekKey(key, withValue, p); err != nil {
		return nil, err
	}
	// The clock is read after the read, as Get judges expiry: a write the
	// read saw committed no later than now, so the call may take effect at
	// now, after it.
	now := db.clock.NowMillis()
	st := p.st
	if !st.live || st.expires && st.deadline < now {
		return nil, ErrNotFound
	}
	asked := v
	if expires && relative {
		if asked, err = deadlineFrom(now, v); err != nil {
			return nil, err
		}
	}
	if db.closeEnough(st, expires, asked, now) {
		db.metrics.touchesCoalesced.Add(1)
		if withValue {
			return append([]byte{}, st.value...), nil
		}
		return nil, nil
	}
	if err := b.deadlineIf(key, ttl, ExpireAlways, withValue); err != nil {
		return nil, err
	}
	b.cond.quiet = true
	ok, err := condApplied(b.Write(nil))
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, ErrNotFound
	case withValue:
		return append([]byte{}, b.cond.got...), nil
	}
	return nil, nil
}

// closeEnough reports whether the live key's deadline (st) may stand for
// the one asked (expires, asked) at now: equal, or at most the touch window
// earlier, the window being min(TouchWindow, a tenth of the time from now
// to the deadline asked), in whole milliseconds.
func (db *DB) closeEnough(st keyState, expires bool, asked, now int64) bool {
	if !expires || !st.expires {
		return expires == st.expires
	}
	window := min(db.opts.TouchWindow, time.Duration(max(asked-now, 0))*time.Millisecond/10).Milliseconds()
	return st.deadline <= asked && st.deadline >= asked-window
}
