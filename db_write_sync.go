package mayfly

import (
	"fmt"
	"sync"

	"github.com/mayflydb/mayfly/wal"
)

// groupSync is the fsync a synced group's writers wait for: the WAL segment
// their records went to and the offset they end at. The first of them to
// need it runs it (waitSynced), after commitMu is released and its own
// batch is published; the others wait for its outcome.
type groupSync struct {
	once sync.Once
	seg  *wal.Writer
	end  int64
	err  error
}

// waitSynced returns once the records of gs's group are durable, running
// the sync if no other writer of the group has. Syncs of successive groups
// share the segment's (wal.Writer.SyncTo): one in progress covers what was
// logged before it began, the next covers the rest. A failed sync poisons
// the database, as a failed write does: the bytes after the last durable
// one are in an unknown state.
func (db *DB) waitSynced(gs *groupSync) error {
	gs.once.Do(func() {
		if err := gs.seg.SyncTo(gs.end); err != nil {
			// A failed write may leave a partial record, a failed fsync
			// the written bytes in an unknown state: nothing more may be
			// appended, nothing treated as durable or retried.
			gs.err = db.setBackgroundError(fmt.Errorf("WAL write and sync: %w", err))
		}
	})
	return gs.err
}
