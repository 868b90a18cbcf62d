package mayfly

import (
	"fmt"
	"sync"

	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
)

// FlushWAL makes every write acknowledged so far survive a crash of the
// process on a local disk: it returns once the WAL bytes of those writes
// have been handed to the operating system (on an object store, to the
// storage backend, which uploads them within its flush interval). With sync
// it also makes them durable, as a later write with WriteOptions.Sync
// would: they then survive a crash of the machine, and on an object store
// they are uploaded.
//
// Unsynced writes normally reach the operating system on their own within
// Options.WALMinWriteInterval (100 µs by default); FlushWAL is for callers
// that need to know they did, for example before handing a copy of the
// directory to another process.
func (db *DB) FlushWAL(sync bool) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	db.mu.Lock()
	closed, bgErr := db.closed, db.bgErr
	db.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if bgErr != nil {
		return bgErr
	}
	if sync {
		if err := db.logWriter.Sync(); err != nil {
			return db.setBackgroundError(fmt.Errorf("WAL sync: %w", err))
		}
		return nil
	}
	if err := db.logWriter.Flush(); err != nil {
		return db.setBackgroundError(fmt.Errorf("WAL write: %w", err))
	}
	return nil
}

// walRotation is the background side of WAL rotation (wal package doc,
// "Seals"): the next segment's log, created ahead of need, and the seal
// syncs of older segments still running. Its mutex guards the spare fields.
type walRotation struct {
	mu        sync.Mutex
	spareNum  uint64            // file number of the spare (in flight or ready); 0 if none
	spare     storage.LogWriter // the created log, nil until ready or if creation failed
	spareErr  error             // why the creation failed
	spareDone chan struct{}     // closed when the creation ends; nil if none was started
	wg        sync.WaitGroup    // the spare's creation and the seal watchers
}

// prepareLogSegment starts creating the next WAL segment's log in the
// background, under a file number it allocates now, unless one is being
// created or is ready. Only backends with locks get one: on a lock-free
// backend a segment is created at the rotation, after checkFenced.
func (db *DB) prepareLogSegment() {
	if db.traits.LockFree || db.opts.ReadOnly {
		return
	}
	r := &db.walRot
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spareDone != nil {
		return
	}
	num := db.allocFileNum()
	done := make(chan struct{})
	r.spareNum, r.spare, r.spareErr, r.spareDone = num, nil, nil, done
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		lw, err := wal.CreateLog(db.store, logName(num))
		if err != nil {
			db.removeQuietly(logName(num))
		}
		r.mu.Lock()
		r.spare, r.spareErr = lw, err
		r.mu.Unlock()
		close(done)
	}()
}

// takeSpareLog waits for the spare log's creation, if one was started, and
// takes it: the log (nil if none was started) and its number, or the
// creation's error.
func (db *DB) takeSpareLog() (storage.LogWriter, uint64, error) {
	r := &db.walRot
	r.mu.Lock()
	done := r.spareDone
	r.mu.Unlock()
	if done == nil {
		return nil, 0, nil
	}
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	lw, num, err := r.spare, r.spareNum, r.spareErr
	r.spareNum, r.spare, r.spareErr, r.spareDone = 0, nil, nil, nil
	return lw, num, err
}

// nextLogSegment returns the writer of the segment that follows the
// active one: the spare log if one is ready (its header written now), else
// a segment created here. It starts the creation of the next spare.
func (db *DB) nextLogSegment() (*wal.Writer, uint64, error) {
	lw, num, err := db.takeSpareLog()
	if err != nil {
		db.log.Warn("mayfly: creating the next WAL segment ahead of need", "file", logName(num), "err", err)
	}
	defer db.prepareLogSegment()
	if lw == nil {
		num = db.allocFileNum()
		w, err := db.createLogSegment(num)
		return w, num, err
	}
	w, err := db.startLogSegment(lw, num)
	return w, num, err
}

// sealActiveLog seals the active segment for a rotation. On a backend
// with locks the seal's write and sync run in the background, reported by
// the returned SealSync. On a lock-free backend the seal is synced here,
// and the SealSync is nil: a writer another one fenced fails at its seal,
// before it creates a segment the other would have to collect.
func (db *DB) sealActiveLog() (*wal.SealSync, error) {
	if db.traits.LockFree {
		return nil, db.logWriter.Seal()
	}
	return db.logWriter.SealAsync()
}

// watchSeal waits, in the background, for the seal sync s of a segment
// sealed by a rotation, and puts the DB in its error state if it failed,
// as a failed synchronous seal would. Then it closes old, the sealed
// segment's writer, unless old is nil (the segment is still the DB's).
// A nil s is a seal already synced: old is closed at once.
func (db *DB) watchSeal(s *wal.SealSync, old *wal.Writer) {
	if s == nil {
		if old != nil {
			if err := old.Close(); err != nil {
				db.log.Warn("mayfly: closing WAL segment", "err", err)
			}
		}
		return
	}
	db.walRot.wg.Add(1)
	go func() {
		defer db.walRot.wg.Done()
		if err := s.Wait(); err != nil {
			db.setBackgroundError(fmt.Errorf("WAL seal at rotation: %w", err))
		}
		if old == nil {
			return
		}
		if err := old.Close(); err != nil && s.Wait() == nil {
			db.log.Warn("mayfly: closing WAL segment", "err", err)
		}
	}()
}

// closeWALRotation waits for the seal syncs and the spare's creation still
// running, and removes the spare, which never held a record. Close calls
// it once no commit can rotate any more.
func (db *DB) closeWALRotation() error {
	lw, num, err := db.takeSpareLog()
	db.walRot.wg.Wait()
	if err != nil || lw == nil {
		return nil
	}
	if err := lw.Close(); err != nil {
		return fmt.Errorf("mayfly: close unused WAL segment %s: %w", logName(num), err)
	}
	if err := db.store.Remove(logName(num)); err != nil {
		return fmt.Errorf("mayfly: remove unused WAL segment %s: %w", logName(num), err)
	}
	return nil
}

// startLogSegment writes the header of segment num to lw, a log created
// for it, and returns its writer. On failure it closes and removes the log.
func (db *DB) startLogSegment(lw storage.LogWriter, num uint64) (*wal.Writer, error) {
	w, err := wal.NewWriter(lw, num)
	if err != nil {
		lw.Close()
		db.removeQuietly(logName(num))
		return nil, err
	}
	w.SetMinWriteInterval(db.opts.WALMinWriteInterval)
	w.CountWaits(&db.metrics.walBacklogWaits)
	w.CountSyncs(&db.metrics.walSyncs)
	db.metrics.walSegmentsCreated.Add(1)
	db.opts.EventListener.walCreated(logName(num))
	return w, nil
}
