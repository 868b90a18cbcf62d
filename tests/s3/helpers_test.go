// Package s3test runs Mayfly end to end on a real S3-protocol server
// (versitygw, started by scripts/s3/start-versitygw.sh, which exports
// MAYFLY_S3_URL and the AWS_* credentials). Every test uses its own random
// prefix in the bucket, so tests never see each other's objects.
//
// Without MAYFLY_S3_URL the tests skip, except under CI=true where they
// fail: CI must not silently skip the object-storage suite.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly"
	"github.com/mayflydb/mayfly/clock"
	s3env "github.com/mayflydb/mayfly/internal/s3test"
)

// epoch is the manual clock's starting time in every test.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// location returns a fresh S3 location (a random prefix named after the
// test) for this test alone; it skips without a server, or fails under
// CI=true.
func location(tb testing.TB) string { return s3env.Location(tb) }

// open opens loc with o (nil: defaults with clk) and fails the test on error.
func open(tb testing.TB, loc string, o *mayfly.Options) *mayfly.DB {
	tb.Helper()
	db, err := mayfly.Open(loc, o)
	if err != nil {
		tb.Fatalf("open %s: %v", redact(loc), err)
	}
	return db
}

// redact drops the query of a location for messages.
func redact(loc string) string { return s3env.Redact(loc) }

func manual() *clock.Manual { return clock.NewManual(epoch) }

func key(prefix string, i int) []byte { return fmt.Appendf(nil, "%s-%06d", prefix, i) }
func val(prefix string, i int) []byte {
	return fmt.Appendf(nil, "value-%s-%06d-%s", prefix, i, strings.Repeat("x", 40))
}

func mustGet(tb testing.TB, db *mayfly.DB, k []byte, want string) {
	tb.Helper()
	got, err := db.Get(k)
	if err != nil {
		tb.Fatalf("Get(%q): %v, want %q", k, err, want)
	}
	if string(got) != want {
		tb.Fatalf("Get(%q) = %q, want %q", k, got, want)
	}
}

func mustMiss(tb testing.TB, db *mayfly.DB, k []byte) {
	tb.Helper()
	got, err := db.Get(k)
	if !errors.Is(err, mayfly.ErrNotFound) {
		tb.Fatalf("Get(%q) = %q, %v; want ErrNotFound", k, got, err)
	}
}

// contents returns every live key/value of db.
func contents(tb testing.TB, db *mayfly.DB) map[string]string {
	tb.Helper()
	it, err := db.NewIter(nil)
	if err != nil {
		tb.Fatalf("NewIter: %v", err)
	}
	defer it.Close()
	m := make(map[string]string)
	for ok := it.First(); ok; ok = it.Next() {
		if _, dup := m[string(it.Key())]; dup {
			tb.Fatalf("iterator returned key %q twice", it.Key())
		}
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		tb.Fatalf("iterate: %v", err)
	}
	return m
}

// diff describes how got differs from want (empty if equal).
func diff(got, want map[string]string) string {
	var missing, extra, wrong []string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != v:
			wrong = append(wrong, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(wrong) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(wrong)
	clip := func(s []string) []string {
		if len(s) > 5 {
			return append(s[:5:5], "…")
		}
		return s
	}
	return fmt.Sprintf("%d keys (want %d): %d missing %v, %d unexpected %v, %d wrong values %v",
		len(got), len(want), len(missing), clip(missing), len(extra), clip(extra), len(wrong), clip(wrong))
}

func check(tb testing.TB, db *mayfly.DB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.Check(ctx); err != nil {
		tb.Fatalf("Check: %v", err)
	}
}

// storageDelta returns after-before for each request counter.
func storageDelta(before, after map[string]uint64) map[string]uint64 {
	d := make(map[string]uint64)
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}
