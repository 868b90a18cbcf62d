package bench

import (
	"context"
	"errors"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

type leveldbEngine struct {
	db  *leveldb.DB
	dir string
}

func (e *leveldbEngine) Name() string { return "goleveldb" }

func (e *leveldbEngine) Open(dir string, cacheBytes int64, bloomBits int) error {
	o := &opt.Options{}
	if cacheBytes > 0 {
		o.BlockCacheCapacity = int(cacheBytes)
	} else {
		o.DisableBlockCache = true
	}
	if bloomBits > 0 {
		o.Filter = filter.NewBloomFilter(bloomBits)
	}
	db, err := leveldb.OpenFile(dir, o)
	if err != nil {
		return err
	}
	e.db, e.dir = db, dir
	return nil
}

var leveldbSync = &opt.WriteOptions{Sync: true}

func (e *leveldbEngine) Put(k, v []byte) error { return e.db.Put(k, v, nil) }

func (e *leveldbEngine) PutTTL(k, v []byte, ttl time.Duration) error { return ErrNoTTL }

func (e *leveldbEngine) SyncPut(k, v []byte) error { return e.db.Put(k, v, leveldbSync) }

func (e *leveldbEngine) Batch(keys, values [][]byte) error {
	var b leveldb.Batch
	for i := range keys {
		b.Put(keys[i], values[i])
	}
	return e.db.Write(&b, nil)
}

func (e *leveldbEngine) Get(k, dst []byte) ([]byte, bool, error) {
	v, err := e.db.Get(k, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	return append(dst, v...), true, nil
}

func (e *leveldbEngine) NewIter() (Iter, error) {
	return leveldbIter{e.db.NewIterator(nil, nil)}, nil
}

type leveldbIter struct{ iterator.Iterator }

func (it leveldbIter) SeekGE(k []byte) bool { return it.Seek(k) }
func (it leveldbIter) Close() error         { it.Release(); return it.Error() }

func (e *leveldbEngine) Settle(ctx context.Context) error { return nil } // no API to wait for compactions

func (e *leveldbEngine) Stats() map[string]float64 {
	var s leveldb.DBStats
	if err := e.db.Stats(&s); err != nil {
		return nil
	}
	return map[string]float64{"io_write_bytes": float64(s.IOWrite), "io_read_bytes": float64(s.IORead)}
}

func (e *leveldbEngine) Close() error     { return e.db.Close() }
func (e *leveldbEngine) DiskBytes() int64 { return DirBytes(e.dir) }
