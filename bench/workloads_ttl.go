package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly"
)

// The TTL-operation workloads (issue 19). Each checks what its operations
// return and fails the run when an answer is wrong: a session that should
// be live and is not, a duplicate request ID accepted or a new one refused,
// a one-time token taken twice or never.
//
//   - session: Sessions sessions preloaded with a 30 min TTL, then Reads
//     ops on Threads threads: 90% GetEx (read and extend to 30 min) of a
//     session known to exist, 10% new sessions (a put with a 30 min TTL).
//   - idempotency: Reads PutIfAbsent calls of request IDs on Threads
//     threads; 5% repeat one of the last ~100 IDs issued by any thread,
//     whose first put may still be in flight. Every repeat must be refused
//     and nothing else.
//   - onetime: threads in pairs; for each token one of the pair puts it and
//     then both GetDel it at once. Exactly one GetDel per token may win.
//   - touchwal: 1000 hot keys put with a 30 min TTL, then TouchOps (else
//     Reads) Touch calls on Threads threads; WAL bytes per touch against
//     WAL bytes per put.
//   - expirebytes (Mayfly): ExpireKeys keys of 1 KiB; WAL and flushed table
//     bytes per Expire against a full rewrite of the value.

const (
	sessionTTL     = 30 * time.Minute
	idempotencyTTL = 24 * time.Hour
	dupPercent     = 5   // idempotency: share of repeated request IDs
	dupWindow      = 100 // idempotency: repeats come from this many last IDs
	touchHotKeys   = 1000
	expireValue    = 1024 // expirebytes value size
)

// errNoTTLOps is returned for a TTL workload on an engine without TTLOps.
var errNoTTLOps = errors.New("bench: engine has no TTL operations")

func (r *runner) ttlWorkload(w string, res *Result) (int64, time.Duration, error) {
	ops, ok := r.e.(TTLOps)
	if !ok || !Supports(r.e.Name(), w) {
		return 0, 0, fmt.Errorf("%w for %s", errNoTTLOps, w)
	}
	res.Extra = map[string]float64{}
	switch w {
	case "session":
		return r.session(ops, res)
	case "idempotency":
		return r.idempotency(ops, res)
	case "onetime":
		return r.onetime(ops, res)
	case "touchwal":
		return r.touchWAL(ops, res)
	}
	return r.expireBytes(res)
}

// threads is p.Threads, 4 if unset.
func (r *runner) threads() int {
	if r.p.Threads > 0 {
		return r.p.Threads
	}
	return 4
}

// share is thread t's part of n ops split over threads.
func share(n, threads, t int) int {
	s := n / threads
	if t < n%threads {
		s++
	}
	return s
}

// parallel runs body on threads goroutines, each with its own latency
// histogram (merged into r.hist), and returns the ops recorded and the wall
// time. The first error stops the others (they poll stop) and is returned.
func (r *runner) parallel(threads int, body func(t int, h *Hist, stop *atomic.Bool) error) (int64, time.Duration, error) {
	hists := make([]Hist, threads)
	errs := make([]error, threads)
	var stop atomic.Bool
	var wg sync.WaitGroup
	done := r.profile()
	cpu0 := processCPU()
	start := time.Now()
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[t] = body(t, &hists[t], &stop); errs[t] != nil {
				stop.Store(true)
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	r.cpu = processCPU() - cpu0
	done()
	for t := range hists {
		r.hist.Merge(&hists[t])
	}
	return int64(r.hist.Count()), d, errors.Join(errs...)
}

func (r *runner) session(e TTLOps, res *Result) (int64, time.Duration, error) {
	n := uint64(max(r.p.Sessions, 1))
	kb := make([]byte, KeySize)
	for i := range n {
		if err := e.PutExpiring(PutKey(kb, i), r.vals.Next(), sessionTTL); err != nil {
			return 0, 0, fmt.Errorf("preload: %w", err)
		}
	}
	threads := r.threads()
	var created, extended atomic.Int64
	ops, d, err := r.parallel(threads, func(t int, h *Hist, stop *atomic.Bool) error {
		rng := rand.New(rand.NewPCG(uint64(t), 11))
		vals := NewValueGen(r.p.ValueSize)
		kb := make([]byte, KeySize)
		var dst []byte
		var mine uint64 // sessions this thread created: ids n+t+threads*j, j < mine
		id := func(j uint64) uint64 { return n + uint64(t) + uint64(threads)*j }
		defer func() { created.Add(int64(mine)) }()
		for i := range share(r.p.Reads, threads, t) {
			if i%256 == 0 && stop.Load() {
				return nil
			}
			if rng.Uint64N(10) == 0 {
				t0 := time.Now()
				err := e.PutExpiring(PutKey(kb, id(mine)), vals.Next(), sessionTTL)
				h.Record(time.Since(t0))
				if err != nil {
					return err
				}
				mine++
				continue
			}
			x := rng.Uint64N(n + mine)
			if x >= n {
				x = id(x - n)
			}
			k := PutKey(kb, x)
			t0 := time.Now()
			v, found, err := e.GetEx(k, sessionTTL, dst[:0])
			h.Record(time.Since(t0))
			dst = v
			if err != nil {
				return err
			}
			if !found || len(dst) != r.p.ValueSize {
				return fmt.Errorf("session %q: found %v, %d bytes", k, found, len(dst))
			}
			extended.Add(1)
		}
		return nil
	})
	res.Extra["sessions_preloaded"] = float64(n)
	res.Extra["sessions_created"] = float64(created.Load())
	res.Extra["getex"] = float64(extended.Load())
	r.written = created.Load() * int64(KeySize+r.p.ValueSize)
	return ops, d, err
}

// requestKey is the key of request ID id: 16 hex digits of a bijective hash,
// spread over the key space as random request IDs are.
func requestKey(dst []byte, id uint64) []byte {
	binaryKey(dst, splitmix64(id))
	return dst[:KeySize]
}

func (r *runner) idempotency(e TTLOps, res *Result) (int64, time.Duration, error) {
	var next atomic.Uint64 // last ID issued; IDs start at 1
	var ring [128]atomic.Uint64
	var ringPos atomic.Uint64
	var dups, refused atomic.Int64
	ops, d, err := r.parallel(r.threads(), func(t int, h *Hist, stop *atomic.Bool) error {
		rng := rand.New(rand.NewPCG(uint64(t), 13))
		vals := NewValueGen(r.p.ValueSize)
		kb := make([]byte, KeySize)
		var myDups, myRefused int64
		defer func() { dups.Add(myDups); refused.Add(myRefused) }()
		for i := range share(r.p.Reads, r.threads(), t) {
			if i%256 == 0 && stop.Load() {
				return nil
			}
			var id uint64
			if rng.Uint64N(100) < dupPercent {
				// A repeat of one of the last dupWindow IDs issued. A slot
				// whose ID is not stored yet reads 0: issue a new one.
				if p := ringPos.Load(); p > 0 {
					id = ring[(p-1-rng.Uint64N(min(p, dupWindow)))%uint64(len(ring))].Load()
				}
			}
			dup := id != 0
			if !dup {
				id = next.Add(1)
				// Published before its put: a repeat may race the first.
				ring[(ringPos.Add(1)-1)%uint64(len(ring))].Store(id)
			}
			t0 := time.Now()
			ok, err := e.PutIfAbsent(requestKey(kb, id), vals.Next(), idempotencyTTL)
			h.Record(time.Since(t0))
			if err != nil {
				return err
			}
			if dup {
				myDups++
			}
			if !ok {
				myRefused++
			}
		}
		return nil
	})
	res.Extra["duplicates"] = float64(dups.Load())
	res.Extra["refused"] = float64(refused.Load())
	r.written = (ops - refused.Load()) * int64(KeySize+r.p.ValueSize)
	if err == nil && refused.Load() != dups.Load() {
		err = fmt.Errorf("idempotency: %d duplicates issued, %d refused", dups.Load(), refused.Load())
	}
	return ops, d, err
}

// onetime runs threads in pairs (an odd last thread sits out). Pair q's
// k-th token is put by member k%2 (the roles alternate so that neither
// member trails the other), and then both members GetDel it; the other
// member waits for the put before its GetDel, not timed. Each put and each
// GetDel is one op, so a token costs three.
func (r *runner) onetime(e TTLOps, res *Result) (int64, time.Duration, error) {
	pairs := max(r.threads()/2, 1)
	tokens := max(r.p.Reads/3, 1)
	wins := make([]atomic.Int32, tokens)  // by token id
	put := make([][2]atomic.Int64, pairs) // tokens of its own each member has put, in order
	ops, d, err := r.parallel(2*pairs, func(t int, h *Hist, stop *atomic.Bool) error {
		q, me := t/2, t%2
		vals := NewValueGen(r.p.ValueSize)
		kb := make([]byte, KeySize)
		var dst []byte
		n := share(tokens, pairs, q)
		for k := range n {
			id := uint64(q + pairs*k)
			key := PutKey(kb, id)
			if k%2 == me {
				t0 := time.Now()
				err := e.PutExpiring(key, vals.Next(), sessionTTL)
				h.Record(time.Since(t0))
				if err != nil {
					return err
				}
				put[q][me].Store(int64(k + 1))
			} else {
				for put[q][1-me].Load() <= int64(k) {
					if stop.Load() {
						return nil
					}
					runtime.Gosched()
				}
			}
			t0 := time.Now()
			v, won, err := e.GetDel(key, dst[:0])
			h.Record(time.Since(t0))
			if err != nil {
				return err
			}
			dst = v
			if won {
				if len(v) != r.p.ValueSize {
					return fmt.Errorf("token %q: %d bytes", key, len(v))
				}
				wins[id].Add(1)
			}
		}
		return nil
	})
	var won, bad int64
	for i := range wins {
		w := wins[i].Load()
		won += int64(w)
		if w != 1 {
			bad++
		}
	}
	res.Extra["tokens"] = float64(tokens)
	res.Extra["wins"] = float64(won)
	r.written = int64(tokens) * int64(KeySize+r.p.ValueSize)
	if err == nil && bad > 0 {
		err = fmt.Errorf("onetime: %d of %d tokens not taken exactly once (%d wins)", bad, tokens, won)
	}
	return ops, d, err
}

// touchWAL puts touchHotKeys keys, then touches them at random for Reads
// ops, and compares the WAL bytes per touch with those per put.
func (r *runner) touchWAL(e TTLOps, res *Result) (int64, time.Duration, error) {
	wm, ok := r.e.(walMeter)
	if !ok {
		return 0, 0, fmt.Errorf("%w: no WAL byte count", errNoTTLOps)
	}
	kb := make([]byte, KeySize)
	w0 := wm.WALBytes()
	for i := range uint64(touchHotKeys) {
		if err := e.PutExpiring(PutKey(kb, i), r.vals.Next(), sessionTTL); err != nil {
			return 0, 0, fmt.Errorf("preload: %w", err)
		}
	}
	w1 := wm.WALBytes()
	n := r.p.TouchOps
	if n <= 0 {
		n = r.p.Reads
	}
	ops, d, err := r.parallel(r.threads(), func(t int, h *Hist, stop *atomic.Bool) error {
		rng := rand.New(rand.NewPCG(uint64(t), 17))
		kb := make([]byte, KeySize)
		for i := range share(n, r.threads(), t) {
			if i%256 == 0 && stop.Load() {
				return nil
			}
			k := PutKey(kb, rng.Uint64N(touchHotKeys))
			t0 := time.Now()
			live, err := e.Touch(k, sessionTTL)
			h.Record(time.Since(t0))
			if err != nil {
				return err
			}
			if !live {
				return fmt.Errorf("touch %q: not live", k)
			}
		}
		return nil
	})
	w2 := wm.WALBytes()
	perPut := float64(w1-w0) / touchHotKeys
	perTouch := float64(w2-w1) / float64(max(ops, 1))
	res.Extra["wal_bytes_per_put"] = perPut
	res.Extra["wal_bytes_per_touch"] = perTouch
	res.Extra["touch_put_wal_ratio"] = perTouch / perPut
	return ops, d, err
}

// expireBytes writes ExpireKeys keys of 1 KiB and flushes them, then sets a
// new deadline on each with Expire, then rewrites each in full; after each
// phase it flushes, and it reports the WAL and flushed table bytes per
// operation of both. Only the Expire phase is timed.
func (r *runner) expireBytes(res *Result) (int64, time.Duration, error) {
	me, ok := r.e.(*mayflyEngine)
	if !ok {
		return 0, 0, fmt.Errorf("%w: expirebytes is Mayfly's", errNoTTLOps)
	}
	db := me.db
	n := uint64(max(r.p.ExpireKeys, 1))
	vals := NewValueGen(expireValue)
	kb := make([]byte, KeySize)
	rewrite := func() error {
		for i := range n {
			if err := db.PutTTL(PutKey(kb, i), vals.Next(), mayfly.ExpireAfter(sessionTTL)); err != nil {
				return err
			}
		}
		return db.Flush()
	}
	// bytes returns the WAL and flushed table bytes so far.
	bytes := func() (wal, table float64) {
		m := db.Metrics()
		return float64(m.WALBytes), float64(m.FlushBytes)
	}
	if err := rewrite(); err != nil {
		return 0, 0, fmt.Errorf("load: %w", err)
	}
	wal0, tab0 := bytes()
	ops, d, err := r.timed(int(n), func(i int) error {
		ok, err := db.Expire(PutKey(kb, uint64(i)), mayfly.ExpireAfter(2*sessionTTL), mayfly.ExpireAlways)
		if err == nil && !ok {
			err = fmt.Errorf("expire %q: not applied", kb)
		}
		return err
	})
	if err == nil {
		err = db.Flush()
	}
	if err != nil {
		return ops, d, err
	}
	wal1, tab1 := bytes()
	if err := rewrite(); err != nil {
		return ops, d, fmt.Errorf("rewrite: %w", err)
	}
	wal2, tab2 := bytes()
	fn := float64(n)
	res.Extra["value_bytes"] = expireValue
	res.Extra["expire_wal_bytes"] = (wal1 - wal0) / fn
	res.Extra["expire_table_bytes"] = (tab1 - tab0) / fn
	res.Extra["put_wal_bytes"] = (wal2 - wal1) / fn
	res.Extra["put_table_bytes"] = (tab2 - tab1) / fn
	res.Extra["expire_put_wal_ratio"] = (wal1 - wal0) / (wal2 - wal1)
	res.Extra["expire_put_table_ratio"] = (tab1 - tab0) / (tab2 - tab1)
	r.written = 0
	return ops, d, nil
}
