package memtable

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

// trickyKey returns keys that stress the inline 16-byte prefix: lengths
// around 16, zero bytes that equal the padding, long shared prefixes.
func trickyKey(rng *rand.Rand) []byte {
	alphabet := []byte{0, 1, 'a', 0xff}
	k := make([]byte, rng.Intn(40))
	for i := range k {
		k[i] = alphabet[rng.Intn(len(alphabet))]
		if i < 14 && rng.Intn(4) > 0 {
			k[i] = 'p' // most keys share a long prefix
		}
	}
	return k
}

// randomRow returns a row with a tricky key and, at random, a tombstone, a
// TTL, an empty or a large value.
func randomRow(rng *rand.Rand, seq uint64) format.Row {
	r := format.Row{Key: trickyKey(rng), Seq: seq}
	switch rng.Intn(6) {
	case 0:
		r.Flags = format.FlagTombstone | format.FlagHasTS
		r.TS = rng.Int63()
	case 1:
		r.Flags = format.FlagHasTS | format.FlagHasExpire
		r.TS, r.ExpireTS = rng.Int63(), rng.Int63()
	case 2:
		// empty value
	case 3:
		if rng.Intn(10) > 0 {
			r.Value = []byte("x")
			break
		}
		r.Value = bytes.Repeat([]byte{byte(seq)}, arenaChunk/4+1+rng.Intn(100))
	default:
		r.Value = []byte(fmt.Sprintf("v%d", seq))
	}
	return r
}

func sameRow(a, b *format.Row) bool {
	return bytes.Equal(a.Key, b.Key) && a.Seq == b.Seq && a.Flags == b.Flags &&
		a.TS == b.TS && a.ExpireTS == b.ExpireTS && bytes.Equal(a.Value, b.Value) &&
		(a.Value == nil) == (b.Value == nil)
}

// TestTrickyKeysMatchReference checks order, Get and every row field
// against a sorted reference for keys that tie on their first 16 bytes.
func TestTrickyKeysMatchReference(t *testing.T) {
	forEachFilter(t, testTrickyKeysMatchReference)
}

func testTrickyKeysMatchReference(t *testing.T, m *Memtable) {
	rng := rand.New(rand.NewSource(7))
	var ref []format.Row
	for seq := uint64(1); seq <= 3000; seq++ {
		r := randomRow(rng, seq)
		if r.Value != nil && len(r.Value) == 0 {
			r.Value = nil
		}
		m.Add(&r)
		ref = append(ref, r)
	}
	slices.SortFunc(ref, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
	it := m.NewIter()
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(ref) || !sameRow(it.Row(), &ref[i]) {
			t.Fatalf("row %d: got %q@%d, want %q@%d", i, it.Row().Key, it.Row().Seq, ref[i].Key, ref[i].Seq)
		}
		i++
	}
	if i != len(ref) {
		t.Fatalf("forward walk saw %d rows, want %d", i, len(ref))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if !sameRow(it.Row(), &ref[i]) {
			t.Fatalf("backward row %d: got %q@%d, want %q@%d", i, it.Row().Key, it.Row().Seq, ref[i].Key, ref[i].Seq)
		}
	}
	if i != 0 {
		t.Fatalf("backward walk stopped at %d", i)
	}
	for n := 0; n < 2000; n++ {
		k := trickyKey(rng)
		seq := uint64(rng.Intn(3200))
		// Reference: the first row >= (k, seq) in internal order.
		j, _ := slices.BinarySearchFunc(ref, format.Row{Key: k, Seq: seq}, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
		want := j < len(ref) && bytes.Equal(ref[j].Key, k)
		got, ok := m.Get(k, seq)
		if ok != want || (ok && !sameRow(&got, &ref[j])) {
			t.Fatalf("Get(%q, %d) = %q@%d,%v; want found=%v", k, seq, got.Key, got.Seq, ok, want)
		}
		j, _ = slices.BinarySearchFunc(ref, k, func(r format.Row, k []byte) int { return bytes.Compare(r.Key, k) })
		if ok := it.SeekGE(k); ok != (j < len(ref)) || (ok && !sameRow(it.Row(), &ref[j])) {
			t.Fatalf("SeekGE(%q) = %v at %q, want index %d", k, ok, it.Row().Key, j)
		}
		if ok := it.SeekLT(k); ok != (j > 0) || (ok && !sameRow(it.Row(), &ref[j-1])) {
			t.Fatalf("SeekLT(%q) = %v at %q, want index %d", k, ok, it.Row().Key, j-1)
		}
	}
}

// TestConcurrentLongKeySearches runs Gets with long keys (which park their
// key in a probe slot) from several goroutines while one writer inserts.
func TestConcurrentLongKeySearches(t *testing.T) {
	m := New(1)
	defer m.Unref()
	key := func(i int) []byte { return []byte(fmt.Sprintf("a-long-shared-prefix-%06d", i)) }
	const n = 3000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			m.Add(&format.Row{Key: key(i), Seq: uint64(i + 1), Value: key(i)})
		}
	}()
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for j := 0; j < 2000; j++ {
				i := rng.Intn(n)
				if r, ok := m.Get(key(i), format.MaxSeq); ok && !bytes.Equal(r.Value, key(i)) {
					t.Errorf("Get(%s) = %s", key(i), r.Value)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if r, ok := m.Get(key(i), format.MaxSeq); !ok || !bytes.Equal(r.Value, key(i)) {
			t.Fatalf("Get(%s) after writes = %s, %v", key(i), r.Value, ok)
		}
	}
}
