// Package s3test holds what Mayfly's test suites need to run a database on
// a real S3-protocol server: which backend a run asked for, the server's
// URL, and a fresh location per test.
//
// The server is named by MAYFLY_S3_URL (an s3://bucket/prefix?endpoint=...
// URL; scripts/s3/start-versitygw.sh starts a local versitygw and prints it
// together with the AWS_* credentials). A test that needs the server and
// does not find it is skipped, except under CI=true, where it fails: CI
// must never silently skip the object-storage runs.
//
// MAYFLY_TEST_BACKEND selects the backend of suites that can run on
// several: "local" (the default: a local temporary directory) or "s3".
//
// Importing the package imports the S3 driver (storage/s3), so that a
// suite can give its locations to mayfly.Open.
package s3test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	// The S3 driver: the locations Location returns are opened with
	// mayfly.Open, which needs it registered.
	_ "github.com/mayflydb/mayfly/storage/s3"
)

// Environment variables read by this package.
const (
	// URLEnv names the S3 server and the bucket and prefix tests use.
	URLEnv = "MAYFLY_S3_URL"
	// BackendEnv selects the backend of suites that run on several.
	BackendEnv = "MAYFLY_TEST_BACKEND"
)

// Backend is a storage backend a suite can run on.
type Backend string

// The backends MAYFLY_TEST_BACKEND accepts.
const (
	Local Backend = "local"
	S3    Backend = "s3"
)

// SelectedBackend returns the backend MAYFLY_TEST_BACKEND asks for (Local
// when unset), or an error naming the accepted values.
func SelectedBackend() (Backend, error) {
	switch v := os.Getenv(BackendEnv); v {
	case "", string(Local):
		return Local, nil
	case string(S3):
		return S3, nil
	default:
		return "", fmt.Errorf("%s=%q: want %q or %q", BackendEnv, v, Local, S3)
	}
}

// MustBackend is SelectedBackend that fails tb on a bad value.
func MustBackend(tb testing.TB) Backend {
	tb.Helper()
	b, err := SelectedBackend()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Unavailable says why the S3 server cannot be used ("" when it can): the
// URL or the credentials are missing, or the URL is not an s3:// URL.
func Unavailable() string {
	raw := os.Getenv(URLEnv)
	if raw == "" || os.Getenv("AWS_ACCESS_KEY_ID") == "" || os.Getenv("AWS_SECRET_ACCESS_KEY") == "" {
		return URLEnv + ", AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set to run on S3: " +
			`eval "$(bash scripts/s3/start-versitygw.sh)" first`
	}
	if _, err := parseBase(raw); err != nil {
		return err.Error()
	}
	return ""
}

// Required reports whether a missing server is a failure rather than a
// skip: it is under CI=true.
func Required() bool { return os.Getenv("CI") == "true" }

// Require skips tb when the server cannot be used, or fails it under
// CI=true.
func Require(tb testing.TB) {
	tb.Helper()
	if why := Unavailable(); why != "" {
		if Required() {
			tb.Fatalf("CI=true: %s", why)
		}
		tb.Skip(why)
	}
}

func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the whole URL; say only what is wrong.
		return nil, fmt.Errorf("%s does not parse as a URL", URLEnv)
	}
	if u.Scheme != "s3" || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("%s must look like s3://bucket/prefix?endpoint=... (no credentials)", URLEnv)
	}
	return u, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9-]+`)

// NewLocation returns a location no other call returns: MAYFLY_S3_URL with
// <name>-<random hex> appended to its prefix (name is reduced to letters,
// digits and dashes, at most 60 of them). The server must be available.
func NewLocation(name string) (string, error) {
	u, err := parseBase(os.Getenv(URLEnv))
	if err != nil {
		return "", err
	}
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	name = strings.Trim(unsafeChars.ReplaceAllString(name, "-"), "-")
	if len(name) > 60 {
		name = name[:60]
	}
	u.Path = "/" + path.Join(strings.Trim(u.Path, "/"), name+"-"+hex.EncodeToString(r[:]))
	return u.String(), nil
}

// Location returns a fresh location for tb alone (see NewLocation), named
// after the test. It skips or fails tb like Require when the server cannot
// be used.
func Location(tb testing.TB) string {
	tb.Helper()
	Require(tb)
	loc, err := NewLocation(tb.Name())
	if err != nil {
		tb.Fatal(err)
	}
	return loc
}

// Redact drops the query of a location (long, and not needed to tell
// locations apart) for messages.
func Redact(loc string) string {
	if i := strings.IndexByte(loc, '?'); i >= 0 {
		return loc[:i]
	}
	return loc
}
