//go:build !unix

package manual

func alloc(n int, _ bool) []byte { return make([]byte, n) }

func free([]byte) {}
