package bench

import (
	"math/bits"
	"time"
)

// Hist is a log-linear latency histogram (32 buckets per power of two,
// about 3% resolution) that costs nothing to grow.
type Hist struct {
	counts [64 + 58*32]uint64
	n      uint64
}

func bucketOf(v uint64) int {
	if v < 64 {
		return int(v)
	}
	e := bits.Len64(v) - 6
	return 64 + (e-1)*32 + int(v>>e) - 32
}

func bucketLow(i int) uint64 {
	if i < 64 {
		return uint64(i)
	}
	e := (i-64)/32 + 1
	s := (i - 64) % 32
	return uint64(32+s) << e
}

// Record adds one latency.
func (h *Hist) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	h.n++
}

// Count is the number of recorded latencies.
func (h *Hist) Count() uint64 { return h.n }

// Quantile returns the q-quantile (0..1) as the bucket's lower bound.
func (h *Hist) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	target := uint64(q * float64(h.n))
	if target >= h.n {
		target = h.n - 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > target {
			return time.Duration(bucketLow(i))
		}
	}
	return 0
}

// Merge adds o's latencies to h.
func (h *Hist) Merge(o *Hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}
