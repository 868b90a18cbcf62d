#!/usr/bin/env bash
# Stops the versitygw started by start-versitygw.sh and deletes its state.
#
#   scripts/s3/stop-versitygw.sh [STATE_DIR] [--keep]
#
# STATE_DIR defaults to $MAYFLY_S3_STATE. --keep leaves the state directory
# (data and log) in place. Only the process named in the pid file is
# signalled, and only if it is a versitygw.
set -euo pipefail

state=${MAYFLY_S3_STATE:-}
keep=
for a in "$@"; do
	case $a in
	--keep) keep=1 ;;
	*) state=$a ;;
	esac
done
if [ -z "$state" ] || [ ! -f "$state/versitygw.pid" ]; then
	echo "stop-versitygw: no pid file (give the state directory or set MAYFLY_S3_STATE)" >&2
	exit 1
fi
pid=$(cat "$state/versitygw.pid")
if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q versitygw; then
	kill "$pid"
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -9 "$pid" 2>/dev/null || true
	fi
	echo "stop-versitygw: stopped pid $pid" >&2
else
	echo "stop-versitygw: pid $pid is not a running versitygw" >&2
fi
rm -f "$state/versitygw.pid"
if [ -z "$keep" ]; then
	case $state in
	*/mayfly-versitygw.*) rm -rf "$state" ;;
	*) echo "stop-versitygw: not deleting unexpected state directory $state" >&2 ;;
	esac
fi
