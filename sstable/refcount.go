package sstable

import "sync/atomic"

// refCount counts the references to memory that its last holder frees (a
// cached block, a point index) and that readers may try to reach while it
// is being released: tryRef fails once the count has reached zero, so a
// reader never takes a reference to freed memory.
type refCount struct{ atomic.Int32 }

// tryRef takes a reference unless the count already reached zero.
func (r *refCount) tryRef() bool {
	for {
		n := r.Load()
		if n <= 0 {
			return false
		}
		if r.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference and reports whether it was the last one. It
// panics if the count goes below zero (a release without a reference), as
// the memory would then be freed twice.
func (r *refCount) release(what string) bool {
	switch n := r.Add(-1); {
	case n == 0:
		return true
	case n < 0:
		panic("sstable: " + what + " released more often than referenced")
	}
	return false
}
