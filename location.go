package mayfly

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mayflydb/mayfly/storage"
	"github.com/mayflydb/mayfly/storage/s3"
)

// openLocation opens the storage for a location given to Open: a local
// directory, or an S3 URL of the form
// s3://bucket/prefix?endpoint=http://host:port&region=r&path_style=true
// (credentials come from the standard AWS chain: environment, shared
// files, instance roles; never from the URL). With readOnly a local
// directory must exist and is opened with storage.OpenLocalReadOnly, which
// creates nothing; an S3 location is only ever created by writes.
func openLocation(ctx context.Context, location string, readOnly bool) (storage.Storage, error) {
	if location == "" {
		return nil, fmt.Errorf("%w: empty location", ErrInvalidOptions)
	}
	if strings.HasPrefix(location, "s3://") {
		cfg, err := s3.ParseURL(location)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return s3.New(ctx, cfg)
	}
	if readOnly {
		return storage.OpenLocalReadOnly(location)
	}
	return storage.NewLocal(location)
}

// OpenStorage opens the storage at location for reading, as a read-only
// Open does: a local directory, which must exist, or an s3:// URL. It
// creates nothing, takes no lock, and refuses every write with
// storage.ErrReadOnly; the caller closes it. Tools that read a database's
// files without opening the database use it.
func OpenStorage(ctx context.Context, location string) (storage.Storage, error) {
	s, err := openLocation(ctx, location, true)
	if err != nil {
		return nil, err
	}
	return storage.ReadOnly(s), nil
}
