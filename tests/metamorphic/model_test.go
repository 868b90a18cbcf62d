package metamorphic

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// entry is the newest version of a key in the model. A deleted key has no
// entry. An expired entry stays: it is still the newest version and hides
// whatever was written before it (the model only ever holds one version, so
// "expiry never uncovers an older version" is true by construction).
type entry struct {
	value   string
	expires bool
	exp     int64 // deadline, Unix ms; visible while now <= exp
}

func (e entry) visibleAt(now int64) bool { return !e.expires || now <= e.exp }

// model is the trivially correct reference: a map from key to its newest
// version plus the visibility rule.
type model struct {
	m map[string]entry
}

func newModel() *model { return &model{m: make(map[string]entry)} }

func (m *model) clone() *model { return &model{m: maps.Clone(m.m)} }

func (m *model) put(key, value string, expires bool, exp int64) {
	m.m[key] = entry{value: value, expires: expires, exp: exp}
}

func (m *model) del(key string) { delete(m.m, key) }

// get returns the live version of key at now.
func (m *model) get(key string, now int64) (entry, bool) {
	e, ok := m.m[key]
	if !ok || !e.visibleAt(now) {
		return entry{}, false
	}
	return e, true
}

// ttl returns what DB.TTL must answer for key at now.
func (m *model) ttl(key string, now int64) (time.Duration, bool, bool) {
	e, ok := m.get(key, now)
	if !ok {
		return 0, false, false
	}
	if !e.expires {
		return 0, false, true
	}
	return remaining(e.exp, now), true, true
}

// remaining is a deadline's time left at now, saturated at the largest
// Duration as documented on DB.TTL.
func remaining(exp, now int64) time.Duration {
	left := exp - now
	if left > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(left) * time.Millisecond
}

type kv struct {
	key, value string
}

// scan returns the live keys in [lower, upper) at now, in key order.
func (m *model) scan(lower, upper bound, now int64) []kv {
	var out []kv
	for k, e := range m.m {
		if lower.set && k < lower.key || upper.set && k >= upper.key {
			continue
		}
		if e.visibleAt(now) {
			out = append(out, kv{k, e.value})
		}
	}
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(a.key, b.key) })
	return out
}

// modelIter replays an iterator's moves over the live keys in its bounds
// at the time it was created.
type modelIter struct {
	kvs []kv
	pos int // -1: not positioned / exhausted
}

func (it *modelIter) apply(mv move) bool {
	n := len(it.kvs)
	switch mv.kind {
	case moveFirst:
		it.pos = 0
	case moveLast:
		it.pos = n - 1
	case moveSeekGE:
		it.pos, _ = slices.BinarySearchFunc(it.kvs, mv.key, func(e kv, k string) int { return strings.Compare(e.key, k) })
	case moveSeekLT:
		i, _ := slices.BinarySearchFunc(it.kvs, mv.key, func(e kv, k string) int { return strings.Compare(e.key, k) })
		it.pos = i - 1
	case moveNext:
		if it.pos >= 0 {
			it.pos++
		}
	case movePrev:
		if it.pos >= 0 {
			it.pos--
		}
	}
	if it.pos < 0 || it.pos >= n {
		it.pos = -1
	}
	return it.pos >= 0
}

func (it *modelIter) cur() kv { return it.kvs[it.pos] }
