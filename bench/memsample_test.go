package bench

import (
	"os"
	"runtime"
	"testing"
)

// TestMemSamplerReadsFreshRSS: the sampler keeps /proc/self/statm open and
// reads it again from the start, and each read reports the RSS of that
// moment: after a buffer is touched, the recorded peak has grown by most of
// it, and it is what addTo reports.
func TestMemSamplerReadsFreshRSS(t *testing.T) {
	statm, err := os.Open("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	defer statm.Close()
	s := &memSampler{}
	if !s.sample(statm) || s.rss <= 0 {
		t.Fatalf("first sample: ok false or RSS %d", s.rss)
	}
	before := s.rss
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	if !s.sample(statm) {
		t.Fatal("second sample failed")
	}
	runtime.KeepAlive(buf)
	if s.rss-before < 48<<20 {
		t.Fatalf("RSS %d after touching 64 MiB, %d before: the second read was not fresh", s.rss, before)
	}
	stats := map[string]float64{}
	s.addTo(stats)
	if got := stats["peak_rss_sampled_mb"]; got != float64(s.rss)/1e6 {
		t.Fatalf("addTo reports %v MB, the sample %d bytes", got, s.rss)
	}
}
