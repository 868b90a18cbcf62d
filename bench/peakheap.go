package bench

import (
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// peakHeapProfiler writes a heap profile each time a garbage collection
// ends with more live heap than any before it, so the file left behind
// describes the collection with the most live heap of the timed phase.
// That collection sets the largest heap goal (GOGC=100: twice the live
// heap), and with it most of the Go heap's peak RSS; a profile taken at
// the end of the phase (MemProfile) may miss it.
//
// The live heap is polled every 2 ms from runtime/metrics; the heap
// profile's in-use figures are those of the last completed collection,
// which is the one just observed unless another ends within the poll.
type peakHeapProfiler struct {
	path string
	stop chan struct{}
	done chan struct{}
	// Peak is the largest live heap seen, in bytes.
	Peak uint64
}

func startPeakHeap(path string) *peakHeapProfiler {
	p := &peakHeapProfiler{path: path, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *peakHeapProfiler) run() {
	defer close(p.done)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if v := s[0].Value.Uint64(); v > p.Peak {
			p.Peak = v
			if f, err := os.Create(p.path); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	}
}

// Stop ends the polling; the last profile written stays.
func (p *peakHeapProfiler) Stop() {
	close(p.stop)
	<-p.done
}
