package bench

import (
	"strings"
	"testing"
	"time"
)

// tinyTTLParams is the TTL workloads at a scale that runs in a second.
func tinyTTLParams() Params {
	return Params{Num: 1000, ValueSize: 100, Reads: 3000, Sessions: 500, ExpireKeys: 200,
		Threads: 4, CacheBytes: 1 << 20, Bloom: 10}
}

func runTTL(t *testing.T, engine, workload string) Result {
	t.Helper()
	return runWith(t, engine, workload, tinyTTLParams())
}

// runWith runs workload on engine with p and fails the test unless it
// timed some operations.
func runWith(t *testing.T, engine, workload string, p Params) Result {
	t.Helper()
	res, err := RunWorker(engine, workload, t.TempDir(), p)
	if err != nil {
		t.Fatalf("%s/%s: %v", engine, workload, err)
	}
	if res.Ops == 0 || res.P50us == 0 {
		t.Fatalf("%s/%s: %d ops, p50 %vµs", engine, workload, res.Ops, res.P50us)
	}
	return res
}

func TestTTLWorkloadsCount(t *testing.T) {
	p := tinyTTLParams()
	for _, engine := range []string{"mayfly", "pebble", "badger"} {
		t.Run(engine, func(t *testing.T) {
			s := runTTL(t, engine, "session")
			if got := s.Extra["getex"] + s.Extra["sessions_created"]; got != float64(p.Reads) || s.Ops != int64(p.Reads) {
				t.Errorf("session: %v GetEx + %v created, %d ops; want %d", s.Extra["getex"], s.Extra["sessions_created"], s.Ops, p.Reads)
			}
			if s.Extra["sessions_created"] == 0 {
				t.Error("session: no new sessions")
			}

			id := runTTL(t, engine, "idempotency")
			if d := id.Extra["duplicates"]; d == 0 || d != id.Extra["refused"] {
				t.Errorf("idempotency: %v duplicates, %v refused", d, id.Extra["refused"])
			}

			o := runTTL(t, engine, "onetime")
			if tok := o.Extra["tokens"]; tok != float64(p.Reads/3) || o.Extra["wins"] != tok || o.Ops != int64(3*tok) {
				t.Errorf("onetime: %v tokens, %v wins, %d ops", tok, o.Extra["wins"], o.Ops)
			}
		})
	}
}

func TestTouchWAL(t *testing.T) {
	m := runTTL(t, "mayfly", "touchwal")
	// The touches of one run mostly fall within Mayfly's touch window of
	// the put, so they coalesce; Pebble rewrites the value each time.
	if r := m.Extra["touch_put_wal_ratio"]; !(r < 0.1) || m.Extra["wal_bytes_per_put"] <= 100 {
		t.Errorf("mayfly: touch/put WAL ratio %v, %v bytes per put", r, m.Extra["wal_bytes_per_put"])
	}
	pb := runTTL(t, "pebble", "touchwal")
	if r := pb.Extra["touch_put_wal_ratio"]; r < 0.9 {
		t.Errorf("pebble: touch/put WAL ratio %v, want ≈ 1 (a rewrite)", r)
	}
	if _, err := RunWorker("badger", "touchwal", t.TempDir(), tinyTTLParams()); err == nil {
		t.Error("badger ran touchwal without a WAL byte count")
	}
}

func TestExpireBytes(t *testing.T) {
	r := runTTL(t, "mayfly", "expirebytes")
	if r.Ops != 200 {
		t.Errorf("%d ops, want 200", r.Ops)
	}
	if pw := r.Extra["put_wal_bytes"]; pw < expireValue {
		t.Errorf("put: %v WAL bytes for a %d-byte value", pw, expireValue)
	}
	for _, k := range []string{"expire_put_wal_ratio", "expire_put_table_ratio"} {
		if v := r.Extra[k]; !(v > 0 && v < 0.2) {
			t.Errorf("%s = %v, want in (0, 0.2): Expire must not rewrite the value", k, v)
		}
	}
}

// brokenOps breaks one TTL operation of the Mayfly adapter, to show that
// the workloads' counting catches it.
type brokenOps struct {
	*mayflyEngine
	op string
}

func (b brokenOps) PutIfAbsent(k, v []byte, ttl time.Duration) (bool, error) {
	if b.op != "putifabsent" {
		return b.mayflyEngine.PutIfAbsent(k, v, ttl)
	}
	return true, b.mayflyEngine.PutTTL(k, v, ttl) // writes over duplicates
}

func (b brokenOps) GetDel(k, dst []byte) ([]byte, bool, error) {
	if b.op != "getdel" {
		return b.mayflyEngine.GetDel(k, dst)
	}
	v, ok, err := b.mayflyEngine.Get(k, dst) // reads without deleting
	return v, ok, err
}

func TestTTLWorkloadsCatchBrokenOps(t *testing.T) {
	for _, c := range []struct{ op, workload, want string }{
		{"putifabsent", "idempotency", "refused"},
		{"getdel", "onetime", "not taken exactly once"},
	} {
		t.Run(c.op, func(t *testing.T) {
			e := &mayflyEngine{}
			if err := e.Open(t.TempDir(), 1<<20, 10); err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var res Result
			r := &runner{e: brokenOps{e, c.op}, p: tinyTTLParams(), vals: NewValueGen(100)}
			_, _, err := r.ttlWorkload(c.workload, &res)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s with a broken %s: err %v, want one containing %q", c.workload, c.op, err, c.want)
			}
		})
	}
}
