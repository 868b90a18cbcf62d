// Shared test helpers of package mayfly: the helpers that tests in more than
// one of the root package's test files use (opening a test database on a
// manual clock, reading a key back, the rows of the memtable-lifetime and
// churn tests, and the benchmark database, rows and CPU meter). A helper that
// one test file alone uses lives in that file.

package mayfly

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/memtable"
)

// churnKey is the i-th write-once key of the churn workload: random order,
// like a session ID.
func churnKey(i int) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(i)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	return k
}

// churnValue is the value of the i-th row: 50 pseudo-random printable bytes
// repeated twice, so that it compresses to about half, like the values of
// the bench/ harness.
func churnValue(i int) []byte {
	v := make([]byte, 100)
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	for j := range 50 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[j] = byte(' ' + x%95)
	}
	copy(v[50:], v[:50])
	return v
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func openTestDB(t *testing.T, dir string, clk *clock.Manual, mutate func(*Options)) *DB {
	t.Helper()
	o := &Options{Clock: clk}
	if mutate != nil {
		mutate(o)
	}
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func mustGet(t *testing.T, db interface{ Get([]byte) ([]byte, error) }, key, want string) {
	t.Helper()
	v, err := db.Get([]byte(key))
	if want == "" {
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
		}
		return
	}
	if err != nil || string(v) != want {
		t.Fatalf("Get(%q) = %q, %v; want %q", key, v, err, want)
	}
}

// lifeKey and lifeVal name row i of the lifetime tests.
func lifeKey(i int) []byte { return fmt.Appendf(nil, "key-%06d", i) }

func lifeVal(i, gen int) []byte {
	return append(fmt.Appendf(nil, "val-%06d-gen%d-", i, gen), bytes.Repeat([]byte{'x'}, 200)...)
}

// arenaBytes returns the arena bytes of the memtables not yet freed (the
// block cache also takes manual memory, so manual.Allocated would mix the two).
func arenaBytes() int64 { return memtable.ArenaBytes() }

// checkScan walks it from First and checks it returns rows lo..hi-1 of
// generation gen, in order.
func checkScan(t *testing.T, it *Iterator, lo, hi, gen int) {
	t.Helper()
	i := lo
	for ok := it.First(); ok; ok = it.Next() {
		if i >= hi || !bytes.Equal(it.Key(), lifeKey(i)) || !bytes.Equal(it.Value(), lifeVal(i, gen)) {
			t.Fatalf("row %d: got %q = %.20q, want %q of generation %d", i, it.Key(), it.Value(), lifeKey(i), gen)
		}
		i++
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if i != hi {
		t.Fatalf("scan stopped at row %d, want %d", i, hi)
	}
}

// Benchmark shapes: 16-byte keys and 100-byte values, half random and half a
// repeated pattern, so that block compression has something but not
// everything to squeeze.
const (
	benchKeySize   = 16
	benchValueSize = 100
	benchRowBytes  = benchKeySize + benchValueSize
	benchPreload   = 100_000 // rows loaded before the read benchmarks
	benchValues    = 256     // distinct values cycled through
)

// benchValuePool returns benchValues distinct half-compressible values.
func benchValuePool() [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([][]byte, benchValues)
	for i := range vals {
		v := make([]byte, benchValueSize)
		for j := 0; j < benchValueSize/2; j++ {
			v[j] = byte(r.Uint32())
		}
		for j := benchValueSize / 2; j < benchValueSize; j++ {
			v[j] = byte('a' + j%8)
		}
		vals[i] = v
	}
	return vals
}

// splitmix64 is a cheap bijective mixer, used to derive well-spread keys from
// an index so the read benchmarks need not store their key set.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// benchKey writes the key of row i into k (len benchKeySize). Keys of
// distinct i are distinct and in random order.
func benchKey(k []byte, i uint64) {
	binary.BigEndian.PutUint64(k[0:8], splitmix64(i))
	binary.BigEndian.PutUint64(k[8:16], splitmix64(i^0x5555_5555_5555_5555))
}

// openBenchDB opens a database with default options (auto compaction on) in
// a fresh temporary directory that lives as long as the benchmark.
func openBenchDB(b *testing.B, mutate func(*Options)) *DB {
	b.Helper()
	o := &Options{}
	if mutate != nil {
		mutate(o)
	}
	db, err := Open(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := db.Close(); err != nil {
			b.Error(err)
		}
	})
	return db
}

// cpuMeter measures the process's CPU time (user+system, all goroutines,
// background flushes, compactions and GC included). On a shared machine
// wall-clock ns/op swings with other load; cpu-ns/op is far steadier.
type cpuMeter struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuMeter { return cpuMeter{start: cpuNow()} }

// report adds the CPU time per op since startCPU as the cpu-ns/op metric.
func (c cpuMeter) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuNow()-c.start)/float64(b.N), "cpu-ns/op")
	}
}

// loadBench writes rows 0..n-1 (benchKey(i)) in batches of 1000.
func loadBench(b *testing.B, db *DB, n int) {
	b.Helper()
	vals := benchValuePool()
	k := make([]byte, benchKeySize)
	bt := db.NewBatch()
	for i := 0; i < n; i++ {
		benchKey(k, uint64(i))
		if err := bt.Put(k, vals[i%benchValues]); err != nil {
			b.Fatal(err)
		}
		if bt.Len() == 1000 || i == n-1 {
			if err := bt.Write(nil); err != nil {
				b.Fatal(err)
			}
			bt = db.NewBatch()
		}
	}
}
