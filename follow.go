package mayfly

import (
	"errors"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/storage"
)

// follower is the state of a read-only handle (Options.ReadOnly), whether
// it polls (Options.FollowInterval) or refreshes only when asked: where it
// stands in the WAL and how often it has polled. DB.follow points to it
// and is nil for a writer. Open fills it before the handle is shared;
// after that manifestMu guards it (Close releases the tail under
// manifestMu, once db.closed is set).
type follower struct {
	// withWAL reports whether the handle shows the rows of the WAL: with
	// FollowWAL, or when it does not poll. A follower without FollowWAL
	// sees flushed data only. Fixed at Open.
	withWAL bool
	polls   uint64  // background polls made (followLoop)
	tail    walTail // the handle's position in the WAL
}

func newFollower(o *Options) *follower {
	return &follower{withWAL: o.FollowWAL || o.FollowInterval <= 0}
}

// release drops the tail's memtables; f may be nil (a writer).
func (f *follower) release() {
	if f != nil {
		f.tail.release()
	}
}

// followListEvery is how many polls a follower makes between LISTs of the
// manifest versions.
const followListEvery = 10

// followLoop polls for new manifest versions (Options.FollowInterval).
func (db *DB) followLoop() {
	defer db.bgDone.Done()
	t := time.NewTicker(db.opts.FollowInterval)
	defer t.Stop()
	for {
		select {
		case <-db.closing:
			return
		case <-t.C:
		}
		db.manifestMu.Lock()
		db.follow.polls++
		list := db.follow.polls%followListEvery == 0
		db.manifestMu.Unlock()
		if _, err := db.refresh(list); err != nil {
			db.log.Warn("mayfly: follower refresh failed; will retry", "err", err)
		}
	}
}

// loadNewerVersion loads the newest manifest version and the levels of its
// tables, opening those cur does not hold. If opening fails while an even
// newer version exists, the writer replaced the version meanwhile (a
// table it listed may be compacted away): it starts over from the newest,
// at most readOnlyAttempts times. The caller holds manifestMu.
func (db *DB) loadNewerVersion(cur *version) (*manifest.State, uint64, [manifest.NumLevels][]*tableFile, error) {
	var levels [manifest.NumLevels][]*tableFile
	var err error
	for range readOnlyAttempts {
		st, num, skipped, lerr := manifest.Load(db.store)
		if lerr != nil {
			return nil, 0, levels, lerr
		}
		if len(skipped) > 0 {
			return nil, 0, levels, fmt.Errorf("mayfly: newest manifest version is unreadable: %w", errors.Join(skipped...))
		}
		if st == nil {
			return nil, 0, levels, fmt.Errorf("mayfly: every manifest version is gone: %w", errManifestMoved)
		}
		if levels, err = db.versionLevels(st, cur); err == nil {
			return st, num, levels, nil
		}
		newer, lerr := db.newerManifest(num)
		if lerr != nil {
			return nil, 0, levels, errors.Join(err, lerr)
		}
		if !newer {
			return nil, 0, levels, err
		}
	}
	// Not damage but the writer's progress: not wrapped (no ErrCorruption).
	return nil, 0, levels, fmt.Errorf("mayfly: refresh: the writer replaced the manifest %d times while it was read (last: %v)",
		readOnlyAttempts, err)
}

// versionLevels returns the tables of st by level: those cur holds, and
// the others opened. On failure it closes the ones it opened.
func (db *DB) versionLevels(st *manifest.State, cur *version) ([manifest.NumLevels][]*tableFile, error) {
	var levels [manifest.NumLevels][]*tableFile
	byNum := make(map[uint64]*tableFile)
	for _, t := range cur.files() {
		byNum[t.Meta.Num] = t
	}
	var opened []*tableFile
	for l := range levels {
		for _, m := range st.Levels[l] {
			t := byNum[m.Num]
			if t == nil {
				var err error
				if t, err = db.openTable(m); err != nil {
					for _, o := range opened {
						o.reader.Close()
					}
					return levels, err
				}
				opened = append(opened, t)
			}
			levels[l] = append(levels[l], t)
		}
	}
	return levels, nil
}

// Refresh makes a follower (ReadOnly with FollowInterval, or any read-only
// handle) catch up with the writer now: if a newer manifest version exists
// it loads the tables it lists, and with FollowWAL it replays the WAL. It
// reports whether the view changed. It costs a probe for the next manifest
// version and a LIST of the versions (plus the WAL reads with FollowWAL);
// the background poll of a follower makes the LIST only every tenth time.
func (db *DB) Refresh() (bool, error) { return db.refresh(true) }

// refresh refreshes the view and, while the WAL tail found that a segment
// it had not finished vanished (the writer flushed and deleted it, so its
// rows are in a newer manifest version), refreshes again, at most
// readOnlyAttempts times.
func (db *DB) refresh(list bool) (bool, error) {
	if db.follow == nil {
		return false, fmt.Errorf("%w: Refresh is for read-only handles", ErrInvalidOptions)
	}
	changed := false
	for range readOnlyAttempts {
		c, err := db.refreshOnce(list)
		changed = changed || c
		db.manifestMu.Lock()
		lost := db.follow.tail.forceList
		db.manifestMu.Unlock()
		if err != nil || !lost {
			return changed, err
		}
		list = true
	}
	return changed, nil
}

func (db *DB) refreshOnce(list bool) (bool, error) {
	db.manifestMu.Lock()
	defer db.manifestMu.Unlock()
	// Close releases the tail's memtables under manifestMu once closed is
	// set: after that, nothing may be added to the tail.
	db.mu.Lock()
	closed := db.closed
	db.mu.Unlock()
	if closed {
		return false, ErrClosed
	}
	_, err := storage.ReadAll(db.store, manifest.VersionName(db.manifestNum+1))
	changed := err == nil
	if err != nil && !errors.Is(err, storage.ErrNotExist) {
		return false, err
	}
	list = list || db.follow.tail.forceList
	db.follow.tail.forceList = false
	if !changed && list {
		// The writer keeps only its newest versions: if it wrote several
		// between two polls, the next number is already gone. A LIST now
		// and then finds the newest one.
		if changed, err = db.newerManifest(db.manifestNum); err != nil {
			return false, err
		}
	}
	// A follower without FollowWAL sees flushed data only; every other
	// read-only handle saw the WAL at Open and keeps seeing it.
	withWAL := db.follow.withWAL
	if !changed && !withWAL {
		return false, nil
	}
	db.mu.Lock()
	cur := db.current
	cur.ref()
	minLog := db.minLogNum
	db.mu.Unlock()
	defer cur.unref()

	levels := cur.levels
	lastSeq := db.visibleSeq.Load()
	st, num := (*manifest.State)(nil), db.manifestNum
	if changed {
		if st, num, levels, err = db.loadNewerVersion(cur); err != nil {
			return false, err
		}
		// The writer records its operator in a later version than this
		// handle opened at: a refresh is refused as such an Open would be.
		if st.MergeOperator != "" && st.MergeOperator != db.mergeName {
			return false, fmt.Errorf("%w: manifest version %d records merge operator %q, this handle has %q (Options.MergeOperator); reopen with it",
				ErrMergeOperator, num, st.MergeOperator, db.mergeName)
		}
		minLog = st.MinLogNum
		lastSeq = max(lastSeq, st.LastSeq)
		db.clock.Observe(st.ClockHWM)
	}
	var walChanged bool
	var walErr error
	if withWAL {
		// Rows already applied when an error stops the tail are whole
		// records: publish them, then report the error.
		walChanged, lastSeq, walErr = db.tailWAL(minLog, lastSeq)
	}
	if st == nil && !walChanged {
		return false, walErr
	}

	next := newVersion(levels)
	db.mu.Lock()
	db.current = next
	db.setMemtables(db.newMemtable(0), db.follow.tail.memtables())
	db.minLogNum = minLog
	db.manifestNum = num
	db.visibleSeq.Store(lastSeq)
	db.publishReadState()
	db.mu.Unlock()
	cur.unref() // the reference the handle held as its current version
	db.metrics.followRefreshes.Add(1)
	return true, walErr
}
