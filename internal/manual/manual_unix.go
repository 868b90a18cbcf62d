//go:build unix

package manual

import (
	"fmt"
	"syscall"
)

func alloc(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(fmt.Sprintf("manual: mmap of %d bytes: %v", n, err))
	}
	return b
}

func free(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		panic(fmt.Sprintf("manual: munmap of %d bytes: %v", len(b), err))
	}
}

// discard tells the kernel the pages of b are not needed: they stop being
// resident and read as zeros when next touched.
func discard(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
}
