package memtable

import "github.com/mayflydb/mayfly/format"

// Positions. A reader that remembers what a key's newest row resolved to
// (the resolved-counter cache, RFC 0010) must know, before it answers from
// memory again, that no newer row of the key has been linked since. A search
// tells it, at a cache miss or more per level; a Position tells it with one
// load.
//
// A Position names the node of a key's newest row and the node before it at
// level 0, whose user key sorts before the key (or the head). Rows are never
// unlinked, and a newer row of the key sorts after every smaller user key and
// before the older rows of the key, so it is linked between those two nodes:
// while the predecessor's level-0 link still names the row, no newer row of
// the key is linked. A row a reader may see (its sequence number published)
// is linked before its publication, so a Position still current proves the
// row is the newest at every published sequence number at or above its own.
// Another key's row linked between the two makes the check fail, which only
// costs the caller its search.

// Position is where a row sits in a memtable (see above); the zero value
// names nothing.
type Position struct {
	pred, node uint64
}

// IsZero reports whether p names nothing.
func (p Position) IsZero() bool { return p.node == 0 }

// Newest returns the position and sequence number of the newest row of ukey
// linked in m, at any sequence number; ok is false if m holds none. It
// starts from the key's predecessor the hint keeps when it can
// (seekFromPred), else it searches.
func (m *Memtable) Newest(ukey []byte) (p Position, seq uint64, ok bool) {
	m.live()
	v := m.view()
	s := makeSearchKey(ukey, format.MaxSeq)
	kh := keyHash(s.k0, s.k1, ukey)
	if !m.filter.mayContain(kh) {
		return Position{}, 0, false
	}
	pred, x, ok := v.seekFromPred(&s, kh)
	if !ok {
		pred, x = v.seekGEPred(&s)
	}
	if x == 0 {
		return Position{}, 0, false
	}
	n := v.node(x)
	if v.cmpUser(n, &s) != 0 {
		return Position{}, 0, false
	}
	return Position{pred: pred, node: x}, n.seq, true
}

// StillNewest reports whether the row at p, a position m returned, is still
// the newest row of its key in m (see above). False for the zero Position.
func (m *Memtable) StillNewest(p Position) bool {
	if p.IsZero() {
		return false
	}
	m.live()
	v := m.view()
	return v.node(p.pred).next(0) == p.node
}
