package metamorphic

import (
	"errors"
	"fmt"

	"github.com/mayflydb/mayfly"
)

// The TTL operations (RFC 0008) in the metamorphic run: Expire with each
// ExpireCond, Persist, GetEx and Touch. The model decides each at the op's
// clock time, including whether Touch and GetEx spare the write (the touch
// window rule is deterministic); the value never changes. A synced op (and
// every op of a crash configuration) goes through a Batch written with Sync
// (Expire, Persist) or is followed by FlushWAL(true) (GetEx, Touch).

// ttlOp fills o, of one of the TTL-operation kinds.
func (g *generator) ttlOp(o *op) {
	o.key = g.key()
	if g.chance(0.15) {
		o.key = ctrKeyName(g.intn(numCtrKeys)) // a counter's window
	}
	switch o.kind {
	case opExpire, opGetEx, opTouch:
		o.ttl = g.validTTL()
		if g.chance(0.03) {
			o.ttl = g.badTTL()
		}
		if o.kind == opExpire {
			o.extra = int64(g.intn(int(mayfly.ExpireLT) + 1))
		}
	}
}

func (o op) ttlOpString() string {
	s := ""
	if o.sync {
		s = " sync"
	}
	switch o.kind {
	case opExpire:
		return fmt.Sprintf("Expire(%q, %s, %v)%s", o.key, o.ttl, mayfly.ExpireCond(o.extra), s)
	case opPersist:
		return fmt.Sprintf("Persist(%q)%s", o.key, s)
	}
	return fmt.Sprintf("%s(%q, %s)%s", o.kind, o.key, o.ttl, s)
}

// expireAllows is ExpireCond's rule on the model's entry e (live).
func expireAllows(c mayfly.ExpireCond, e entry, exp bool, at int64) bool {
	switch c {
	case mayfly.ExpireNX:
		return !e.expires
	case mayfly.ExpireXX:
		return e.expires
	case mayfly.ExpireGT:
		return e.expires && (!exp || at > e.exp)
	case mayfly.ExpireLT:
		return exp && (!e.expires || at < e.exp)
	}
	return true
}

// touchSpared reports whether Touch or GetEx asking for (exp, at) at now
// writes nothing for e: the deadline is already within the touch window,
// min(DefaultTouchWindow, a tenth of the time to the deadline asked).
func touchSpared(e entry, exp bool, at, now int64) bool {
	if !exp || !e.expires {
		return exp == e.expires
	}
	window := min(mayfly.DefaultTouchWindow.Milliseconds(), max(at-now, 0)/10)
	return e.exp <= at && e.exp >= at-window
}

// ttlStep runs a TTL operation at clock time now.
func (r *runner) ttlStep(o op, now int64) (string, error) {
	e, live := r.m.get(o.key, now)
	exp, at := o.ttl.deadline(now)
	nowT := r.clk.Now()
	key, ttl := []byte(o.key), o.ttl.build(nowT)
	sync := r.writeOpts(o) == mayfly.Sync
	var applied bool
	var v []byte
	var err error
	switch o.kind {
	case opExpire, opPersist:
		b := r.db.NewBatch()
		if o.kind == opExpire {
			err = b.Expire(key, ttl, mayfly.ExpireCond(o.extra))
		} else {
			err = b.Persist(key)
		}
		if err == nil {
			err = b.Write(r.writeOpts(o))
		}
		b.Close()
		applied = err == nil
		if errors.Is(err, mayfly.ErrConditionFailed) {
			err = nil
		}
	case opGetEx:
		v, err = r.db.GetEx(key, ttl)
		applied = err == nil
		if errors.Is(err, mayfly.ErrNotFound) {
			err = nil
		}
	case opTouch:
		applied, err = r.db.Touch(key, ttl)
	}
	if !o.ttl.valid() && o.kind != opPersist {
		if !errors.Is(err, mayfly.ErrInvalidTTL) {
			return "", fmt.Errorf("invalid TTL: got %v, %v; want ErrInvalidTTL", applied, err)
		}
		return "ErrInvalidTTL", nil
	}
	if err != nil {
		return "", fmt.Errorf("unexpected error: %w", err)
	}
	want := live
	switch o.kind {
	case opExpire:
		want = live && expireAllows(mayfly.ExpireCond(o.extra), e, exp, at)
	case opPersist:
		want, exp = live && e.expires, false
	}
	if applied != want {
		return "", fmt.Errorf("applied %v, model says %v (entry %+v)", applied, want, e)
	}
	if o.kind == opGetEx && applied && string(v) != e.value {
		return "", fmt.Errorf("GetEx returned %s, model has %s", shortVal(string(v)), shortVal(e.value))
	}
	res := "not applied"
	if applied {
		res = "applied"
		spared := (o.kind == opGetEx || o.kind == opTouch) && touchSpared(e, exp, at, now)
		if spared {
			res = "applied, write spared"
		} else {
			r.m.put(o.key, e.value, exp, at)
		}
	}
	if sync && (o.kind == opGetEx || o.kind == opTouch) {
		if err := r.db.FlushWAL(true); err != nil {
			return "", fmt.Errorf("FlushWAL: %w", err)
		}
	}
	return res, nil
}
