#!/usr/bin/env bash
# Runs Mayfly's whole test suite: vet, unit and integration tests under the
# race detector, the integration and metamorphic suites again on S3, short
# fuzzing of every decoder, and a one-iteration smoke run of every benchmark
# so that none of them rots, and the same for the comparison harness in bench/.
set -euo pipefail
cd "$(dirname "$0")/.."

export GOFLAGS="${GOFLAGS:-} -mod=mod"

# A real S3-protocol server (versitygw, installed with `go install` on first
# use) on 127.0.0.1 for the object-storage tests; stopped on exit.
echo "== starting versitygw"
eval "$(bash scripts/s3/start-versitygw.sh)"
trap 'bash scripts/s3/stop-versitygw.sh "$MAYFLY_S3_STATE" >/dev/null 2>&1 || true' EXIT

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 -timeout 20m ./...

# The integration suite and the metamorphic test's "s3" config again, on the
# S3 server: every test that opens its database with newEnv runs on a fresh
# prefix of the bucket (tests/helpers_test.go, internal/s3test). CI=true
# turns a missing server into a failure. Without -race: the race detector
# has already run over the same engine code above (and over the S3 backend
# in storage/s3 and tests/s3), and it would triple this pass, which waits
# on HTTP round trips. The two packages run side by side, and -parallel 8
# lets tests/'s parallel tests overlap their round trips (the default,
# GOMAXPROCS, runs two at a time on a 2-core machine).
echo "== go test on S3 (MAYFLY_TEST_BACKEND=s3)"
s3pass() { CI=true MAYFLY_TEST_BACKEND=s3 go test -count=1 -timeout 15m "$@"; }
s3pass -parallel 8 ./tests/ &
tests_pid=$!
s3pass -run '^TestMetamorphic$' ./tests/metamorphic/ &
meta_pid=$!
s3pass -run '^TestEveryCommandOnS3$' ./cmd/mayfly/ & # the CLI on a bucket
cli_pid=$!
s3_status=0
wait "$tests_pid" || s3_status=1
wait "$meta_pid" || s3_status=1
wait "$cli_pid" || s3_status=1
if [ "$s3_status" != 0 ]; then
	echo "== the S3 pass failed"
	exit 1
fi

echo "== fuzz (short)"
# A count, not a duration: Go 1.26's fuzz coordinator can report a bare
# "context deadline exceeded" failure when a duration-based -fuzztime ends
# while a worker is mid-call on a loaded machine (golang/go#75804, fixed in
# Go 1.27). A count has no deadline to race; 30000 executions take 3-10 s
# per target on the 2-core CI machine.
fuzz_time="${FUZZ_TIME:-30000x}"
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "-- $pkg $target ($fuzz_time)"
		go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzz_time" "$pkg"
	done
done

echo "== benchmark smoke run"
go test -run='^$' -bench=. -benchtime=1x ./...

# The comparison harness has its own module (it pulls in Pebble, Badger and
# goleveldb, which the library must not depend on): vet it, run its unit
# tests and one iteration of its in-process side-by-side benchmarks, so the
# harness that produces docs/benchmarks-comparison.md cannot rot either.
echo "== bench module: vet, unit tests, benchmark smoke"
(cd bench && go vet ./... && go test -count=1 ./... && go test -count=1 -run='^$' -bench=. -benchtime=1x ./...)

# contrib/prometheus is its own module too (it pulls in the Prometheus
# client); its collector test reads every metric, so it breaks whenever the
# engine's counters change meaning, and it must run here to be noticed.
echo "== contrib/prometheus module: vet, tests"
(cd contrib/prometheus && go vet ./... && go test -count=1 ./...)
echo "== all tests passed"
