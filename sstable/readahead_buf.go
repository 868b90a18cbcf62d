package sstable

// Read buffers of read-ahead windows.
//
// A window's stored bytes are read with one ReadAt into a buffer that is
// only needed until its blocks are checked and decoded (decodeBlock copies
// even an uncompressed block out, so nothing aliases the buffer after
// fetchWindow). A scan goes through a window of up to ReadAhead bytes every
// few blocks; allocating each buffer afresh made a full scan of a 64 MB
// table set allocate about as many bytes of garbage as it read, which held
// the Go heap (and the process's resident memory) at twice its live size.
// The buffers are therefore recycled through pools, one per power-of-two
// size class from initialReadAhead up to maxPooledWindow; a window above
// that gets a buffer of its own, so the pools never keep a huge one.

import (
	"math/bits"
	"sync"
)

// maxPooledWindow bounds the window read buffers kept for reuse: the
// default read-ahead on an object store (Options.ReadAheadSize).
const maxPooledWindow = 1 << 20

// windowClasses is the number of pooled size classes: initialReadAhead,
// twice that, ..., maxPooledWindow.
const windowClasses = 5

var windowBufPools [windowClasses]sync.Pool // *[]byte of the class's size

// windowClass returns the pool class for a buffer of n bytes, or -1 if it
// is above maxPooledWindow.
func windowClass(n int) int {
	if n > maxPooledWindow {
		return -1
	}
	if n <= initialReadAhead {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(initialReadAhead-1))
}

// getWindowBuf returns a buffer of length n, recycled when n is at most
// maxPooledWindow. Give it back with putWindowBuf once nothing refers to
// its bytes.
func getWindowBuf(n int) *[]byte {
	c := windowClass(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	bp, _ := windowBufPools[c].Get().(*[]byte)
	if bp == nil {
		b := make([]byte, initialReadAhead<<c)
		bp = &b
	}
	*bp = (*bp)[:n]
	return bp
}

// putWindowBuf recycles a buffer from getWindowBuf.
func putWindowBuf(bp *[]byte) {
	if c := windowClass(cap(*bp)); c >= 0 && cap(*bp) == initialReadAhead<<c {
		windowBufPools[c].Put(bp)
	}
}
