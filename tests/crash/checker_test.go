package crash

import (
	"strings"
	"testing"
)

// The checker must catch what it is there to catch; these tests feed it
// hand-made recovered states.

func checkerOps() []*op {
	return []*op{
		{ID: 0, Kind: "put", Sync: true, Status: acked, Muts: []mut{{Key: "a", Val: "a0"}}},
		{ID: 1, Kind: "put", Status: acked, Muts: []mut{{Key: "b", Val: "b1", Expires: true, ExpLo: 5000, ExpHi: 5000}}},
		{ID: 2, Kind: "batch", Sync: true, Status: acked, Muts: []mut{{Key: "c", Val: "c2"}, {Key: "d", Val: "d2"}}},
		{ID: 3, Kind: "put", Status: acked, Muts: []mut{{Key: "a", Val: "a3"}}},
		{ID: 4, Kind: "delete", Status: acked, Muts: []mut{{Key: "c", Del: true}}},
		{ID: 5, Kind: "batch", Sync: true, Status: failed, Muts: []mut{{Key: "e", Val: "e5"}, {Key: "f", Val: "f5"}}},
		{ID: 6, Kind: "put", Status: refused, Muts: []mut{{Key: "g", Val: "g6"}}},
	}
}

func found(v string) obs { return obs{Found: true, Val: v} }

func state(kv map[string]obs) map[string]obs {
	out := map[string]obs{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		out[k] = obs{}
	}
	for k, v := range kv {
		out[k] = v
	}
	return out
}

func TestCheckerAccepts(t *testing.T) {
	ops := checkerOps()
	b := obs{Found: true, Val: "b1", Expires: true, Deadline: 5000}
	for name, st := range map[string]map[string]obs{
		"prefix 3":              {"a": found("a0"), "b": b, "c": found("c2"), "d": found("d2")},
		"prefix 5":              {"a": found("a3"), "b": b, "d": found("d2")},
		"failed batch included": {"a": found("a3"), "b": b, "d": found("d2"), "e": found("e5"), "f": found("f5")},
		"b expired at now":      {"a": found("a3"), "d": found("d2")},
	} {
		now := int64(1000)
		if name == "b expired at now" {
			now = 5001
		}
		if v := checkState(nil, ops, 3, len(ops), state(st), now); !v.OK {
			t.Errorf("%s: rejected:\n%s", name, joinProblems(v.Problems))
		}
	}
}

func TestCheckerRejects(t *testing.T) {
	ops := checkerOps()
	b := obs{Found: true, Val: "b1", Expires: true, Deadline: 5000}
	for name, c := range map[string]struct {
		st   map[string]obs
		lo   int
		now  int64
		want string
	}{
		"synced batch lost":   {map[string]obs{"a": found("a0"), "b": b}, 3, 1000, "DURABLE WRITE LOST"},
		"batch split":         {map[string]obs{"a": found("a3"), "b": b, "d": found("d2"), "e": found("e5")}, 3, 1000, "BATCH PARTLY VISIBLE"},
		"refused write shown": {map[string]obs{"a": found("a3"), "b": b, "d": found("d2"), "g": found("g6")}, 3, 1000, "REFUSED WRITE APPLIED"},
		"invented value":      {map[string]obs{"a": found("zz"), "b": b, "c": found("c2"), "d": found("d2")}, 3, 1000, "VALUE NEVER WRITTEN"},
		"deadline off by 1ms": {map[string]obs{"a": found("a0"), "b": {Found: true, Val: "b1", Expires: true, Deadline: 5001}, "c": found("c2"), "d": found("d2")}, 3, 1000, "expires 5001"},
		"expiry dropped":      {map[string]obs{"a": found("a0"), "b": found("b1"), "c": found("c2"), "d": found("d2")}, 3, 1000, "no expiry"},
		"expired still shown": {map[string]obs{"a": found("a3"), "b": b, "d": found("d2")}, 5, 5001, `"b"`},
		"old version back":    {map[string]obs{"a": found("a0"), "b": b, "d": found("d2")}, 3, 1000, "no prefix"},
	} {
		v := checkState(nil, ops, c.lo, len(ops), state(c.st), c.now)
		if v.OK {
			t.Errorf("%s: accepted (prefix %d)", name, v.Prefix)
			continue
		}
		if got := joinProblems(v.Problems); !strings.Contains(got, c.want) {
			t.Errorf("%s: report lacks %q:\n%s", name, c.want, got)
		}
	}
}

func TestCheckerBase(t *testing.T) {
	base := map[string]row{"a": {Present: true, Val: "old"}, "x": {Present: true, Val: "x"}}
	ops := []*op{{ID: 0, Kind: "put", Status: pending, Muts: []mut{{Key: "a", Val: "new"}}}}
	st := map[string]obs{"a": found("old"), "x": found("x")}
	if v := checkState(base, ops, 0, 1, st, 0); !v.OK {
		t.Fatalf("pending op left out: %v", v.Problems)
	}
	st["a"] = found("new")
	if v := checkState(base, ops, 0, 1, st, 0); !v.OK {
		t.Fatalf("pending op included: %v", v.Problems)
	}
	st["x"] = obs{}
	if v := checkState(base, ops, 0, 1, st, 0); v.OK {
		t.Fatal("lost base key accepted")
	}
}
