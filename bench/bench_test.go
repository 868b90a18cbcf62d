package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// A small, in-process version of the comparison for `go test -bench .`:
// the same engines, adapters, keys and values, side by side as
// sub-benchmarks. The real comparison (own process per run, repetitions,
// report) is `go run ./cmd/compare`.

const (
	smallNum   = 50_000
	smallCache = 16 << 20
	smallBloom = 10
	valueSize  = 100
)

var (
	fixtures   = map[string]Engine{}
	fixtureDir string
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, e := range fixtures {
		e.Close()
	}
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

func openEngine(b *testing.B, name, dir string) Engine {
	b.Helper()
	e, err := NewEngine(name)
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Open(dir, smallCache, smallBloom); err != nil {
		b.Fatal(err)
	}
	return e
}

// fixture returns an open engine holding smallNum keys, shared by the read
// benchmarks of that engine.
func fixture(b *testing.B, name string) Engine {
	b.Helper()
	if e, ok := fixtures[name]; ok {
		return e
	}
	if fixtureDir == "" {
		d, err := os.MkdirTemp("", "mayfly-bench-test")
		if err != nil {
			b.Fatal(err)
		}
		fixtureDir = d
	}
	e := openEngine(b, name, fixtureDir+"/"+name)
	vals := NewValueGen(valueSize)
	perm := NewPerm(smallNum, 1)
	k := make([]byte, KeySize)
	for i := uint64(0); i < smallNum; i++ {
		if err := e.Put(PutKey(k, perm.At(i)), vals.Next()); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Settle(ctx); err != nil {
		b.Fatal(err)
	}
	fixtures[name] = e
	return e
}

func forEngines(b *testing.B, f func(b *testing.B, name string)) {
	for _, name := range Engines {
		b.Run(name, func(b *testing.B) { f(b, name) })
	}
}

func benchWrites(b *testing.B, key func(i int) uint64, put func(e Engine, k, v []byte) error) {
	forEngines(b, func(b *testing.B, name string) {
		e := openEngine(b, name, b.TempDir())
		defer e.Close()
		vals := NewValueGen(valueSize)
		k := make([]byte, KeySize)
		b.SetBytes(KeySize + valueSize)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := put(e, PutKey(k, key(i)), vals.Next()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkFillSeq(b *testing.B) {
	benchWrites(b, func(i int) uint64 { return uint64(i) }, Engine.Put)
}

func BenchmarkFillRandom(b *testing.B) {
	perm := NewPerm(1<<40, 1)
	benchWrites(b, func(i int) uint64 { return perm.At(uint64(i)) }, Engine.Put)
}

func BenchmarkFillSync(b *testing.B) {
	perm := NewPerm(1<<40, 3)
	benchWrites(b, func(i int) uint64 { return perm.At(uint64(i)) }, Engine.SyncPut)
}

func BenchmarkFillBatch100(b *testing.B) {
	forEngines(b, func(b *testing.B, name string) {
		e := openEngine(b, name, b.TempDir())
		defer e.Close()
		vals := NewValueGen(valueSize)
		keys := make([][]byte, 100)
		vs := make([][]byte, 100)
		for i := range keys {
			keys[i] = make([]byte, KeySize)
		}
		b.SetBytes(100 * (KeySize + valueSize))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for j := range keys {
				PutKey(keys[j], uint64(i*100+j))
				vs[j] = vals.Next()
			}
			if err := e.Batch(keys, vs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkTTLPut(b *testing.B) {
	for _, name := range Engines {
		if !HasTTL(name) {
			continue
		}
		b.Run(name, func(b *testing.B) {
			e := openEngine(b, name, b.TempDir())
			defer e.Close()
			vals := NewValueGen(valueSize)
			k := make([]byte, KeySize)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				binaryKey(k, splitmix64(uint64(i)))
				if err := e.PutTTL(k, vals.Next(), 5*time.Second); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchReads(b *testing.B, missing bool) {
	forEngines(b, func(b *testing.B, name string) {
		e := fixture(b, name)
		rng := rand.New(rand.NewPCG(5, 6))
		k := make([]byte, KeySize)
		dst := make([]byte, 0, 256)
		b.ResetTimer()
		found := 0
		for i := 0; i < b.N; i++ {
			n := rng.Uint64N(smallNum)
			if missing {
				PutMissingKey(k, n)
			} else {
				PutKey(k, n)
			}
			_, ok, err := e.Get(k, dst[:0])
			if err != nil {
				b.Fatal(err)
			}
			if ok {
				found++
			}
		}
		if want := b.N; missing && found != 0 || !missing && found != want {
			b.Fatalf("found %d of %d (missing=%v)", found, b.N, missing)
		}
	})
}

func BenchmarkReadRandom(b *testing.B)  { benchReads(b, false) }
func BenchmarkReadMissing(b *testing.B) { benchReads(b, true) }

func BenchmarkReadSeq(b *testing.B) {
	forEngines(b, func(b *testing.B, name string) {
		e := fixture(b, name)
		b.SetBytes(KeySize + valueSize)
		b.ResetTimer()
		it, err := e.NewIter()
		if err != nil {
			b.Fatal(err)
		}
		ok := it.First()
		for i := 0; i < b.N; i++ {
			if !ok {
				ok = it.First()
			}
			_ = len(it.Key()) + len(it.Value())
			ok = it.Next()
		}
		it.Close()
	})
}

func BenchmarkSeekRandom(b *testing.B) {
	forEngines(b, func(b *testing.B, name string) {
		e := fixture(b, name)
		it, err := e.NewIter()
		if err != nil {
			b.Fatal(err)
		}
		defer it.Close()
		rng := rand.New(rand.NewPCG(7, 8))
		k := make([]byte, KeySize)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if !it.SeekGE(PutKey(k, rng.Uint64N(smallNum))) {
				b.Fatal(fmt.Sprintf("seek %q found nothing", k))
			}
		}
	})
}

// TestEnginesAgree checks every adapter against the same small workload.
func TestEnginesAgree(t *testing.T) {
	for _, name := range Engines {
		t.Run(name, func(t *testing.T) {
			e, _ := NewEngine(name)
			if err := e.Open(t.TempDir(), 1<<20, 10); err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			vals := NewValueGen(valueSize)
			k := make([]byte, KeySize)
			for i := uint64(0); i < 1000; i += 2 {
				if err := e.Put(PutKey(k, i), vals.Next()); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.SyncPut(PutKey(k, 1), vals.Next()); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := e.Get(PutKey(k, 1), nil); !ok {
				t.Fatal("synced key missing")
			}
			if _, ok, _ := e.Get(PutMissingKey(k, 4), nil); ok {
				t.Fatal("missing key found")
			}
			it, _ := e.NewIter()
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if !it.SeekGE(PutKey(k, 3)) || string(it.Key()) != string(PutKey(make([]byte, KeySize), 4)) {
				t.Fatalf("SeekGE(3) at %q", it.Key())
			}
			it.Close()
			if n != 501 {
				t.Fatalf("scan saw %d keys, want 501", n)
			}
			err := e.PutTTL(PutKey(k, 9), vals.Next(), time.Hour)
			if HasTTL(name) != (err == nil) {
				t.Fatalf("PutTTL: %v", err)
			}
		})
	}
}
