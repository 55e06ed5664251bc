#!/bin/sh
# bench/session/run.sh: session create-to-RUNNING and destroy latency through
# the signed API, beside bare `runc run` of an equivalent bundle, in the same
# run (`make bench-session`; docs/benchmarks.md "Sessions"). Starts the
# development stack in a temporary state dir; bench.py warms the agent's image
# cache with a few sessions of the busybox demo image, then runs BENCH_SERIAL
# sessions one after another and BENCH_PARALLEL more BENCH_CONCURRENCY at a
# time (create with enqueueOnly false, then DELETE until TERMINATED), and
# `runc run` of a bundle made from the cached busybox layer; prints a table;
# tears the stack down on exit, also on failure.
#
# The stack is sized so that the concurrent creates can all wait for RUNNING
# and all fit on the agent: http.threads 16, registry.max_waiting_creates 16,
# agent.cpu 16 (the image's minimum is 1 cpu; the sessions run `sleep`-like
# init and use next to none). registry.event_consumers 1 (BENCH_EVENT_CONSUMERS):
# with one agent, one consumer per event group has all the work there is,
# and on the development bus every idle consumer costs CPU (below); the
# default 3 took a tenth of the two cores from the concurrent creates.
#
# The bus: the development stack's Kafka is librdkafka's mock cluster, which
# holds an empty fetch for the consumer's whole fetch wait instead of
# answering when a message arrives, as a Kafka broker does, so each of a
# create's four event hops may wait up to the consuming group's fetch wait:
# kafka.control_fetch_wait for the groups on a create's path (the dev stack's
# 3ms), kafka.fetch_wait for the rest (10ms). BENCH_FETCH_WAIT and
# BENCH_CONTROL_FETCH_WAIT set them for the bench's stack; the settings in use
# are printed.
#
# Environment: TESSERA_BIN_DIR (default <repo>/build/bin), BENCH_SERIAL (200),
# BENCH_PARALLEL (200), BENCH_CONCURRENCY (8), BENCH_RUNC (50, run twice:
# before and after the sessions, and once more BENCH_CONCURRENCY at a time),
# BENCH_FETCH_WAIT and BENCH_CONTROL_FETCH_WAIT (default: the dev stack's),
# BENCH_EVENT_CONSUMERS (1),
# BENCH_KEEP_STATE=1 keeps the state dir (logs), BENCH_STACK (the state dir of
# a development stack already running, e.g. the integration tier's: the bench
# uses it instead of starting one and leaves it running; its services then
# run with that stack's settings, not the sizing above).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BIN=${TESSERA_BIN_DIR:-$repo/build/bin}
NAME=bench-session
. "$repo/bench/lib.sh"


for c in python3 runc curl; do
  command -v "$c" >/dev/null 2>&1 || die "$c is missing: run tools/deps.sh"
done
python3 -c 'import requests' 2>/dev/null || die "python3-requests is missing: run tools/deps.sh"
[ -x "$BIN/tessera-agent" ] || die "$BIN/tessera-agent is missing: build first (make)"
[ "$(id -u)" -eq 0 ] || die "the agent runs containers with runc: run as root"

if [ -n "${BENCH_STACK:-}" ]; then
  [ -f "$BENCH_STACK/env" ] && [ -d "$BENCH_STACK/agent" ] ||
    die "BENCH_STACK=$BENCH_STACK is not the state dir of a running stack (no env, agent/)"
  # shellcheck disable=SC1091 # written by dev-up.sh
  . "$BENCH_STACK/env"
  [ -n "${TESSERA_DEMO_IMAGE:-}" ] || die "the stack has no demo image (busybox-static missing?)"
  export TESSERA_STATE_DIR TESSERA_GATEWAY_URL TESSERA_ADMIN_ACCESS_KEY TESSERA_ADMIN_SECRET_KEY \
    TESSERA_DEMO_IMAGE
  say "on the running stack in $BENCH_STACK; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
  exec python3 "$here/bench.py"
fi

STATE=$(mktemp -d "${TMPDIR:-/tmp}/tessera-bench-sess.XXXXXX")

cleanup() {
  rc=$?
  trap - EXIT INT TERM
  bench_end $rc ${BENCH_STACK:+shared}
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "${BENCH_FETCH_WAIT:-}" ]; then
  export TESSERA_KAFKA_FETCH_WAIT=$BENCH_FETCH_WAIT
fi
if [ -n "${BENCH_CONTROL_FETCH_WAIT:-}" ]; then
  export TESSERA_KAFKA_CONTROL_FETCH_WAIT=$BENCH_CONTROL_FETCH_WAIT
fi
say "starting the development stack in $STATE (kafka.fetch_wait ${TESSERA_KAFKA_FETCH_WAIT:-10ms}, kafka.control_fetch_wait ${TESSERA_KAFKA_CONTROL_FETCH_WAIT:-3ms}, registry.event_consumers ${BENCH_EVENT_CONSUMERS:-1})"
TESSERA_HTTP_THREADS=16 TESSERA_REGISTRY_MAX_WAITING_CREATES=16 TESSERA_AGENT_CPU=16 \
  TESSERA_REGISTRY_EVENT_CONSUMERS=${BENCH_EVENT_CONSUMERS:-1} \
  TESSERA_LOG_LEVEL=${BENCH_LOG_LEVEL:-info} \
  TESSERA_STATE_DIR=$STATE TESSERA_BIN_DIR=$BIN sh "$repo/deploy/dev/dev-up.sh" \
  >"$STATE/dev-up.out" 2>&1 || {
  cat "$STATE/dev-up.out" >&2
  die "dev-up failed"
}
# shellcheck disable=SC1091 # written by dev-up.sh
. "$STATE/env"
[ -n "${TESSERA_DEMO_IMAGE:-}" ] || die "the stack has no demo image (busybox-static missing?)"
export TESSERA_STATE_DIR TESSERA_GATEWAY_URL TESSERA_ADMIN_ACCESS_KEY TESSERA_ADMIN_SECRET_KEY \
  TESSERA_DEMO_IMAGE

cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
say "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($cpu), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/bench.py"
