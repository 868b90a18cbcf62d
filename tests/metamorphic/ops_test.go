package metamorphic

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/mayflydb/mayfly"
)

// numKeys is the size of the key space. It is small so that overwrites,
// deletes and expiries of the same key collide often.
const numKeys = 200

// numTTLKeys keys live in a separate namespace ("ttl/...") that is only
// ever written by burst ops, always with a deadline, so that tables holding
// nothing but TTL rows (candidates for whole-file drops) appear.
const numTTLKeys = 40

// hotKeys is the number of keys that receive half of all key choices.
const hotKeys = 20

// numSlots bounds how many iterators and how many snapshots are open at once.
const numSlots = 3

// keyName returns key i of the key space. Keys 150..199 extend keys of the
// first group by a suffix, so the space has keys that are prefixes of others
// (exercising prefix compression and seek positioning).
func keyName(i int) string {
	if i < 150 {
		return fmt.Sprintf("key/%05d", i*7)
	}
	return fmt.Sprintf("key/%05d/x%d", (i-150)*21, i%3)
}

func ttlKeyName(i int) string { return fmt.Sprintf("ttl/%03d", i) }

// allKeys returns every key a run can write, in no particular order.
func allKeys() []string {
	keys := make([]string, 0, numKeys+numTTLKeys)
	for i := range numKeys {
		keys = append(keys, keyName(i))
	}
	for i := range numTTLKeys {
		keys = append(keys, ttlKeyName(i))
	}
	for i := range numCtrKeys {
		keys = append(keys, ctrKeyName(i))
	}
	return keys
}

type opKind uint8

const (
	opPut opKind = iota
	opDelete
	opBatch
	opBurst
	opGet
	opTTL
	opScan
	opIterOpen
	opIterMove
	opIterClose
	opSnapOpen
	opSnapGet
	opSnapTTL
	opSnapScan
	opSnapIterOpen
	opSnapClose
	opFlush
	opCompact
	opReclaim
	opWait
	opReopen
	opCrash
	opAdvance
	opAdvanceToExpiry
	opCheck
	// Conditional writes (cond_test.go).
	opPutIfAbsent
	opPutIfPresent
	opCompareAndSwap
	opCompareAndDelete
	opGetDel
	opCondBatch
	// TTL operations (ttlops_test.go).
	opExpire
	opPersist
	opGetEx
	opTouch
	// Counters (merge_test.go).
	opMerge
	opAdd
)

var opNames = [...]string{"Put", "Delete", "Batch", "Burst", "Get", "TTL", "Scan", "IterOpen", "IterMove",
	"IterClose", "SnapOpen", "SnapGet", "SnapTTL", "SnapScan", "SnapIterOpen", "SnapClose", "Flush",
	"Compact", "ReclaimExpired", "WaitForCompactions", "Reopen", "Crash", "Advance", "AdvanceToExpiry", "Check",
	"PutIfAbsent", "PutIfPresent", "CompareAndSwap", "CompareAndDelete", "GetDel", "CondBatch",
	"Expire", "Persist", "GetEx", "Touch", "Merge", "Add"}

func (k opKind) String() string { return opNames[k] }

// ttlKind is how a write's TTL is expressed. Deadlines given with ExpireAt
// are relative to the clock when the op runs, so that the same op sequence
// means the same thing under every configuration.
type ttlKind uint8

const (
	ttlDefault     ttlKind = iota // mayfly.DefaultTTL(); Options.DefaultTTL is 0
	ttlNone                       // mayfly.NoExpiry()
	ttlAfter                      // mayfly.ExpireAfter(d)
	ttlAtRel                      // mayfly.ExpireAt(now + d), d may be negative
	ttlAtEpoch                    // mayfly.ExpireAt(Unix epoch): valid, long expired
	ttlAtMax                      // mayfly.ExpireAt(MaxDeadline): valid, saturates TTL()
	ttlBadAfter                   // mayfly.ExpireAfter(d) with d < 1ms
	ttlBadZero                    // mayfly.ExpireAt(time.Time{})
	ttlBadPreEpoch                // mayfly.ExpireAt(before the epoch)
	ttlBadPastMax                 // mayfly.ExpireAt(MaxDeadline + d)
)

type ttlSpec struct {
	kind ttlKind
	d    time.Duration
}

func (s ttlSpec) valid() bool { return s.kind < ttlBadAfter }

// build returns the mayfly TTL for s at clock time now.
func (s ttlSpec) build(now time.Time) mayfly.TTL {
	switch s.kind {
	case ttlNone:
		return mayfly.NoExpiry()
	case ttlAfter, ttlBadAfter:
		return mayfly.ExpireAfter(s.d)
	case ttlAtRel:
		return mayfly.ExpireAt(now.Add(s.d))
	case ttlAtEpoch:
		return mayfly.ExpireAt(time.UnixMilli(0))
	case ttlAtMax:
		return mayfly.ExpireAt(mayfly.MaxDeadline)
	case ttlBadZero:
		return mayfly.ExpireAt(time.Time{})
	case ttlBadPreEpoch:
		return mayfly.ExpireAt(time.UnixMilli(0).Add(-s.d))
	case ttlBadPastMax:
		return mayfly.ExpireAt(mayfly.MaxDeadline.Add(s.d))
	}
	return mayfly.DefaultTTL()
}

// deadline returns the model's view of s written at commit time nowMs:
// whether the row expires and its deadline in Unix ms. Only for valid s.
func (s ttlSpec) deadline(nowMs int64) (bool, int64) {
	switch s.kind {
	case ttlAfter:
		ms := int64(s.d / time.Millisecond)
		if s.d%time.Millisecond != 0 {
			ms++ // rounded up: a row never lives shorter than asked
		}
		return true, nowMs + ms
	case ttlAtRel:
		return true, time.UnixMilli(nowMs).Add(s.d).UnixMilli() // truncated
	case ttlAtEpoch:
		return true, 0
	case ttlAtMax:
		return true, mayfly.MaxDeadline.UnixMilli()
	}
	return false, 0
}

func (s ttlSpec) String() string {
	switch s.kind {
	case ttlDefault:
		return "Default"
	case ttlNone:
		return "NoExpiry"
	case ttlAfter:
		return fmt.Sprintf("After(%v)", s.d)
	case ttlAtRel:
		return fmt.Sprintf("At(now%+v)", s.d)
	case ttlAtEpoch:
		return "At(epoch)"
	case ttlAtMax:
		return "At(MaxDeadline)"
	case ttlBadAfter:
		return fmt.Sprintf("BAD After(%v)", s.d)
	case ttlBadZero:
		return "BAD At(zero)"
	case ttlBadPreEpoch:
		return fmt.Sprintf("BAD At(epoch-%v)", s.d)
	case ttlBadPastMax:
		return fmt.Sprintf("BAD At(Max+%v)", s.d)
	}
	return "?"
}

type moveKind uint8

const (
	moveFirst moveKind = iota
	moveLast
	moveSeekGE
	moveSeekLT
	moveNext
	movePrev
)

type move struct {
	kind moveKind
	key  string
}

func (m move) String() string {
	switch m.kind {
	case moveFirst:
		return "First"
	case moveLast:
		return "Last"
	case moveSeekGE:
		return fmt.Sprintf("SeekGE(%q)", m.key)
	case moveSeekLT:
		return fmt.Sprintf("SeekLT(%q)", m.key)
	case moveNext:
		return "Next"
	}
	return "Prev"
}

// bound is an optional key bound (nil when !set).
type bound struct {
	set bool
	key string
}

func (b bound) bytes() []byte {
	if !b.set {
		return nil
	}
	return []byte(b.key)
}

func (b bound) String() string {
	if !b.set {
		return "nil"
	}
	return strconv.Quote(b.key)
}

type batchEntry struct {
	del   bool
	key   string // "" is an invalid (empty) key
	value string
	ttl   ttlSpec
}

func (e batchEntry) valid() bool { return e.key != "" && (e.del || e.ttl.valid()) }

func (e batchEntry) String() string {
	if e.del {
		return fmt.Sprintf("Del(%q)", e.key)
	}
	return fmt.Sprintf("Put(%q,%s,%s)", e.key, shortVal(e.value), e.ttl)
}

// op is one generated operation. Which fields matter depends on kind.
type op struct {
	kind    opKind
	key     string
	value   string
	ttl     ttlSpec
	sync    bool
	entries []batchEntry
	conds   []condEntry // conditional kinds
	slot    int         // iterator or snapshot slot
	snap    int         // snapshot slot an iterator is opened on
	lower   bound
	hi      bound
	reverse bool
	moves   []move
	d       time.Duration
	extra   int64 // opAdvanceToExpiry: ms past the deadline
}

func shortVal(v string) string {
	if len(v) > 24 {
		return fmt.Sprintf("%q..(%dB)", v[:16], len(v))
	}
	return strconv.Quote(v)
}

func (o op) String() string {
	s := ""
	if o.sync {
		s = " sync"
	}
	switch o.kind {
	case opPut:
		return fmt.Sprintf("Put(%q, %s, %s)%s", o.key, shortVal(o.value), o.ttl, s)
	case opDelete:
		return fmt.Sprintf("Delete(%q)%s", o.key, s)
	case opBatch:
		parts := make([]string, len(o.entries))
		for i, e := range o.entries {
			parts[i] = e.String()
		}
		return fmt.Sprintf("Batch[%s]%s", strings.Join(parts, " "), s)
	case opBurst:
		parts := make([]string, len(o.entries))
		for i, e := range o.entries {
			parts[i] = fmt.Sprintf("%s:%s", e.key[4:], e.ttl)
		}
		return fmt.Sprintf("Burst[%s]%s", strings.Join(parts, " "), s)
	case opGet:
		return fmt.Sprintf("Get(%q)", o.key)
	case opTTL:
		return fmt.Sprintf("TTL(%q)", o.key)
	case opScan:
		return fmt.Sprintf("Scan[%s, %s) reverse=%v", o.lower, o.hi, o.reverse)
	case opIterOpen:
		return fmt.Sprintf("iter%d = NewIter[%s, %s)", o.slot, o.lower, o.hi)
	case opIterMove:
		parts := make([]string, len(o.moves))
		for i, m := range o.moves {
			parts[i] = m.String()
		}
		return fmt.Sprintf("iter%d.%s", o.slot, strings.Join(parts, "."))
	case opIterClose:
		return fmt.Sprintf("iter%d.Close", o.slot)
	case opSnapOpen:
		return fmt.Sprintf("snap%d = NewSnapshot", o.slot)
	case opSnapGet:
		return fmt.Sprintf("snap%d.Get(%q)", o.slot, o.key)
	case opSnapTTL:
		return fmt.Sprintf("snap%d.TTL(%q)", o.slot, o.key)
	case opSnapScan:
		return fmt.Sprintf("snap%d.Scan[%s, %s) reverse=%v", o.slot, o.lower, o.hi, o.reverse)
	case opSnapIterOpen:
		return fmt.Sprintf("iter%d = snap%d.NewIter[%s, %s)", o.slot, o.snap, o.lower, o.hi)
	case opSnapClose:
		return fmt.Sprintf("snap%d.Close", o.slot)
	case opFlush:
		return "Flush"
	case opCompact:
		return fmt.Sprintf("Compact[%s, %s]", o.lower, o.hi)
	case opReclaim:
		return "ReclaimExpired"
	case opWait:
		return "WaitForCompactions"
	case opReopen:
		return "Reopen"
	case opCrash:
		return "Crash"
	case opAdvance:
		return fmt.Sprintf("Advance(%v)", o.d)
	case opAdvanceToExpiry:
		return fmt.Sprintf("AdvanceToExpiry(%q, +%dms)", o.key, o.extra)
	case opCheck:
		return "Check"
	case opPutIfAbsent, opPutIfPresent, opCompareAndSwap, opCompareAndDelete, opGetDel, opCondBatch:
		return o.condString()
	case opExpire, opPersist, opGetEx, opTouch:
		return o.ttlOpString()
	case opMerge, opAdd:
		return o.mergeString()
	}
	return "?"
}

// generator produces a deterministic op sequence from a seed. The sequence
// for n ops is a prefix of the sequence for more ops, so a failure at op i
// reproduces with -ops=i+1.
type generator struct {
	rng      *rand.Rand
	n        int // ops generated so far
	iterOpen [numSlots]bool
	snapOpen [numSlots]bool
}

func newGenerator(seed uint64) *generator {
	return &generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// generate returns n ops.
func generate(seed uint64, n int) []op {
	g := newGenerator(seed)
	ops := make([]op, 0, n)
	for len(ops) < n {
		ops = append(ops, g.next())
	}
	return ops
}

type weighted struct {
	w    int
	kind opKind
}

var opWeights = []weighted{
	{150, opPut},
	{50, opDelete},
	{45, opBatch},
	{8, opBurst},
	{110, opGet},
	{45, opTTL},
	{30, opScan},
	{18, opIterOpen},
	{90, opIterMove},
	{12, opIterClose},
	{8, opSnapOpen},
	{35, opSnapGet},
	{10, opSnapTTL},
	{15, opSnapScan},
	{6, opSnapIterOpen},
	{7, opSnapClose},
	{12, opFlush},
	{6, opCompact},
	{6, opReclaim},
	{6, opWait},
	{3, opReopen},
	{3, opCrash},
	{60, opAdvance},
	{15, opAdvanceToExpiry},
	{2, opCheck},
	{25, opPutIfAbsent},
	{12, opPutIfPresent},
	{20, opCompareAndSwap},
	{10, opCompareAndDelete},
	{20, opGetDel},
	{15, opCondBatch},
	{25, opExpire},
	{8, opPersist},
	{25, opGetEx},
	{15, opTouch},
	{30, opMerge},
	{20, opAdd},
}

var totalWeight = func() int {
	t := 0
	for _, w := range opWeights {
		t += w.w
	}
	return t
}()

func (g *generator) intn(n int) int { return g.rng.IntN(n) }

func (g *generator) chance(p float64) bool { return g.rng.Float64() < p }

func (g *generator) pickKind() opKind {
	r := g.intn(totalWeight)
	for _, w := range opWeights {
		if r < w.w {
			return w.kind
		}
		r -= w.w
	}
	panic("unreachable")
}

// readKey returns a key to read: usually one writes also pick, sometimes
// one of the TTL-only namespace.
func (g *generator) readKey() string {
	if g.chance(0.15) {
		return ttlKeyName(g.intn(numTTLKeys))
	}
	if g.chance(0.1) {
		return ctrKeyName(g.intn(numCtrKeys))
	}
	return g.key()
}

func (g *generator) key() string {
	if g.chance(0.5) {
		return keyName(g.intn(hotKeys) * (numKeys / hotKeys))
	}
	return keyName(g.intn(numKeys))
}

// seekKey returns a key to seek to or bound at: mostly keys of the space,
// sometimes keys between them or beyond both ends.
func (g *generator) seekKey() string {
	switch r := g.intn(20); {
	case r == 0:
		return "a" // before every key
	case r == 1:
		return "z" // after every key
	case r == 2:
		return "key/" // a prefix of every key
	case r < 5:
		k := g.key()
		return k[:len(k)-1] // a prefix, sorting just before k
	case r < 7:
		return g.readKey() + "\x00" // the immediate successor of k
	}
	return g.readKey()
}

func (g *generator) bound() bound {
	if g.chance(0.3) {
		return bound{}
	}
	return bound{set: true, key: g.seekKey()}
}

// bounds returns a lower and upper bound, usually ordered.
func (g *generator) bounds() (bound, bound) {
	lo, hi := g.bound(), g.bound()
	if lo.set && hi.set && lo.key > hi.key && !g.chance(0.05) {
		lo, hi = hi, lo
	}
	return lo, hi
}

func (g *generator) value() string {
	var n int
	switch r := g.intn(100); {
	case r < 3:
		n = 0
	case r < 8:
		n = 200 + g.intn(1800)
	default:
		n = g.intn(100)
	}
	prefix := fmt.Sprintf("v%d.", g.n)
	if n <= len(prefix) {
		return prefix[:n]
	}
	b := make([]byte, n)
	copy(b, prefix)
	for i := len(prefix); i < n; i++ {
		b[i] = byte('a' + g.intn(26))
	}
	return string(b)
}

// subMs returns a random sub-millisecond duration, sometimes zero, to test
// rounding.
func (g *generator) subMs() time.Duration {
	if g.chance(0.6) {
		return 0
	}
	return time.Duration(1 + g.intn(int(time.Millisecond)-1))
}

func (g *generator) ttl() ttlSpec {
	switch r := g.intn(100); {
	case r < 22:
		return ttlSpec{kind: ttlDefault}
	case r < 35:
		return ttlSpec{kind: ttlNone}
	case r < 70:
		var d time.Duration
		switch g.intn(4) {
		case 0:
			d = time.Duration(1+g.intn(5)) * time.Millisecond // right at the boundary
		default:
			d = time.Duration(1+g.intn(5000)) * time.Millisecond
		}
		if d > time.Millisecond || g.chance(0.5) {
			d += g.subMs()
		}
		return ttlSpec{kind: ttlAfter, d: d}
	case r < 78: // deadline in the past
		return ttlSpec{kind: ttlAtRel, d: -time.Duration(g.intn(10000))*time.Millisecond - g.subMs()}
	case r < 81: // deadline within a couple of ms of now
		return ttlSpec{kind: ttlAtRel, d: time.Duration(g.intn(5)-2)*time.Millisecond + g.subMs()}
	case r < 92: // deadline in the future
		return ttlSpec{kind: ttlAtRel, d: time.Duration(1+g.intn(6000))*time.Millisecond + g.subMs()}
	case r < 94:
		return ttlSpec{kind: ttlAtEpoch}
	case r < 96:
		return ttlSpec{kind: ttlAtMax}
	}
	return g.badTTL()
}

func (g *generator) badTTL() ttlSpec {
	switch g.intn(4) {
	case 0:
		return ttlSpec{kind: ttlBadAfter, d: time.Duration(g.intn(int(time.Millisecond))) - time.Duration(g.intn(2))*time.Second}
	case 1:
		return ttlSpec{kind: ttlBadZero}
	case 2:
		return ttlSpec{kind: ttlBadPreEpoch, d: time.Duration(1 + g.intn(int(time.Hour)))}
	}
	return ttlSpec{kind: ttlBadPastMax, d: time.Millisecond + time.Duration(g.intn(int(time.Hour)))}
}

func (g *generator) validTTL() ttlSpec {
	for {
		if s := g.ttl(); s.valid() {
			return s
		}
	}
}

func (g *generator) freeSlot(open *[numSlots]bool) int {
	var free []int
	for i, o := range open {
		if !o {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return -1
	}
	return free[g.intn(len(free))]
}

func (g *generator) openSlot(open *[numSlots]bool) int {
	var used []int
	for i, o := range open {
		if o {
			used = append(used, i)
		}
	}
	if len(used) == 0 {
		return -1
	}
	return used[g.intn(len(used))]
}

func (g *generator) moves() []move {
	n := 1 + g.intn(8)
	ms := make([]move, n)
	for i := range ms {
		switch r := g.intn(100); {
		case r < 10:
			ms[i] = move{kind: moveFirst}
		case r < 20:
			ms[i] = move{kind: moveLast}
		case r < 32:
			ms[i] = move{kind: moveSeekGE, key: g.seekKey()}
		case r < 44:
			ms[i] = move{kind: moveSeekLT, key: g.seekKey()}
		case r < 74:
			ms[i] = move{kind: moveNext}
		default:
			ms[i] = move{kind: movePrev}
		}
	}
	return ms
}

func (g *generator) next() op {
	defer func() { g.n++ }()
	for {
		o := op{kind: g.pickKind(), sync: g.chance(0.1)}
		switch o.kind {
		case opPut:
			o.key, o.value = g.key(), g.value()
			if g.chance(0.02) {
				o.ttl = g.badTTL()
			} else {
				o.ttl = g.validTTL()
			}
		case opDelete:
			o.key = g.key()
		case opBatch:
			n := 2 + g.intn(9)
			bad := g.chance(0.15)
			for range n {
				e := batchEntry{key: g.key()}
				if g.chance(0.3) {
					e.del = true
				} else {
					e.value, e.ttl = g.value(), g.validTTL()
				}
				o.entries = append(o.entries, e)
			}
			if bad {
				i := g.intn(n)
				if g.chance(0.8) {
					o.entries[i].del, o.entries[i].value, o.entries[i].ttl = false, g.value(), g.badTTL()
				} else {
					o.entries[i].key = "" // empty key
				}
			}
		case opBurst:
			n, start := 5+g.intn(30), g.intn(numTTLKeys)
			base := time.Duration(1+g.intn(3000)) * time.Millisecond
			for i := range n {
				e := batchEntry{key: ttlKeyName((start + i) % numTTLKeys), value: g.value()}
				switch g.intn(4) {
				case 0:
					e.ttl = ttlSpec{kind: ttlAtRel, d: base + time.Duration(g.intn(500))*time.Millisecond}
				case 1:
					e.ttl = ttlSpec{kind: ttlAtRel, d: -time.Duration(g.intn(1000)) * time.Millisecond}
				default:
					e.ttl = ttlSpec{kind: ttlAfter, d: base + time.Duration(g.intn(500))*time.Millisecond}
				}
				o.entries = append(o.entries, e)
			}
		case opGet, opTTL:
			o.key = g.readKey()
		case opScan:
			o.lower, o.hi = g.bounds()
			o.reverse = g.chance(0.4)
		case opIterOpen:
			if o.slot = g.freeSlot(&g.iterOpen); o.slot < 0 {
				continue
			}
			o.lower, o.hi = g.bounds()
			g.iterOpen[o.slot] = true
		case opIterMove:
			if o.slot = g.openSlot(&g.iterOpen); o.slot < 0 {
				continue
			}
			o.moves = g.moves()
		case opIterClose:
			if o.slot = g.openSlot(&g.iterOpen); o.slot < 0 {
				continue
			}
			g.iterOpen[o.slot] = false
		case opSnapOpen:
			if o.slot = g.freeSlot(&g.snapOpen); o.slot < 0 {
				continue
			}
			g.snapOpen[o.slot] = true
		case opSnapGet, opSnapTTL:
			if o.slot = g.openSlot(&g.snapOpen); o.slot < 0 {
				continue
			}
			o.key = g.readKey()
		case opSnapScan:
			if o.slot = g.openSlot(&g.snapOpen); o.slot < 0 {
				continue
			}
			o.lower, o.hi = g.bounds()
			o.reverse = g.chance(0.4)
		case opSnapIterOpen:
			if o.snap = g.openSlot(&g.snapOpen); o.snap < 0 {
				continue
			}
			if o.slot = g.freeSlot(&g.iterOpen); o.slot < 0 {
				continue
			}
			o.lower, o.hi = g.bounds()
			g.iterOpen[o.slot] = true
		case opSnapClose:
			if o.slot = g.openSlot(&g.snapOpen); o.slot < 0 {
				continue
			}
			g.snapOpen[o.slot] = false
		case opCompact:
			switch g.intn(10) {
			case 0, 1:
				// full range
			case 2:
				o.lower, o.hi = g.bound(), g.bound() // possibly inverted: ErrInvalidOptions
			default:
				o.lower, o.hi = g.bounds()
				if o.lower.set && o.hi.set && o.lower.key > o.hi.key {
					o.lower, o.hi = o.hi, o.lower
				}
			}
		case opReopen, opCrash:
			g.iterOpen = [numSlots]bool{}
			g.snapOpen = [numSlots]bool{}
		case opAdvance:
			switch r := g.intn(10); {
			case r < 1:
				o.d = 0
			case r < 4:
				o.d = time.Duration(1+g.intn(5)) * time.Millisecond
			default:
				o.d = time.Duration(g.intn(3000)) * time.Millisecond
			}
			o.d += g.subMs() // Manual.Advance truncates to whole ms
		case opAdvanceToExpiry:
			o.key = g.key()
			o.extra = int64(g.intn(2)) // land on the deadline or just past it
		case opPutIfAbsent, opPutIfPresent, opCompareAndSwap, opCompareAndDelete, opGetDel, opCondBatch:
			g.condOp(&o)
		case opExpire, opPersist, opGetEx, opTouch:
			g.ttlOp(&o)
		case opMerge, opAdd:
			g.mergeOp(&o)
		}
		return o
	}
}
