package bench

import (
	"encoding/binary"
	"errors"
	"io"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/dgraph-io/badger/v4"
	"github.com/mayflydb/mayfly"
)

// CounterOps is the optional engine capability the counter workloads
// (workloads_counter.go) need: 64-bit counters that live for a window.
//
//   - Mayfly: Merge of the built-in Int64Add operator with the window as
//     TTL (the window starts with the counter's first increment, RFC 0010),
//     and the answering DB.Add.
//   - Pebble: its merge operator (an int64 add, pebbleCounterMerger) with
//     no TTL, the bar the issue sets for blind increments; its answering
//     add reads then writes under the key's stripe lock.
//   - Badger: one transaction per increment (read, add, write keeping the
//     window's deadline), retried on conflict.
type CounterOps interface {
	// Incr adds delta to key's counter without reading it.
	Incr(key []byte, delta int64, window time.Duration) error
	// Add adds delta to key's counter and returns the new value, atomic
	// with respect to every other Add and Incr on key.
	Add(key []byte, delta int64, window time.Duration) (int64, error)
	// Counter returns key's value; found is false for a missing or
	// expired counter.
	Counter(key []byte) (value int64, found bool, err error)
}

// counterBytes is the stored form of a counter or an operand: a signed
// 64-bit little-endian integer, as Mayfly's Int64Add stores it.
func counterBytes(dst []byte, v int64) []byte {
	return binary.LittleEndian.AppendUint64(dst, uint64(v))
}

// counterValue decodes counterBytes.
func counterValue(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, errors.New("bench: a counter is not 8 bytes")
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

// Mayfly.

func (e *mayflyEngine) Incr(k []byte, delta int64, window time.Duration) error {
	var op [8]byte
	return e.db.Merge(k, counterBytes(op[:0], delta), mayfly.ExpireAfter(window))
}

func (e *mayflyEngine) Add(k []byte, delta int64, window time.Duration) (int64, error) {
	return e.db.Add(k, delta, mayfly.ExpireAfter(window))
}

func (e *mayflyEngine) Counter(k []byte) (int64, bool, error) {
	v, ok, err := found(e.db.Get(k))
	if !ok || err != nil {
		return 0, false, err
	}
	n, err := counterValue(v)
	return n, err == nil, err
}

// Pebble.

// pebbleCounterMerger is an int64 add for Pebble's merge operator.
var pebbleCounterMerger = &pebble.Merger{
	Name: "bench.int64add",
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		n, err := counterValue(value)
		return &pebbleCounter{n: n}, err
	},
}

type pebbleCounter struct{ n int64 }

func (c *pebbleCounter) add(v []byte) error {
	d, err := counterValue(v)
	c.n += d
	return err
}
func (c *pebbleCounter) MergeNewer(v []byte) error { return c.add(v) }
func (c *pebbleCounter) MergeOlder(v []byte) error { return c.add(v) }
func (c *pebbleCounter) Finish(bool) ([]byte, io.Closer, error) {
	return counterBytes(nil, c.n), nil, nil
}

func (e *pebbleEngine) Incr(k []byte, delta int64, _ time.Duration) error {
	var op [8]byte
	return e.db.Merge(k, counterBytes(op[:0], delta), pebble.NoSync)
}

func (e *pebbleEngine) Add(k []byte, delta int64, _ time.Duration) (int64, error) {
	defer e.ttl.lock(k)()
	n, _, err := e.Counter(k)
	if err != nil {
		return 0, err
	}
	n += delta
	var v [8]byte
	return n, e.db.Set(k, counterBytes(v[:0], n), pebble.NoSync)
}

func (e *pebbleEngine) Counter(k []byte) (int64, bool, error) {
	v, closer, err := e.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	n, err := counterValue(v)
	return n, err == nil, err
}

// Badger.

func (e *badgerEngine) Incr(k []byte, delta int64, window time.Duration) error {
	_, err := e.Add(k, delta, window)
	return err
}

func (e *badgerEngine) Add(k []byte, delta int64, window time.Duration) (int64, error) {
	var n int64
	err := e.update(func(txn *badger.Txn) error {
		n = 0
		ent := badger.NewEntry(k, nil).WithTTL(window)
		item, err := txn.Get(k)
		switch {
		case err == nil:
			if err := item.Value(func(v []byte) error {
				var err error
				n, err = counterValue(v)
				return err
			}); err != nil {
				return err
			}
			ent.ExpiresAt = item.ExpiresAt() // the window keeps its deadline
		case !errors.Is(err, badger.ErrKeyNotFound):
			return err
		}
		n += delta
		ent.Value = counterBytes(nil, n)
		return txn.SetEntry(ent)
	})
	return n, err
}

func (e *badgerEngine) Counter(k []byte) (int64, bool, error) {
	v, ok, err := e.Get(k, nil)
	if !ok || err != nil {
		return 0, false, err
	}
	n, err := counterValue(v)
	return n, err == nil, err
}
