package mayfly

import (
	"errors"
	"fmt"

	"github.com/mayflydb/mayfly/storage"
)

// Writers exclude each other in one of two ways. On a local directory the
// writer holds the location's lock (storage.Storage.Lock) for as long as it
// is open. On a lock-free backend (storage.Traits.LockFree) a new writer
// fences the previous one: takeOver writes a manifest version with a higher
// writer epoch and fences the WAL segments the previous writer may still
// append to, and a writer that finds a manifest version above its own
// (checkFenced) stops with ErrFenced.

// fencedWriterGap is how far a writer taking over a lock-free location
// moves the file-number counter past the previous writer's.
const fencedWriterGap = 1 << 20

// takeOver makes this handle the only writer: it writes a manifest version
// with a higher writer epoch (a previous writer's next manifest write then
// fails) and, on backends without locks, fences the WAL segments a previous
// writer may still be appending to.
func (db *DB) takeOver(minLog uint64) ([]uint64, error) {
	db.epoch++
	db.visibleSeq.Store(db.lastSeq)
	if db.traits.LockFree {
		// A writer we fence may still create a few files under numbers from
		// its own counter before it notices; leave it room so that no number
		// is ever used by both.
		db.nextFileNum += fencedWriterGap
	}
	if err := db.logAndApply(&versionEdit{}); err != nil {
		return nil, err
	}
	// List after the claim: a previous writer may have started a segment
	// before it could see the new version, but not after.
	segs, err := db.logSegments(minLog)
	if err != nil {
		return nil, err
	}
	if f, ok := storage.As[storage.LogFencer](db.store); ok && db.traits.LockFree {
		for _, seg := range segs {
			err := f.FenceLog(logName(seg))
			if err != nil && !errors.Is(err, storage.ErrNotExist) {
				return nil, fmt.Errorf("mayfly: fence %s: %w", logName(seg), err)
			}
		}
	}
	return segs, nil
}

// checkFenced returns ErrFenced if a newer manifest version than ours
// exists: another writer has taken over. It costs one LIST, so it runs only
// on lock-free backends, when a new WAL segment starts. manifestMu is held
// across the LIST: a version this DB wrote after reading manifestNum must
// not be taken for another writer's.
func (db *DB) checkFenced() error {
	if !db.traits.LockFree {
		return nil // without taking manifestMu, which a manifest write holds across its syncs
	}
	db.manifestMu.Lock()
	defer db.manifestMu.Unlock()
	return db.checkFencedAbove(db.manifestNum)
}

// checkFencedAbove returns ErrFenced if a manifest version above mine
// exists, on lock-free backends (a local directory is locked instead).
func (db *DB) checkFencedAbove(mine uint64) error {
	if !db.traits.LockFree {
		return nil
	}
	newest, err := db.newestManifestVersion()
	if err != nil {
		return err
	}
	if newest > mine {
		return fmt.Errorf("mayfly: manifest version %d was written by another writer: %w", newest, ErrFenced)
	}
	return nil
}
