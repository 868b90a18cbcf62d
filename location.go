package mayfly

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mayflydb/mayfly/storage"
)

// knownDrivers names the packages of Mayfly's own storage drivers by the
// scheme each registers, for the error that tells a program which import it
// lacks. The core imports none of them.
var knownDrivers = map[string]string{
	"s3": "github.com/mayflydb/mayfly/storage/s3",
}

// openLocation opens the storage for a location given to Open: a local
// directory, or a URL "scheme://..." opened by the driver registered for
// its scheme (storage.RegisterScheme). The S3 driver, registered by
// importing github.com/mayflydb/mayfly/storage/s3, takes URLs of the form
// s3://bucket/prefix?endpoint=http://host:port&region=r&path_style=true
// (credentials come from the standard AWS chain: environment, shared
// files, instance roles; never from the URL). A URL whose scheme has no
// driver, or that its driver finds malformed, fails with an error wrapping
// ErrInvalidOptions. With readOnly a local directory must exist and is
// opened with storage.OpenLocalReadOnly, which creates nothing; a driver
// is asked to create nothing either.
func openLocation(ctx context.Context, location string, readOnly bool) (storage.Storage, error) {
	if location == "" {
		return nil, fmt.Errorf("%w: empty location", ErrInvalidOptions)
	}
	if scheme, ok := storage.SchemeOf(location); ok {
		open, ok := storage.LookupScheme(scheme)
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrInvalidOptions, noDriver(scheme))
		}
		s, err := open(ctx, location, readOnly)
		if err != nil {
			if errors.Is(err, storage.ErrInvalidLocation) {
				err = fmt.Errorf("%w: %w", ErrInvalidOptions, err)
			}
			return nil, err
		}
		return s, nil
	}
	if readOnly {
		return storage.OpenLocalReadOnly(location)
	}
	return storage.NewLocal(location)
}

// noDriver says that scheme has no registered driver and what to import.
func noDriver(scheme string) string {
	if pkg, ok := knownDrivers[scheme]; ok {
		return fmt.Sprintf("no storage driver is registered for %s:// locations; the program must import _ %q", scheme, pkg)
	}
	registered := "none"
	if names := storage.Schemes(); len(names) > 0 {
		registered = strings.Join(names, ", ")
	}
	return fmt.Sprintf("no storage driver is registered for %s:// locations (registered: %s); the program must import the package of its driver", scheme, registered)
}

// OpenStorage opens the storage at location for reading, as a read-only
// Open does: a local directory, which must exist, or a URL of a registered
// driver (s3:// with github.com/mayflydb/mayfly/storage/s3 imported). It
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
