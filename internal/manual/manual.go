// Package manual hands out byte buffers that live outside the Go heap.
//
// Memory from New is not scanned by the garbage collector and does not count
// toward its heap goal, so a large, long-lived buffer (a memtable arena
// chunk, a cached block) costs its own size in resident memory rather than up
// to twice that under the default GOGC. The price is manual lifetime
// management: every buffer must be given back with Free exactly once, after
// the last reader of its bytes is done. Reading a buffer after Free is a
// use-after-free: on platforms where New maps memory it faults, elsewhere it
// reads bytes that may since have been reused.
//
// On Unix New maps anonymous private pages (mmap) and Free unmaps them, so
// memory returns to the operating system at once. On other platforms New
// falls back to the Go heap and Free only updates the counters.
package manual

import "sync/atomic"

var (
	allocated atomic.Int64 // bytes currently handed out
	buffers   atomic.Int64 // buffers currently handed out
)

// New returns a zeroed buffer of n bytes (len and cap n) outside the Go heap.
// n must be positive. The buffer must be released with Free. New panics if the
// operating system refuses the memory, as a failed make would.
func New(n int) []byte { return newBuffer(PurposeOther, n) }

// NewFor is New for a buffer counted under purpose p; free it with FreeFor
// and the same purpose.
func NewFor(p Purpose, n int) []byte { return newBuffer(p, n) }

func newBuffer(p Purpose, n int) []byte {
	if n <= 0 {
		panic("manual: New of a non-positive size")
	}
	b := alloc(n)
	allocated.Add(int64(cap(b)))
	buffers.Add(1)
	purposeBytes[p].Add(int64(cap(b)))
	return b
}

// Free releases a buffer obtained from New. b must be that buffer or a
// reslice of it starting at its first byte (Free releases cap(b) bytes). Free
// of nil is a no-op.
func Free(b []byte) { FreeFor(PurposeOther, b) }

// FreeFor is Free for a buffer counted under purpose p (by NewFor or Move).
func FreeFor(p Purpose, b []byte) {
	if b == nil {
		return
	}
	b = b[:cap(b)]
	purposeBytes[p].Add(-int64(len(b)))
	allocated.Add(-int64(len(b)))
	buffers.Add(-1)
	free(b)
}

// Allocated reports the bytes and the number of buffers handed out by New and
// not yet freed. Tests use it to check that every buffer is given back.
func Allocated() (bytes, count int64) {
	return allocated.Load(), buffers.Load()
}

// Discard takes the pages of b, a part of a buffer from New that starts on
// a page boundary, out of resident memory while the buffer stays handed out
// and usable: where New maps memory, b's bytes read as zeros afterwards and
// its pages come back as they are next written; elsewhere nothing happens.
// The last page is dropped whole, so b should end at the buffer's end or on
// a page boundary.
func Discard(b []byte) { discard(b) }
