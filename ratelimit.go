package mayfly

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Rate-limit windows over counters (RFC 0010). Both helpers need
// Options.MergeOperator = Int64Add. A request is counted whether or not
// it is allowed, as INCR-based limiters do: a client that keeps calling
// over its limit stays over it until the window ends.

// FixedWindow counts one request against key and reports whether the
// count in key's window is still within limit. The window starts with the
// first request after the previous one ended and lasts window; later
// requests do not move its end (one DB.Add: no race between counting and
// setting the deadline). count is the window's count, this request
// included.
func FixedWindow(db *DB, key []byte, limit int64, window time.Duration) (allowed bool, count int64, err error) {
	if window < time.Millisecond {
		return false, 0, fmt.Errorf("%w: rate-limit window %v is below 1ms", ErrInvalidTTL, window)
	}
	n, err := db.Add(key, 1, ExpireAfter(window))
	if err != nil {
		return false, 0, err
	}
	return n <= limit, n, nil
}

// SlidingWindow counts one request against key and reports whether the
// estimated count over the last window is within limit. It keeps one
// counter per fixed window aligned to the clock (key, then the window's
// index as 8 bytes big-endian) and estimates the sliding count as the
// current window's count plus the previous window's, weighted by the part
// of it still inside the sliding window: one Add and one Get. estimate is
// that count, this request included.
func SlidingWindow(db *DB, key []byte, limit int64, window time.Duration) (allowed bool, estimate float64, err error) {
	w := window.Milliseconds()
	if w < 1 {
		return false, 0, fmt.Errorf("%w: rate-limit window %v is below 1ms", ErrInvalidTTL, window)
	}
	now := db.clock.NowMillis()
	idx := now / w
	cur := windowKey(key, idx)
	// The counter lives until the end of the next window, which weighs it.
	n, err := db.Add(cur, 1, ExpireAt(time.UnixMilli((idx+2)*w-1)))
	if err != nil {
		return false, 0, err
	}
	var prev int64
	v, err := db.Get(windowKey(key, idx-1))
	switch {
	case err == nil:
		prev, _ = DecodeInt64(v)
	case !errors.Is(err, ErrNotFound):
		return false, 0, err
	}
	weight := float64(w-(now-idx*w)) / float64(w)
	estimate = float64(prev)*weight + float64(n)
	return estimate <= float64(limit), estimate, nil
}

// windowKey is the counter of key's fixed window idx.
func windowKey(key []byte, idx int64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, len(key)+8), key...), uint64(idx))
}
