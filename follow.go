package mayfly

import (
	"errors"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/storage"
)

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
		db.followPolls++
		list := db.followPolls%followListEvery == 0
		db.manifestMu.Unlock()
		if _, err := db.refresh(list); err != nil {
			db.log.Warn("mayfly: follower refresh failed; will retry", "err", err)
		}
	}
}

// Refresh makes a follower (ReadOnly with FollowInterval, or any read-only
// handle) catch up with the writer now: if a newer manifest version exists
// it loads the tables it lists, and with FollowWAL it replays the WAL. It
// reports whether the view changed. It costs a probe for the next manifest
// version and a LIST of the versions (plus the WAL reads with FollowWAL);
// the background poll of a follower makes the LIST only every tenth time.
func (db *DB) Refresh() (bool, error) { return db.refresh(true) }

func (db *DB) refresh(list bool) (bool, error) {
	if !db.opts.ReadOnly {
		return false, fmt.Errorf("%w: Refresh is for read-only handles", ErrInvalidOptions)
	}
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
	list = list || db.tail.forceList
	db.tail.forceList = false
	if !changed && list {
		// The writer keeps only its newest versions: if it wrote several
		// between two polls, the next number is already gone. A LIST now
		// and then finds the newest one.
		names, err := db.store.List(manifest.Dir)
		if err != nil {
			return false, err
		}
		for _, name := range names {
			if v, ok := manifest.ParseVersionName(name); ok && v > db.manifestNum {
				changed = true
			}
		}
	}
	// A follower without FollowWAL sees flushed data only; every other
	// read-only handle saw the WAL at Open and keeps seeing it.
	withWAL := db.opts.FollowWAL || db.opts.FollowInterval <= 0
	if !changed && !withWAL {
		return false, nil
	}
	st, num := (*manifest.State)(nil), db.manifestNum
	if changed {
		var skipped []error
		st, num, skipped, err = manifest.Load(db.store)
		if err != nil {
			return false, err
		}
		if len(skipped) > 0 {
			return false, fmt.Errorf("mayfly: newest manifest version is unreadable: %w", errors.Join(skipped...))
		}
	}

	db.mu.Lock()
	cur := db.current
	cur.ref()
	minLog := db.minLogNum
	db.mu.Unlock()
	defer cur.unref()

	levels := cur.levels
	lastSeq := db.visibleSeq.Load()
	if st != nil {
		byNum := make(map[uint64]*tableFile)
		for _, t := range cur.files() {
			byNum[t.Meta.Num] = t
		}
		var opened []*tableFile
		for l := range levels {
			levels[l] = nil
			for _, m := range st.Levels[l] {
				t := byNum[m.Num]
				if t == nil {
					if t, err = db.openTable(m); err != nil {
						for _, o := range opened {
							o.reader.Close()
						}
						return false, err
					}
					opened = append(opened, t)
				}
				levels[l] = append(levels[l], t)
			}
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
	db.setMemtables(db.newMemtable(0), db.tail.memtables())
	db.minLogNum = minLog
	db.manifestNum = num
	db.visibleSeq.Store(lastSeq)
	db.publishReadState()
	db.mu.Unlock()
	cur.unref() // the reference the handle held as its current version
	db.metrics.followRefreshes.Add(1)
	return true, walErr
}
