package mayfly

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenRejectsOversizedBloom: a BloomBitsPerKey above the bound fails
// Open with ErrInvalidOptions before anything is created; the bound itself
// is accepted.
func TestOpenRejectsOversizedBloom(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	_, err := Open(dir, &Options{BloomBitsPerKey: MaxBloomBitsPerKey + 1})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open with BloomBitsPerKey %d: %v, want ErrInvalidOptions", MaxBloomBitsPerKey+1, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a rejected Open left %s behind (stat: %v)", dir, err)
	}
	db, err := Open(dir, &Options{BloomBitsPerKey: MaxBloomBitsPerKey})
	if err != nil {
		t.Fatalf("Open with BloomBitsPerKey %d: %v", MaxBloomBitsPerKey, err)
	}
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get after flush with a %d-bit filter: %q, %v", MaxBloomBitsPerKey, v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
