// Command rsscheck measures Mayfly's peak resident memory under a simple
// load: it opens a database with default options in a temporary directory,
// writes -keys rows (16-byte keys, 100-byte half-compressible values, every
// other row with a TTL), reads -reads random keys, scans everything, and
// prints the peak RSS (VmHWM from /proc/self/status) after each phase, the
// engine's metrics and the durations.
//
//	cd bench && go run ./cmd/rsscheck -keys 1000000
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mayflydb/mayfly"
)

const (
	keySize   = 16
	valueSize = 100
	numValues = 1024 // distinct values cycled through
)

func main() {
	keys := flag.Int("keys", 1_000_000, "rows to load")
	reads := flag.Int("reads", 200_000, "random point reads after the load")
	dirFlag := flag.String("dir", "", "database directory (default: a new temporary directory, removed at exit)")
	ttl := flag.Duration("ttl", time.Hour, "TTL of every other row")
	flag.Parse()
	log.SetFlags(0)

	dir := *dirFlag
	if dir == "" {
		d, err := os.MkdirTemp("", "mayfly-rsscheck")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}

	fmt.Printf("rsscheck: keys=%d reads=%d key=%dB value=%dB (half random, half pattern), TTL %v on every other row\n",
		*keys, *reads, keySize, valueSize, *ttl)
	fmt.Printf("go=%s GOMAXPROCS=%d GOGC=%q GOMEMLIMIT=%q dir=%s\n",
		runtime.Version(), runtime.GOMAXPROCS(0), os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT"), dir)
	phase("start", 0)

	t0 := time.Now()
	db, err := mayfly.Open(dir, nil) // default options
	if err != nil {
		log.Fatal(err)
	}
	phase("open", time.Since(t0))

	vals := valuePool()
	k := make([]byte, keySize)

	// Load.
	t0 = time.Now()
	for i := 0; i < *keys; i++ {
		key(k, uint64(i))
		v := vals[i%numValues]
		if i%2 == 0 {
			err = db.PutTTL(k, v, mayfly.ExpireAfter(*ttl))
		} else {
			err = db.Put(k, v)
		}
		if err != nil {
			log.Fatalf("put %d: %v", i, err)
		}
	}
	loadDur := time.Since(t0)
	phase("load", loadDur)
	fmt.Printf("  load: %.0f rows/s, %.1f MB/s of key+value\n",
		float64(*keys)/loadDur.Seconds(), float64(*keys*(keySize+valueSize))/loadDur.Seconds()/1e6)
	printMetrics(db.Metrics())

	// Random reads.
	r := rand.New(rand.NewPCG(42, 43))
	t0 = time.Now()
	hits := 0
	for range *reads {
		key(k, r.Uint64N(uint64(*keys)))
		if _, err := db.Get(k); err == nil {
			hits++
		} else if err != mayfly.ErrNotFound {
			log.Fatal(err)
		}
	}
	readDur := time.Since(t0)
	phase("reads", readDur)
	fmt.Printf("  reads: %d/%d hits, %.2f µs/read\n", hits, *reads, float64(readDur.Microseconds())/float64(max(*reads, 1)))

	// Full scan.
	t0 = time.Now()
	var scanErr error
	n := 0
	for range db.Scan(nil, nil, &scanErr) {
		n++
	}
	if scanErr != nil {
		log.Fatal(scanErr)
	}
	scanDur := time.Since(t0)
	phase("scan", scanDur)
	fmt.Printf("  scan: %d rows, %.0f ns/row\n", n, float64(scanDur.Nanoseconds())/float64(max(n, 1)))

	m := db.Metrics()
	printMetrics(m)
	t0 = time.Now()
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	phase("close", time.Since(t0))

	hwm := procStatus("VmHWM")
	const mib = 1 << 20
	const mt = mayfly.DefaultMemtableSize
	budget := int64(mt*(1+2) + 64*mib)
	fmt.Printf("\nPEAK RSS (VmHWM): %.1f MiB; memtable+cache budget %.0f MiB (MemtableSize %d MiB x (1 + 2 immutable) + BlockCacheSize 64 MiB), ratio %.2f\n",
		float64(hwm)/mib, float64(budget)/mib, mt/mib, float64(hwm)/float64(budget))
	if n != *keys || hits != *reads {
		log.Fatalf("check failed: scanned %d of %d rows, %d of %d reads hit", n, *keys, hits, *reads)
	}
}

// phase prints the process's memory after a phase. VmHWM is the peak RSS
// since the process started, so each line's peak covers all phases so far.
func phase(name string, d time.Duration) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	const mib = 1 << 20
	fmt.Printf("%-6s %10v  VmHWM=%7.1f MiB  VmRSS=%7.1f MiB  heapInuse=%7.1f MiB  heapSys=%7.1f MiB  goSys=%7.1f MiB  numGC=%d\n",
		name, d.Round(time.Millisecond), float64(procStatus("VmHWM"))/mib, float64(procStatus("VmRSS"))/mib,
		float64(ms.HeapInuse)/mib, float64(ms.HeapSys)/mib, float64(ms.Sys)/mib, ms.NumGC)
}

func printMetrics(m mayfly.Metrics) {
	fmt.Printf("  metrics: rowsWritten=%d flushes=%d flushBytes=%d compactions=%d compactionBytesRead=%d compactionBytesWritten=%d writeAmp=%.2f\n",
		m.RowsWritten, m.Flushes, m.FlushBytes, m.Compactions, m.CompactionBytesRead, m.CompactionBytesWritten, m.WriteAmplification())
	fmt.Printf("           stalls=%d stallTime=%v memtable=%.1f MiB immutable=%d (%.1f MiB) walBytes=%d walSyncs=%d walSegments=%d\n",
		m.WriteStalls, m.WriteStallTime.Round(time.Millisecond), float64(m.MemtableBytes)/(1<<20), m.ImmutableMemtables,
		float64(m.ImmutableBytes)/(1<<20), m.WALBytes, m.WALSyncs, m.WALSegmentsCreated)
	fmt.Printf("           gets=%d rowsRead=%d bloomNeg=%d bloomFP=%d cacheHits=%d cacheMisses=%d cacheBytes=%.1f MiB diskBytes=%.1f MiB\n",
		m.Gets, m.RowsRead, m.BloomNegatives, m.BloomFalsePositives, m.BlockCacheHits, m.BlockCacheMisses,
		float64(m.BlockCacheBytes)/(1<<20), float64(m.DiskBytes())/(1<<20))
	for l, lm := range m.Levels {
		if lm.Files == 0 {
			continue
		}
		fmt.Printf("           L%d: files=%d bytes=%.1f MiB rows=%d ttlRows=%d tombstones=%d\n",
			l, lm.Files, float64(lm.Bytes)/(1<<20), lm.Rows, lm.TTLRows, lm.Tombstones)
	}
}

// procStatus returns a "kB" field of /proc/self/status in bytes, or -1.
func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, rest, ok := strings.Cut(s.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return -1
		}
		return kb << 10
	}
	return -1
}

// key writes the key of row i: distinct for distinct i, in random order.
func key(k []byte, i uint64) {
	binary.BigEndian.PutUint64(k[0:8], splitmix64(i))
	binary.BigEndian.PutUint64(k[8:16], splitmix64(i^0x5555_5555_5555_5555))
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// valuePool returns numValues distinct values, each half random bytes and
// half a repeated pattern.
func valuePool() [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([][]byte, numValues)
	for i := range vals {
		v := make([]byte, valueSize)
		for j := 0; j < valueSize/2; j++ {
			v[j] = byte(r.Uint32())
		}
		for j := valueSize / 2; j < valueSize; j++ {
			v[j] = byte('a' + j%8)
		}
		vals[i] = v
	}
	return vals
}
