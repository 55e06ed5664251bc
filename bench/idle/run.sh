#!/bin/sh
# bench/idle/run.sh: what an idle stack costs in CPU (`make bench-idle`;
# docs/benchmarks.md "Idle stack"). Starts the development stack in a
# temporary state dir with production settings where the development stack
# has its own (the services' defaults of kafka.fetch_wait and
# kafka.control_fetch_wait, read from tessera-registry --help, instead of the
# dev stack's 10ms and 3ms; log.level info), lets it
# settle, then bench.py reads every process's CPU time (utime + stime of the
# process and the children it has reaped, over its whole process tree, from
# /proc/<pid>/stat) and voluntary context switches (all threads, from
# /proc/<pid>/task/*/status: each is a wake-up, so they show polling) at the
# start and the end of a window and prints a table per process: Tessera's
# services and their total, then separately the development bus (tessera-devbus,
# librdkafka's mock cluster; production runs a Kafka), PostgreSQL, Redis and
# the OCI registry. CPU time, not wall-clock samples: the figure holds on a
# busy machine. The target (issue 35): Tessera's services together under 1%
# of one core.
#
# Environment: TESSERA_BIN_DIR (default <repo>/build/bin), BENCH_IDLE_SECONDS
# (the window, 60), BENCH_IDLE_SETTLE (seconds after readiness before the
# window opens, 20: start-up work, group joins), BENCH_FETCH_WAIT and
# BENCH_CONTROL_FETCH_WAIT (the defaults) for the stack's consumers, BENCH_LOG_LEVEL
# (info), BENCH_IDLE_THREADS=N (each process's N busiest thread names too:
# where the CPU goes), BENCH_IDLE_JSON (a file for the figures as JSON as
# well), BENCH_KEEP_STATE=1 keeps the state dir (logs).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BIN=${TESSERA_BIN_DIR:-$repo/build/bin}
NAME=bench-idle
. "$repo/bench/lib.sh"


command -v python3 >/dev/null 2>&1 || die "python3 is missing: run tools/deps.sh"
[ -x "$BIN/tessera-gateway" ] || die "$BIN/tessera-gateway is missing: build first (make)"
[ "$(id -u)" -eq 0 ] || die "the agent runs containers with runc: run as root"

STATE=$(mktemp -d "${TMPDIR:-/tmp}/tessera-bench-idle.XXXXXX")

cleanup() {
  rc=$?
  trap - EXIT INT TERM
  bench_end $rc
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the services' own defaults (what production runs), not the dev stack's
_default() { "$BIN/tessera-registry" --help 2>/dev/null | awk -v o="$1" '$1 == o { print $3; exit }'; }
FETCH_WAIT=${BENCH_FETCH_WAIT:-$(_default kafka.fetch_wait)}
CONTROL_FETCH_WAIT=${BENCH_CONTROL_FETCH_WAIT:-$(_default kafka.control_fetch_wait)}
[ -n "$FETCH_WAIT" ] && [ -n "$CONTROL_FETCH_WAIT" ] ||
  die "cannot read kafka.fetch_wait's default from $BIN/tessera-registry --help"
LOG_LEVEL=${BENCH_LOG_LEVEL:-info}
say "starting the development stack in $STATE (kafka.fetch_wait $FETCH_WAIT, kafka.control_fetch_wait $CONTROL_FETCH_WAIT, log.level $LOG_LEVEL)"
TESSERA_KAFKA_FETCH_WAIT=$FETCH_WAIT TESSERA_KAFKA_CONTROL_FETCH_WAIT=$CONTROL_FETCH_WAIT \
  TESSERA_LOG_LEVEL=$LOG_LEVEL \
  TESSERA_STATE_DIR=$STATE TESSERA_BIN_DIR=$BIN sh "$repo/deploy/dev/dev-up.sh" \
  >"$STATE/dev-up.out" 2>&1 || {
  cat "$STATE/dev-up.out" >&2
  die "dev-up failed"
}

cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
say "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs ($cpu), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/bench.py" "$STATE/services"
