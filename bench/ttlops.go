package bench

import (
	"time"
)

// TTLOps is the optional engine capability the TTL-operation workloads
// (session, idempotency, onetime, touchwal) need: single-key operations
// that read and write one key atomically with respect to every other
// TTLOps call on that key. Mayfly has them natively; the Badger adapter
// runs one transaction per call, retried on conflict; the Pebble adapter
// reads then writes under a striped per-key lock with the deadline
// encoded in the value.
type TTLOps interface {
	// PutExpiring writes key=value expiring after ttl.
	PutExpiring(key, value []byte, ttl time.Duration) error
	// GetEx returns key's live value (appended to dst where the engine
	// can) and sets its deadline to ttl from now; found is false, and
	// nothing is written, for a missing or expired key.
	GetEx(key []byte, ttl time.Duration, dst []byte) (value []byte, found bool, err error)
	// Touch sets a live key's deadline to ttl from now and reports
	// whether the key was live, as GetEx without the value.
	Touch(key []byte, ttl time.Duration) (bool, error)
	// PutIfAbsent writes key=value expiring after ttl only if key has no
	// live value, and reports whether it wrote.
	PutIfAbsent(key, value []byte, ttl time.Duration) (bool, error)
	// GetDel returns key's live value and deletes the key in one step; of
	// concurrent calls on one key at most one finds it.
	GetDel(key, dst []byte) (value []byte, found bool, err error)
}

// walMeter is implemented by engines that report the bytes their write-ahead
// log has taken in (touchwal compares them per operation).
type walMeter interface {
	WALBytes() uint64
}

// TTLWorkloads are the TTL-operation workloads. They are not in Workloads
// (the run of record); ask for them with -workloads.
var TTLWorkloads = []string{"session", "idempotency", "onetime", "touchwal", "expirebytes"}

// IsTTLWorkload reports whether w is one of TTLWorkloads.
func IsTTLWorkload(w string) bool {
	for _, x := range TTLWorkloads {
		if x == w {
			return true
		}
	}
	return false
}

// Supports reports whether engine can run workload: ttlchurn needs native
// TTL, the TTL-operation workloads need TTLOps, touchwal a WAL byte count
// as well, and expirebytes Mayfly's deadline rows.
func Supports(engine, workload string) bool {
	switch workload {
	case "ttlchurn":
		return HasTTL(engine)
	case "session", "idempotency", "onetime":
		return engine == "mayfly" || engine == "badger" || engine == "pebble"
	case "touchwal":
		return engine == "mayfly" || engine == "pebble"
	case "expirebytes", "windowchurn":
		return engine == "mayfly"
	case "counter", "counteradd":
		return engine == "mayfly" || engine == "badger" || engine == "pebble"
	case "counterread":
		return engine == "mayfly" || engine == "pebble"
	}
	return true
}
