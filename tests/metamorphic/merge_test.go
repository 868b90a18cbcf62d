package metamorphic

import (
	"errors"
	"fmt"

	"github.com/mayflydb/mayfly"
)

// Counters (RFC 0010) in the metamorphic run: blind increments (DB.Merge,
// or Batch.AddBlind) and answering adds (DB.Add) on a small namespace of
// counter keys ("ctr/..."), which Expire, Persist, GetEx and Touch also
// pick (ttlops_test.go) and every read reaches. The model applies the
// rules at the op's clock time: onto a live counter the delta is added
// and the window's deadline kept; onto an absent or expired one the count
// starts from the delta, in a window ending as the op's TTL says.

// numCtrKeys is the number of counter keys.
const numCtrKeys = 8

func ctrKeyName(i int) string { return fmt.Sprintf("ctr/%02d", i) }

// mergeOp fills o (opMerge or opAdd): the key, the delta in extra, the
// TTL; reverse makes an opMerge go through a Batch (AddBlind).
func (g *generator) mergeOp(o *op) {
	o.key = ctrKeyName(g.intn(numCtrKeys))
	o.extra = int64(g.intn(21) - 5)
	o.ttl = g.validTTL()
	if g.chance(0.03) {
		o.ttl = g.badTTL()
	}
	o.reverse = o.kind == opMerge && g.chance(0.3)
}

func (o op) mergeString() string {
	s := ""
	if o.sync {
		s = " sync"
	}
	if o.kind == opMerge && o.reverse {
		return fmt.Sprintf("Batch.AddBlind(%q, %+d, %s)%s", o.key, o.extra, o.ttl, s)
	}
	return fmt.Sprintf("%s(%q, %+d, %s)%s", o.kind, o.key, o.extra, o.ttl, s)
}

// merge applies a counter increment committed at now to the model and
// returns the new count.
func (m *model) merge(key string, delta int64, expires bool, exp, now int64) int64 {
	if e, live := m.get(key, now); live {
		n, ok := mayfly.DecodeInt64([]byte(e.value))
		if !ok {
			panic(fmt.Sprintf("model: counter %q holds %q", key, e.value))
		}
		m.put(key, string(mayfly.EncodeInt64(n+delta)), e.expires, e.exp)
		return n + delta
	}
	m.put(key, string(mayfly.EncodeInt64(delta)), expires, exp)
	return delta
}

// mergeStep runs a counter op at clock time now.
func (r *runner) mergeStep(o op, now int64) (string, error) {
	key, ttl := []byte(o.key), o.ttl.build(r.clk.Now())
	var got int64
	var err error
	switch {
	case o.kind == opAdd:
		got, err = r.db.Add(key, o.extra, ttl)
		if err == nil && r.writeOpts(o) == mayfly.Sync {
			err = r.db.FlushWAL(true)
		}
	case o.reverse:
		b := r.db.NewBatch()
		if err = b.AddBlind(key, o.extra, ttl); err == nil {
			err = b.Write(r.writeOpts(o))
		}
		b.Close()
	default:
		err = r.db.Merge(key, mayfly.EncodeInt64(o.extra), ttl)
		if err == nil && r.writeOpts(o) == mayfly.Sync {
			err = r.db.FlushWAL(true)
		}
	}
	if !o.ttl.valid() {
		if !errors.Is(err, mayfly.ErrInvalidTTL) {
			return "", fmt.Errorf("invalid TTL: got %v; want ErrInvalidTTL", err)
		}
		return "ErrInvalidTTL", nil
	}
	if err != nil {
		return "", fmt.Errorf("unexpected error: %w", err)
	}
	exp, at := o.ttl.deadline(now)
	want := r.m.merge(o.key, o.extra, exp, at, now)
	if o.kind == opAdd && got != want {
		return "", fmt.Errorf("Add returned %d, model says %d", got, want)
	}
	return fmt.Sprintf("= %d", want), nil
}
