package memtable

import "github.com/mayflydb/mayfly/format"

// Versions calls fn with each row of ukey whose Seq is at most seq, newest
// first, until fn returns false or the key has no older row: the rows
// repeated Get calls at each row's Seq less one would return, found in one
// search. fn runs under the memtable's read lock, so it must not call into
// m; the row's bytes alias the arena and are valid, like Get's, while the
// caller holds a reference.
func (m *Memtable) Versions(ukey []byte, seq uint64, fn func(r format.Row) bool) {
	p := makePivot(ukey)
	m.rlock()
	m.ascendFrom(p, func(e entry) bool {
		if !m.sameKey(e, p) {
			return false
		}
		if m.trailer(e)>>8 > seq {
			return true // newer than the reader's sequence: try the next version
		}
		return fn(m.row(e))
	})
	m.mu.RUnlock()
	dropPivot(p)
}
