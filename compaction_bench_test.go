package mayfly_test

import (
	"context"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/storage"
)

// BenchmarkCompaction measures compaction throughput: bytes of input tables
// read, merged and rewritten per second by a manual full compaction. Each
// iteration builds, untimed, a fresh in-memory database whose L0 holds
// tables of overlapping random keys (some rows overwritten, some deleted,
// some with a TTL), then times Compact over the whole key space. The
// reported MB/s is bytes rewritten (Metrics.CompactionBytesWritten) per
// second; read/op is the input the compaction read. The storage is
// in-memory, so the figure is the engine's CPU cost, not the disk's.
func BenchmarkCompaction(b *testing.B) {
	for _, shape := range []struct {
		name          string
		tables, rows  int
		overlapEvery  int // every n-th key of a table rewrites one of the previous table
		deleteEvery   int
		ttlEvery      int
		compressionOn bool
	}{
		{name: "L0x4/64k-rows", tables: 4, rows: 64 << 10, overlapEvery: 4, deleteEvery: 16, ttlEvery: 3, compressionOn: true},
		{name: "L0x4/64k-rows/nocompress", tables: 4, rows: 64 << 10, overlapEvery: 4, deleteEvery: 16, ttlEvery: 3},
	} {
		b.Run(shape.name, func(b *testing.B) {
			vals := benchValuePool()
			key := make([]byte, benchKeySize)
			var read, written uint64
			for b.Loop() {
				b.StopTimer()
				opts := &mayfly.Options{
					Storage:               storage.NewMem(),
					DisableAutoCompaction: true,
					MemtableSize:          256 << 20,
				}
				if !shape.compressionOn {
					opts.NoCompression = true
				}
				db, err := mayfly.Open("bench", opts)
				if err != nil {
					b.Fatal(err)
				}
				next := uint64(0)
				for t := range shape.tables {
					batch := db.NewBatch()
					for i := range shape.rows {
						k := next
						if t > 0 && i%shape.overlapEvery == 0 {
							k = next - uint64(shape.rows) // a key of the previous table
						}
						next++
						benchKey(key, k)
						switch {
						case i%shape.deleteEvery == 0:
							err = batch.Delete(key)
						case i%shape.ttlEvery == 0:
							err = batch.PutTTL(key, vals[i%benchValues], mayfly.ExpireAfter(24*time.Hour))
						default:
							err = batch.Put(key, vals[i%benchValues])
						}
						if err != nil {
							b.Fatal(err)
						}
						if batch.Len() == 1000 {
							if err := batch.Write(nil); err != nil {
								b.Fatal(err)
							}
							batch = db.NewBatch()
						}
					}
					if err := batch.Write(nil); err != nil {
						b.Fatal(err)
					}
					if err := db.Flush(); err != nil {
						b.Fatal(err)
					}
				}
				before := db.Metrics()
				b.StartTimer()
				if err := db.Compact(context.Background(), nil, nil); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				after := db.Metrics()
				read += after.CompactionBytesRead - before.CompactionBytesRead
				written += after.CompactionBytesWritten - before.CompactionBytesWritten
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			if b.N > 0 && (read == 0 || written == 0) {
				b.Fatalf("compaction read nothing (metrics %d/%d)", read, written)
			}
			b.SetBytes(int64(written / uint64(b.N)))
			b.ReportMetric(float64(read)/float64(b.N), "read/op")
		})
	}
}
