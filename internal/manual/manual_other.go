//go:build !unix

package manual

func alloc(n int) []byte { return make([]byte, n) }

func free([]byte) {}

func discard([]byte) {}
