package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

// serverConfig returns the configuration of the test server named by
// MAYFLY_S3_URL (see scripts/s3/start-versitygw.sh). Without it the test is
// skipped, or fails when CI=true.
func serverConfig(t *testing.T) Config {
	t.Helper()
	raw := os.Getenv("MAYFLY_S3_URL")
	if raw == "" || os.Getenv("AWS_ACCESS_KEY_ID") == "" || os.Getenv("AWS_SECRET_ACCESS_KEY") == "" {
		msg := "MAYFLY_S3_URL, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set to run the S3 tests: " +
			`eval "$(scripts/s3/start-versitygw.sh)"`
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cfg, err := ParseURL(raw)
	if err != nil {
		t.Fatalf("MAYFLY_S3_URL: %v", err)
	}
	return cfg
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// uniquePrefix gives each test its own corner of the bucket.
func uniquePrefix(t *testing.T, base string) string {
	p := unsafeChars.ReplaceAllString(t.Name(), "_") + "-" + randomHex(4)
	if base != "" {
		p = base + "/" + p
	}
	return p
}

// openStore opens a Store on a fresh prefix of the test server; mod may
// adjust the configuration.
func openStore(t *testing.T, mod func(*Config)) *Store {
	t.Helper()
	cfg := serverConfig(t)
	cfg.Prefix = uniquePrefix(t, cfg.Prefix)
	if mod != nil {
		mod(&cfg)
	}
	return openWith(t, cfg)
}

func openWith(t *testing.T, cfg Config) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustList(t *testing.T, s storage.Storage, dir string) []string {
	t.Helper()
	names, err := s.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func mustRead(t *testing.T, s storage.Storage, name string) []byte {
	t.Helper()
	b, err := storage.ReadAll(s, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitFor polls cond every few milliseconds until it holds or the bounded
// deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
