package mayfly

import (
	"iter"
	"sync"
	"time"
)

// Snapshot is a frozen, repeatable view of the database: it reads at a fixed
// sequence number and a fixed clock time, so the same read gives the same
// answer however many writes follow and however much time passes — rows that
// expire after the snapshot was taken stay visible to it. Compactions keep
// every version and every row a snapshot can read until it is closed; close
// snapshots promptly. A Snapshot is safe for concurrent use.
type Snapshot struct {
	db     *DB
	seq    uint64
	now    int64
	mu     sync.Mutex
	closed bool
}

// NewSnapshot returns a snapshot of the database as of now.
func (db *DB) NewSnapshot() (*Snapshot, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil, ErrClosed
	}
	s := &Snapshot{db: db, seq: db.visibleSeq.Load(), now: db.clock.NowMillis()}
	db.snapshots[s] = struct{}{}
	return s, nil
}

// Time returns the clock time the snapshot reads at.
func (s *Snapshot) Time() time.Time { return time.UnixMilli(s.now) }

func (s *Snapshot) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Get returns the value key had in the snapshot, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.db.getAt(nil, key, s.seq, s.now)
}

// GetAppend appends the value key had in the snapshot to dst and returns
// the extended slice, or dst and an error (ErrNotFound); see DB.GetAppend.
func (s *Snapshot) GetAppend(dst, key []byte) ([]byte, error) {
	if err := s.check(); err != nil {
		return dst, err
	}
	return s.db.getAt(dst, key, s.seq, s.now)
}

// TTL reports the time key had left to live at the snapshot's time; see
// DB.TTL.
func (s *Snapshot) TTL(key []byte) (time.Duration, bool, error) {
	if err := s.check(); err != nil {
		return 0, false, err
	}
	return s.db.ttlAt(key, s.seq, s.now)
}

// NewIter returns an iterator over the snapshot. opts may be nil.
func (s *Snapshot) NewIter(opts *IterOptions) (*Iterator, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.db.newIter(opts, s.seq, s.now)
}

// Scan is DB.Scan over the snapshot: the live keys in [lower, upper) as of
// the snapshot's sequence number and time.
func (s *Snapshot) Scan(lower, upper []byte, errp *error) iter.Seq2[[]byte, []byte] {
	return scan(s.NewIter, lower, upper, errp)
}

// ExpireTime is DB.ExpireTime as of the snapshot's sequence number and
// time.
func (s *Snapshot) ExpireTime(key []byte) (time.Time, bool, error) {
	if err := s.check(); err != nil {
		return time.Time{}, false, err
	}
	return s.db.expireTimeAt(key, s.seq, s.now)
}

// Close releases the snapshot. Closing twice returns ErrClosed.
func (s *Snapshot) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	s.db.mu.Lock()
	delete(s.db.snapshots, s)
	s.db.mu.Unlock()
	return nil
}
