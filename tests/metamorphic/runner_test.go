package metamorphic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

// epoch is the manual clock's starting time.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// blockingTimeout bounds Flush, Compact, ReclaimExpired, WaitForCompactions
// and Check; hitting it is reported as a hang.
const blockingTimeout = 2 * time.Minute

// config is one option set the op sequence runs under.
type config struct {
	name string
	// local runs on a local directory (t.TempDir) rather than storage.Mem.
	local bool
	// s3 runs on a fresh prefix of the S3 server (internal/s3test).
	s3 bool
	// crash makes Crash ops simulate power loss (CrashClone of the open
	// database) instead of a clean reopen. Every write is then synced, so
	// every acknowledged write must survive. Only on storage.Mem.
	crash bool
	opts  func(*mayfly.Options)
}

// liveIter is an open iterator and its model.
type liveIter struct {
	it   *mayfly.Iterator
	mi   modelIter
	desc string
}

// liveSnap is an open snapshot and the model state and time it froze.
type liveSnap struct {
	s   *mayfly.Snapshot
	m   *model
	now int64
}

// stats accumulate engine metrics across reopens, to show what a
// configuration exercised.
type stats struct {
	flushes, compactions, trivialMoves, wholeFileDrops uint64
	expiredToTombstone, expiredDropped                 uint64
	tombstonesDropped, stalls, walReplayed, walTorn    uint64
	byKind                                             map[string]uint64
	maxLevels                                          int // most levels populated at once
	reopens, crashes                                   int
}

func (s *stats) add(m mayfly.Metrics) {
	s.flushes += m.Flushes
	s.compactions += m.Compactions
	s.trivialMoves += m.TrivialMoves
	s.wholeFileDrops += m.WholeFileDrops
	s.expiredToTombstone += m.ExpiredToTombstone
	s.expiredDropped += m.ExpiredDropped
	s.tombstonesDropped += m.TombstonesDropped
	s.stalls += m.WriteStalls
	s.walReplayed += m.WALRecordsReplayed
	s.walTorn += m.WALTornTails
	if s.byKind == nil {
		s.byKind = make(map[string]uint64)
	}
	for k, n := range m.CompactionsByKind {
		s.byKind[k] += n
	}
	s.sampleLevels(m)
}

func (s *stats) sampleLevels(m mayfly.Metrics) {
	n := 0
	for _, l := range m.Levels {
		if l.Files > 0 {
			n++
		}
	}
	s.maxLevels = max(s.maxLevels, n)
}

func (s *stats) String() string {
	kinds := make([]string, 0, len(s.byKind))
	for k, n := range s.byKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	slices.Sort(kinds)
	return fmt.Sprintf("flushes=%d compactions=%d [%s] moves=%d fileDrops=%d expired->tomb=%d expiredDropped=%d tombDropped=%d stalls=%d maxLevels=%d reopens=%d crashes=%d walReplayed=%d",
		s.flushes, s.compactions, strings.Join(kinds, " "), s.trivialMoves, s.wholeFileDrops,
		s.expiredToTombstone, s.expiredDropped, s.tombstonesDropped, s.stalls, s.maxLevels,
		s.reopens, s.crashes, s.walReplayed)
}

// runner executes an op sequence against one database and the model.
type runner struct {
	cfg   config
	dir   string
	mem   *storage.Mem
	clk   *clock.Manual
	db    *mayfly.DB
	m     *model
	iters [numSlots]*liveIter
	snaps [numSlots]*liveSnap
	hist  []string
	stats stats
	// opTime is the wall time spent per op kind, to spot slow operations.
	opTime map[opKind]time.Duration
}

// failure is a mismatch or unexpected error at op index idx (-1: in the
// final checks).
type failure struct {
	idx int
	err error
}

func (f *failure) Error() string { return f.err.Error() }

// newRunner returns a runner for cfg at location dir (a local directory or
// an s3:// URL); configs that are neither local nor s3 use a new
// storage.Mem instead.
func newRunner(cfg config, dir string) *runner {
	r := &runner{cfg: cfg, dir: dir, clk: clock.NewManual(epoch), m: newModel()}
	if !cfg.local && !cfg.s3 {
		r.dir = "memdb"
		r.mem = storage.NewMem()
	}
	return r
}

func (r *runner) options() *mayfly.Options {
	o := &mayfly.Options{Clock: r.clk, MergeOperator: mayfly.Int64Add}
	if r.mem != nil {
		o.Storage = r.mem
	}
	if r.cfg.opts != nil {
		r.cfg.opts(o)
	}
	return o
}

func (r *runner) open() error {
	db, err := mayfly.Open(r.dir, r.options())
	if err != nil {
		return fmt.Errorf("Open: %w", err)
	}
	r.db = db
	return nil
}

func (r *runner) nowMs() int64 { return r.clk.NowMillis() }

func (r *runner) writeOpts(o op) *mayfly.WriteOptions {
	if o.sync || r.cfg.crash {
		return mayfly.Sync
	}
	return mayfly.NoSync
}

// run executes ops and the final checks. It returns the final state, as
// read from the database, for the cross-configuration comparison.
func (r *runner) run(ops []op) (string, error) {
	if err := r.open(); err != nil {
		return "", &failure{idx: 0, err: err}
	}
	r.opTime = make(map[opKind]time.Duration)
	for i, o := range ops {
		start := time.Now()
		res, err := r.step(o)
		r.opTime[o.kind] += time.Since(start)
		r.hist = append(r.hist, fmt.Sprintf("#%d %s => %s", i, o, res))
		if err != nil {
			return "", &failure{idx: i, err: fmt.Errorf("op #%d %s: %w", i, o, err)}
		}
	}
	state, err := r.finish()
	if err != nil {
		return "", &failure{idx: -1, err: fmt.Errorf("final checks: %w", err)}
	}
	return state, nil
}

// cleanup releases everything after a failure; errors are ignored.
func (r *runner) cleanup() {
	for i, li := range r.iters {
		if li != nil {
			li.it.Close()
			r.iters[i] = nil
		}
	}
	for i, ls := range r.snaps {
		if ls != nil {
			ls.s.Close()
			r.snaps[i] = nil
		}
	}
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
}

func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), blockingTimeout)
}

func hang(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s did not return within %v (hang?): %w", what, blockingTimeout, err)
	}
	return fmt.Errorf("%s: unexpected error: %w", what, err)
}

func (r *runner) step(o op) (string, error) {
	now := r.nowMs()
	switch o.kind {
	case opPut:
		err := r.db.PutWith([]byte(o.key), []byte(o.value), o.ttl.build(r.clk.Now()), r.writeOpts(o))
		if !o.ttl.valid() {
			if !errors.Is(err, mayfly.ErrInvalidTTL) {
				return "", fmt.Errorf("invalid TTL: got err %v, want ErrInvalidTTL", err)
			}
			return "ErrInvalidTTL", nil
		}
		if err != nil {
			return "", fmt.Errorf("unexpected error: %w", err)
		}
		exp, at := o.ttl.deadline(now)
		r.m.put(o.key, o.value, exp, at)
		return expString(exp, at, now), nil

	case opDelete:
		if err := r.db.DeleteWith([]byte(o.key), r.writeOpts(o)); err != nil {
			return "", fmt.Errorf("unexpected error: %w", err)
		}
		r.m.del(o.key)
		return "ok", nil

	case opBatch:
		return r.batch(o, now)

	case opPutIfAbsent, opPutIfPresent, opCompareAndSwap, opCompareAndDelete, opGetDel, opCondBatch:
		return r.condStep(o, now)

	case opExpire, opPersist, opGetEx, opTouch:
		return r.ttlStep(o, now)

	case opMerge, opAdd:
		return r.mergeStep(o, now)

	case opBurst:
		nowT := r.clk.Now()
		for _, e := range o.entries {
			if err := r.db.PutWith([]byte(e.key), []byte(e.value), e.ttl.build(nowT), r.writeOpts(o)); err != nil {
				return "", fmt.Errorf("Put(%q): unexpected error: %w", e.key, err)
			}
			exp, at := e.ttl.deadline(now)
			r.m.put(e.key, e.value, exp, at)
		}
		return fmt.Sprintf("%d puts", len(o.entries)), nil

	case opGet:
		v, err := r.db.Get([]byte(o.key))
		e, ok := r.m.get(o.key, now)
		return checkGet(v, err, e, ok)

	case opTTL:
		rem, exp, err := r.db.TTL([]byte(o.key))
		wrem, wexp, ok := r.m.ttl(o.key, now)
		return checkTTL(rem, exp, err, wrem, wexp, ok)

	case opScan:
		if inverted(o) {
			var err error
			for k := range r.db.Scan(o.lower.bytes(), o.hi.bytes(), &err) {
				return "", fmt.Errorf("Scan with inverted bounds returned %q", k)
			}
			return checkInverted(err)
		}
		want := r.m.scan(o.lower, o.hi, now)
		var got []kv
		if !o.reverse {
			var err error
			for k, v := range r.db.Scan(o.lower.bytes(), o.hi.bytes(), &err) {
				got = append(got, kv{string(k), string(v)})
			}
			if err != nil {
				return "", fmt.Errorf("Scan error: %w", err)
			}
		} else {
			it, err := r.db.NewIter(&mayfly.IterOptions{LowerBound: o.lower.bytes(), UpperBound: o.hi.bytes()})
			if err != nil {
				return "", fmt.Errorf("NewIter: %w", err)
			}
			if got, err = scanIter(it, true); err != nil {
				return "", err
			}
			slices.Reverse(want)
		}
		return checkKVs(got, want)

	case opIterOpen, opSnapIterOpen:
		opts := &mayfly.IterOptions{LowerBound: o.lower.bytes(), UpperBound: o.hi.bytes()}
		var it *mayfly.Iterator
		var err error
		var kvs []kv
		if o.kind == opIterOpen {
			it, err = r.db.NewIter(opts)
			kvs = r.m.scan(o.lower, o.hi, now)
		} else {
			ls := r.snaps[o.snap]
			it, err = ls.s.NewIter(opts)
			kvs = ls.m.scan(o.lower, o.hi, ls.now)
		}
		if inverted(o) {
			// Refused; the slot gets an iterator over an empty range, so
			// that the moves generated for it still run.
			if _, err := checkInverted(err); err != nil {
				return "", err
			}
			empty := &mayfly.IterOptions{LowerBound: opts.LowerBound, UpperBound: opts.LowerBound}
			if o.kind == opIterOpen {
				it, err = r.db.NewIter(empty)
			} else {
				it, err = r.snaps[o.snap].s.NewIter(empty)
			}
			kvs = nil
		}
		if err != nil {
			return "", fmt.Errorf("NewIter: %w", err)
		}
		r.iters[o.slot] = &liveIter{it: it, mi: modelIter{kvs: kvs, pos: -1}, desc: o.String()}
		return fmt.Sprintf("%d live keys in bounds", len(kvs)), nil

	case opIterMove:
		return r.iterMoves(r.iters[o.slot], o.moves)

	case opIterClose:
		li := r.iters[o.slot]
		r.iters[o.slot] = nil
		if err := li.it.Close(); err != nil {
			return "", fmt.Errorf("Iterator.Close: %w", err)
		}
		return "ok", nil

	case opSnapOpen:
		s, err := r.db.NewSnapshot()
		if err != nil {
			return "", fmt.Errorf("NewSnapshot: %w", err)
		}
		r.snaps[o.slot] = &liveSnap{s: s, m: r.m.clone(), now: now}
		if got := s.Time().UnixMilli(); got != now {
			return "", fmt.Errorf("Snapshot.Time() = %d, want %d", got, now)
		}
		return fmt.Sprintf("at %s", fmtTime(now)), nil

	case opSnapGet:
		ls := r.snaps[o.slot]
		v, err := ls.s.Get([]byte(o.key))
		e, ok := ls.m.get(o.key, ls.now)
		return checkGet(v, err, e, ok)

	case opSnapTTL:
		ls := r.snaps[o.slot]
		rem, exp, err := ls.s.TTL([]byte(o.key))
		wrem, wexp, ok := ls.m.ttl(o.key, ls.now)
		return checkTTL(rem, exp, err, wrem, wexp, ok)

	case opSnapScan:
		ls := r.snaps[o.slot]
		it, err := ls.s.NewIter(&mayfly.IterOptions{LowerBound: o.lower.bytes(), UpperBound: o.hi.bytes()})
		if inverted(o) {
			return checkInverted(err)
		}
		if err != nil {
			return "", fmt.Errorf("Snapshot.NewIter: %w", err)
		}
		got, err := scanIter(it, o.reverse)
		if err != nil {
			return "", err
		}
		want := ls.m.scan(o.lower, o.hi, ls.now)
		if o.reverse {
			slices.Reverse(want)
		}
		return checkKVs(got, want)

	case opSnapClose:
		ls := r.snaps[o.slot]
		r.snaps[o.slot] = nil
		if err := ls.s.Close(); err != nil {
			return "", fmt.Errorf("Snapshot.Close: %w", err)
		}
		return "ok", nil

	case opFlush:
		if err := r.db.Flush(); err != nil {
			return "", fmt.Errorf("Flush: %w", err)
		}
		return "ok", nil

	case opCompact:
		c, cancel := ctx()
		defer cancel()
		err := r.db.Compact(c, o.lower.bytes(), o.hi.bytes())
		if inverted(o) {
			return checkInverted(err)
		}
		if err != nil {
			return "", hang("Compact", err)
		}
		return r.levelsSummary(), nil

	case opReclaim:
		c, cancel := ctx()
		defer cancel()
		if err := r.db.ReclaimExpired(c); err != nil {
			return "", hang("ReclaimExpired", err)
		}
		return r.levelsSummary(), nil

	case opWait:
		c, cancel := ctx()
		defer cancel()
		if err := r.db.WaitForCompactions(c); err != nil {
			return "", hang("WaitForCompactions", err)
		}
		return r.levelsSummary(), nil

	case opCheck:
		c, cancel := ctx()
		defer cancel()
		if err := r.db.Check(c); err != nil {
			return "", hang("Check", err)
		}
		return "ok", nil

	case opReopen:
		return r.reopen(false)

	case opCrash:
		return r.reopen(r.cfg.crash)

	case opAdvance:
		r.clk.Advance(o.d)
		return fmt.Sprintf("now %s", fmtTime(r.nowMs())), nil

	case opAdvanceToExpiry:
		e, ok := r.m.m[o.key]
		if !ok || !e.expires || e.exp < now || e.exp-now > 10_000 {
			return "no pending deadline", nil
		}
		r.clk.Advance(time.Duration(e.exp+o.extra-now) * time.Millisecond)
		return fmt.Sprintf("now %s (deadline %s)", fmtTime(r.nowMs()), fmtTime(e.exp)), nil
	}
	return "", fmt.Errorf("unknown op kind %d", o.kind)
}

func (r *runner) batch(o op, now int64) (string, error) {
	b := r.db.NewBatch()
	nowT := r.clk.Now()
	var firstBad error
	for i, e := range o.entries {
		var err error
		if e.del {
			err = b.Delete([]byte(e.key))
		} else {
			err = b.PutTTL([]byte(e.key), []byte(e.value), e.ttl.build(nowT))
		}
		var want error
		switch {
		case e.key == "":
			want = mayfly.ErrEmptyKey
		case !e.del && !e.ttl.valid():
			want = mayfly.ErrInvalidTTL
		}
		if want == nil && err != nil {
			return "", fmt.Errorf("entry %d %s: unexpected error %w", i, e, err)
		}
		if want != nil {
			if !errors.Is(err, want) {
				return "", fmt.Errorf("entry %d %s: got %v, want %v", i, e, err, want)
			}
			if firstBad == nil {
				firstBad = want
			}
		}
	}
	if firstBad == nil && b.Len() != len(o.entries) {
		return "", fmt.Errorf("Batch.Len() = %d, want %d", b.Len(), len(o.entries))
	}
	err := b.Write(r.writeOpts(o))
	if firstBad != nil {
		if !errors.Is(err, firstBad) {
			return "", fmt.Errorf("batch with an invalid entry: Write returned %v, want %v", err, firstBad)
		}
		return fmt.Sprintf("rejected (%v), nothing written", firstBad), nil
	}
	if err != nil {
		return "", fmt.Errorf("Batch.Write: unexpected error %w", err)
	}
	for _, e := range o.entries {
		if e.del {
			r.m.del(e.key)
		} else {
			exp, at := e.ttl.deadline(now)
			r.m.put(e.key, e.value, exp, at)
		}
	}
	if err := b.Write(nil); !errors.Is(err, mayfly.ErrBatchCommitted) {
		return "", fmt.Errorf("second Batch.Write: got %v, want ErrBatchCommitted", err)
	}
	return fmt.Sprintf("committed %d", len(o.entries)), nil
}

func (r *runner) iterMoves(li *liveIter, moves []move) (string, error) {
	var res []string
	for i, mv := range moves {
		got := r.applyMove(li.it, mv)
		want := li.mi.apply(mv)
		if err := li.it.Error(); err != nil {
			return strings.Join(res, " "), fmt.Errorf("move %d %s: Iterator.Error() = %w", i, mv, err)
		}
		if got != want || got != li.it.Valid() {
			return strings.Join(res, " "), fmt.Errorf("move %d %s on {%s}: returned %v (Valid %v), model %v%s",
				i, mv, li.desc, got, li.it.Valid(), want, li.describe())
		}
		if !got {
			res = append(res, mv.String()+"=<none>")
			continue
		}
		w := li.mi.cur()
		if string(li.it.Key()) != w.key || string(li.it.Value()) != w.value {
			return strings.Join(res, " "), fmt.Errorf("move %d %s on {%s}: at %q=%s, model %q=%s%s",
				i, mv, li.desc, li.it.Key(), shortVal(string(li.it.Value())), w.key, shortVal(w.value), li.describe())
		}
		res = append(res, mv.String()+"="+w.key)
	}
	return strings.Join(res, " "), nil
}

func (li *liveIter) describe() string {
	keys := make([]string, len(li.mi.kvs))
	for i, e := range li.mi.kvs {
		keys[i] = e.key
	}
	if len(keys) > 40 {
		keys = append(keys[:40], "...")
	}
	return fmt.Sprintf("; model keys in view: %v", keys)
}

func (r *runner) applyMove(it *mayfly.Iterator, mv move) bool {
	switch mv.kind {
	case moveFirst:
		return it.First()
	case moveLast:
		return it.Last()
	case moveSeekGE:
		return it.SeekGE([]byte(mv.key))
	case moveSeekLT:
		return it.SeekLT([]byte(mv.key))
	case moveNext:
		return it.Next()
	}
	return it.Prev()
}

// scanIter reads it from one end to the other and closes it.
func scanIter(it *mayfly.Iterator, reverse bool) ([]kv, error) {
	var got []kv
	if reverse {
		for ok := it.Last(); ok; ok = it.Prev() {
			got = append(got, kv{string(it.Key()), string(it.Value())})
		}
	} else {
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, kv{string(it.Key()), string(it.Value())})
		}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("iterator: %w", err)
	}
	return got, nil
}

// reopen closes every iterator and snapshot, then either closes and reopens
// the database or, with crash, simulates power loss: the storage is cloned
// in its durable state while the database is still running, the old
// handle is discarded, and the database is opened on the clone.
func (r *runner) reopen(crash bool) (string, error) {
	for i, li := range r.iters {
		if li != nil {
			if err := li.it.Close(); err != nil {
				return "", fmt.Errorf("Iterator.Close: %w", err)
			}
			r.iters[i] = nil
		}
	}
	for i, ls := range r.snaps {
		if ls != nil {
			if err := ls.s.Close(); err != nil {
				return "", fmt.Errorf("Snapshot.Close: %w", err)
			}
			r.snaps[i] = nil
		}
	}
	r.stats.add(r.db.Metrics())
	res := "reopened"
	if crash {
		clone := r.mem.CrashClone()
		old := r.db
		r.db = nil
		if err := old.Close(); err != nil {
			return "", fmt.Errorf("Close of the crashed handle: %w", err)
		}
		r.mem = clone
		r.stats.crashes++
		res = "crashed and recovered"
	} else {
		db := r.db
		r.db = nil
		if err := db.Close(); err != nil {
			return "", fmt.Errorf("Close: %w", err)
		}
		r.stats.reopens++
	}
	if err := r.open(); err != nil {
		return "", err
	}
	if err := r.verifyAll(); err != nil {
		return "", fmt.Errorf("after %s: %w", res, err)
	}
	return res, nil
}

// verifyAll compares every key (Get and TTL) and a full scan in both
// directions with the model.
func (r *runner) verifyAll() error {
	now := r.nowMs()
	for _, k := range allKeys() {
		v, err := r.db.Get([]byte(k))
		e, ok := r.m.get(k, now)
		if _, err := checkGet(v, err, e, ok); err != nil {
			return fmt.Errorf("Get(%q): %w", k, err)
		}
		rem, exp, err := r.db.TTL([]byte(k))
		wrem, wexp, ok := r.m.ttl(k, now)
		if _, err := checkTTL(rem, exp, err, wrem, wexp, ok); err != nil {
			return fmt.Errorf("TTL(%q): %w", k, err)
		}
	}
	want := r.m.scan(bound{}, bound{}, now)
	for _, reverse := range []bool{false, true} {
		it, err := r.db.NewIter(nil)
		if err != nil {
			return fmt.Errorf("NewIter: %w", err)
		}
		got, err := scanIter(it, reverse)
		if err != nil {
			return err
		}
		if reverse {
			slices.Reverse(got)
		}
		if _, err := checkKVs(got, want); err != nil {
			return fmt.Errorf("full scan (reverse=%v): %w", reverse, err)
		}
	}
	return nil
}

// finish runs the final checks: every key against the model, Check, then
// (after closing everything and letting compaction settle) again, and once
// more after a reopen. It returns the final state read from the database.
func (r *runner) finish() (string, error) {
	if err := r.verifyAll(); err != nil {
		return "", err
	}
	c, cancel := ctx()
	defer cancel()
	if err := r.db.Check(c); err != nil {
		return "", hang("Check", err)
	}
	for i, li := range r.iters {
		if li != nil {
			if err := li.it.Close(); err != nil {
				return "", fmt.Errorf("Iterator.Close: %w", err)
			}
			r.iters[i] = nil
		}
	}
	for i, ls := range r.snaps {
		if ls != nil {
			if err := ls.s.Close(); err != nil {
				return "", fmt.Errorf("Snapshot.Close: %w", err)
			}
			r.snaps[i] = nil
		}
	}
	if err := r.db.WaitForCompactions(c); err != nil {
		return "", hang("WaitForCompactions", err)
	}
	if err := r.db.Check(c); err != nil {
		return "", hang("Check after WaitForCompactions", err)
	}
	if err := r.verifyAll(); err != nil {
		return "", fmt.Errorf("after WaitForCompactions: %w", err)
	}
	if _, err := r.reopen(false); err != nil {
		return "", err
	}
	if err := r.db.Check(c); err != nil {
		return "", hang("Check after reopen", err)
	}
	state, err := r.dbState()
	if err != nil {
		return "", err
	}
	r.stats.add(r.db.Metrics())
	db := r.db
	r.db = nil
	if err := db.Close(); err != nil {
		return "", fmt.Errorf("Close: %w", err)
	}
	return state, nil
}

// dbState renders the live contents of the database, one key per line with
// its value and deadline, read through the public API only.
func (r *runner) dbState() (string, error) {
	now := r.nowMs()
	var sb strings.Builder
	fmt.Fprintf(&sb, "now=%d\n", now)
	var err error
	for k, v := range r.db.Scan(nil, nil, &err) {
		rem, exp, terr := r.db.TTL(k)
		if terr != nil {
			return "", fmt.Errorf("TTL(%q) of a scanned key: %w", k, terr)
		}
		dl := "none"
		if exp {
			dl = fmt.Sprint(now + int64(rem/time.Millisecond))
		}
		fmt.Fprintf(&sb, "%s\t%s\t%s\n", k, v, dl)
	}
	if err != nil {
		return "", fmt.Errorf("Scan: %w", err)
	}
	return sb.String(), nil
}

func (r *runner) levelsSummary() string {
	m := r.db.Metrics()
	r.stats.sampleLevels(m)
	var parts []string
	for l, lm := range m.Levels {
		if lm.Files > 0 {
			parts = append(parts, fmt.Sprintf("L%d:%d", l, lm.Files))
		}
	}
	return "levels " + strings.Join(parts, " ")
}

func checkGet(v []byte, err error, e entry, ok bool) (string, error) {
	if !ok {
		if !errors.Is(err, mayfly.ErrNotFound) {
			return "", fmt.Errorf("got (%s, %v), model: not found", shortVal(string(v)), err)
		}
		return "not found", nil
	}
	if err != nil {
		return "", fmt.Errorf("got error %v, model %s (%s)", err, shortVal(e.value), entryExp(e))
	}
	if string(v) != e.value {
		return "", fmt.Errorf("got %s, model %s (%s)", shortVal(string(v)), shortVal(e.value), entryExp(e))
	}
	return shortVal(e.value), nil
}

func checkTTL(rem time.Duration, exp bool, err error, wrem time.Duration, wexp, ok bool) (string, error) {
	if !ok {
		if !errors.Is(err, mayfly.ErrNotFound) {
			return "", fmt.Errorf("got (%v, %v, %v), model: not found", rem, exp, err)
		}
		return "not found", nil
	}
	if err != nil || rem != wrem || exp != wexp {
		return "", fmt.Errorf("got (%v, %v, %v), model (%v, %v, nil)", rem, exp, err, wrem, wexp)
	}
	if !wexp {
		return "no expiry", nil
	}
	return fmt.Sprintf("%v left", wrem), nil
}

func checkKVs(got, want []kv) (string, error) {
	n := min(len(got), len(want))
	for i := range n {
		if got[i] != want[i] {
			return "", fmt.Errorf("entry %d: got %q=%s, model %q=%s (got %d entries, model %d)",
				i, got[i].key, shortVal(got[i].value), want[i].key, shortVal(want[i].value), len(got), len(want))
		}
	}
	if len(got) > n {
		return "", fmt.Errorf("got %d entries, model %d; first extra %q=%s", len(got), len(want), got[n].key, shortVal(got[n].value))
	}
	if len(want) > n {
		return "", fmt.Errorf("got %d entries, model %d; first missing %q=%s", len(got), len(want), want[n].key, shortVal(want[n].value))
	}
	return fmt.Sprintf("%d entries", len(got)), nil
}

func entryExp(e entry) string {
	if !e.expires {
		return "no expiry"
	}
	return "deadline " + fmtTime(e.exp)
}

func expString(exp bool, at, now int64) string {
	if !exp {
		return "ok, no expiry"
	}
	return fmt.Sprintf("ok, deadline %s (now%+dms)", fmtTime(at), at-now)
}

// fmtTime renders a Unix ms time as an offset from the epoch, which keeps
// histories readable.
func fmtTime(ms int64) string {
	return fmt.Sprintf("T%+dms", ms-epoch.UnixMilli())
}

// inverted reports whether o's bounds are both set and the lower one is
// above the upper one, which NewIter, Scan and Compact refuse.
func inverted(o op) bool {
	return o.lower.set && o.hi.set && o.lower.key > o.hi.key
}

// checkInverted checks the error of an operation given inverted bounds.
func checkInverted(err error) (string, error) {
	if !errors.Is(err, mayfly.ErrInvalidOptions) {
		return "", fmt.Errorf("inverted range: got %v, want ErrInvalidOptions", err)
	}
	return "ErrInvalidOptions", nil
}
