package bench

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// TTLOps on Pebble, which has no TTL: what an application can do on top of
// it. Every TTLOps value is stored as
//
//	+--------------------------+-------+
//	| deadline (8 bytes, BE)   | value |
//	+--------------------------+-------+
//
// the deadline in Unix milliseconds; a value whose deadline is at or before
// now reads as absent. Each call holds the stripe lock of its key (one of
// pebbleStripes mutexes chosen by a hash of the key) from its read to its
// write, so calls on one key are serialized; calls on different keys
// mostly take different locks. Writes do not wait for an fsync, as the
// other engines' TTLOps do not.

const (
	pebbleStripes  = 1024
	deadlinePrefix = 8
)

// pebbleTTL is the state of the Pebble adapter's TTLOps.
type pebbleTTL struct {
	stripes [pebbleStripes]sync.Mutex
	now     func() time.Time // nil means time.Now
}

func (t *pebbleTTL) nowMillis() int64 {
	if t.now != nil {
		return t.now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// lock locks the stripe of key and returns its unlock.
func (t *pebbleTTL) lock(key []byte) func() {
	h := uint32(2166136261) // FNV-1a
	for _, c := range key {
		h = (h ^ uint32(c)) * 16777619
	}
	m := &t.stripes[h%pebbleStripes]
	m.Lock()
	return m.Unlock
}

// encodeDeadline appends the stored form of value expiring at deadline
// (Unix ms) to dst.
func encodeDeadline(dst []byte, deadline int64, value []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(deadline))
	return append(dst, value...)
}

// errShortValue reports a stored TTLOps value without its deadline prefix.
var errShortValue = errors.New("bench: pebble TTL value shorter than its deadline prefix")

// getLive appends key's live value to dst; found is false for a missing
// key and for one whose deadline has passed at now. The caller holds the
// key's stripe lock.
func (e *pebbleEngine) getLive(key, dst []byte, now int64) ([]byte, bool, error) {
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	defer closer.Close()
	if len(v) < deadlinePrefix {
		return dst, false, errShortValue
	}
	if int64(binary.BigEndian.Uint64(v)) <= now {
		return dst, false, nil
	}
	return append(dst, v[deadlinePrefix:]...), true, nil
}

// set writes key=value expiring at deadline; the caller holds the lock.
func (e *pebbleEngine) set(key, value []byte, deadline int64) error {
	return e.db.Set(key, encodeDeadline(make([]byte, 0, deadlinePrefix+len(value)), deadline, value), pebble.NoSync)
}

func (e *pebbleEngine) PutExpiring(k, v []byte, ttl time.Duration) error {
	defer e.ttl.lock(k)()
	return e.set(k, v, e.ttl.nowMillis()+ttl.Milliseconds())
}

func (e *pebbleEngine) GetEx(k []byte, ttl time.Duration, dst []byte) ([]byte, bool, error) {
	defer e.ttl.lock(k)()
	now := e.ttl.nowMillis()
	v, ok, err := e.getLive(k, dst, now)
	if !ok || err != nil {
		return v, false, err
	}
	return v, true, e.set(k, v, now+ttl.Milliseconds())
}

func (e *pebbleEngine) Touch(k []byte, ttl time.Duration) (bool, error) {
	_, ok, err := e.GetEx(k, ttl, nil)
	return ok, err
}

func (e *pebbleEngine) PutIfAbsent(k, v []byte, ttl time.Duration) (bool, error) {
	defer e.ttl.lock(k)()
	now := e.ttl.nowMillis()
	_, ok, err := e.getLive(k, nil, now)
	if ok || err != nil {
		return false, err
	}
	return true, e.set(k, v, now+ttl.Milliseconds())
}

func (e *pebbleEngine) GetDel(k, dst []byte) ([]byte, bool, error) {
	defer e.ttl.lock(k)()
	v, ok, err := e.getLive(k, dst, e.ttl.nowMillis())
	if !ok || err != nil {
		return v, false, err
	}
	return v, true, e.db.Delete(k, pebble.NoSync)
}

// WALBytes is Pebble's logical WAL input (batch bytes committed).
func (e *pebbleEngine) WALBytes() uint64 { return e.db.Metrics().WAL.BytesIn }
