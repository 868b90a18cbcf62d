package metamorphic

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mayflydb/mayfly"
)

// The conditional writes (RFC 0009) in the metamorphic run: PutIfAbsent,
// PutIfPresent, CompareAndSwap, CompareAndDelete, GetDel, and batches of
// conditional entries. A condition is decided on the model at the op's
// clock time; a batch whose condition fails must write nothing. A synced op
// (and every op of a crash configuration) goes through a Batch written with
// Sync, an unsynced one through the DB-level call, so both paths run.

// condKind is the condition of a conditional write.
type condKind uint8

const (
	condNone condKind = iota // a plain Put or Delete
	condAbsent
	condPresent
	condEqual
)

// oldMode says how the runner picks the expected value of a condEqual
// entry: the key's live value at that point (so the condition holds when
// the key is live), or that value with a byte appended (so it fails).
type oldMode uint8

const (
	oldCurrent oldMode = iota
	oldMismatch
)

// condEntry is one entry of a conditional write.
type condEntry struct {
	batchEntry
	cond condKind
	old  oldMode
}

func (e condEntry) String() string {
	s := e.batchEntry.String()
	switch e.cond {
	case condAbsent:
		return s + "IfAbsent"
	case condPresent:
		return s + "IfPresent"
	case condEqual:
		if e.old == oldMismatch {
			return s + "IfEqual(other)"
		}
		return s + "IfEqual(current)"
	}
	return s
}

// condOp fills o, of one of the conditional kinds.
func (g *generator) condOp(o *op) {
	switch o.kind {
	case opGetDel:
		o.key = g.key()
	case opCondBatch:
		// Few keys, so that entries of one batch meet.
		keys := []string{g.key(), g.key(), g.key()}
		for range 2 + g.intn(5) {
			o.conds = append(o.conds, g.condEntry(keys[g.intn(len(keys))], condKind(g.intn(4))))
		}
	default:
		kind := map[opKind]condKind{opPutIfAbsent: condAbsent, opPutIfPresent: condPresent, opCompareAndSwap: condEqual, opCompareAndDelete: condEqual}[o.kind]
		e := g.condEntry(g.key(), kind)
		e.del = o.kind == opCompareAndDelete
		if g.chance(0.03) && !e.del {
			e.ttl = g.badTTL()
		}
		o.conds = []condEntry{e}
	}
}

func (g *generator) condEntry(key string, kind condKind) condEntry {
	e := condEntry{batchEntry: batchEntry{key: key}, cond: kind}
	if (kind == condNone || kind == condEqual) && g.chance(0.25) {
		e.del = true
	} else {
		e.value, e.ttl = g.value(), g.validTTL()
	}
	if g.chance(0.3) {
		e.old = oldMismatch
	}
	return e
}

func (o op) condString() string {
	s := ""
	if o.sync {
		s = " sync"
	}
	if o.kind == opGetDel {
		return fmt.Sprintf("GetDel(%q)%s", o.key, s)
	}
	parts := make([]string, len(o.conds))
	for i, e := range o.conds {
		parts[i] = e.String()
	}
	return fmt.Sprintf("%s[%s]%s", o.kind, strings.Join(parts, " "), s)
}

// condStep runs a conditional op at clock time now.
func (r *runner) condStep(o op, now int64) (string, error) {
	if o.kind == opGetDel {
		return r.getDel(o, now)
	}
	// Decide every condition on a copy of the model, in entry order.
	next := r.m.clone()
	failed := -1
	olds := make([][]byte, len(o.conds))
	for i, e := range o.conds {
		cur, live := next.get(e.key, now)
		if e.cond == condEqual {
			olds[i] = []byte(cur.value)
			if e.old == oldMismatch {
				olds[i] = append(olds[i], '!')
			}
		}
		holds := e.cond == condNone ||
			e.cond == condAbsent && !live ||
			e.cond == condPresent && live ||
			e.cond == condEqual && live && e.old == oldCurrent
		if !holds && failed < 0 {
			failed = i
		}
		if e.del {
			next.del(e.key)
		} else if e.ttl.valid() {
			exp, at := e.ttl.deadline(now)
			next.put(e.key, e.value, exp, at)
		}
	}
	invalid := len(o.conds) == 1 && !o.conds[0].del && !o.conds[0].ttl.valid()
	applied, err := r.writeConds(o, olds)
	switch {
	case invalid:
		if !errors.Is(err, mayfly.ErrInvalidTTL) {
			return "", fmt.Errorf("invalid TTL: got %v, %v; want ErrInvalidTTL", applied, err)
		}
		return "ErrInvalidTTL", nil
	case err != nil:
		return "", fmt.Errorf("unexpected error: %w", err)
	case failed >= 0:
		if applied {
			return "", fmt.Errorf("written, but the model says entry %d's condition fails", failed)
		}
		return fmt.Sprintf("refused at entry %d, nothing written", failed), nil
	case !applied:
		return "", fmt.Errorf("refused, but the model says every condition holds")
	}
	r.m = next
	return fmt.Sprintf("applied %d", len(o.conds)), nil
}

// writeConds writes o's entries with olds as the expected values and
// reports whether they were written; a failed condition is not an error.
func (r *runner) writeConds(o op, olds [][]byte) (bool, error) {
	nowT := r.clk.Now()
	if r.writeOpts(o) == mayfly.NoSync && o.kind != opCondBatch {
		e := o.conds[0]
		k, v, ttl := []byte(e.key), []byte(e.value), e.ttl.build(nowT)
		switch o.kind {
		case opPutIfAbsent:
			return r.db.PutIfAbsent(k, v, ttl)
		case opPutIfPresent:
			return r.db.PutIfPresent(k, v, ttl)
		case opCompareAndSwap:
			return r.db.CompareAndSwap(k, olds[0], v, ttl)
		}
		return r.db.CompareAndDelete(k, olds[0])
	}
	b := r.db.NewBatch()
	defer b.Close()
	for i, e := range o.conds {
		k, v, ttl := []byte(e.key), []byte(e.value), e.ttl.build(nowT)
		var err error
		switch {
		case e.cond == condEqual && e.del:
			err = b.CompareAndDelete(k, olds[i])
		case e.cond == condEqual:
			err = b.CompareAndSwap(k, olds[i], v, ttl)
		case e.del:
			err = b.Delete(k)
		case e.cond == condAbsent:
			err = b.PutIfAbsent(k, v, ttl)
		case e.cond == condPresent:
			err = b.PutIfPresent(k, v, ttl)
		default:
			err = b.PutTTL(k, v, ttl)
		}
		if err != nil {
			return false, err
		}
	}
	err := b.Write(r.writeOpts(o))
	if errors.Is(err, mayfly.ErrConditionFailed) {
		return false, nil
	}
	return err == nil, err
}

// getDel runs GetDel and, when the op is synced, makes it durable with
// FlushWAL (GetDel itself does not sync).
func (r *runner) getDel(o op, now int64) (string, error) {
	v, err := r.db.GetDel([]byte(o.key))
	e, ok := r.m.get(o.key, now)
	res, cerr := checkGet(v, err, e, ok)
	if cerr != nil {
		return "", cerr
	}
	if ok {
		r.m.del(o.key)
	}
	if r.writeOpts(o) == mayfly.Sync {
		if err := r.db.FlushWAL(true); err != nil {
			return "", fmt.Errorf("FlushWAL: %w", err)
		}
	}
	return res, nil
}
