#!/usr/bin/env bash
# Runs Mayfly's whole test suite: vet, unit and integration tests under the
# race detector, short fuzzing of every decoder, and a one-iteration smoke run
# of every benchmark so that none of them rots.
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

echo "== fuzz (short)"
fuzz_time="${FUZZ_TIME:-10s}"
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "-- $pkg $target ($fuzz_time)"
		go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzz_time" "$pkg"
	done
done

echo "== benchmark smoke run"
go test -run='^$' -bench=. -benchtime=1x ./...
echo "== all tests passed"
