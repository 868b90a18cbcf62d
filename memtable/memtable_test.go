package memtable

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

func batchOf(seq uint64, kvs ...string) []byte {
	data := make([]byte, format.BatchHeaderLen)
	n := 0
	for i := 0; i+1 < len(kvs); i += 2 {
		data, _ = format.AppendBatchEntry(data, 0, 0, []byte(kvs[i]), []byte(kvs[i+1]))
		n++
	}
	format.PutBatchHeader(data, format.BatchHeader{Seq: seq, Count: uint32(n), CommitTS: 7})
	return data
}

func TestGetNewestVisible(t *testing.T) {
	m := New(1)
	defer m.Unref()
	for i, v := range []string{"a1", "a2", "a3"} {
		if err := m.ApplyBatch(batchOf(uint64(10*(i+1)), "a", v)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		seq  uint64
		want string
		ok   bool
	}{{5, "", false}, {10, "a1", true}, {19, "a1", true}, {20, "a2", true}, {1000, "a3", true}} {
		r, ok := m.Get([]byte("a"), tc.seq)
		if ok != tc.ok || (ok && string(r.Value) != tc.want) {
			t.Fatalf("Get(a,%d) = %q,%v want %q,%v", tc.seq, r.Value, ok, tc.want, tc.ok)
		}
	}
	if _, ok := m.Get([]byte("b"), 1000); ok {
		t.Fatal("found missing key")
	}
	if m.Len() != 3 {
		t.Fatalf("len=%d", m.Len())
	}
}

// TestIteratorMatchesSortedSlice moves an iterator at random and compares each
// position with a sorted reference.
func TestIteratorMatchesSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	m := New(1)
	defer m.Unref()
	var ref []format.Row
	seq := uint64(1)
	for i := 0; i < 500; i++ {
		k := fmt.Sprintf("k%03d", rng.Intn(150))
		v := fmt.Sprintf("v%d", i)
		if err := m.ApplyBatch(batchOf(seq, k, v)); err != nil {
			t.Fatal(err)
		}
		ref = append(ref, format.Row{Key: []byte(k), Seq: seq, Value: []byte(v)})
		seq++
	}
	slices.SortFunc(ref, func(a, b format.Row) int { return format.CompareRows(&a, &b) })
	it := m.NewIter()
	defer it.Close()
	pos := -1
	check := func(op string, ok bool) {
		t.Helper()
		if (pos >= 0 && pos < len(ref)) != ok {
			t.Fatalf("%s: ok=%v, want position %d", op, ok, pos)
		}
		if ok {
			r := it.Row()
			if format.CompareRows(r, &ref[pos]) != 0 || string(r.Value) != string(ref[pos].Value) {
				t.Fatalf("%s: at %s@%d want %s@%d", op, r.Key, r.Seq, ref[pos].Key, ref[pos].Seq)
			}
		}
	}
	for step := 0; step < 5000; step++ {
		switch op := rng.Intn(6); {
		case op == 0:
			k := []byte(fmt.Sprintf("k%03d", rng.Intn(160)))
			pos, _ = slices.BinarySearchFunc(ref, k, func(r format.Row, k []byte) int { return bytesCmp(r.Key, k) })
			check("SeekGE", it.SeekGE(k))
		case op == 1:
			k := []byte(fmt.Sprintf("k%03d", rng.Intn(160)))
			i, _ := slices.BinarySearchFunc(ref, k, func(r format.Row, k []byte) int { return bytesCmp(r.Key, k) })
			pos = i - 1
			check("SeekLT", it.SeekLT(k))
		case op == 2 && pos >= 0 && pos < len(ref):
			pos++
			check("Next", it.Next())
		case op == 3 && pos >= 0 && pos < len(ref):
			pos--
			check("Prev", it.Prev())
		case op == 4:
			pos = 0
			check("First", it.First())
		case op == 5:
			pos = len(ref) - 1
			check("Last", it.Last())
		}
	}
}

func bytesCmp(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

func TestConcurrentReadersAndWriter(t *testing.T) {
	m := New(1)
	defer m.Unref()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000; i++ {
			if err := m.ApplyBatch(batchOf(uint64(i+1), fmt.Sprintf("k%05d", i), "v")); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				it := m.NewIter()
				var prev []byte
				for ok := it.First(); ok; ok = it.Next() {
					if prev != nil && string(it.Row().Key) <= string(prev) {
						t.Errorf("out of order: %s after %s", it.Row().Key, prev)
					}
					prev = it.Row().Key
				}
				it.Close()
			}
		}()
	}
	wg.Wait()
	if m.Len() != 2000 {
		t.Fatalf("len %d", m.Len())
	}
}

func BenchmarkInsert(b *testing.B) {
	m := New(1)
	defer m.Unref()
	data := make([]byte, 0, 256)
	b.ReportAllocs()
	b.SetBytes(16 + 100)
	val := make([]byte, 100)
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		data = data[:format.BatchHeaderLen]
		data, _ = format.AppendBatchEntry(data, 0, 0, []byte(fmt.Sprintf("%016d", i*7919%1000003)), val)
		format.PutBatchHeader(data, format.BatchHeader{Seq: uint64(i + 1), Count: 1})
		if err := m.ApplyBatch(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkSeek(b *testing.B) {
	m := New(1)
	defer m.Unref()
	for i := 0; i < 100000; i++ {
		if err := m.ApplyBatch(batchOf(uint64(i+1), fmt.Sprintf("%016d", i), "value")); err != nil {
			b.Fatal(err)
		}
	}
	it := m.NewIter()
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%016d", i*97))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		it.SeekGE(keys[i%len(keys)])
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// TestApplyBatchesStopsAtMalformed applies a group whose third batch is
// truncated: the first two are inserted whole, the count says so, and Len
// counts every row that went in.
func TestApplyBatchesStopsAtMalformed(t *testing.T) {
	m := New(1)
	defer m.Unref()
	bad := batchOf(30, "c", "3", "d", "4")
	bad = bad[:len(bad)-1] // cut the last value short
	n, err := m.ApplyBatches([][]byte{batchOf(10, "a", "1"), batchOf(20, "b", "2"), bad})
	if n != 2 || !errors.Is(err, format.ErrCorruption) {
		t.Fatalf("ApplyBatches = %d, %v; want 2, corruption", n, err)
	}
	for _, k := range []string{"a", "b"} {
		if _, ok := m.Get([]byte(k), 100); !ok {
			t.Fatalf("%s missing after ApplyBatches", k)
		}
	}
	if got := m.Len(); got != 3 { // a, b and the partial batch's "c"
		t.Fatalf("Len = %d, want 3", got)
	}
	if n, err := m.ApplyBatches(nil); n != 0 || err != nil {
		t.Fatalf("ApplyBatches(nil) = %d, %v", n, err)
	}
}

// TestNoteNewKeys: a new memtable counts no new keys; NoteNewKeys adds to
// the count, whatever rows it holds.
func TestNoteNewKeys(t *testing.T) {
	m := New(1)
	defer m.Unref()
	if n := m.NewKeys(); n != 0 {
		t.Fatalf("new memtable: NewKeys %d, want 0", n)
	}
	m.NoteNewKeys(3)
	m.NoteNewKeys(2)
	if n := m.NewKeys(); n != 5 {
		t.Fatalf("after noting 3 and 2: NewKeys %d, want 5", n)
	}
}
