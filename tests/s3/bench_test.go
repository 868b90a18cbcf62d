package s3test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
)

// benchValue is the 100-byte value of every benchmark write.
var benchValue = []byte(fmt.Sprintf("%-100s", "mayfly-s3-benchmark-value"))

// BenchmarkS3SteadyWrites writes unsynced puts at a steady rate for 3 s at
// the default FlushInterval (100ms) and reports the storage PUTs it cost:
// per second and per MB written. The goal is about 10 PUTs/s whatever the
// write rate. It ignores b.N (one 3 s run per rate).
func BenchmarkS3SteadyWrites(b *testing.B) {
	for _, rate := range []int{100, 1000, 10000, 50000} {
		b.Run(fmt.Sprintf("rate=%d/s", rate), func(b *testing.B) {
			loc := location(b)
			db := open(b, loc, nil)
			defer db.Close()
			const dur = 3 * time.Second
			const tick = 10 * time.Millisecond
			perTick := max(rate/int(time.Second/tick), 1)
			before := db.Metrics().Storage
			start := time.Now()
			tk := time.NewTicker(tick)
			defer tk.Stop()
			n := 0
			b.ResetTimer()
			for time.Since(start) < dur {
				<-tk.C
				for range perTick {
					if err := db.Put(key("steady", n), benchValue); err != nil {
						b.Fatal(err)
					}
					n++
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			after := db.Metrics().Storage
			d := storageDelta(before, after)
			mb := float64(n*(len(benchValue)+13)) / 1e6
			b.ReportMetric(float64(d["put"])/elapsed.Seconds(), "PUTs/s")
			b.ReportMetric(float64(d["put"])/mb, "PUTs/MB")
			b.ReportMetric(float64(n)/elapsed.Seconds(), "writes/s")
			b.ReportMetric(float64(d["put"]+d["get"]+d["range_get"]+d["list"]+d["delete"]+d["head"]+d["post"])/elapsed.Seconds(), "reqs/s")
		})
	}
}

// BenchmarkS3SyncedPut measures the latency of one synced put (one WAL
// part upload) at the default FlushInterval: p50 and p99.
func BenchmarkS3SyncedPut(b *testing.B) {
	db := open(b, location(b), nil)
	defer db.Close()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if err := db.PutWith(key("sync", i), benchValue, mayfly.NoExpiry(), mayfly.Sync); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(int(float64(len(lat))*p), len(lat)-1)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

func benchUnsynced(b *testing.B, loc string) {
	db := open(b, loc, nil)
	defer db.Close()
	b.SetBytes(int64(len(benchValue) + 13))
	b.ResetTimer()
	for i := range b.N {
		if err := db.Put(key("unsync", i), benchValue); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if m := db.Metrics().Storage; m != nil {
		b.ReportMetric(float64(m["put"]), "PUTs")
	}
}

// BenchmarkS3UnsyncedPut and BenchmarkLocalUnsyncedPut compare unsynced put
// throughput on S3 and on a local directory.
func BenchmarkS3UnsyncedPut(b *testing.B) { benchUnsynced(b, location(b)) }

func BenchmarkLocalUnsyncedPut(b *testing.B) { benchUnsynced(b, b.TempDir()) }
