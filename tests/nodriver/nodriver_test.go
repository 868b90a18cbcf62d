package nodriver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/storage"
)

const s3Driver = `import _ "github.com/mayflydb/mayfly/storage/s3"`

// TestS3WithoutDriver checks that Open and OpenStorage of an s3:// URL,
// in a program that does not import the S3 driver, fail with an error
// wrapping ErrInvalidOptions that names the import to add, and write
// nothing (the URL is not taken for a local directory).
func TestS3WithoutDriver(t *testing.T) {
	if _, ok := storage.LookupScheme("s3"); ok {
		t.Fatal("the s3 scheme is registered: something this test links imports the S3 driver")
	}
	t.Chdir(t.TempDir())
	const loc = "s3://bucket/db?endpoint=http://127.0.0.1:1"
	db, err := mayfly.Open(loc, nil)
	if err == nil {
		db.Close()
	}
	_, serr := mayfly.OpenStorage(context.Background(), loc)
	for what, err := range map[string]error{"Open": err, "OpenStorage": serr} {
		if !errors.Is(err, mayfly.ErrInvalidOptions) || !strings.Contains(err.Error(), s3Driver) {
			t.Errorf("%s(%q) = %v; want an error wrapping ErrInvalidOptions that says %s", what, loc, err, s3Driver)
		}
	}
	if names, _ := filepath.Glob("*"); len(names) != 0 {
		t.Errorf("the failed opens created %v", names)
	}
	if _, err := os.Stat("s3:"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a local directory s3: exists: %v", err)
	}
}
