package manual

import (
	"fmt"
	"sync"
	"sync/atomic"
)

var (
	idleBytes   atomic.Int64 // bytes held idle by FreeLists
	idleBuffers atomic.Int64 // buffers held idle by FreeLists
)

// Idle reports the bytes and the number of buffers that FreeLists hold for
// reuse: allocated (they count in Allocated) but used by nobody. A test that
// checks every buffer was given back compares Allocated minus Idle.
func Idle() (bytes, count int64) {
	return idleBytes.Load(), idleBuffers.Load()
}

// FreeList recycles buffers of one fixed size, so that a hot path that
// needs a buffer per operation (a table write) maps memory once rather than
// once per operation. It keeps at most Max idle buffers; a buffer Put when
// the list is full is freed at once, so the list's idle memory is bounded by
// Max*Size bytes. Idle buffers are otherwise freed only by Close: the list
// trades that bounded amount of resident memory for no system call per Get.
// A FreeList is safe for concurrent use; its zero value is not usable.
type FreeList struct {
	size    int
	max     int
	purpose Purpose

	mu     sync.Mutex
	idle   [][]byte
	closed bool
}

// NewFreeList returns a FreeList of buffers of size bytes that keeps at most
// max of them idle. size must be positive and max at least 0.
func NewFreeList(size, max int) *FreeList {
	if size <= 0 || max < 0 {
		panic(fmt.Sprintf("manual: NewFreeList(%d, %d)", size, max))
	}
	return &FreeList{size: size, max: max, idle: make([][]byte, 0, max)}
}

// NewFreeListFor is NewFreeList for buffers counted under purpose p: Get
// returns buffers from NewFor(p, size), and Put gives to FreeFor(p, ...).
func NewFreeListFor(p Purpose, size, max int) *FreeList {
	l := NewFreeList(size, max)
	l.purpose = p
	return l
}

// Size returns the length of the list's buffers.
func (l *FreeList) Size() int { return l.size }

// Get returns a buffer of Size bytes (len and cap) from the list, or a new
// one if the list is empty. Unlike New's, a recycled buffer is not zeroed.
// The caller owns it until it hands it to Put (or Free).
func (l *FreeList) Get() []byte {
	l.mu.Lock()
	if n := len(l.idle); n > 0 {
		b := l.idle[n-1]
		l.idle[n-1] = nil
		l.idle = l.idle[:n-1]
		l.mu.Unlock()
		idleBytes.Add(-int64(len(b)))
		idleBuffers.Add(-1)
		return b
	}
	l.mu.Unlock()
	return NewFor(l.purpose, l.size)
}

// Put gives back a buffer obtained from Get; the caller must not use it
// afterwards. b may be a reslice of the buffer from its first byte. Put
// panics if b's capacity is not the list's Size (a buffer from elsewhere).
func (l *FreeList) Put(b []byte) {
	if cap(b) != l.size {
		panic(fmt.Sprintf("manual: FreeList.Put of a %d-byte buffer into a list of %d-byte buffers", cap(b), l.size))
	}
	b = b[:l.size]
	l.mu.Lock()
	if !l.closed && len(l.idle) < l.max {
		l.idle = append(l.idle, b)
		l.mu.Unlock()
		idleBytes.Add(int64(len(b)))
		idleBuffers.Add(1)
		return
	}
	l.mu.Unlock()
	FreeFor(l.purpose, b)
}

// Close frees the idle buffers; buffers Put afterwards are freed at once
// rather than kept, so after Close the list holds no memory. Get still
// works. Close is idempotent.
func (l *FreeList) Close() {
	l.mu.Lock()
	idle := l.idle
	l.idle = nil
	l.closed = true
	l.mu.Unlock()
	for _, b := range idle {
		idleBytes.Add(-int64(len(b)))
		idleBuffers.Add(-1)
		FreeFor(l.purpose, b)
	}
}
