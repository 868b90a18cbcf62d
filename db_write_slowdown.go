package mayfly

import "time"

// Level-0 write slowdown (RFC 0004, "Backpressure").
//
// While level 0 holds at least L0SlowdownWritesThreshold files (and fewer
// than L0StopWritesThreshold, where writes stop), every commit group is
// charged a delay for its bytes at a write rate that falls as level 0 fills:
//
//	rate(l0) = slowdownStopRate * ((stop - slow) / (l0 - slow + 1))^2
//
// so (stop-slow)^2 times slowdownStopRate at the slowdown threshold (no
// brake to speak of), a quarter of that one file past the threshold, and
// down to slowdownStopRate one file below the stop threshold. The square
// keeps the first files of the zone nearly free and brakes hard near the
// stop (RFC 0004, "Backpressure", on the linear fall it replaced).
//
// The delay is a debt carried by the commit pipeline: it is slept off once
// it reaches slowdownQuantum, in slices of at most slowdownSlice with level 0
// looked at again between slices, and forgiven as soon as level 0 is below
// the slowdown threshold again. A sleep that overruns (timers on a loaded
// machine) is credited to the following commits. A writer is thus held to
// a byte rate, however small its commits, instead of to one commit per
// sleep.

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
	r := float64(stop-slow) / float64(l0-slow+1)
	rate := float64(slowdownStopRate) * r * r
	return time.Duration(float64(bytes) / rate * float64(time.Second))
}

// slowdownState is the commit pipeline's slowdown debt; guarded by commitMu.
type slowdownState struct {
	// debt is the delay owed; negative after a sleep that overran its
	// request (a loaded machine's timer), a credit that later commits use
	// up before sleeping again, so that the writer is held to the rate and
	// not below it. At most slowdownSlice of credit is kept.
	debt time.Duration
	// sleepFn sleeps and returns the time slept; nil means timeSleep.
	// Tests replace it to record delays instead of sleeping.
	sleepFn func(time.Duration) time.Duration
}

// next returns the slice of the debt to sleep now, or 0 while the debt is
// below slowdownQuantum.
func (s *slowdownState) next() time.Duration {
	if s.debt < slowdownQuantum {
		return 0
	}
	return min(s.debt, slowdownSlice)
}

// sleep sleeps for d, a slice returned by next, and takes the time slept,
// or d if that was less, off the debt.
func (s *slowdownState) sleep(d time.Duration) {
	sleep := s.sleepFn
	if sleep == nil {
		sleep = timeSleep
	}
	s.debt = max(s.debt-max(d, sleep(d)), -slowdownSlice)
}

// timeSleep sleeps for d and returns the time it took.
func timeSleep(d time.Duration) time.Duration {
	t := time.Now()
	time.Sleep(d)
	return time.Since(t)
}
