package mayfly

import (
	"encoding/binary"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/memtable"
)

// BenchmarkFlushMemtable measures the CPU of writing one frozen memtable as a
// level-0 table (writeL0: memtable walk, compaction rules, sstable writer
// with the default compression and bloom filter) into a local directory,
// including the table's fsync and the reads that open it; cpu-ns/row (the
// process's CPU time, not the disk's) is the figure to compare. The memtable
// holds about as many rows as a 16 MiB one does in the fill benchmarks:
// 16-byte keys in random or ascending insert order, 100-byte
// half-compressible values.
func BenchmarkFlushMemtable(b *testing.B) {
	const rows = 70_000
	db, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()

	r := rand.New(rand.NewPCG(1, 2))
	vals := make([][]byte, 256)
	for i := range vals {
		v := make([]byte, 100)
		for j := range v[:50] {
			v[j] = byte(r.Uint32())
		}
		vals[i] = v
	}
	for _, order := range []string{"random", "ascending"} {
		b.Run(order, func(b *testing.B) {
			m := memtable.New(1)
			defer m.Unref()
			key := make([]byte, 16)
			for i := range rows {
				if order == "random" {
					binary.BigEndian.PutUint64(key, r.Uint64())
					binary.BigEndian.PutUint64(key[8:], r.Uint64())
				} else {
					binary.BigEndian.PutUint64(key, uint64(i))
				}
				m.Add(&format.Row{Key: key, Seq: uint64(i + 1), Value: vals[i%len(vals)]})
			}
			benchWriteL0(b, db, m, rows)
		})
	}
}

// benchWriteL0 flushes m, of rows rows, once per op and reports cpu-ns/row.
func benchWriteL0(b *testing.B, db *DB, m *memtable.Memtable, rows int) {
	b.ReportAllocs()
	b.SetBytes(int64(rows * (16 + 100)))
	cpu0 := processCPU()
	for b.Loop() {
		t, err := db.writeL0(m, false)
		if err != nil {
			b.Fatal(err)
		}
		if t.Meta.NumRows != uint64(rows) {
			b.Fatalf("flushed %d rows, want %d", t.Meta.NumRows, rows)
		}
		db.discardTables([]*tableFile{t}, nil)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N*rows), "cpu-ns/row")
}

// processCPU returns the process's user+system CPU time in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
