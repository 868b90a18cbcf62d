package bench

import (
	"io"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mayflydb/mayfly"
)

// memSampler records the Mayfly engine's memory breakdown at the moment of
// the worker's highest resident set: every 10 ms it reads the RSS from
// /proc/self/statm and, when it is the highest yet, takes
// mayfly.MemoryUsage (a few atomic loads) and the Go runtime's mapped
// memory. It answers "what was the peak RSS made of", which the
// end-of-run figures cannot: by then memtables are flushed and pools
// drained.
type memSampler struct {
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	rss      int64 // highest RSS seen
	anon     int64 // its anonymous part (resident minus file-backed)
	goMapped int64 // Go runtime memory (/memory/classes/total) then
	mem      mayfly.MemoryMetrics
}

func startMemSampler() *memSampler {
	s := &memSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *memSampler) run() {
	defer close(s.done)
	// The file is opened once and read again from offset 0 at each tick
	// (procfs renders it afresh on every read from the start): an open of a
	// /proc path per tick at times took a large share of the worker's CPU,
	// which only Mayfly's workers would pay (bench/HISTORY.md, "Lanes,
	// eight-word buckets, and a sampler that perturbed Mayfly").
	statm, err := os.Open("/proc/self/statm")
	if err != nil {
		return
	}
	defer statm.Close()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if !s.sample(statm) {
			return
		}
	}
}

// sample reads the RSS from statm, an open /proc/self/statm, and records
// the breakdown if it is the highest yet; false if statm cannot be read.
func (s *memSampler) sample(statm *os.File) bool {
	var buf [256]byte
	n, err := statm.ReadAt(buf[:], 0)
	if err != nil && err != io.EOF {
		return false
	}
	f := strings.Fields(string(buf[:n]))
	if len(f) < 3 {
		return false
	}
	page := int64(os.Getpagesize())
	res, _ := strconv.ParseInt(f[1], 10, 64)
	shared, _ := strconv.ParseInt(f[2], 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	if res*page <= s.rss {
		return true
	}
	gm := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(gm)
	s.rss, s.anon, s.mem = res*page, (res-shared)*page, mayfly.MemoryUsage()
	if gm[0].Value.Kind() == metrics.KindUint64 {
		s.goMapped = int64(gm[0].Value.Uint64())
	}
	return true
}

// Stop ends the sampling.
func (s *memSampler) Stop() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// addTo adds the figures at the highest RSS to stats, in MB: rss and anon
// at the sample, the Go runtime's mapped memory, and each off-heap
// component (prefixed peak_).
func (s *memSampler) addTo(stats map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rss == 0 {
		return
	}
	mb := func(n int64) float64 { return float64(n) / 1e6 }
	stats["peak_rss_sampled_mb"] = mb(s.rss)
	stats["peak_anon_mb"] = mb(s.anon)
	stats["peak_go_mapped_mb"] = mb(s.goMapped)
	for _, c := range s.mem.Components() {
		stats["peak_offheap_"+c.Name+"_mb"] = mb(c.Bytes)
	}
	stats["peak_offheap_block_cache_in_use_mb"] = mb(s.mem.BlockCacheInUse)
	stats["peak_offheap_total_mb"] = mb(s.mem.Total)
}
