package bench

import (
	"context"
	"errors"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

type badgerEngine struct {
	db  *badger.DB
	dir string
	// smallMemtables opens Badger with smallMemtableCount memtables of
	// smallMemtableBytes (the "badger-smallmem" variant).
	smallMemtables bool
}

// The memtables of "badger-smallmem", sized to the order of what the other
// engines' memtables hold at their defaults, far below Badger's own
// (bench/HISTORY.md, "Scale curve at 50M").
const (
	smallMemtableBytes = 8 << 20
	smallMemtableCount = 2
)

func (e *badgerEngine) Name() string {
	if e.smallMemtables {
		return "badger-smallmem"
	}
	return "badger"
}

func (e *badgerEngine) Open(dir string, cacheBytes int64, bloomBits int) error {
	o := badger.DefaultOptions(dir).WithLogger(nil).WithBlockCacheSize(cacheBytes)
	if e.smallMemtables {
		o = o.WithMemTableSize(smallMemtableBytes).WithNumMemtables(smallMemtableCount)
	}
	if bloomBits > 0 {
		// Badger always builds bloom filters; size them to the same
		// false-positive rate as bloomBits bits per key give elsewhere
		// (10 bits ≈ 1%).
		o = o.WithBloomFalsePositive(bloomFPR(bloomBits))
	}
	db, err := badger.Open(o)
	if err != nil {
		return err
	}
	e.db, e.dir = db, dir
	return nil
}

func bloomFPR(bits int) float64 {
	// Optimal-k bloom: fpr ≈ 0.6185^bits.
	p := 1.0
	for range bits {
		p *= 0.6185
	}
	return p
}

func (e *badgerEngine) Put(k, v []byte) error {
	return e.db.Update(func(txn *badger.Txn) error { return txn.Set(k, v) })
}

func (e *badgerEngine) PutTTL(k, v []byte, ttl time.Duration) error {
	return e.db.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(k, v).WithTTL(ttl))
	})
}

func (e *badgerEngine) SyncPut(k, v []byte) error {
	if err := e.Put(k, v); err != nil {
		return err
	}
	return e.db.Sync()
}

func (e *badgerEngine) Batch(keys, values [][]byte) error {
	// A transaction is Badger's atomic batch (WriteBatch is not atomic).
	return e.db.Update(func(txn *badger.Txn) error {
		for i := range keys {
			if err := txn.Set(keys[i], values[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *badgerEngine) Get(k, dst []byte) ([]byte, bool, error) {
	found := false
	err := e.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		found = true
		return item.Value(func(v []byte) error { dst = append(dst, v...); return nil })
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return dst, false, nil
	}
	return dst, found, err
}

func (e *badgerEngine) NewIter() (Iter, error) {
	txn := e.db.NewTransaction(false)
	o := badger.DefaultIteratorOptions
	o.PrefetchValues = false // values are read with Value() in the loop
	return &badgerIter{txn: txn, it: txn.NewIterator(o)}, nil
}

type badgerIter struct {
	txn *badger.Txn
	it  *badger.Iterator
	val []byte
}

func (b *badgerIter) SeekGE(k []byte) bool { b.it.Seek(k); return b.it.Valid() }
func (b *badgerIter) First() bool          { b.it.Rewind(); return b.it.Valid() }
func (b *badgerIter) Next() bool           { b.it.Next(); return b.it.Valid() }
func (b *badgerIter) Key() []byte          { return b.it.Item().Key() }
func (b *badgerIter) Value() []byte {
	b.val, _ = b.it.Item().ValueCopy(b.val[:0])
	return b.val
}
func (b *badgerIter) Close() error { b.it.Close(); b.txn.Discard(); return nil }

func (e *badgerEngine) Settle(ctx context.Context) error { return nil } // no API to wait for compactions

// ValueLogGC runs Badger's user-driven value-log GC once (used in ttlchurn,
// as an application would).
func (e *badgerEngine) ValueLogGC() { _ = e.db.RunValueLogGC(0.5) }

func (e *badgerEngine) Stats() map[string]float64 {
	lsm, vlog := e.db.Size()
	return map[string]float64{"lsm_bytes": float64(lsm), "vlog_bytes": float64(vlog)}
}

func (e *badgerEngine) Close() error     { return e.db.Close() }
func (e *badgerEngine) DiskBytes() int64 { return DirBytes(e.dir) }

// TTLOps: one transaction per call, retried on ErrConflict, as a Badger
// application does it.

// update runs f in a read-write transaction until it commits without a
// conflict.
func (e *badgerEngine) update(f func(txn *badger.Txn) error) error {
	for {
		err := e.db.Update(f)
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
	}
}

func (e *badgerEngine) PutExpiring(k, v []byte, ttl time.Duration) error { return e.PutTTL(k, v, ttl) }

func (e *badgerEngine) GetEx(k []byte, ttl time.Duration, dst []byte) ([]byte, bool, error) {
	return e.take(k, dst, func(txn *badger.Txn, v []byte) error {
		return txn.SetEntry(badger.NewEntry(k, v).WithTTL(ttl))
	})
}

func (e *badgerEngine) Touch(k []byte, ttl time.Duration) (bool, error) {
	_, ok, err := e.GetEx(k, ttl, nil)
	return ok, err
}

func (e *badgerEngine) GetDel(k, dst []byte) ([]byte, bool, error) {
	return e.take(k, dst, func(txn *badger.Txn, _ []byte) error { return txn.Delete(k) })
}

// take reads k's live value into dst and, if there is one, applies write
// in the same transaction.
func (e *badgerEngine) take(k, dst []byte, write func(txn *badger.Txn, v []byte) error) ([]byte, bool, error) {
	var found bool
	err := e.update(func(txn *badger.Txn) error {
		found = false
		item, err := txn.Get(k)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if dst, err = item.ValueCopy(dst[:0]); err != nil {
			return err
		}
		found = true
		return write(txn, dst)
	})
	return dst, found && err == nil, err
}

func (e *badgerEngine) PutIfAbsent(k, v []byte, ttl time.Duration) (bool, error) {
	var wrote bool
	err := e.update(func(txn *badger.Txn) error {
		wrote = false
		_, err := txn.Get(k)
		if err == nil {
			return nil
		}
		if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		wrote = true
		return txn.SetEntry(badger.NewEntry(k, v).WithTTL(ttl))
	})
	return wrote && err == nil, err
}
