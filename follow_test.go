package mayfly

import (
	"errors"
	"testing"

	"github.com/mayflydb/mayfly/clock"
)

// TestRefreshOnWriterIsRefused: a writer has no follower state; Refresh
// on it fails with ErrInvalidOptions and reports no change.
func TestRefreshOnWriterIsRefused(t *testing.T) {
	db := openTestDB(t, t.TempDir(), clock.NewManual(epoch), nil)
	defer db.Close()
	if db.follow != nil {
		t.Fatal("a writer has follower state")
	}
	changed, err := db.Refresh()
	if changed || !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Refresh on a writer: %v, %v; want false, ErrInvalidOptions", changed, err)
	}
}
