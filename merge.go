package mayfly

import (
	"encoding/binary"
	"fmt"

	"github.com/mayflydb/mayfly/format"
)

// MergeOperator folds merge operands into values (RFC 0010). A merge
// operand is written by DB.Merge (or Batch.Merge, DB.Add) without reading
// the key; readers, flushes and compactions fold a key's operands onto the
// value beneath them. TTL rules: an operand onto a missing, deleted or
// expired value starts from nothing and fixes the window's deadline from
// its own TTL; later operands join that window without moving its
// deadline; an operand committed after the window's deadline starts the
// next window. An operator must be deterministic and safe for concurrent
// use.
type MergeOperator interface {
	// Name identifies the operator; it is recorded in the manifest and
	// checked at every Open.
	Name() string
	// FullMerge folds operands, oldest first, onto base (hasBase false: the
	// window starts from nothing). An error fails the read that needed the
	// value. It must not keep or modify its arguments.
	FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error)
	// PartialMerge combines two adjacent operands, older then newer, into
	// one that FullMerge treats as the two in turn; ok false: they do not
	// combine and are kept apart.
	PartialMerge(key, older, newer []byte) (merged []byte, ok bool)
}

// Built-in operators over signed 64-bit integers, encoded as 8 bytes
// little-endian (EncodeInt64, DecodeInt64). A base or operand of another
// length is an error.
var (
	// Int64Add sums: a counter (DB.Add uses it). Folding wraps around on
	// overflow, as Go's int64 addition does: an operand written blind
	// cannot be refused later. DB.Add refuses a delta that would overflow.
	Int64Add MergeOperator = int64Op{name: "mayfly.Int64Add", fold: func(a, b int64) int64 { return a + b }}
	// Int64Max keeps the largest value merged.
	Int64Max MergeOperator = int64Op{name: "mayfly.Int64Max", fold: func(a, b int64) int64 { return max(a, b) }}
	// Int64Min keeps the smallest value merged.
	Int64Min MergeOperator = int64Op{name: "mayfly.Int64Min", fold: func(a, b int64) int64 { return min(a, b) }}
)

// BuiltinMergeOperator returns the built-in operator named name (Int64Add,
// Int64Max or Int64Min by their Name); ok is false for any other name.
func BuiltinMergeOperator(name string) (op MergeOperator, ok bool) {
	for _, op := range []MergeOperator{Int64Add, Int64Max, Int64Min} {
		if op.Name() == name {
			return op, true
		}
	}
	return nil, false
}

// EncodeInt64 returns the 8-byte little-endian form of n that the Int64
// operators read and write.
func EncodeInt64(n int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(n)) }

// DecodeInt64 reads a value written by the Int64 operators; ok is false
// when v is not 8 bytes long.
func DecodeInt64(v []byte) (n int64, ok bool) {
	if len(v) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(v)), true
}

type int64Op struct {
	name string
	fold func(a, b int64) int64
}

func (o int64Op) Name() string { return o.name }

func (o int64Op) ValidOperand(_, operand []byte) error {
	if len(operand) != 8 {
		return fmt.Errorf("%s takes 8-byte operands (EncodeInt64), not %d bytes", o.name, len(operand))
	}
	return nil
}

func (o int64Op) FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	var acc int64
	i := 0
	if hasBase {
		n, ok := DecodeInt64(base)
		if !ok {
			return nil, fmt.Errorf("%s: key %q: base of %d bytes is not an int64", o.name, key, len(base))
		}
		acc = n
	} else if len(operands) > 0 {
		n, ok := DecodeInt64(operands[0])
		if !ok {
			return nil, fmt.Errorf("%s: key %q: operand of %d bytes is not an int64", o.name, key, len(operands[0]))
		}
		acc, i = n, 1
	}
	for _, op := range operands[i:] {
		n, ok := DecodeInt64(op)
		if !ok {
			return nil, fmt.Errorf("%s: key %q: operand of %d bytes is not an int64", o.name, key, len(op))
		}
		acc = o.fold(acc, n)
	}
	return EncodeInt64(acc), nil
}

func (o int64Op) PartialMerge(_, older, newer []byte) ([]byte, bool) {
	a, ok1 := DecodeInt64(older)
	b, ok2 := DecodeInt64(newer)
	if !ok1 || !ok2 {
		return nil, false
	}
	return EncodeInt64(o.fold(a, b)), true
}

// merger adapts the operator of Options (op points at it, never nil) to
// format.Merger, wrapping its errors so that a read names the operator. It
// is one pointer, so that making it a format.Merger allocates nothing.
type merger struct{ op *MergeOperator }

func (m merger) FullMerge(key, base []byte, hasBase bool, operands [][]byte) ([]byte, error) {
	op := *m.op
	v, err := op.FullMerge(key, base, hasBase, operands)
	if err != nil {
		return nil, fmt.Errorf("mayfly: merge operator %q on key %q: %w", op.Name(), key, err)
	}
	return v, nil
}

func (m merger) PartialMerge(key, older, newer []byte) ([]byte, bool) {
	return (*m.op).PartialMerge(key, older, newer)
}

// merger returns the database's operator for reads, flushes and
// compactions; nil when none is set.
func (db *DB) merger() format.Merger {
	if db.opts.MergeOperator == nil {
		return nil
	}
	return merger{&db.opts.MergeOperator}
}

// Merge writes operand as a merge operand of key, without reading it,
// without waiting for an fsync. ttl gives the deadline of the window the
// operand starts when the key has no live value; an operand joining a
// live value leaves its deadline as it is. Without Options.MergeOperator it
// returns ErrNoMergeOperator and writes nothing.
func (db *DB) Merge(key, operand []byte, ttl TTL) error {
	b := db.pooledBatch(0)
	defer b.Close()
	if err := b.Merge(key, operand, ttl); err != nil {
		return err
	}
	return b.Write(nil)
}

// Merge adds a merge operand of key to the batch, as DB.Merge writes it.
// Without Options.MergeOperator it returns ErrNoMergeOperator, and the
// batch then commits nothing.
func (b *Batch) Merge(key, operand []byte, ttl TTL) error {
	if err := b.check(key); err != nil {
		return err
	}
	if b.db.opts.MergeOperator == nil {
		return b.fail(ErrNoMergeOperator)
	}
	if len(operand) > MaxValueSize {
		return b.fail(fmt.Errorf("%w: operand of %d bytes (limit %d)", ErrValueTooLarge, len(operand), MaxValueSize))
	}
	v, validates := b.db.opts.MergeOperator.(OperandValidator)
	if !validates {
		return b.appendWithTTL(format.FlagMerge, key, operand, ttl)
	}
	// The validator is shown the batch's copies of key and operand: the
	// caller's own slices, passed to an interface method, would escape to
	// the heap, an allocation per call for a key or operand held on the
	// caller's stack. A refused operand is taken out again.
	n, count, relative := len(b.data), b.count, len(b.relative)
	if err := b.appendWithTTL(format.FlagMerge, key, operand, ttl); err != nil {
		return err
	}
	if err := v.ValidOperand(format.LastBatchEntry(b.data, len(key), len(operand))); err != nil {
		b.data, b.count, b.relative = b.data[:n], count, b.relative[:relative]
		return b.fail(fmt.Errorf("%w: %w", ErrInvalidOperand, err))
	}
	return nil
}

// OperandValidator is implemented by merge operators that can tell a
// malformed operand at write time. Merge refuses such an operand with
// ErrInvalidOperand and writes nothing, rather than storing a row that
// would fail every later read of its key. The built-in operators accept
// 8-byte operands only. key and operand are valid only during the call.
type OperandValidator interface {
	ValidOperand(key, operand []byte) error
}

// AddBlind adds delta to the counter key as an operand, without reading it
// or returning the sum (a metric); ttl is the window as for Merge. It
// needs Options.MergeOperator to be Int64Add, else it returns
// ErrNoMergeOperator (or ErrInvalidOptions naming the operator set) and
// the batch commits nothing.
func (b *Batch) AddBlind(key []byte, delta int64, ttl TTL) error {
	if err := b.checkCounter(); err != nil {
		return err
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(delta))
	return b.Merge(key, buf[:], ttl)
}

// checkCounter fails the batch unless the database's operator is Int64Add.
func (b *Batch) checkCounter() error {
	if b.db == nil {
		return ErrBatchClosed
	}
	switch op := b.db.opts.MergeOperator; {
	case op == nil:
		return b.fail(ErrNoMergeOperator)
	case op.Name() != Int64Add.Name():
		return b.fail(fmt.Errorf("%w: counters need Options.MergeOperator = Int64Add, not %q", ErrInvalidOptions, op.Name()))
	}
	return nil
}

// checkMergeOperator compares Options.MergeOperator with the name recorded
// in the manifest and sets the name this handle records: a database with
// a recorded name opens only with an operator of that name (its operands
// could not be read otherwise); one without takes the options' name, which
// the next manifest version a writer writes records. A read-only handle
// records nothing.
func (db *DB) checkMergeOperator(recorded string) error {
	opt := ""
	if db.opts.MergeOperator != nil {
		if opt = db.opts.MergeOperator.Name(); opt == "" {
			return fmt.Errorf("%w: Options.MergeOperator has an empty name", ErrInvalidOptions)
		}
	}
	switch {
	case recorded != "" && opt == "":
		return fmt.Errorf("%w: the database records merge operator %q and Options.MergeOperator is not set", ErrMergeOperator, recorded)
	case recorded != "" && opt != recorded:
		return fmt.Errorf("%w: the database records merge operator %q, Options.MergeOperator is %q", ErrMergeOperator, recorded, opt)
	}
	db.mergeName = opt
	if opt != "" && db.mergeCache == nil {
		db.mergeCache = newMergeCache()
	}
	return nil
}

// resolveMerge returns the state merge operand r (stamped, committing at
// o.now) gives its key in state s: folded onto the live state beneath it,
// whose deadline it keeps, or from nothing under its own deadline (RFC 0010
// rules 1 and 2).
func (o *condOverlay) resolveMerge(r *format.Row, s keyState) (keyState, error) {
	if !s.live {
		s = keyState{expires: r.HasExpiry(), deadline: r.ExpireTS}
	}
	o.ops = append(o.ops[:0], r.Value)
	v, err := o.db.merger().FullMerge(r.Key, s.value, s.live, o.ops)
	clear(o.ops)
	if err != nil {
		return keyState{}, err
	}
	s.live, s.value = true, v
	if s.expires && s.deadline < o.now {
		return keyState{}, nil
	}
	return s, nil
}

// Add adds delta to the counter key and returns its new value, as one
// linearizable step (RFC 0010, "The answering add"): the commit leader
// reads the counter's state at the commit, logs delta as an Int64Add
// operand, and returns the sum. An absent or expired counter starts from
// zero, in a window ending as ttl says; a live one keeps its window. Add
// needs Options.MergeOperator = Int64Add. A key holding a value that is not
// a counter (8 bytes), or a delta that would take the counter outside the
// int64 range (as Redis's INCRBY refuses), returns an error wrapping
// ErrConditionFailed and writes nothing. Like Put it does not wait for an
// fsync.
func (db *DB) Add(key []byte, delta int64, ttl TTL) (int64, error) {
	b := db.pooledBatch(0)
	defer b.Close()
	err := b.AddBlind(key, delta, ttl)
	if err == nil {
		b.cond.add(b.count-1, condCounter, nil, true)
	}
	ok, err := b.writeCondOn(key, err)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("mayfly: Add: key %q holds a value that is not a counter, or adding %d to it would overflow int64: %w",
			key, delta, ErrConditionFailed)
	}
	n, _ := DecodeInt64(b.cond.got) // absent: no value, from zero
	n += delta
	// The counter's state at the operand's version, for the next read of
	// the key (merge_cache.go).
	w := b.cond.counter
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], uint64(n))
	db.mergeCache.remember(key, newMergeState(w.seq, true, w.expires, w.deadline, v[:]))
	return n, nil
}

// counterWindow is the window a counter's operand leaves its key in: the
// operand's version and the deadline of the state it folds into.
type counterWindow struct {
	seq      uint64
	expires  bool
	deadline int64
}

// operandWindow returns the window operand r (stamped) leaves its key in
// when s is the key's state at r's commit time: a live state keeps its
// window, else r starts one under its own deadline (RFC 0010 rules 1 and
// 2). s, judged at the commit time, is live exactly when the state in
// commit order is live with a deadline not before r's commit time.
func operandWindow(s keyState, r *format.Row) counterWindow {
	if s.live {
		return counterWindow{seq: r.Seq, expires: s.expires, deadline: s.deadline}
	}
	return counterWindow{seq: r.Seq, expires: r.HasExpiry(), deadline: r.ExpireTS}
}
