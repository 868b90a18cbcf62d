package mayfly

import (
	"errors"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/manifest"
	"github.com/mayflydb/mayfly/memtable"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/wal"
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
	_, err := storage.ReadAll(db.store, manifest.VersionName(db.manifestNum+1))
	changed := err == nil
	if err != nil && !errors.Is(err, storage.ErrNotExist) {
		return false, err
	}
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
	var mems []*memtable.Memtable
	if withWAL {
		if mems, lastSeq, err = db.replayForFollower(minLog, lastSeq); err != nil {
			return false, err
		}
	}

	next := newVersion(levels)
	db.mu.Lock()
	db.current = next
	db.imm = mems
	db.mem = memtable.New(0)
	db.minLogNum = minLog
	db.manifestNum = num
	db.visibleSeq.Store(lastSeq)
	db.publishReadState()
	db.mu.Unlock()
	cur.unref() // the reference the handle held as its current version
	db.metrics.followRefreshes.Add(1)
	return true, nil
}

// replayForFollower reads every WAL segment from minLog on into fresh
// memtables. A torn tail is expected: the writer may be appending to it.
func (db *DB) replayForFollower(minLog, lastSeq uint64) ([]*memtable.Memtable, uint64, error) {
	segs, err := db.logSegments(minLog)
	if err != nil {
		return nil, 0, err
	}
	mem := memtable.New(0)
	for _, seg := range segs {
		_, err := wal.Replay(db.store, logName(seg), seg, func(payload []byte) error {
			br, err := format.NewBatchReader(payload)
			if err != nil {
				return err
			}
			h := br.Header()
			if h.Count == 0 {
				return nil
			}
			lastSeq = max(lastSeq, h.Seq+uint64(h.Count)-1)
			return mem.ApplyBatch(payload)
		})
		if err != nil && !errors.Is(err, storage.ErrNotExist) {
			return nil, 0, fmt.Errorf("mayfly: follow %s: %w", logName(seg), err)
		}
	}
	if mem.Empty() {
		return nil, lastSeq, nil
	}
	return []*memtable.Memtable{mem}, lastSeq, nil
}
