package crash

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/faultfs"
)

var (
	faultStride = flag.Int("faults.stride", 0, "try every k-th fault index (0: all, or a stride that fits -faults.budget in -short mode or under -race)")
	faultBudget = flag.Duration("faults.budget", 12*time.Second, "time budget of each fault sweep in -short mode or under -race, where the stride is chosen to fit it")
	faultSeed   = flag.Uint64("faults.seed", 1, "seed of the fault-test workload")
)

// epoch is the manual clock's starting time.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// runTimeout bounds one workload run (and each verification): a hang is a
// failure, not a stuck test binary.
const runTimeout = 60 * time.Second

// --- the workload ---

type stepKind int

const (
	stWrite   stepKind = iota // a put, delete or batch
	stGet                     // a read, checked while nothing has failed
	stFlush                   // DB.Flush
	stCompact                 // DB.Compact over everything
	stReopen                  // Close, then Open again
	stAdvance                 // move the manual clock
)

// ttlSpec is how a planned put expires.
type ttlSpec struct {
	kind int           // 0 NoExpiry, 1 DefaultTTL, 2 ExpireAfter(d), 3 ExpireAt(at)
	d    time.Duration // kind 1 (the default) and 2
	at   time.Time     // kind 3
}

func (s ttlSpec) ttl() mayfly.TTL {
	switch s.kind {
	case 1:
		return mayfly.DefaultTTL()
	case 2:
		return mayfly.ExpireAfter(s.d)
	case 3:
		return mayfly.ExpireAt(s.at)
	}
	return mayfly.NoExpiry()
}

// deadline returns whether the row expires and its deadline for a commit at
// now (Unix ms).
func (s ttlSpec) deadline(now int64) (bool, int64) {
	switch s.kind {
	case 1, 2:
		return true, now + s.d.Milliseconds()
	case 3:
		return true, s.at.UnixMilli()
	}
	return false, 0
}

type plannedMut struct {
	key string
	del bool
	val string
	ttl ttlSpec
}

type step struct {
	kind stepKind
	sync bool
	muts []plannedMut // stWrite; more than one makes a batch
	key  string       // stGet
	d    time.Duration
}

const workloadDefaultTTL = 30 * time.Minute

// makeScript builds the fixed workload: about 260 steps of synced and
// unsynced puts (with every kind of TTL, some short enough to expire during
// the run), deletes, batches and reads over fresh keys and a few hot keys
// that are overwritten, with a Flush, a Compact and a Close/Open on the way.
func makeScript(seed uint64) []step {
	rng := rand.New(rand.NewPCG(seed, 0x6d61_7966_6c79))
	const n = 260
	var script []step
	fresh := 0
	var written []string
	newKey := func() string {
		fresh++
		k := fmt.Sprintf("k%04d", fresh)
		written = append(written, k)
		return k
	}
	hot := func() string { return fmt.Sprintf("hot%d", rng.IntN(6)) }
	val := func(i int, k string) string {
		return fmt.Sprintf("v%03d-%s-%s", i, k, strings.Repeat("x", 20+rng.IntN(120)))
	}
	ttl := func() ttlSpec {
		switch rng.IntN(6) {
		case 0:
			return ttlSpec{kind: 0}
		case 1:
			return ttlSpec{kind: 1, d: workloadDefaultTTL}
		case 2:
			return ttlSpec{kind: 2, d: time.Hour}
		case 3:
			return ttlSpec{kind: 3, at: epoch.Add(3*time.Hour + time.Duration(rng.IntN(1000))*time.Millisecond)}
		case 4:
			return ttlSpec{kind: 2, d: time.Duration(1+rng.IntN(5)) * time.Second} // expires during the run
		}
		return ttlSpec{kind: 0}
	}
	for i := range n {
		switch i {
		case n * 1 / 3:
			script = append(script, step{kind: stFlush})
			continue
		case n * 2 / 3:
			script = append(script, step{kind: stCompact})
			continue
		case n * 5 / 6:
			script = append(script, step{kind: stReopen})
			continue
		}
		x := rng.IntN(100)
		switch {
		case x < 30:
			k := newKey()
			script = append(script, step{kind: stWrite, sync: rng.IntN(2) == 0, muts: []plannedMut{{key: k, val: val(i, k), ttl: ttl()}}})
		case x < 43:
			k := hot()
			script = append(script, step{kind: stWrite, sync: rng.IntN(2) == 0, muts: []plannedMut{{key: k, val: val(i, k), ttl: ttl()}}})
		case x < 53:
			k := hot()
			if rng.IntN(3) == 0 && len(written) > 0 {
				k = written[rng.IntN(len(written))]
			}
			script = append(script, step{kind: stWrite, sync: rng.IntN(2) == 0, muts: []plannedMut{{key: k, del: true}}})
		case x < 70:
			var muts []plannedMut
			used := map[string]bool{}
			for range 2 + rng.IntN(4) {
				k := newKey()
				if rng.IntN(4) == 0 {
					k = hot()
				}
				if used[k] {
					continue
				}
				used[k] = true
				if rng.IntN(6) == 0 {
					muts = append(muts, plannedMut{key: k, del: true})
				} else {
					muts = append(muts, plannedMut{key: k, val: val(i, k), ttl: ttl()})
				}
			}
			script = append(script, step{kind: stWrite, sync: rng.IntN(5) < 3, muts: muts})
		case x < 85:
			k := hot()
			if len(written) > 0 && rng.IntN(2) == 0 {
				k = written[rng.IntN(len(written))]
			}
			script = append(script, step{kind: stGet, key: k})
		default:
			script = append(script, step{kind: stAdvance, d: time.Duration(200+rng.IntN(1500)) * time.Millisecond})
		}
	}
	return script
}

func scriptKeys(script []step) map[string]bool {
	u := map[string]bool{}
	for _, s := range script {
		for _, m := range s.muts {
			u[m.key] = true
		}
		if s.key != "" {
			u[s.key] = true
		}
	}
	return u
}

func workloadOptions(s storage.Storage, clk clock.Clock) *mayfly.Options {
	return &mayfly.Options{
		Storage:               s,
		Clock:                 clk,
		DefaultTTL:            workloadDefaultTTL,
		MemtableSize:          4 << 10,
		MaxImmutableMemtables: 2,
		BlockSize:             512,
		DisableBlockCache:     true, // every read reaches storage
		TargetFileSize:        8 << 10,
		L0CompactionThreshold: 2,
		L0StopWritesThreshold: 6,
		LBaseMaxBytes:         16 << 10,
	}
}

// --- one run ---

// run executes the workload once on a fresh Mem behind a faultfs.
type run struct {
	mem *storage.Mem
	fs  *faultfs.FS
	clk *clock.Manual

	mu         sync.Mutex
	ops        []*op
	durable    int            // ops[:durable] must survive a power loss
	live       map[string]row // state after every acked op
	failures   int            // calls that returned an error
	poisoned   error          // first error wrapping ErrBackground
	violations []string
	trace      []string // errors returned, for the report
	openSeq    int64    // storage operation count when the current DB was opened
	finalClose error
	opened     bool // the last Open succeeded
}

func newRun() *run {
	mem := storage.NewMem()
	return &run{mem: mem, fs: faultfs.New(mem), clk: clock.NewManual(epoch), live: map[string]row{}}
}

func (r *run) violate(format string, args ...any) {
	r.mu.Lock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// noteErr records a failed call and returns whether the database had
// already told us it refuses writes.
func (r *run) noteErr(what string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures++
	if len(r.trace) < 8 {
		r.trace = append(r.trace, fmt.Sprintf("%s: %v", what, err))
	}
	if r.poisoned == nil && errors.Is(err, mayfly.ErrBackground) {
		r.poisoned = err
	}
}

func (r *run) isPoisoned() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.poisoned
}

// closeFailed records that Close reported an error: unsynced writes it
// should have made durable may be lost (the WAL's background flusher may
// never have handed them to storage), so acked ops since the last durable
// point become uncertain.
func (r *run) closeFailed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.ops[r.durable:] {
		if o.Status == acked {
			o.Status = failed
		}
	}
}

// markDurable records that every op so far that was acked is durable.
func (r *run) markDurable() {
	r.mu.Lock()
	r.durable = len(r.ops)
	r.mu.Unlock()
}

// execute runs the script. It never calls t.Fatal: problems are recorded
// as violations.
func (r *run) execute(script []step) {
	db, err := mayfly.Open("", workloadOptions(r.fs, r.clk))
	if err != nil {
		r.noteErr("Open", err)
		return
	}
	r.opened = true
	defer func() {
		if db != nil {
			r.finalClose = db.Close()
			if r.finalClose == nil {
				r.markDurable()
			} else {
				r.noteErr("Close", r.finalClose)
				r.closeFailed()
			}
		}
	}()
	for i, s := range script {
		switch s.kind {
		case stAdvance:
			r.clk.Advance(s.d)
		case stWrite:
			r.write(db, i, s)
		case stGet:
			r.get(db, s.key)
		case stFlush, stCompact:
			name := "Flush"
			if s.kind == stFlush {
				err = db.Flush()
			} else {
				name = "Compact"
				err = db.Compact(context.Background(), nil, nil)
			}
			if err != nil {
				r.noteErr(name, err)
			} else {
				if p := r.isPoisoned(); p != nil {
					r.violate("%s returned nil after the database reported %v", name, p)
				}
				r.markDurable()
			}
		case stReopen:
			err := db.Close()
			db = nil
			if err != nil {
				r.noteErr("Close (mid-run)", err)
				r.closeFailed()
			} else {
				r.markDurable()
			}
			r.mu.Lock()
			r.poisoned = nil // a reopened database starts afresh
			r.mu.Unlock()
			r.opened = false
			r.mu.Lock()
			r.openSeq = r.fs.Ops()
			r.mu.Unlock()
			db, err = mayfly.Open("", workloadOptions(r.fs, r.clk))
			if err != nil {
				r.noteErr("Open (mid-run)", err)
				return
			}
			r.opened = true
		}
	}
}

// walFailure returns the injected fault, if any, that broke the current WAL
// of this DB before storage operation seq: a failed log Sync, or (for a
// synced write) a failed write to a segment past its header. After one, the
// database must refuse such writes: a failed fsync leaves the log's state
// unknown. (The WAL's background flusher may fail while an unsynced write
// is being queued; that write cannot know, so it is not held to this. Nor
// is it held to a failed sync of a segment a rotation sealed: that sync
// runs in the background while later writes go to the next segment, and
// the database reports its failure once it ends; a synced write waits for
// it and fails.)
func (r *run) walFailure(seq int64, synced bool) *faultfs.Injection {
	r.mu.Lock()
	from := r.openSeq
	r.mu.Unlock()
	for _, inj := range r.fs.Injected() {
		if inj.Seq <= from || inj.Seq >= seq || !strings.HasPrefix(inj.Name, "wal/") {
			continue
		}
		if inj.Op == faultfs.OpSync && !synced && r.sealedBefore(inj.Name) {
			continue
		}
		if inj.Op == faultfs.OpSync || (synced && inj.Op == faultfs.OpLogWrite && inj.NameSeq > 1) {
			return &inj
		}
	}
	return nil
}

// sealedBefore reports whether a WAL segment newer than name holds bytes:
// a rotation sealed name before it wrote the newer segment's header (an
// empty newer segment is only created ahead of need). It reads the backend
// under the fault injector, so it counts as no operation.
func (r *run) sealedBefore(name string) bool {
	inner := r.fs.Inner()
	names, err := inner.List("wal")
	if err != nil {
		return false
	}
	for _, n := range names {
		if n <= name || !strings.HasSuffix(n, ".wal") {
			continue
		}
		if rd, err := inner.Open(n); err == nil {
			size := rd.Size()
			rd.Close()
			if size > 0 {
				return true
			}
		}
	}
	return false
}

func (r *run) write(db *mayfly.DB, i int, s step) {
	now := r.clk.NowMillis()
	startSeq := r.fs.Ops()
	o := &op{ID: i, Sync: s.sync}
	for _, pm := range s.muts {
		m := mut{Key: pm.key, Del: pm.del, Val: pm.val}
		if !pm.del {
			m.Expires, m.ExpLo = pm.ttl.deadline(now)
			m.ExpHi = m.ExpLo
		}
		o.Muts = append(o.Muts, m)
	}
	wo := mayfly.NoSync
	if s.sync {
		wo = mayfly.Sync
	}
	var err error
	switch {
	case len(s.muts) > 1:
		o.Kind = "batch"
		b := db.NewBatch()
		for _, pm := range s.muts {
			if pm.del {
				err = b.Delete([]byte(pm.key))
			} else {
				err = b.PutTTL([]byte(pm.key), []byte(pm.val), pm.ttl.ttl())
			}
			if err != nil {
				r.violate("building batch %d: %v", i, err)
				return
			}
		}
		r.begin(o)
		err = b.Write(wo)
	case s.muts[0].del:
		o.Kind = "delete"
		r.begin(o)
		err = db.DeleteWith([]byte(s.muts[0].key), wo)
	default:
		o.Kind = "put"
		r.begin(o)
		pm := s.muts[0]
		err = db.PutWith([]byte(pm.key), []byte(pm.val), pm.ttl.ttl(), wo)
	}
	poisoned := r.isPoisoned()
	r.mu.Lock()
	o.Status, o.Err = statusOf(err), err
	if o.Status == refused && poisoned == nil && errors.Is(err, mayfly.ErrBackground) {
		// The first call to report ErrBackground may be the write whose
		// WAL append or sync failed: it may or may not have been logged.
		o.Status = failed
	}
	if failedBeforeWAL(err) {
		o.Status = refused
	}
	if err == nil {
		for _, m := range o.Muts {
			r.live[m.Key] = m.row()
		}
		if s.sync {
			r.durable = len(r.ops)
		}
	}
	r.mu.Unlock()
	if err != nil {
		r.noteErr(fmt.Sprintf("write %d", i), err)
	} else if poisoned != nil {
		r.violate("write %d (%s) acknowledged after the database reported %v", i, o.Kind, poisoned)
	} else if inj := r.walFailure(startSeq, s.sync); inj != nil {
		r.violate("write %d (%s) acknowledged after the WAL failed (%v)", i, o.Kind, *inj)
	}
}

// failedBeforeWAL reports whether a write failed because starting a new WAL
// segment failed (creating it, or writing its header): the engine rotates
// before it appends the batch, so the batch cannot have been logged. The
// checker then holds the write to "not applied" — were it applied after
// all, that is worth a report too.
func failedBeforeWAL(err error) bool {
	var fe *faultfs.FaultError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Name, "wal/") {
		return false
	}
	return fe.Op == faultfs.OpCreateLog || (fe.Op == faultfs.OpLogWrite && fe.NameSeq == 1)
}

func (r *run) begin(o *op) {
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
}

func (r *run) get(db *mayfly.DB, key string) {
	v, err := db.Get([]byte(key))
	r.mu.Lock()
	clean := r.failures == 0
	want := r.live[key]
	r.mu.Unlock()
	injected := len(r.fs.Injected()) > 0
	switch {
	case errors.Is(err, mayfly.ErrNotFound):
	case err != nil:
		if !injected {
			r.violate("Get(%q) failed with no fault injected: %v", key, err)
		}
		return
	}
	if !clean || injected {
		// After a failure the live state may hold an uncertain write; the
		// recovered state is checked instead.
		return
	}
	o := obs{Found: err == nil, Val: string(v)}
	if o.Found && want.Present {
		o.Expires, o.Deadline = want.Expires, want.ExpLo // the value is what is checked here
	}
	if !want.matches(o, r.clk.NowMillis()) {
		r.violate("Get(%q) during the run = %s, want %s", key, o, want)
	}
}

// runWithTimeout executes the script, failing if it takes longer than
// runTimeout.
func (r *run) runWithTimeout(script []step) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				r.violate("PANIC during the workload: %v", p)
			}
		}()
		r.execute(script)
	}()
	select {
	case <-done:
		return true
	case <-time.After(runTimeout):
		var b strings.Builder
		pprof.Lookup("goroutine").WriteTo(&b, 1)
		r.violate("HANG: the workload did not finish in %v; goroutines:\n%s", runTimeout, b.String())
		return false
	}
}

// verify opens s (a crash clone or the run's own Mem after a clean Close)
// and checks the recovered state: the database opens, Check passes, and the
// state is a prefix of the writes holding ops[:lo].
func verify(s storage.Storage, label string, ops []*op, lo, hi int, universe map[string]bool, at int64, then func(*mayfly.DB) []string) []string {
	var probs []string
	fail := func(format string, args ...any) []string {
		return append(probs, label+": "+fmt.Sprintf(format, args...))
	}
	db, err := mayfly.Open("", workloadOptions(s, clock.NewManual(time.UnixMilli(at))))
	if err != nil {
		return fail("reopen failed: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	if err := db.Check(ctx); err != nil {
		probs = fail("Check: %v", err)
	}
	observed, now, p, err := observe(db, universe)
	if err != nil {
		return fail("reading the recovered database: %v", err)
	}
	for _, x := range p {
		probs = fail("%s", x)
	}
	if v := checkState(nil, ops, lo, hi, observed, now); !v.OK {
		probs = fail("%s", joinProblems(v.Problems))
	}
	if then != nil {
		for _, x := range then(db) {
			probs = fail("%s", x)
		}
	}
	return probs
}

// writeAfterRecovery checks that a recovered database takes writes.
func writeAfterRecovery(db *mayfly.DB) []string {
	var probs []string
	if err := db.PutWith([]byte("after-recovery"), []byte("ok"), mayfly.NoExpiry(), mayfly.Sync); err != nil {
		probs = append(probs, fmt.Sprintf("write after recovery: %v", err))
	}
	if err := db.Flush(); err != nil {
		probs = append(probs, fmt.Sprintf("flush after recovery: %v", err))
	}
	if v, err := db.Get([]byte("after-recovery")); err != nil || string(v) != "ok" {
		probs = append(probs, fmt.Sprintf("read after recovery: %q, %v", v, err))
	}
	return probs
}

// checkAfterRun verifies a finished run twice: after a power loss at the
// end (CrashClone), then after a clean reopen of the same storage.
func (r *run) checkAfterRun(universe map[string]bool, writeAfter bool) []string {
	r.fs.Clear()
	r.mu.Lock()
	ops := r.ops
	durable := r.durable
	lastAcked := 0
	for i, o := range ops {
		if o.Status == acked {
			lastAcked = i + 1
		}
	}
	probs := append([]string(nil), r.violations...)
	r.mu.Unlock()
	at := r.clk.NowMillis()

	probs = append(probs, verify(r.mem.CrashClone(), "after power loss", ops, durable, len(ops), universe, at, nil)...)
	// Without a power loss every acknowledged write must be there: Close
	// flushed and synced them, or failed (and closeFailed made them
	// uncertain); Mem keeps unsynced bytes, as the page cache does.
	var then func(*mayfly.DB) []string
	if writeAfter {
		then = writeAfterRecovery
	}
	probs = append(probs, verify(r.mem, "after clean reopen", ops, lastAcked, len(ops), universe, at, then)...)
	return probs
}

// --- the fault sweeps ---

// baseline runs the workload without faults and returns its op counts.
func baseline(t *testing.T, script []step) (total int64, counts map[faultfs.Op]int64, perRun time.Duration) {
	t.Helper()
	start := time.Now()
	r := newRun()
	if !r.runWithTimeout(script) {
		t.Fatal(joinProblems(r.violations))
	}
	total = r.fs.Ops()
	counts = map[faultfs.Op]int64{}
	for op := faultfs.OpCreate; op <= faultfs.OpClose; op++ {
		if c := r.fs.Count(op); c > 0 {
			counts[op] = c
		}
	}
	if r.failures != 0 {
		t.Fatalf("fault-free run had %d failures: %v", r.failures, r.trace)
	}
	if probs := r.checkAfterRun(scriptKeys(script), false); len(probs) > 0 {
		t.Fatalf("fault-free run:\n%s", joinProblems(probs))
	}
	return total, counts, time.Since(start)
}

type sweepCase struct {
	rule faultfs.Rule
}

type sweepResult struct {
	rule       faultfs.Rule
	injected   []faultfs.Injection
	failures   int
	ackedAfter int // writes acked after the fault (retryable errors)
	trace      []string
	probs      []string
}

// sweep runs one workload per case, two at a time, and reports failures.
func sweep(t *testing.T, script []step, cases []sweepCase, perRun, budget time.Duration) {
	workers := max(runtime.GOMAXPROCS(0), 1)
	stride := *faultStride
	if stride <= 0 {
		stride = 1
		if testing.Short() || raceEnabled {
			if est := perRun * time.Duration(len(cases)) / time.Duration(workers); est > budget {
				stride = int(est/budget) + 1
			}
		}
	}
	var picked []sweepCase
	for i := 0; i < len(cases); i += stride {
		picked = append(picked, cases[i])
	}
	universe := scriptKeys(script)
	results := make([]sweepResult, len(picked))
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(picked) {
					return
				}
				results[i] = runCase(script, picked[i].rule, universe)
			}
		})
	}
	wg.Wait()
	fired, failedRuns, failures := 0, 0, 0
	bySig := map[string][]int{}
	for i, res := range results {
		if len(res.injected) > 0 {
			fired++
		}
		if res.failures > 0 {
			failures++
		}
		if len(res.probs) > 0 {
			failedRuns++
			bySig[signature(res)] = append(bySig[signature(res)], i)
		}
	}
	t.Logf("%d fault runs (stride %d of %d cases) in %v: %d injected a fault, %d saw an error, %d violated an invariant",
		len(picked), stride, len(cases), time.Since(start).Round(time.Millisecond), fired, failures, failedRuns)
	sigs := make([]string, 0, len(bySig))
	for s := range bySig {
		sigs = append(sigs, s)
	}
	sort.Slice(sigs, func(a, b int) bool { return len(bySig[sigs[a]]) > len(bySig[sigs[b]]) })
	for _, s := range sigs {
		idx := bySig[s]
		res := results[idx[0]]
		var rules []string
		for _, i := range idx[:min(len(idx), 10)] {
			rules = append(rules, results[i].rule.String())
		}
		t.Errorf("%d runs fail with %q (e.g. %s)\nfirst: rule %s, injected %v\nerrors seen: %s\n%s",
			len(idx), s, strings.Join(rules, "; "), res.rule, res.injected, strings.Join(res.trace, " | "), joinProblems(res.probs))
	}
}

// signature groups failures that are the same bug.
func signature(res sweepResult) string {
	op := "none"
	if len(res.injected) > 0 {
		inj := res.injected[0]
		name := inj.Name
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[:i+1]
		}
		op = fmt.Sprintf("%s %s %s", inj.Op, name, inj.Rule.Kind)
	}
	p := res.probs[0]
	if i := strings.IndexByte(p, '\n'); i >= 0 {
		p = p[:i]
	}
	// Strip numbers so that one bug hit at many indexes groups together.
	var b strings.Builder
	for _, c := range p {
		if c < '0' || c > '9' {
			b.WriteRune(c)
		}
	}
	s := b.String()
	if len(s) > 140 {
		s = s[:140]
	}
	return op + ": " + s
}

func runCase(script []step, rule faultfs.Rule, universe map[string]bool) sweepResult {
	r := newRun()
	r.fs.Inject(rule)
	res := sweepResult{rule: rule}
	if !r.runWithTimeout(script) {
		res.probs = r.violations
		return res
	}
	res.injected = r.fs.Injected()
	res.probs = r.checkAfterRun(universe, true)
	r.mu.Lock()
	res.failures, res.trace = r.failures, r.trace
	r.mu.Unlock()
	return res
}

// TestFaultEveryOp injects one fault (the operation fails without being
// performed) at each storage operation of the workload in turn.
func TestFaultEveryOp(t *testing.T) {
	t.Parallel()
	script := makeScript(*faultSeed)
	total, counts, perRun := baseline(t, script)
	t.Logf("workload: %d steps, %d storage operations %v, fault-free run %v", len(script), total, counts, perRun.Round(time.Millisecond))
	var cases []sweepCase
	// A few more than the baseline counted: background work varies.
	for n := 1; n <= int(total)+10; n++ {
		cases = append(cases, sweepCase{faultfs.Rule{Op: faultfs.OpAny, N: n, Kind: faultfs.Error}})
	}
	sweep(t, script, cases, perRun, *faultBudget)
}

// TestFaultAmbiguous targets each operation that changes storage with the
// faults whose outcome the engine cannot know: the operation took effect
// but reported an error (a rename that landed before its directory fsync
// failed; a log fsync that reported failure), and short writes.
func TestFaultAmbiguous(t *testing.T) {
	t.Parallel()
	script := makeScript(*faultSeed)
	_, counts, perRun := baseline(t, script)
	var cases []sweepCase
	for _, op := range []faultfs.Op{faultfs.OpPutIfAbsent, faultfs.OpCommit, faultfs.OpCreateLog,
		faultfs.OpSync, faultfs.OpRemove, faultfs.OpCreate, faultfs.OpLogWrite, faultfs.OpWrite} {
		for n := 1; n <= int(counts[op])+2; n++ {
			switch op {
			case faultfs.OpWrite:
				// For an object, a short write is all that differs from Error.
				cases = append(cases, sweepCase{faultfs.Rule{Op: op, N: n, Kind: faultfs.ShortWrite}})
			case faultfs.OpLogWrite:
				cases = append(cases, sweepCase{faultfs.Rule{Op: op, N: n, Kind: faultfs.ShortWrite}},
					sweepCase{faultfs.Rule{Op: op, N: n, Kind: faultfs.ErrorAfter}})
			default:
				cases = append(cases, sweepCase{faultfs.Rule{Op: op, N: n, Kind: faultfs.ErrorAfter}})
			}
		}
	}
	sweep(t, script, cases, perRun, *faultBudget)
}

// TestFaultPersistent makes storage fail for good from the n-th mutating
// operation on (a disk that went read-only), for each n.
func TestFaultPersistent(t *testing.T) {
	t.Parallel()
	script := makeScript(*faultSeed)
	_, counts, perRun := baseline(t, script)
	var cases []sweepCase
	for _, op := range []faultfs.Op{faultfs.OpSync, faultfs.OpPutIfAbsent, faultfs.OpCreateLog, faultfs.OpCommit} {
		for n := 1; n <= int(counts[op]); n++ {
			cases = append(cases, sweepCase{faultfs.Rule{Op: op, N: n, Count: -1, Kind: faultfs.Error}})
		}
	}
	sweep(t, script, cases, perRun, *faultBudget/3)
}

// --- power loss at every durability point ---

type crashPoint struct {
	desc    string
	clone   *storage.Mem
	lo, hi  int
	elapsed int64
}

// TestCrashAtEveryDurabilityPoint runs the workload once and, just before
// and just after every operation that makes something durable or removes
// it (log Sync, object Commit, PutIfAbsent, CreateLog, Remove), takes the
// state a power loss would leave. Each is then recovered and checked
// against what had been acknowledged at that moment.
func TestCrashAtEveryDurabilityPoint(t *testing.T) {
	t.Parallel()
	script := makeScript(*faultSeed)
	r := newRun()
	var (
		pmu    sync.Mutex
		points []crashPoint
	)
	r.fs.SetHook(func(e faultfs.Event) {
		switch e.Op {
		case faultfs.OpSync, faultfs.OpCommit, faultfs.OpPutIfAbsent, faultfs.OpCreateLog, faultfs.OpRemove:
		default:
			return
		}
		r.mu.Lock()
		lo := r.durable
		r.mu.Unlock()
		c := r.mem.CrashClone()
		r.mu.Lock()
		hi := len(r.ops)
		r.mu.Unlock()
		pmu.Lock()
		points = append(points, crashPoint{desc: fmt.Sprintf("%s %s %s (op %d)", e.Phase, e.Op, e.Name, e.Seq), clone: c, lo: lo, hi: hi})
		pmu.Unlock()
	})
	start := time.Now()
	if !r.runWithTimeout(script) {
		t.Fatal(joinProblems(r.violations))
	}
	r.fs.SetHook(nil)
	if len(r.violations) > 0 || r.failures > 0 {
		t.Fatalf("workload: %v %v", r.violations, r.trace)
	}
	universe := scriptKeys(script)
	at := r.clk.NowMillis()
	stride := *faultStride
	if stride <= 0 {
		stride = 1
		if testing.Short() || raceEnabled {
			// Estimate the cost of one recovery from the first few.
			t0 := time.Now()
			n := min(len(points), 4)
			for _, p := range points[:n] {
				verify(p.clone.CrashClone(), "probe", r.ops, p.lo, p.hi, universe, at, nil)
			}
			per := time.Since(t0) / time.Duration(max(n, 1))
			if est := per * time.Duration(len(points)) / time.Duration(max(runtime.GOMAXPROCS(0), 1)); est > *faultBudget {
				stride = int(est/(*faultBudget)) + 1
			}
			// The estimate is taken on a quiet moment; parallel tests
			// share the machine. Check at most about 120 points.
			stride = max(stride, (len(points)+119)/120)
		}
	}
	var (
		wg     sync.WaitGroup
		next   atomic.Int64
		failMu sync.Mutex
		failed []string
	)
	var picked []crashPoint
	for i := 0; i < len(points); i += stride {
		picked = append(picked, points[i])
	}
	for range max(runtime.GOMAXPROCS(0), 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(picked) {
					return
				}
				p := picked[i]
				if probs := verify(p.clone, "crash "+p.desc, r.ops, p.lo, p.hi, universe, at, nil); len(probs) > 0 {
					failMu.Lock()
					failed = append(failed, joinProblems(probs))
					failMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d crash points (stride %d of %d) recovered and checked in %v; %d failed", len(picked), stride, len(points), time.Since(start).Round(time.Millisecond), len(failed))
	for _, f := range failed[:min(len(failed), 5)] {
		t.Error(f)
	}
	if probs := r.checkAfterRun(universe, true); len(probs) > 0 {
		t.Error(joinProblems(probs))
	}
}
