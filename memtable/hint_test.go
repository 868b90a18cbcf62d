package memtable

import (
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// addRow inserts one row of key with sequence seq, its value naming both.
func addRow(m *Memtable, key string, seq uint64) {
	m.Add(&format.Row{Key: []byte(key), Seq: seq, Value: fmt.Appendf(nil, "%s@%d", key, seq)})
}

// searched is Versions without the hint: the full skiplist search.
func searched(m *Memtable, key string, seq uint64) []uint64 {
	v := m.view()
	s := makeSearchKey([]byte(key), seq)
	var out []uint64
	for x := v.seekGE(&s); x != 0; x = v.node(x).next(0) {
		n := v.node(x)
		if v.cmpUser(n, &s) != 0 {
			break
		}
		out = append(out, n.seq)
	}
	return out
}

// checkOrder reports a level of m whose nodes are not in strictly
// ascending internal-key order.
func checkOrder(m *Memtable) error {
	v := m.view()
	for l := range int(m.height.Load()) {
		prev := uint64(headRef)
		for x := v.node(prev).next(l); x != 0; prev, x = x, v.node(x).next(l) {
			if prev == headRef {
				continue
			}
			n := v.node(x)
			s := makeSearchKey(v.row(n.loc).Key, n.seq)
			if v.cmp(v.node(prev), &s) >= 0 {
				p := v.node(prev)
				return fmt.Errorf("level %d: %q@%d before %q@%d", l, v.row(p.loc).Key, p.seq, s.key, n.seq)
			}
		}
	}
	return nil
}

// versions is Versions' rows' sequence numbers.
func versions(m *Memtable, key string, seq uint64) []uint64 {
	var out []uint64
	m.Versions([]byte(key), seq, func(r format.Row) bool {
		if want := fmt.Sprintf("%s@%d", r.Key, r.Seq); string(r.Value) != want {
			panic(fmt.Sprintf("row %s@%d holds %q", r.Key, r.Seq, r.Value))
		}
		out = append(out, r.Seq)
		return true
	})
	return out
}

// TestHintMatchesSearch inserts versions of a few keys in random sequence
// order (as concurrent commit groups may), into memtables whose hints have
// 1 slot (every key collides) and many, and checks that Versions at every
// sequence number gives exactly the full search's rows, and that inserts
// placed from a predecessor hint kept every level in order.
func TestHintMatchesSearch(t *testing.T) {
	for _, expected := range []int64{1, 1 << 20} {
		t.Run(fmt.Sprint(len(makeNewestHint(expected).slots), "slots"), func(t *testing.T) {
			m := NewFiltered(1, nil, expected)
			defer m.Unref()
			rng := rand.New(rand.NewSource(expected))
			const rows = 400
			keys := []string{"a", "b", "0123456789abcdef-long", "0123456789abcdef-lonh", "z"}
			for _, i := range rng.Perm(rows) {
				addRow(m, keys[rng.Intn(len(keys))], uint64(i+1))
				for _, k := range keys {
					for _, seq := range []uint64{uint64(rng.Intn(rows + 1)), rows + 5} {
						got, want := versions(m, k, seq), searched(m, k, seq)
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("Versions(%s, %d) = %v, the search finds %v", k, seq, got, want)
						}
					}
				}
				if err := checkOrder(m); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestHintKeepsNewestAgainstLateInserts: a row inserted after a newer row
// of its key (a slower commit group) does not take the slot, and a
// reference stored after a newer one raised the slot (a slow insert losing
// the race between its compare-and-swap and its store) is not used.
func TestHintKeepsNewestAgainstLateInserts(t *testing.T) {
	m := NewFiltered(1, nil, 1<<20)
	defer m.Unref()
	addRow(m, "k", 10)
	addRow(m, "k", 9)
	if r, ok := m.Get([]byte("k"), 100); !ok || r.Seq != 10 {
		t.Fatalf("after k@10 then k@9, Get(k) = seq %d, %v; want 10", r.Seq, ok)
	}
	v := m.view()
	s := makeSearchKey([]byte("k"), 100)
	kh := hashOf([]byte("k"))
	ref10 := v.hinted(kh, &s)
	if ref10 == 0 || v.node(ref10).seq != 10 {
		t.Fatalf("the hint does not name k@10 (ref %#x)", ref10)
	}
	// k@11 raised the slot, then k@10's store landed late.
	addRow(m, "k", 11)
	m.hint.slot(kh).ref.Store(hintTag(kh) | ref10)
	if x := v.hinted(kh, &s); x != 0 {
		t.Fatalf("the hint names k@%d under a slot raised to 11", v.node(x).seq)
	}
	if r, ok := m.Get([]byte("k"), 100); !ok || r.Seq != 11 {
		t.Fatalf("Get(k) = seq %d, %v; want 11", r.Seq, ok)
	}
	// A reader below the newest row searches: k@11 is not its row.
	if r, ok := m.Get([]byte("k"), 10); !ok || r.Seq != 10 {
		t.Fatalf("Get(k, 10) = seq %d, %v; want 10", r.Seq, ok)
	}
}

// TestHintChecksKeyBehindTag: a slot whose tag matches a key but whose
// node is another key's (a 20-bit tag collision, forged here) is not
// taken for the key's newest row.
func TestHintChecksKeyBehindTag(t *testing.T) {
	m := NewFiltered(1, nil, 1)
	defer m.Unref()
	addRow(m, "b", 1)
	addRow(m, "a", 5) // takes the only slot
	sl := m.hint.slot(hashOf([]byte("b")))
	refA := untag(sl.ref.Load(), hashOf([]byte("a")))
	sl.ref.Store(hintTag(hashOf([]byte("b"))) | refA)
	if r, ok := m.Get([]byte("b"), 100); !ok || r.Seq != 1 || string(r.Key) != "b" {
		t.Fatalf("Get(b) = %q@%d, %v; want b@1", r.Key, r.Seq, ok)
	}
}

// TestHintServesRecentKeys: a key's newest row is hinted right after its
// insert, so a lookup of a key just written skips the search.
func TestHintServesRecentKeys(t *testing.T) {
	m := NewFiltered(1, nil, 64<<20)
	defer m.Unref()
	v := m.view()
	for i := range 10000 {
		k := fmt.Sprintf("token:%08d", i*7919%10000)
		addRow(m, k, uint64(i+1))
		s := makeSearchKey([]byte(k), uint64(i+1))
		if x := v.hinted(hashOf([]byte(k)), &s); x == 0 || v.node(x).seq != uint64(i+1) {
			t.Fatalf("row %d: the key just written is not hinted", i)
		}
	}
}

// TestHintUnderConcurrentInserts: writers insert rows out of sequence
// order (each takes the next number, inserts, then marks it done) while
// readers look keys up at the published sequence number (the highest with
// every number up to it done). Row s is of key s mod keys, so a reader
// knows which row is the newest it may see. Run with -race.
func TestHintUnderConcurrentInserts(t *testing.T) {
	const keys, rows, writers, readers = 37, 20000, 4, 2
	for _, expected := range []int64{1, 1 << 20} {
		m := NewFiltered(1, nil, expected)
		var next, published atomic.Uint64
		done := make([]atomic.Bool, rows+1)
		var pubMu sync.Mutex
		publish := func(s uint64) {
			done[s].Store(true)
			pubMu.Lock()
			p := published.Load()
			for p < rows && done[p+1].Load() {
				p++
			}
			published.Store(p)
			pubMu.Unlock()
		}
		key := func(s uint64) string { return fmt.Sprintf("key-%02d", s%keys) }
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for s := next.Add(1); s <= rows; s = next.Add(1) {
					addRow(m, key(s), s)
					publish(s)
				}
			})
		}
		var bad atomic.Value
		for r := range readers {
			wg.Go(func() {
				for i := uint64(r); published.Load() < rows; i++ {
					p := published.Load()
					k := i % keys
					var want uint64 // the newest s <= p with s%keys == k (0: none)
					if p >= k && !(k == 0 && p < keys) {
						want = p - (p-k)%keys
					}
					got, ok := m.Get([]byte(fmt.Sprintf("key-%02d", k)), p)
					if ok != (want != 0) || (ok && got.Seq != want) {
						bad.Store(fmt.Sprintf("Get(key-%02d, %d) = seq %d, %v; want %d", k, p, got.Seq, ok, want))
						return
					}
				}
			})
		}
		wg.Wait()
		m.Unref()
		if b := bad.Load(); b != nil {
			t.Fatalf("%d slots: %s", len(makeNewestHint(expected).slots), b)
		}
	}
}

// BenchmarkGetRecent looks up keys written shortly before, in a memtable
// of 200k rows, with and without the hint.
func BenchmarkGetRecent(b *testing.B) {
	for _, hint := range []bool{true, false} {
		b.Run(fmt.Sprint("hint=", hint), func(b *testing.B) {
			m := NewFiltered(1, nil, 64<<20)
			defer m.Unref()
			if !hint {
				m.hint = newestHint{}
			}
			var kb [16]byte
			val := make([]byte, 100)
			const rows = 200000
			for i := range uint64(rows) {
				m.Add(&format.Row{Key: benchKey(kb[:], i*7919%rows), Seq: i + 1, Value: val})
			}
			b.ResetTimer()
			for i := range b.N {
				j := uint64(rows - 1 - i%1000)
				if _, ok := m.Get(benchKey(kb[:], j*7919%rows), rows); !ok {
					b.Fatal("missing")
				}
			}
		})
	}
}

// BenchmarkGetHotKeys reads random keys of 10k written 9 times each (a
// counter's operands, say: 90k rows, an engine-sized memtable) at the
// newest sequence number: the keys outnumber the newest-version slots, so
// the lookups the slots miss start from the key's predecessor
// (seekFromPred) or search.
func BenchmarkGetHotKeys(b *testing.B) {
	m := NewFiltered(1, nil, 6<<20)
	defer m.Unref()
	rng := rand.New(rand.NewSource(1))
	var kb [16]byte
	val := make([]byte, 8)
	const keys, rows = 10000, 90000
	for i := range rows {
		m.Add(&format.Row{Key: benchKey(kb[:], uint64(rng.Intn(keys))), Seq: uint64(i + 1), Value: val})
	}
	cpu0 := processCPU()
	b.ResetTimer()
	for range b.N {
		m.Get(benchKey(kb[:], uint64(rng.Intn(keys))), rows)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// TestHintTagLeavesReferenceWhole: the largest node reference an arena can
// make fits below the tag.
func TestHintTagLeavesReferenceWhole(t *testing.T) {
	if ref := makeRef(maxChunk, 1<<refOff-1); ref>>hintTagShift != 0 {
		t.Fatalf("reference %#x reaches the tag's bits (from bit %d)", ref, hintTagShift)
	}
}

// BenchmarkInsertHotKeys inserts rows over 10k keys (a counter's operands,
// say), one row a call, into engine-sized memtables replaced every 90k
// rows, with and without the hint.
func BenchmarkInsertHotKeys(b *testing.B) {
	for _, hint := range []bool{true, false} {
		b.Run(fmt.Sprint("hint=", hint), func(b *testing.B) {
			newMem := func() *Memtable {
				m := NewFiltered(1, nil, 6<<20)
				if !hint {
					m.hint = newestHint{}
				}
				return m
			}
			m := newMem()
			defer func() { m.Unref() }()
			rng := rand.New(rand.NewSource(1))
			var kb [16]byte
			val := make([]byte, 8)
			cpu0 := processCPU()
			for i := range b.N {
				if m.Len() >= 90000 {
					m.Unref()
					m = newMem()
				}
				m.Add(&format.Row{Key: benchKey(kb[:], uint64(rng.Intn(10000))), Seq: uint64(i + 1), Value: val})
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestHintSize: a slot per eight of the filter's rows, at most hintSlots,
// each 16 bytes and two predecessor words of 8 bytes at each of two levels
// (48 bytes in all; a bucket of eight words at least), as RFC 0011 states
// after "Predecessor hint"; the default memtable size reaches the cap.
func TestHintSize(t *testing.T) {
	for _, c := range []struct {
		expected     int64
		slots, bytes int
	}{{0, 0, 0}, {1, 1, 16 + 2*8*8}, {64 << 10, 128, 128 * 48}, {1 << 20, 2048, 2048 * 48},
		{6 << 20, 8192, 8192 * 48}, {64 << 20, 8192, 8192 * 48}} {
		h := makeNewestHint(c.expected)
		if len(h.slots) != c.slots || h.bytes() != int64(c.bytes) {
			t.Errorf("hint for %d bytes: %d slots, %d bytes; want %d slots, %d bytes", c.expected, len(h.slots), h.bytes(), c.slots, c.bytes)
		}
	}
}

// TestPredecessorHintFillsEmptyWords: a key without a word in its bucket
// takes an empty word while the bucket has one, so as many keys as a
// bucket has words keep their predecessors, whatever their sequence
// numbers; a key past that evicts one word, not its own.
func TestPredecessorHintFillsEmptyWords(t *testing.T) {
	h := makeNewestHint(1) // one bucket, which every key shares
	if len(h.preds[0]) != predWays {
		t.Fatalf("%d words, want one bucket of %d", len(h.preds[0]), predWays)
	}
	var khs []uint64
	for i := 0; len(khs) < predWays+1; i++ {
		kh := hashOf([]byte(fmt.Sprint("key", i)))
		if !slices.ContainsFunc(khs, func(o uint64) bool { return hintTag(o) == hintTag(kh) }) {
			khs = append(khs, kh)
		}
	}
	for i, kh := range khs[:predWays] {
		h.notePred(kh, uint64(i+1)<<8, uint64(100+i), 0) // sequence numbers whose hash picks one word
	}
	for i, kh := range khs[:predWays] {
		if got := h.predOf(kh, 0); got != uint64(100+i) {
			t.Errorf("key %d: predecessor %d, want %d", i, got, 100+i)
		}
	}
	h.notePred(khs[predWays], 7, 200, 0)
	kept := 0
	for i, kh := range khs[:predWays] {
		if h.predOf(kh, 0) == uint64(100+i) {
			kept++
		}
	}
	if got := h.predOf(khs[predWays], 0); got != 200 || kept != predWays-1 {
		t.Errorf("a key past a full bucket: its predecessor %d (want 200), %d of the others kept (want %d)", got, kept, predWays-1)
	}
}

// TestPredecessorHintPlacesRepeats: once rows of a key have been linked at
// levels 0 and 1, the predecessor tables place its next row of height 1 or
// 2 exactly where the search from the head would, and not one of height 3;
// and, in a hint whose only bucket every key shares, four keys written in
// turn each keep their own word.
func TestPredecessorHintPlacesRepeats(t *testing.T) {
	for _, expected := range []int64{1, 1 << 20} {
		m := NewFiltered(1, nil, expected)
		keys := []string{"k1", "k2", "k3", "k4"}
		seq := uint64(0)
		// Keys between and around them, and 64 before them all, so that
		// some node before each key is linked at level 1: the head, a
		// level's predecessor when none is, is not recorded.
		others := []string{"j", "k10", "k25", "k35", "z"}
		for i := range 64 {
			others = append(others, fmt.Sprintf("a%02d", i))
		}
		for _, k := range others {
			seq++
			addRow(m, k, seq)
		}
		// Enough rows of each key that, with odds of about 1e-8 against,
		// its rows were linked at level 1 often enough that each key's
		// word in the shared bucket outlasts the others' evictions.
		for range 256 {
			for _, k := range keys {
				seq++
				addRow(m, k, seq)
			}
		}
		v := m.view()
		for _, k := range keys {
			s := makeSearchKey([]byte(k), seq+1)
			kh := hashOf([]byte(k))
			var want splice
			x := uint64(headRef)
			for l := int(m.height.Load()) - 1; l >= 0; l-- {
				want.prev[l], want.next[l] = v.spliceLevel(&s, l, x)
				x = want.prev[l]
			}
			for h := 1; h <= predLevels; h++ {
				var got splice
				if !v.fromPreds(&got, &s, h, kh) {
					t.Fatalf("%d slots: no predecessors for %s at height %d", len(m.hint.slots), k, h)
				}
				for l := range h {
					if got.prev[l] != want.prev[l] || got.next[l] != want.next[l] {
						t.Fatalf("%d slots: %s level %d placed between %#x and %#x, the search says %#x and %#x",
							len(m.hint.slots), k, l, got.prev[l], got.next[l], want.prev[l], want.next[l])
					}
				}
			}
			var got splice
			if v.fromPreds(&got, &s, predLevels+1, kh) {
				t.Fatalf("%d slots: %s placed at height %d, which has no table", len(m.hint.slots), k, predLevels+1)
			}
		}
		m.Unref()
	}
}

// TestSeekFromPredMatchesSearch: wherever the predecessor hint places a
// lookup (seekFromPred), at any sequence number, format.MaxSeq included,
// it finds the node and predecessor the search from the head finds, in
// memtables whose hint every key shares and whose hint has a bucket per
// few keys, with rows inserted out of sequence order within windows of 8
// (as concurrent commit groups apply them); and it places most lookups of
// keys written many times at the newest sequence numbers.
func TestSeekFromPredMatchesSearch(t *testing.T) {
	for _, expected := range []int64{1, 1 << 20} {
		m := NewFiltered(1, nil, expected)
		rng := rand.New(rand.NewSource(expected + 7))
		keys := []string{"a", "b", "c", "d", "0123456789abcdef-long", "0123456789abcdef-lonh", "z"}
		const rows = 2000
		for w := 0; w < rows; w += 8 {
			for _, i := range rng.Perm(8) {
				addRow(m, keys[rng.Intn(len(keys))], uint64(w+i+1))
			}
		}
		v := m.view()
		placed, recent := 0, 0 // lookups of written keys at the newest sequence numbers
		for ki, k := range append(keys, "absent", "0123456789abcdef") {
			kh := hashOf([]byte(k))
			for si, seq := range []uint64{format.MaxSeq, rows + 5, rows, rows - 3, rows / 2, 1, 0} {
				s := makeSearchKey([]byte(k), seq)
				wantPred, want := v.seekGEPred(&s)
				pred, x, ok := v.seekFromPred(&s, kh)
				if ki < len(keys) && si < 4 {
					recent++
					if ok {
						placed++
					}
				}
				if !ok {
					continue
				}
				if pred != wantPred || x != want {
					t.Fatalf("%d slots: %s@%d placed between %#x and %#x, the search says %#x and %#x",
						len(m.hint.slots), k, seq, pred, x, wantPred, want)
				}
			}
		}
		if expected > 1 && placed < recent*3/4 {
			t.Errorf("%d slots: %d of %d lookups of written keys at the newest sequence numbers placed from a predecessor",
				len(m.hint.slots), placed, recent)
		}
		m.Unref()
	}
}
