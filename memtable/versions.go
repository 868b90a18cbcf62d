package memtable

import "github.com/mayflydb/mayfly/format"

// Versions calls fn with each row of ukey whose Seq is at most seq, newest
// first, until fn returns false or the key has no older row: the rows
// repeated Get calls at each row's Seq less one would return, found in one
// search (which goes straight to the first version at or below seq, or
// starts there when the newest-version hint names it: hint.go, for any
// seq but format.MaxSeq, or a few steps after the key's predecessor the
// hint keeps: seekFromPred), or none when the whole-key filter rules the
// key out (filter.go). It
// takes no lock: fn may call into m, and the rows are those linked when the
// walk reaches them. The row's bytes alias the arena and are valid, like
// Get's, while the caller holds a reference.
func (m *Memtable) Versions(ukey []byte, seq uint64, fn func(r format.Row) bool) {
	m.live()
	v := m.view()
	s := makeSearchKey(ukey, seq)
	kh := keyHash(s.k0, s.k1, ukey)
	if !m.filter.mayContain(kh) {
		return
	}
	var x uint64
	if seq != format.MaxSeq {
		// An offered node may not be linked yet (hint.go); a row at most
		// a published sequence number is.
		x = v.hinted(kh, &s)
	}
	if x == 0 {
		var ok bool
		if _, x, ok = v.seekFromPred(&s, kh); !ok {
			x = v.seekGE(&s)
		}
	}
	for x != 0 {
		n := v.node(x)
		if v.cmpUser(n, &s) != 0 || !fn(v.row(n.loc)) {
			return
		}
		x = n.next(0)
	}
}
