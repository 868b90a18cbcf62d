#!/usr/bin/env bash
# Starts a local versitygw (posix backend) for Mayfly's S3 tests and prints
# the environment to use it:
#
#   eval "$(scripts/s3/start-versitygw.sh)"
#   go test ./storage/s3/
#   scripts/s3/stop-versitygw.sh            # uses $MAYFLY_S3_STATE
#
# Installs versitygw v1.8.0 with `go install` if it is not on PATH, GOBIN
# or GOPATH/bin. Listens on a free port of 127.0.0.1 only. Its state (data,
# pid file, log) lives in a new temporary directory, printed as
# MAYFLY_S3_STATE. Progress goes to stderr; stdout carries only the exports:
#   MAYFLY_S3_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
#   MAYFLY_S3_STATE
# Environment knobs: MAYFLY_S3_BUCKET (default mayfly), MAYFLY_S3_PREFIX
# (default test), VERSITYGW_VERSION (default v1.8.0).
set -euo pipefail

version=${VERSITYGW_VERSION:-v1.8.0}
bucket=${MAYFLY_S3_BUCKET:-mayfly}
prefix=${MAYFLY_S3_PREFIX:-test}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

log() { echo "start-versitygw: $*" >&2; }

find_gw() {
	if command -v versitygw >/dev/null 2>&1; then command -v versitygw; return; fi
	local gobin
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
	if [ -x "$gobin/versitygw" ]; then echo "$gobin/versitygw"; return; fi
	return 1
}

if ! gw=$(find_gw); then
	log "installing versitygw $version (takes a minute or two)"
	go install "github.com/versity/versitygw/cmd/versitygw@$version" >&2
	gw=$(find_gw) || { log "versitygw not found after go install"; exit 1; }
fi

state=$(mktemp -d "${TMPDIR:-/tmp}/mayfly-versitygw.XXXXXX")
mkdir -p "$state/data"
access="mayfly$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
secret="$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')"

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

started=
for try in 1 2 3 4 5; do
	port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
	port_in_use "$port" && continue
	ROOT_ACCESS_KEY_ID="$access" ROOT_SECRET_ACCESS_KEY="$secret" \
		setsid "$gw" --port "127.0.0.1:$port" --quiet posix "$state/data" \
		>"$state/versitygw.log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$state/versitygw.pid"
	# Wait (bounded, 30 s) until it accepts connections or dies.
	for _ in $(seq 1 300); do
		if ! kill -0 "$pid" 2>/dev/null; then break; fi
		if port_in_use "$port"; then started=1; break; fi
		sleep 0.1
	done
	[ -n "$started" ] && break
	kill "$pid" 2>/dev/null || true
	log "versitygw did not come up on port $port (try $try); log:"
	tail -5 "$state/versitygw.log" >&2 || true
done
if [ -z "$started" ]; then
	log "giving up; state left in $state"
	exit 1
fi

endpoint="http://127.0.0.1:$port"
log "versitygw pid $pid on $endpoint, state in $state; creating bucket $bucket"
if ! (cd "$repo" && AWS_ACCESS_KEY_ID="$access" AWS_SECRET_ACCESS_KEY="$secret" AWS_REGION=us-east-1 \
	go run ./scripts/s3/mkbucket -endpoint "$endpoint" -bucket "$bucket" -wait 30s >&2); then
	log "bucket creation failed; stopping versitygw"
	kill "$pid" 2>/dev/null || true
	exit 1
fi

cat <<OUT
export MAYFLY_S3_URL='s3://$bucket/$prefix?endpoint=$endpoint&region=us-east-1&path_style=true'
export AWS_ACCESS_KEY_ID='$access'
export AWS_SECRET_ACCESS_KEY='$secret'
export AWS_REGION='us-east-1'
export MAYFLY_S3_STATE='$state'
OUT
