package mayfly

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/mayflydb/mayfly/manifest"
)

// A read-only handle (Options.ReadOnly) changes nothing in the location it
// reads: Open wraps its storage in storage.ReadOnly (a local directory is
// opened with storage.OpenLocalReadOnly), takes no lock, removes no
// temporary file, orphan table or WAL segment, writes no manifest version
// and replays the WAL into memory only. It needs no exclusion from a
// writer, so it reads beside one, on a local directory as on an object
// store. A writer tolerates it: a table or WAL segment the writer deletes
// stays readable through a file the reader already opened (POSIX unlink
// semantics; on an object store, Options.ObsoleteFileGracePeriod), and
// what the reader had not opened yet it finds through a newer manifest
// version.
//
// The race that remains is between reading a manifest version and opening
// what it lists: the writer may compact a table away, or flush and delete
// a WAL segment, in between. The reader detects it by finding a version
// newer than the one it loaded, and starts over from that one (at most
// readOnlyAttempts times); a missing table is reported as such only when
// no newer version explains it.

// readOnlyAttempts bounds how many times a read-only Open or Refresh loads
// the manifest again because the writer replaced it meanwhile.
const readOnlyAttempts = 10

// errNoDatabase is returned by a read-only open of a location holding no
// manifest version, table or WAL segment: nothing a writer ever opened.
var errNoDatabase = fmt.Errorf("no Mayfly database here (no manifest version, table or WAL segment): %w", fs.ErrNotExist)

// errManifestMoved reports that every manifest version a read-only load
// listed was gone when it read them: the writer has written newer ones.
var errManifestMoved = errors.New("mayfly: the manifest versions changed while being read")

// openReadOnly is Open for a read-only handle: it loads the newest
// manifest version, its tables and the WAL, and starts over while the
// writer replaced that version meanwhile (a table or WAL segment the
// loaded version needed may be gone, or rows may have moved from a WAL
// segment the handle did not read into a table it did not load).
func (db *DB) openReadOnly() error {
	var err error
	for range readOnlyAttempts {
		db.manifestNum = 0
		err = db.loadReadOnly()
		loaded := db.manifestNum
		if err != nil && !errors.Is(err, errManifestMoved) && loaded == 0 {
			return err // failed before a version was loaded: not a race
		}
		newer, lerr := db.newerManifest(loaded)
		if lerr != nil {
			return errors.Join(err, lerr)
		}
		if !newer && !errors.Is(err, errManifestMoved) {
			return err
		}
		db.resetReadOnly()
	}
	// What failed is a consequence of the writer's progress, not damage:
	// report it without wrapping it (no ErrCorruption).
	return fmt.Errorf("mayfly: read-only open: the writer replaced the manifest %d times while it was read (last: %v)",
		readOnlyAttempts, err)
}

// loadReadOnly is one attempt of openReadOnly: it loads the newest
// manifest version and its tables (the stage a writer's Open starts with,
// open_version.go) and, unless the handle is a follower without
// FollowWAL, replays the WAL into its tail (follow_tail.go), which later
// polls continue from. It allocates no file number, and manifestNum stays
// the version it loaded (Refresh and openReadOnly look above it).
func (db *DB) loadReadOnly() error {
	st, num, err := db.loadVersion()
	if err != nil {
		return err
	}
	if _, err := db.unflushedSegments(st, num); err != nil {
		return err
	}
	db.visibleSeq.Store(db.lastSeq)
	if db.follow.withWAL {
		_, lastSeq, err := db.tailWAL(db.minLogNum, db.lastSeq)
		if err != nil {
			return err
		}
		db.lastSeq = lastSeq
		db.visibleSeq.Store(lastSeq)
	}
	db.setMemtables(db.newMemtable(0), db.follow.tail.memtables())
	db.publishReadState()
	return nil
}

// newerManifest reports whether a manifest version above v exists.
func (db *DB) newerManifest(v uint64) (bool, error) {
	newest, err := db.newestManifestVersion()
	return newest > v, err
}

// newestManifestVersion returns the highest manifest version number present
// (0 if there is none), readable or not, with one LIST.
func (db *DB) newestManifestVersion() (uint64, error) {
	names, err := db.store.List(manifest.Dir)
	if err != nil {
		return 0, err
	}
	var newest uint64
	for _, name := range names {
		if n, ok := manifest.ParseVersionName(name); ok {
			newest = max(newest, n)
		}
	}
	return newest, nil
}

// resetReadOnly drops what a read-only load built, before another.
func (db *DB) resetReadOnly() {
	db.mu.Lock()
	if rs := db.readState.Swap(nil); rs != nil {
		rs.release()
	}
	db.releaseMemtables()
	db.releaseVersion()
	db.mu.Unlock()
	db.follow.tail.release()
	db.follow.tail.forceList = false
}

// checkManifestMoved is called by a read-only open that found no manifest
// version: if versions exist now, the ones it listed were replaced while
// it read them (errManifestMoved), and the open starts over.
func (db *DB) checkManifestMoved() error {
	moved, err := db.newerManifest(0)
	if err == nil && moved {
		err = errManifestMoved
	}
	return err
}
