package mayfly

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/clock"
)

var churnLive = flag.Int("churn.live", 200_000, "live keys in BenchmarkSessionChurn (TTL window size in writes)")

// dirBytes returns the bytes of every file under dir.
func dirBytes(tb testing.TB, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// BenchmarkSessionChurn models a session store: write-once keys (random, like
// session IDs) with a TTL of 5 s of engine time, written at a steady rate of
// churn.live keys per 5 s, so the live set stays at churn.live keys while the
// total written grows with b.N. It reports space amplification (bytes on disk
// over live logical bytes, averaged over the second half of the run) and
// write amplification. Run long enough for many TTL periods, e.g.
//
//	go test -run '^$' -bench SessionChurn -benchtime 3000000x
func BenchmarkSessionChurn(b *testing.B) {
	const ttl = 5 * time.Second
	live := *churnLive
	clk := clock.NewManual(epoch)
	dir := b.TempDir()
	db, err := Open(dir, &Options{Clock: clk, MemtableSize: 4 << 20, PeriodicCompactionInterval: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	key := make([]byte, 16)
	value := make([]byte, 100)
	for i := range value[:50] {
		value[i] = byte(i*7 + 3) // half compressible, half constant
	}
	rowBytes := int64(len(key) + len(value))
	// The clock advances 1 ms every `step` writes: live writes per TTL.
	step := max(live/int(ttl.Milliseconds()), 1)
	var ampSum float64
	var ampN int
	b.SetBytes(rowBytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(key, uint64(i)*0x9E3779B97F4A7C15)
		binary.BigEndian.PutUint64(key[8:], uint64(i))
		if err := db.PutTTL(key, value, ExpireAfter(ttl)); err != nil {
			b.Fatal(err)
		}
		if i%step == step-1 {
			clk.Advance(time.Millisecond)
		}
		if i > b.N/2 && i%(live/4+1) == 0 && i >= 2*live {
			b.StopTimer()
			liveBytes := int64(min(i+1, live)) * rowBytes
			ampSum += float64(dirBytes(b, dir)) / float64(liveBytes)
			ampN++
			b.StartTimer()
		}
	}
	b.StopTimer()
	if err := db.WaitForCompactions(context.Background()); err != nil {
		b.Fatal(err)
	}
	m := db.Metrics()
	if ampN > 0 {
		b.ReportMetric(ampSum/float64(ampN), "space-amp")
	}
	b.ReportMetric(m.WriteAmplification(), "write-amp")
	b.ReportMetric(float64(b.N)/float64(live), "ttl-periods")
	if testing.Verbose() {
		fmt.Printf("churn: N=%d live=%d disk=%d flushes=%d compactions=%v drops=%d stalls=%d slowdowns=%d levels=%v\n",
			b.N, live, dirBytes(b, dir), m.Flushes, m.CompactionsByKind, m.WholeFileDrops, m.WriteStalls, m.WriteSlowdowns, levelFiles(m))
	}
}

func levelFiles(m Metrics) []int {
	out := make([]int, len(m.Levels))
	for i, l := range m.Levels {
		out[i] = l.Files
	}
	return out
}
