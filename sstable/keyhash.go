package sstable

// Probing the filters of several tables for one key.
//
// A point lookup that misses the upper levels probes one filter per table
// it passes (every overlapping level-0 table, then one table per level),
// and each probe is a cache miss on one 64-byte line of a filter that is
// megabytes large. Probed one table at a time, between the lookups of the
// tables before, those misses follow one another. A caller that knows the
// tables it is about to pass hashes the key once (HashKey) and probes all
// their loaded filters up front (ProbeLoadedFilter): the probes do not
// depend on each other, so the processor overlaps their misses.

// KeyHash is a user key's filter hash (HashKey).
type KeyHash uint64

// HashKey returns the hash that every table's filter is probed with for
// ukey.
func HashKey(ukey []byte) KeyHash { return KeyHash(filterHash(ukey)) }

// ProbeLoadedFilter reports whether the table may contain ukey, whose hash
// is h, according to its filter, if that filter is loaded (loaded true).
// It never loads the filter: with loaded false the caller must ask
// MayContain. A table without a filter reports may true, loaded true.
func (r *Reader) ProbeLoadedFilter(ukey []byte, h KeyHash) (may, loaded bool) {
	if r.footer.filter == (blockHandle{}) {
		return true, true
	}
	f := r.meta.filter.Load()
	if f == nil {
		return false, false
	}
	if f.legacy != nil {
		return f.legacy.Test(ukey), true
	}
	return f.blocked.mayContainHash(uint64(h)), true
}
