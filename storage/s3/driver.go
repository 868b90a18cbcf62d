package s3

import (
	"context"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

// Scheme is the URL scheme this package registers: locations of the form
// s3://bucket/prefix?endpoint=...&region=...&path_style=... (ParseURL).
const Scheme = "s3"

// openTimeout bounds opening a location (the bucket check of New).
const openTimeout = 30 * time.Second

func init() { storage.RegisterScheme(Scheme, openURL) }

// openURL is the registered storage.OpenFunc: it parses location (errors
// wrap storage.ErrInvalidLocation) and connects with New, which creates
// nothing, so readOnly needs no care here: objects are only ever created by
// writes.
func openURL(ctx context.Context, location string, _ bool) (storage.Storage, error) {
	cfg, err := ParseURL(location)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", storage.ErrInvalidLocation, err)
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	s, err := New(ctx, cfg)
	if err != nil {
		return nil, err // not a nil *Store in a non-nil Storage
	}
	return s, nil
}
