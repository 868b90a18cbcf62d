package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// stressKey is the key of row i of writer w in TestConcurrentInsertsAndReads.
// Writers 0 and 1 write keys that repeat across them (versions of one key
// interleave), half of them longer than the inline 16 bytes with a shared
// prefix; writers 2 and 3 write ascending keys above all others, so both
// append at the end of the list at once (the tail hint, fromTail).
func stressKey(w, i int) []byte {
	if w >= 2 {
		return fmt.Appendf(nil, "z-%06d-%d", i, w)
	}
	h := uint64(w*1_000_003+i) * 0x9e3779b97f4a7c15 >> 40 % 3000
	if h%2 == 0 {
		return fmt.Appendf(nil, "a-long-shared-prefix/%05d", h)
	}
	return fmt.Appendf(nil, "k%05d", h)
}

// TestConcurrentInsertsAndReads: writers apply batches of one to four rows
// with disjoint sequence numbers (writer w owns w+1, w+1+writers, ...)
// while readers walk forward and backward and Get rows. Every walk must be
// in strict internal-key order and contain every row whose batch was
// applied before the walk started; every such row must be found by Get at
// its sequence number. Run with -race.
func TestConcurrentInsertsAndReads(t *testing.T) {
	forEachFilter(t, testConcurrentInsertsAndReads)
}

// forEachFilter runs test on a memtable without a whole-key filter and on
// one whose filter is sized for a tenth of the rows it gets (so that it is
// overloaded and answers "may contain" for many absent keys too).
func forEachFilter(t *testing.T, test func(t *testing.T, m *Memtable)) {
	for _, expected := range []int64{0, 64 << 10} {
		t.Run(fmt.Sprintf("filter=%d", expected), func(t *testing.T) {
			m := NewFiltered(1, nil, expected)
			defer m.Unref()
			test(t, m)
		})
	}
}

func testConcurrentInsertsAndReads(t *testing.T, m *Memtable) {
	const writers, perWriter, readers = 4, 3000, 3
	seqOf := func(w, i int) uint64 { return uint64(i*writers + w + 1) }
	var done [writers]atomic.Int64 // rows of writer w applied so far
	var wg sync.WaitGroup
	start := make(chan struct{}) // closed once the readers run
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rng := rand.New(rand.NewSource(int64(w)))
			for i := 0; i < perWriter; {
				n := min(1+rng.Intn(4), perWriter-i)
				data := make([]byte, format.BatchHeaderLen)
				for j := range n {
					data, _ = format.AppendBatchEntry(data, 0, 0, stressKey(w, i+j), fmt.Appendf(nil, "%d", seqOf(w, i+j)))
				}
				// A batch's rows carry consecutive sequence numbers;
				// give each row its writer's own by one batch per row
				// when n > 1 would break disjointness: apply row by row.
				if n == 1 {
					format.PutBatchHeader(data, format.BatchHeader{Seq: seqOf(w, i), Count: 1})
					if err := m.ApplyBatch(data); err != nil {
						t.Error(err)
						return
					}
				} else {
					batches := make([][]byte, n)
					for j := range n {
						b := make([]byte, format.BatchHeaderLen)
						b, _ = format.AppendBatchEntry(b, 0, 0, stressKey(w, i+j), fmt.Appendf(nil, "%d", seqOf(w, i+j)))
						format.PutBatchHeader(b, format.BatchHeader{Seq: seqOf(w, i+j), Count: 1})
						batches[j] = b
					}
					if got, err := m.ApplyBatches(batches); got != n || err != nil {
						t.Errorf("ApplyBatches = %d, %v", got, err)
						return
					}
				}
				i += n
				done[w].Store(int64(i))
			}
		}()
	}
	total := writers * perWriter
	stop := make(chan struct{})
	var overlapping atomic.Int64 // walks that started while writers were midway
	var rwg sync.WaitGroup
	for r := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			rng := rand.New(rand.NewSource(int64(100 + r)))
			for {
				var known [writers]int
				for w := range writers {
					known[w] = int(done[w].Load())
				}
				if err := checkWalk(m, known[:], seqOf, rng.Intn(2) == 0, total); err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				if k := known[0] + known[1] + known[2] + known[3]; k > 0 && k < total {
					overlapping.Add(1)
				}
				for range 50 {
					w := rng.Intn(writers)
					if known[w] == 0 {
						continue
					}
					i := rng.Intn(known[w])
					row, ok := m.Get(stressKey(w, i), seqOf(w, i))
					if !ok || row.Seq != seqOf(w, i) || string(row.Value) != fmt.Sprint(seqOf(w, i)) {
						t.Errorf("reader %d: Get(%s, %d) = %d %q %v", r, stressKey(w, i), seqOf(w, i), row.Seq, row.Value, ok)
						return
					}
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	rwg.Wait()
	t.Logf("%d walks started while the writers were midway", overlapping.Load())
	if m.Len() != total {
		t.Fatalf("Len %d, want %d", m.Len(), total)
	}
	var all [writers]int
	for w := range all {
		all[w] = perWriter
	}
	if err := checkWalk(m, all[:], seqOf, true, total); err != nil {
		t.Fatal(err)
	}
	if err := checkWalk(m, all[:], seqOf, false, total); err != nil {
		t.Fatal(err)
	}
}

// checkWalk walks m forward or backward, checks that rows come in strict
// internal-key order, and that every row i < known[w] of each writer w is
// among them.
func checkWalk(m *Memtable, known []int, seqOf func(w, i int) uint64, forward bool, total int) error {
	seen := make([]bool, total+1)
	it := m.NewIter()
	defer it.Close()
	ok, step := it.First(), it.Next
	if !forward {
		ok, step = it.Last(), it.Prev
	}
	var prev format.Row
	n := 0
	for ; ok; ok = step() {
		r := *it.Row()
		if n > 0 {
			c := format.CompareRows(&prev, &r)
			if forward && c >= 0 || !forward && c <= 0 {
				return fmt.Errorf("forward=%v: %q@%d after %q@%d", forward, r.Key, r.Seq, prev.Key, prev.Seq)
			}
		}
		if r.Seq == 0 || r.Seq > uint64(total) || string(r.Value) != fmt.Sprint(r.Seq) {
			return fmt.Errorf("row %q@%d has value %q", r.Key, r.Seq, r.Value)
		}
		seen[r.Seq] = true
		prev = r
		n++
	}
	for w, k := range known {
		for i := range k {
			if !seen[seqOf(w, i)] {
				return fmt.Errorf("forward=%v: row %d of writer %d (%s@%d), applied before the walk, not seen", forward, i, w, stressKey(w, i), seqOf(w, i))
			}
		}
	}
	return nil
}

// TestSkiplistMatchesModel interleaves inserts (single rows and batches of
// rows in random, ascending and descending key order, which reuse or
// invalidate a batch's splice) with reads, and checks every read against
// a sorted slice of the rows inserted so far: Get at random sequence
// numbers, Versions, and an iterator moved at random by seeks, steps both
// ways and First/Last.
func TestSkiplistMatchesModel(t *testing.T) {
	// Without filter and hint, with a one-slot hint (every key shares the
	// slot) and with a hint of 128 slots.
	for _, expected := range []int64{0, 1, 64 << 10} {
		t.Run(fmt.Sprint("expected=", expected), func(t *testing.T) { testSkiplistMatchesModel(t, expected) })
	}
}

func testSkiplistMatchesModel(t *testing.T, expected int64) {
	for _, seed := range []int64{1, 2, 3} {
		rng := rand.New(rand.NewSource(seed))
		m := NewFiltered(1, nil, expected)
		var model []format.Row
		cmp := func(a, b format.Row) int { return format.CompareRows(&a, &b) }
		seq := uint64(1)
		it := m.NewIter()
		pos := -1 // the iterator's position in model; -1 or len: invalid
		for step := range 4000 {
			switch op := rng.Intn(10); {
			case op < 3: // a batch of rows, possibly sorted
				n := 1 + rng.Intn(8)
				rows := make([]format.Row, n)
				for j := range rows {
					rows[j] = randomRow(rng, seq+uint64(j))
					if len(rows[j].Value) > 1000 {
						rows[j].Value = rows[j].Value[:1000] // a batch entry's value stays small here
					}
				}
				switch rng.Intn(3) {
				case 0:
					slices.SortFunc(rows, func(a, b format.Row) int { return bytes.Compare(a.Key, b.Key) })
				case 1:
					slices.SortFunc(rows, func(a, b format.Row) int { return bytes.Compare(b.Key, a.Key) })
				}
				data := make([]byte, format.BatchHeaderLen)
				for j := range rows {
					rows[j].Seq = seq + uint64(j)
					flags := rows[j].Flags & (format.FlagTombstone | format.FlagHasExpire)
					data, _ = format.AppendBatchEntry(data, flags, rows[j].ExpireTS, rows[j].Key, rows[j].Value)
				}
				format.PutBatchHeader(data, format.BatchHeader{Seq: seq, Count: uint32(n), CommitTS: int64(step)})
				if err := m.ApplyBatch(data); err != nil {
					t.Fatal(err)
				}
				// Rows as the batch reader decodes them (flags and times
				// come from the batch encoding).
				br, err := format.NewBatchReader(data)
				if err != nil {
					t.Fatal(err)
				}
				for {
					var r format.Row
					ok, err := br.Next(&r)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						break
					}
					r.Key, r.Value = slices.Clone(r.Key), slices.Clone(r.Value)
					if len(r.Value) == 0 {
						r.Value = nil // the memtable returns no value as nil
					}
					model = insertSorted(model, r)
				}
				seq += uint64(n)
				pos = -1 // the model moved under the iterator: re-seek below
				it = m.NewIter()
			case op < 5:
				r := randomRow(rng, seq)
				seq++
				if len(r.Value) == 0 {
					r.Value = nil
				}
				m.Add(&r)
				model = insertSorted(model, r)
				pos = -1
				it = m.NewIter()
			case op == 5:
				k, at := trickyKey(rng), uint64(rng.Int63n(int64(seq)+1))
				j, _ := slices.BinarySearchFunc(model, format.Row{Key: k, Seq: at}, cmp)
				var want []string
				for ; j < len(model) && bytes.Equal(model[j].Key, k); j++ {
					want = append(want, fmt.Sprintf("%d:%x", model[j].Seq, model[j].Value))
				}
				var got []string
				m.Versions(k, at, func(r format.Row) bool {
					got = append(got, fmt.Sprintf("%d:%x", r.Seq, r.Value))
					return true
				})
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: Versions(%q, %d) = %v, want %v", seed, step, k, at, got, want)
				}
				r, ok := m.Get(k, at)
				if ok != (len(want) > 0) || ok && fmt.Sprintf("%d:%x", r.Seq, r.Value) != want[0] {
					t.Fatalf("seed %d step %d: Get(%q, %d) = %d, %v; want %v", seed, step, k, at, r.Seq, ok, want)
				}
			default:
				var ok bool
				what := ""
				switch sub := rng.Intn(6); {
				case sub == 0:
					k := trickyKey(rng)
					pos, _ = slices.BinarySearchFunc(model, k, func(r format.Row, k []byte) int { return bytes.Compare(r.Key, k) })
					ok, what = it.SeekGE(k), fmt.Sprintf("SeekGE(%q)", k)
				case sub == 1:
					k := trickyKey(rng)
					pos, _ = slices.BinarySearchFunc(model, k, func(r format.Row, k []byte) int { return bytes.Compare(r.Key, k) })
					pos--
					ok, what = it.SeekLT(k), fmt.Sprintf("SeekLT(%q)", k)
				case sub == 2:
					pos, ok, what = 0, it.First(), "First"
				case sub == 3:
					pos, ok, what = len(model)-1, it.Last(), "Last"
				case pos >= 0 && pos < len(model) && sub == 4:
					pos, ok, what = pos+1, it.Next(), "Next"
				case pos >= 0 && pos < len(model):
					pos, ok, what = pos-1, it.Prev(), "Prev"
				default:
					continue
				}
				valid := pos >= 0 && pos < len(model)
				if ok != valid || ok && !sameRow(it.Row(), &model[pos]) {
					t.Fatalf("seed %d step %d: %s = %v at %q@%d, want position %d of %d", seed, step, what, ok, it.Row().Key, it.Row().Seq, pos, len(model))
				}
			}
		}
		if m.Len() != len(model) {
			t.Fatalf("seed %d: Len %d, model %d", seed, m.Len(), len(model))
		}
		m.Unref()
	}
}

// insertSorted inserts r into rows, kept in internal-key order.
func insertSorted(rows []format.Row, r format.Row) []format.Row {
	j, _ := slices.BinarySearchFunc(rows, r, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
	return slices.Insert(rows, j, r)
}

// TestEqualInternalKeys: two rows with the same key and sequence number
// (which the engine never writes) are both kept, the first inserted first:
// walks show both in either direction, Get finds the first.
func TestEqualInternalKeys(t *testing.T) {
	m := New(1)
	defer m.Unref()
	m.Add(&format.Row{Key: []byte("a"), Seq: 5, Value: []byte("first")})
	m.Add(&format.Row{Key: []byte("b"), Seq: 6, Value: []byte("b")})
	m.Add(&format.Row{Key: []byte("a"), Seq: 5, Value: []byte("second")})
	m.Add(&format.Row{Key: []byte("a"), Seq: 7, Value: []byte("newer")})
	want := []string{"a@7=newer", "a@5=first", "a@5=second", "b@6=b"}
	var fwd, bwd []string
	it := m.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, fmt.Sprintf("%s@%d=%s", it.Row().Key, it.Row().Seq, it.Row().Value))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		bwd = append(bwd, fmt.Sprintf("%s@%d=%s", it.Row().Key, it.Row().Seq, it.Row().Value))
	}
	slices.Reverse(bwd)
	if !slices.Equal(fwd, want) || !slices.Equal(bwd, want) {
		t.Fatalf("forward %v, backward %v, want %v", fwd, bwd, want)
	}
	if r, ok := m.Get([]byte("a"), 6); !ok || string(r.Value) != "first" {
		t.Fatalf("Get(a, 6) = %q, %v; want the first inserted", r.Value, ok)
	}
}

// TestBackwardWalkGathersAcrossLevels walks backward over lists of sizes
// around the buffer and level spacings (a backward step starts from the
// predecessor at backLevel and climbs when that gathers too few nodes), in
// ascending and random insert order.
func TestBackwardWalkGathersAcrossLevels(t *testing.T) {
	for _, n := range []int{1, 2, iterChunk - 1, iterChunk, iterChunk + 1, 100, 1000} {
		for _, shuffled := range []bool{false, true} {
			m := New(1)
			ids := rand.New(rand.NewSource(int64(n))).Perm(n)
			if !shuffled {
				slices.Sort(ids)
			}
			for i, id := range ids {
				m.Add(&format.Row{Key: fmt.Appendf(nil, "k%05d", id), Seq: uint64(i + 1)})
			}
			it := m.NewIter()
			i := n
			for ok := it.Last(); ok; ok = it.Prev() {
				i--
				if want := fmt.Sprintf("k%05d", i); string(it.Row().Key) != want {
					t.Fatalf("n=%d shuffled=%v: backward at %q, want %s", n, shuffled, it.Row().Key, want)
				}
			}
			if i != 0 {
				t.Fatalf("n=%d shuffled=%v: backward walk stopped %d rows short", n, shuffled, i)
			}
			// Prev from a mid position after Nexts, then Next again.
			if n > 2 && (!it.SeekGE(fmt.Appendf(nil, "k%05d", n/2)) || !it.Prev() || string(it.Row().Key) != fmt.Sprintf("k%05d", n/2-1) ||
				!it.Next() || string(it.Row().Key) != fmt.Sprintf("k%05d", n/2)) {
				t.Fatalf("n=%d: Prev/Next around the middle at %q", n, it.Row().Key)
			}
			it.Close()
			m.Unref()
		}
	}
}
