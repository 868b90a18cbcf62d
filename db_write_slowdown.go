package mayfly

import "time"

// Level-0 write slowdown (RFC 0004, "Backpressure").
//
// While level 0 holds at least L0SlowdownWritesThreshold files (and fewer
// than L0StopWritesThreshold, where writes stop), every commit group is
// charged a delay for its bytes at a write rate that falls as level 0 fills:
//
//	rate(l0) = slowdownStopRate * (stop - slow) / (l0 - slow + 1)
//
// so (stop-slow) times slowdownStopRate at the slowdown threshold, down to
// slowdownStopRate one file below the stop threshold. The delay is a debt
// carried by the commit pipeline: it is slept off once it reaches
// slowdownQuantum, in slices of at most slowdownSlice with level 0 looked at
// again between slices, and forgiven as soon as level 0 is below the
// slowdown threshold again. A writer is thus held to a byte rate, however
// small its commits, instead of to one commit per sleep.

// slowdownStopRate is the write rate, in bytes per second, a slowed-down
// writer is held to one level-0 file below the stop threshold: 16 MiB/s,
// RocksDB's default delayed write rate.
const slowdownStopRate = 16 << 20

// slowdownQuantum is the smallest debt that is slept off; smaller debts are
// carried to the next commit group, so that a small commit does not pay for
// a timer's granularity.
const slowdownQuantum = time.Millisecond

// slowdownSlice bounds one sleep, so that a large batch's delay is re-checked
// against level 0 every slice.
const slowdownSlice = 10 * time.Millisecond

// slowdownDelay is the delay owed for bytes written while level 0 holds l0
// files, with thresholds slow <= l0 < stop; 0 outside that range.
func slowdownDelay(l0, slow, stop, bytes int) time.Duration {
	if l0 < slow || l0 >= stop || bytes <= 0 {
		return 0
	}
	rate := float64(slowdownStopRate) * float64(stop-slow) / float64(l0-slow+1)
	return time.Duration(float64(bytes) / rate * float64(time.Second))
}

// slowdownState is the commit pipeline's slowdown debt; guarded by commitMu.
type slowdownState struct {
	debt time.Duration
	// sleepFn replaces time.Sleep in tests; nil means time.Sleep.
	sleepFn func(time.Duration)
}

// next returns the slice of the debt to sleep now and takes it off the
// debt, or 0 while the debt is below slowdownQuantum.
func (s *slowdownState) next() time.Duration {
	if s.debt < slowdownQuantum {
		return 0
	}
	d := min(s.debt, slowdownSlice)
	s.debt -= d
	return d
}

func (s *slowdownState) sleep(d time.Duration) {
	if s.sleepFn != nil {
		s.sleepFn(d)
		return
	}
	time.Sleep(d)
}
