package memtable

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/mayflydb/mayfly/format"
)

func hashOf(key []byte) uint64 {
	k0, k1 := inline(key)
	return keyHash(k0, k1, key)
}

// TestKeyHashUsesEveryByte: keys that share their zero-padded first 16
// bytes (a key and the same key with zero bytes appended) or differ only
// past them hash apart.
func TestKeyHashUsesEveryByte(t *testing.T) {
	keys := [][]byte{
		nil, {0}, {0, 0}, []byte("a"), []byte("a\x00"),
		[]byte("0123456789abcdef"), []byte("0123456789abcdef\x00"),
		[]byte("0123456789abcdef-x"), []byte("0123456789abcdef-y"),
		[]byte("0123456789abcdef-01234567-x"), []byte("0123456789abcdef-01234567-y"),
	}
	seen := map[uint64][]byte{}
	for _, k := range keys {
		h := hashOf(k)
		if prev, dup := seen[h]; dup {
			t.Fatalf("keys %q and %q hash alike (%#x)", prev, k, h)
		}
		seen[h] = k
	}
}

// TestKeyFilterRates: every added key may be contained, and absent keys
// are ruled out about as often as eight bits per row foresee (a false
// positive rate of a few percent) while the filter holds the rows its size
// was made for; past that, more absent keys get through.
func TestKeyFilterRates(t *testing.T) {
	const expected = 6 << 20
	rows := int(expected / filterRowBytes)
	f := makeKeyFilter(expected)
	if got, want := f.bytes(), int64(16384*8); got != want {
		t.Fatalf("a filter for %d bytes takes %d bytes, want %d", expected, got, want)
	}
	rng := rand.New(rand.NewSource(3))
	key := func(i int) []byte { return fmt.Appendf(nil, "user:%08d:%x", i, rng.Int63()) }
	falsePositives := func() float64 {
		n := 0
		for i := range 20000 {
			if f.mayContain(hashOf(fmt.Appendf(nil, "absent:%d", i))) {
				n++
			}
		}
		return float64(n) / 20000
	}
	added := make([][]byte, 0, 2*rows)
	for i := range rows {
		k := key(i)
		f.add(hashOf(k))
		added = append(added, k)
	}
	fp := falsePositives()
	t.Logf("false positives at %d rows: %.2f%%", rows, 100*fp)
	if fp > 0.05 {
		t.Errorf("at its expected rows the filter lets %.1f%% of absent keys through, want at most 5%%", 100*fp)
	}
	for i := rows; i < 2*rows; i++ {
		k := key(i)
		f.add(hashOf(k))
		added = append(added, k)
	}
	fp = falsePositives()
	t.Logf("false positives at %d rows: %.2f%%", 2*rows, 100*fp)
	if fp < 0.05 || fp > 0.4 {
		t.Errorf("overloaded twice, the filter lets %.1f%% of absent keys through, want 5%%-40%%", 100*fp)
	}
	for _, k := range added {
		if !f.mayContain(hashOf(k)) {
			t.Fatalf("added key %q is ruled out", k)
		}
	}
	var none keyFilter
	if !none.mayContain(hashOf([]byte("x"))) || none.bytes() != 0 {
		t.Fatal("the zero filter must contain every key and take no memory")
	}
}

// TestFilteredMemtableSkipsAbsentKeys: a memtable with a filter finds every
// row it holds, all versions, and none of the keys it does not; its
// filter's memory is part of MemoryBytes.
func TestFilteredMemtableSkipsAbsentKeys(t *testing.T) {
	m := NewFiltered(1, nil, 1<<20)
	defer m.Unref()
	for i := range 2000 {
		for v := range 3 {
			m.Add(&format.Row{Key: fmt.Appendf(nil, "k%05d", i), Seq: uint64(3*i + v + 1), Value: []byte{byte(v)}})
		}
	}
	for i := range 2000 {
		k := fmt.Appendf(nil, "k%05d", i)
		n := 0
		m.Versions(k, 1<<50, func(r format.Row) bool { n++; return true })
		if n != 3 {
			t.Fatalf("Versions(%s) saw %d rows, want 3", k, n)
		}
		if _, ok := m.Get(fmt.Appendf(nil, "k%05d-absent", i), 1<<50); ok {
			t.Fatalf("Get of an absent key found a row")
		}
	}
	if got, want := m.MemoryBytes(), m.Size()+m.filter.bytes()+m.hint.bytes(); got != want || m.filter.bytes() == 0 || m.hint.bytes() == 0 {
		t.Fatalf("MemoryBytes = %d, want Size plus the filter's %d and the hint's %d bytes = %d", got, m.filter.bytes(), m.hint.bytes(), want)
	}
}
