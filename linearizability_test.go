package mayfly

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/mayflydb/mayfly/clock"
)

// Linearizability of the single-key operations, checked with porcupine.
//
// Time in the model. Every operation is judged at one clock reading T
// between the readings t0 taken just before the call and t1 just after it.
// Every operation but Get goes through the commit pipeline and is judged at
// its commit group's commit time, which the leader reads before it logs and
// publishes the group: commit times never decrease along the commit order,
// but a write becomes visible a little after its commit time. Get reads a
// published prefix of that order and judges expiry at a clock reading it
// takes afterwards, so its T is at least the commit time of every write it
// sees, yet a write ordered after the Get may carry an earlier commit time
// (read by its leader before the Get started). The sequential model
// therefore keeps, per key, the commit time of the last linearized
// operation of the pipeline (now): a pipeline operation takes effect at any
// T in [max(now, t0), t1] and sets now to T; a Get at any T in that range
// and leaves now alone. Each step is nondeterministic: one successor state
// per T whose outcome matches the recorded output. Relative TTLs become
// deadlines T+ttl, and a value is live at T while T <= deadline (RFC 0001).
// A conditional call whose condition fails writes nothing and may be
// decided by a read before the pipeline; Touch and GetEx also write nothing
// when the deadline is already the one asked. Such calls are reads in the
// model too: they leave now alone. Operations on different keys are
// independent, so the history is checked per key.

type linOpKind uint8

const (
	linPut linOpKind = iota
	linGet
	linDelete
	linPutIfAbsent
	linCompareAndSwap
	linCompareAndDelete
	linGetDel
	linExpire
	linPersist
	linGetEx
	linTouch
	linExpireTime
	linAdd   // DB.Add: the new count
	linMerge // DB.Merge of an Int64Add operand: blind
)

var linOpNames = [...]string{"Put", "Get", "Delete", "PutIfAbsent", "CompareAndSwap", "CompareAndDelete", "GetDel",
	"Expire", "Persist", "GetEx", "Touch", "ExpireTime", "Add", "Merge"}

type linInput struct {
	op       linOpKind
	key      int
	val, old string
	ttl      int64 // ms; 0 means no expiry
	cond     ExpireCond
	delta    int64 // Add, Merge
	t0, t1   int64 // clock readings before the call and after the return
}

type linOutput struct {
	ok  bool   // write applied / value found
	val string // Get, GetDel and GetEx: the value returned; ExpireTime: the deadline
}

// linState is one key's state in the sequential model.
type linState struct {
	now      int64 // commit time of the last linearized pipeline operation
	has      bool
	val      string
	deadline int64 // 0: no expiry
}

func (s linState) liveAt(t int64) bool { return s.has && (s.deadline == 0 || t <= s.deadline) }

// step applies in to s at time t and returns the output and the new state.
func (s linState) step(in linInput, t int64) (linOutput, linState) {
	live := s.liveAt(t)
	put := func() linState {
		n := linState{now: t, has: true, val: in.val}
		if in.ttl > 0 {
			n.deadline = t + in.ttl
		}
		return n
	}
	next := s
	next.now = t
	switch in.op {
	case linPut:
		return linOutput{ok: true}, put()
	case linGet:
		if live {
			return linOutput{ok: true, val: s.val}, s
		}
		return linOutput{}, s
	case linDelete:
		return linOutput{ok: true}, linState{now: t}
	case linPutIfAbsent:
		if !live {
			return linOutput{ok: true}, put()
		}
	case linCompareAndSwap:
		if live && s.val == in.old {
			return linOutput{ok: true}, put()
		}
	case linCompareAndDelete:
		if live && s.val == in.old {
			return linOutput{ok: true}, linState{now: t}
		}
	case linGetDel:
		if live {
			return linOutput{ok: true, val: s.val}, linState{now: t}
		}
	case linExpireTime:
		if live {
			return linOutput{ok: true, val: fmt.Sprint(s.deadline)}, s
		}
		return linOutput{}, s
	case linExpire, linGetEx, linTouch:
		deadline := int64(0) // NoExpiry
		if in.ttl > 0 {
			deadline = t + in.ttl
		}
		out := linOutput{ok: live}
		if in.op == linGetEx && live {
			out.val = s.val
		}
		cond := ExpireAlways
		if in.op == linExpire {
			cond = in.cond
		}
		if !live && in.op != linExpire {
			// Touch and GetEx find a key absent by a read, as Get does.
			return out, s
		}
		if !live || !linAllows(cond, s.deadline, deadline) {
			out.ok = false
			return out, s
		}
		if in.op != linExpire && s.deadline == deadline {
			// A touch that changes nothing writes nothing: it reads,
			// and leaves the pipeline's time alone, as a Get does.
			return out, s
		}
		next.deadline = deadline
		return out, next
	case linPersist:
		if live && s.deadline != 0 {
			next.deadline = 0
			return linOutput{ok: true}, next
		}
	case linAdd, linMerge:
		// RFC 0010: onto a live counter the delta is added under its
		// deadline; onto nothing it starts a window of its own TTL. Add
		// on a value that is not a counter writes nothing (a read); the
		// test merges only on counter keys.
		n := in.delta
		if live {
			cur, ok := DecodeInt64([]byte(s.val))
			if !ok {
				break
			}
			n += cur
		} else {
			next = put()
		}
		next.has, next.val = true, string(EncodeInt64(n))
		if in.op == linMerge {
			return linOutput{ok: true}, next
		}
		return linOutput{ok: true, val: next.val}, next
	}
	// A condition that fails writes nothing: the call may have been decided
	// by a read before the pipeline (cond_peek.go), so it is a read here.
	return linOutput{}, s
}

// linAllows is ExpireCond.allows over deadlines where 0 is none (later
// than any).
func linAllows(c ExpireCond, cur, nw int64) bool {
	switch c {
	case ExpireNX:
		return cur == 0
	case ExpireXX:
		return cur != 0
	case ExpireGT:
		return cur != 0 && (nw == 0 || nw > cur)
	case ExpireLT:
		return nw != 0 && (cur == 0 || nw < cur)
	}
	return true
}

var linModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(linInput).key
			byKey[k] = append(byKey[k], op)
		}
		var parts [][]porcupine.Operation
		for _, p := range byKey {
			parts = append(parts, p)
		}
		return parts
	},
	Init: func() []any { return []any{linState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(linState), input.(linInput), output.(linOutput)
		var next []any
		for t := max(s.now, in.t0); t <= in.t1; t++ {
			if got, n := s.step(in, t); got == out {
				next = append(next, n)
			}
		}
		return next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		return fmt.Sprintf("%s(k%d, %q, old %q, ttl %d, cond %v, delta %d) @[%d,%d] -> %v %q", linOpNames[in.op], in.key, in.val, in.old, in.ttl, in.cond, in.delta, in.t0, in.t1, out.ok, out.val)
	},
}

// linClient is what the test drives: the DB, or a deliberately broken
// stand-in.
type linClient interface {
	run(in linInput) (linOutput, error)
}

type linDB struct{ db *DB }

func linKey(k int) []byte { return fmt.Appendf(nil, "k%d", k) }

func linTTL(ms int64) TTL {
	if ms == 0 {
		return NoExpiry()
	}
	return ExpireAfter(time.Duration(ms) * time.Millisecond)
}

func (c linDB) run(in linInput) (linOutput, error) {
	key := linKey(in.key)
	var ok bool
	var v []byte
	var err error
	switch in.op {
	case linPut:
		ok, err = true, c.db.PutTTL(key, []byte(in.val), linTTL(in.ttl))
	case linGet:
		v, err = c.db.Get(key)
		ok = err == nil
	case linDelete:
		ok, err = true, c.db.Delete(key)
	case linPutIfAbsent:
		ok, err = c.db.PutIfAbsent(key, []byte(in.val), linTTL(in.ttl))
	case linCompareAndSwap:
		ok, err = c.db.CompareAndSwap(key, []byte(in.old), []byte(in.val), linTTL(in.ttl))
	case linCompareAndDelete:
		ok, err = c.db.CompareAndDelete(key, []byte(in.old))
	case linGetDel:
		v, err = c.db.GetDel(key)
		ok = err == nil
	case linExpire:
		ok, err = c.db.Expire(key, linTTL(in.ttl), in.cond)
	case linPersist:
		ok, err = c.db.Persist(key)
	case linGetEx:
		v, err = c.db.GetEx(key, linTTL(in.ttl))
		ok = err == nil
	case linTouch:
		ok, err = c.db.Touch(key, linTTL(in.ttl))
	case linAdd:
		var n int64
		if n, err = c.db.Add(key, in.delta, linTTL(in.ttl)); err == nil {
			ok, v = true, EncodeInt64(n)
		} else if errors.Is(err, ErrConditionFailed) {
			err = nil // not a counter: nothing written
		}
	case linMerge:
		ok, err = true, c.db.Merge(key, EncodeInt64(in.delta), linTTL(in.ttl))
	case linExpireTime:
		var at time.Time
		var expires bool
		at, expires, err = c.db.ExpireTime(key)
		ok = err == nil
		if ok && expires {
			v = fmt.Append(nil, at.UnixMilli())
		} else if ok {
			v = []byte("0")
		}
	}
	if errors.Is(err, ErrNotFound) {
		err = nil
	}
	return linOutput{ok: ok, val: string(v)}, err
}

// linHistory runs clients goroutines of ops operations each on keys keys
// through c, with one more goroutine advancing clk by 1ms after every
// fourth finished operation, and returns the recorded history.
func linHistory(t *testing.T, c linClient, clk *clock.Manual, clients, ops, keys int, seed uint64) []porcupine.Operation {
	t.Helper()
	var mu sync.Mutex
	var history []porcupine.Operation
	start := time.Now()
	stamp := func() int64 { return int64(time.Since(start)) } // porcupine's call/return order
	finished := make(chan struct{}, clients)
	tickerDone := make(chan struct{})
	go func() {
		defer close(tickerDone)
		n := 0
		for range finished {
			if n++; n%4 == 0 {
				clk.Advance(time.Millisecond)
			}
		}
	}()
	var wg sync.WaitGroup
	for id := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(id)))
			seen := make([]string, 2*keys) // the last value this client saw per key
			for n := range ops {
				// Keys keys..2*keys-1 are counters: Add and Merge only
				// pick them, and values written there are counters too,
				// so no operand lands on a string.
				in := linInput{op: linOpKind(r.IntN(len(linOpNames))), key: r.IntN(2 * keys), val: fmt.Sprintf("c%d-%d", id, n)}
				if in.op == linAdd || in.op == linMerge {
					in.key = keys + r.IntN(keys)
				}
				if in.key >= keys {
					in.val = string(EncodeInt64(int64(id*1000 + n)))
				}
				if r.IntN(3) > 0 {
					in.ttl = 1 + r.Int64N(6)
				}
				in.cond = ExpireCond(r.IntN(int(ExpireLT) + 1))
				in.delta = r.Int64N(7) - 2
				in.old = seen[in.key]
				if r.IntN(4) == 0 {
					in.old = fmt.Sprintf("c%d-%d", r.IntN(clients), r.IntN(n+1))
				}
				call := stamp()
				in.t0 = clk.NowMillis()
				out, err := c.run(in)
				in.t1 = clk.NowMillis()
				ret := stamp()
				if err != nil {
					t.Error(err)
					return
				}
				if out.val != "" && in.op != linExpireTime {
					seen[in.key] = out.val
				} else if out.ok && in.op != linDelete && in.op != linCompareAndDelete {
					seen[in.key] = in.val
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
				finished <- struct{}{}
			}
		})
	}
	wg.Wait()
	close(finished)
	<-tickerDone
	return history
}

func TestLinearizableConditionalWrites(t *testing.T) {
	for seed := range uint64(3) {
		clk := clock.NewManual(epoch)
		// A touch window below a millisecond: Touch and GetEx are exact,
		// as the model has them (the window's bound is TestTouchCoalesces').
		db := openTestDB(t, t.TempDir(), clk, func(o *Options) {
			o.MemtableSize = 64 << 10
			o.TouchWindow = time.Nanosecond
			o.MergeOperator = Int64Add
		})
		h := linHistory(t, linDB{db}, clk, 4, 250, 3, seed)
		must(t, db.Close())
		res := porcupine.CheckOperationsTimeout(linModel.ToModel(), h, 20*time.Second)
		if res != porcupine.Ok {
			for _, part := range linModel.Partition(h) {
				if porcupine.CheckOperationsTimeout(linModel.ToModel(), part, 20*time.Second) == porcupine.Ok {
					continue
				}
				sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
				for _, op := range part {
					t.Logf("c%d %s [%d, %d]", op.ClientId, linModel.DescribeOperation(op.Input, op.Output), op.Call, op.Return)
				}
			}
			t.Fatalf("seed %d: porcupine says %s for a history of %d operations", seed, res, len(h))
		}
	}
}

// linBrokenGetDel is GetDel built from Get then Delete: two callers that
// both Get before either deletes both take the token. take holds every
// caller between its Get and its Delete until both have read.
type linBrokenGetDel struct {
	db   *DB
	read *sync.WaitGroup
}

func (c linBrokenGetDel) run(in linInput) (linOutput, error) {
	key := linKey(in.key)
	v, err := c.db.Get(key)
	c.read.Done()
	c.read.Wait()
	if errors.Is(err, ErrNotFound) {
		return linOutput{}, nil
	}
	if err != nil {
		return linOutput{}, err
	}
	return linOutput{ok: true, val: string(v)}, c.db.Delete(key)
}

// The checker can fail: a history of the non-atomic GetDel, where two
// overlapping calls both took one token, is rejected, and the same history
// of the real GetDel is accepted.
func TestLinearizabilityCheckerRejectsBrokenGetDel(t *testing.T) {
	clk := clock.NewManual(epoch)
	db := openTestDB(t, t.TempDir(), clk, nil)
	defer db.Close()
	for _, broken := range []bool{true, false} {
		put := linInput{op: linPut, key: 0, val: "token", t0: clk.NowMillis(), t1: clk.NowMillis()}
		must(t, db.Put(linKey(0), []byte("token")))
		h := []porcupine.Operation{{ClientId: 0, Input: put, Call: 0, Output: linOutput{ok: true}, Return: 1}}
		var read sync.WaitGroup
		read.Add(2)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for id := range 2 {
			wg.Go(func() {
				in := linInput{op: linGetDel, key: 0, t0: clk.NowMillis()}
				var out linOutput
				var err error
				if broken {
					out, err = linBrokenGetDel{db, &read}.run(in)
				} else {
					out, err = linDB{db}.run(in)
				}
				in.t1 = clk.NowMillis()
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				// Both calls overlap: called at 2, returned at 3.
				h = append(h, porcupine.Operation{ClientId: id + 1, Input: in, Call: 2, Output: out, Return: 3})
				mu.Unlock()
			})
		}
		wg.Wait()
		takes := 0
		for _, op := range h[1:] {
			if op.Output.(linOutput).ok {
				takes++
			}
		}
		res := porcupine.CheckOperationsTimeout(linModel.ToModel(), h, 10*time.Second)
		switch {
		case broken && (takes != 2 || res != porcupine.Illegal):
			t.Fatalf("broken GetDel: %d takes, porcupine %s; want 2 takes rejected as Illegal", takes, res)
		case !broken && (takes != 1 || res != porcupine.Ok):
			t.Fatalf("GetDel: %d takes, porcupine %s; want 1 take accepted", takes, res)
		}
	}
}
