#!/bin/sh
# run.sh: `make bench-scheduler`, the scheduler end to end on this machine.
#
# BENCH_VIA=api: the whole stack through the session API:
#   deploy/dev/dev-up.sh in $BENCH_DIR/stack with TESSERA_DEV_SERVICES="devbus
#   auth registry scheduler vfolder gateway" (vfolder: the gateway's readiness
#   needs it; PostgreSQL, Redis, OCI registry too; not
#   the real agent), tessera-simagent (BENCH_AGENTS nodes x 8 GPUs) in resource
#   group BENCH_GROUP (default), then bench_api.py enqueues BENCH_API_SESSIONS (20000,
#   the issue's count; the API takes about 700-900 creates/s here)
#   sessions with signed POST /session {"enqueueOnly": true} through the gateway
#   and checks Redis reservations = occupancy = kernels holding slots in PostgreSQL.
#   BENCH_API_BACKLOG=1 (the default): the scheduler is held (SIGSTOP) while the
#   sessions are enqueued and released (SIGCONT) after; prints the API enqueue
#   rate and the scheduler's placement rate on that backlog side by side (from
#   the release to the last SessionScheduled, and to the last SCHEDULED the
#   registry recorded). BENCH_API_BACKLOG=0: the scheduler runs during the
#   enqueue (placements follow the API's rate).
# BENCH_VIA=bus: redis-server, tessera-devbus, tessera-scheduler and
#   tessera-simagent on free loopback ports; bench_e2e publishes SessionEnqueued
#   straight to the bus (no registry, no PostgreSQL).
# BENCH_VIA=both (the default): bus, then api (the issue's measure: through the API).
# Everything it started is stopped at the end (by pid; the stack by dev-down.sh).
# Logs stay in $BENCH_DIR (a temp dir).
#
#   BENCH_AGENTS (1000)  BENCH_SESSIONS (bus, 20000)  BENCH_API_SESSIONS (api, 20000)
#   BENCH_EVENT_CONSUMERS (api: the stack's registry.event_consumers, 1: what
#     the option's default, 0, chooses on 2 CPUs; 3 consumers per event group
#     (9 fetch loops on the development bus, 9 PostgreSQL writers) took the
#     scheduler's CPU during the drain there: 4,889 against 9,580 placements/s;
#     docs/benchmarks.md)
#   BENCH_VIA (bus | api | both)
#   BENCH_BATCH (scheduler.reserve_batch, 64)  BENCH_RATE (bus only; 0: as fast as taken)
#   BENCH_CLIENTS (api: concurrent clients, 16)  BENCH_USERS (api: users, 20)
#   BENCH_KEYPAIR_RATE_LIMIT (api: the users' keypairs' rate limit, requests a
#     minute, 1000000: high enough not to refuse the creates; the limiter runs)
#   BENCH_API_BACKLOG (api: 1 hold the scheduler during the enqueue, 0 do not)
#   BENCH_API_HOLD_REGISTRY (api, backlog: 1 also hold the registry while the
#     scheduler drains the backlog, a diagnostic; 0 the default)
#   BENCH_SESSION_TIMEOUT (api: the stack's kafka.session_timeout, 60s, so
#     that a held consumer keeps its group membership instead of rejoining at
#     the release; 6s is the services' default. The mock cluster sometimes
#     leaves a group unassigned at start until a stale member's session times
#     out, so the stack may take up to a minute longer to be ready)
#   BENCH_PG_STATEMENTS (api: 1 loads pg_stat_statements into the stack's
#     PostgreSQL and writes its 30 costliest statements of the run to
#     $BENCH_DIR/pg_stat_statements.txt; it found a cached plan that read
#     every PENDING session per create: docs/benchmarks-history.md; 0 the default)
#   BENCH_HEARTBEAT_INTERVAL (the simulated agents' heartbeat interval, 5s;
#     bench-scale: 20s, 10,000 agents -> 500 heartbeats/s)
#   BENCH_SAMPLE (api: a file; bench/scale/sample.py appends a sample of the
#     services' RSS, heartbeat and queue figures to it every 2 s from the
#     simulated agents' start; bench/scale/run.sh reads it)
#   BENCH_API_RESULT (api: a file; bench_api.py writes its figures there as JSON)
#   TESSERA_BIN_DIR  BENCH_E2E
# run.sh --help prints this.
set -eu
case ${1:-} in -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
BIN=${TESSERA_BIN_DIR:?}
E2E=${BENCH_E2E:?}
AGENTS=${BENCH_AGENTS:-1000}
VIA=${BENCH_VIA:-both}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
DIR=${BENCH_DIR:-$(mktemp -d /tmp/tessera-bench-sched.XXXXXX)}
mkdir -p "$DIR"
chmod go+x "$DIR" # the stack's PostgreSQL runs as postgres when we are root
case $VIA in api|bus|both) ;; *) echo "BENCH_VIA must be api, bus or both"; exit 2 ;; esac
pids=""
stack=""
cleanup() {
  # a scheduler (or registry) held by the backlog mode must run again to stop
  [ -z "${sched_pid:-}" ] || kill -CONT "$sched_pid" 2>/dev/null || true
  [ -z "${reg_pid:-}" ] || kill -CONT "$reg_pid" 2>/dev/null || true
  for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
  pids=""
  if [ -n "$stack" ]; then
    TESSERA_STATE_DIR="$stack" sh "$repo/deploy/dev/dev-down.sh" >"$DIR/dev-down.log" 2>&1 || true
    stack=""
  fi
}
trap cleanup EXIT INT TERM
metric() { curl -s "$1/metrics" | awk -v n="$2" '$1 == n {print $2}'; }
# start_simagent KAFKA GROUP PORT SCHEDULER_URL: BENCH_AGENTS nodes, wait until
# the scheduler sees them all.
start_simagent() {
  env TESSERA_HTTP_LISTEN="127.0.0.1:$3" TESSERA_KAFKA_BOOTSTRAP="$1" KAFKA_BOOTSTRAP="$1" \
    TESSERA_SIMAGENT_COUNT="$AGENTS" \
    TESSERA_SIMAGENT_GPUS=8 TESSERA_SIMAGENT_CPU=64 TESSERA_SIMAGENT_MEM=512g \
    TESSERA_SIMAGENT_RESOURCE_GROUP="$2" \
    TESSERA_SIMAGENT_HEARTBEAT_INTERVAL="${BENCH_HEARTBEAT_INTERVAL:-5s}" \
    TESSERA_SERVICE_INSTANCE=bench-simagent TESSERA_LOG_LEVEL=warn \
    "$BIN/tessera-simagent" >>"$DIR/simagent.log" 2>&1 &
  pids="$pids $!"
  if [ -n "${BENCH_SAMPLE:-}" ] && [ -n "$stack" ]; then
    BENCH_SIMAGENT_URL="http://127.0.0.1:$3" python3 "$repo/bench/scale/sample.py" "$stack" \
      "$BENCH_SAMPLE" "$!" >>"$DIR/sample.log" 2>&1 &
    pids="$pids $!"
  fi
  i=0
  while [ "$(metric "$4" tessera_scheduler_agents)" != "$AGENTS" ]; do
    # 60 s, and 1 s more per 100 agents (10,000 take about a minute to register)
    i=$((i + 1)); [ $i -lt $((600 + AGENTS / 10)) ] || { echo "the scheduler did not see $AGENTS agents (see $DIR)"; exit 1; }
    sleep 0.1
  done
}
sched_summary() {
  echo
  echo "scheduler: passes $(metric "$1" tessera_scheduler_passes_total)," \
    "pass time $(metric "$1" tessera_scheduler_pass_seconds_total) s," \
    "refused $(metric "$1" tessera_scheduler_reservations_refused_total)," \
    "unschedulable published $(metric "$1" tessera_scheduler_unschedulable_published_total)"
  echo "process CPU (s): $(for p in $2; do [ -r /proc/$p/stat ] && sed 's/^.*) //' /proc/$p/stat |
    awk -v p="$p" -v n="$(cat /proc/$p/comm)" '{printf "%s=%.1f ", n, ($12+$13)/100}'; done)"
}
# cpu_of PID: CPU seconds of a process and all its children, live or reaped
# (PostgreSQL: the postmaster's backends do the work).
cpu_of() {
  { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13 + $14 + $15}'
    for c in $(ps -o pid= --ppid "$1"); do
      sed 's/^.*) //' "/proc/$c/stat" 2>/dev/null | awk '{print $12 + $13}'
    done; } | awk '{t += $1} END {printf "%.1f", t / 100}'
}

run_api() {
  stack=$DIR/stack
  echo "bench-scheduler (api): starting the stack in $stack (registry.event_consumers ${BENCH_EVENT_CONSUMERS:-1})"
  pg_options=${TESSERA_DEV_PG_OPTIONS:-}
  [ "${BENCH_PG_STATEMENTS:-0}" != 1 ] ||
    pg_options="$pg_options -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
  TESSERA_STATE_DIR="$stack" TESSERA_BIN_DIR="$BIN" TESSERA_DEV_PG_OPTIONS="$pg_options" \
    TESSERA_DEV_SERVICES="devbus auth registry scheduler vfolder gateway" TESSERA_LOG_LEVEL=warn \
    TESSERA_REGISTRY_EVENT_CONSUMERS="${BENCH_EVENT_CONSUMERS:-1}" \
    TESSERA_SCHEDULER_RESERVE_BATCH="${BENCH_BATCH:-64}" \
    TESSERA_KAFKA_SESSION_TIMEOUT="${BENCH_SESSION_TIMEOUT:-60s}" TESSERA_DEV_TIMEOUT=180 \
    sh "$repo/deploy/dev/dev-up.sh" >"$DIR/dev-up.log" 2>&1 || { cat "$DIR/dev-up.log"; exit 1; }
  # shellcheck disable=SC1091 # written by dev-up.sh
  . "$stack/env"
  simport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  start_simagent "$KAFKA_BOOTSTRAP" "${BENCH_GROUP:-default}" "$simport" "$TESSERA_SCHEDULER_URL"
  echo "bench-scheduler (api): stack and $AGENTS simulated agents up (logs: $stack/logs, $DIR)"
  rc=0
  sched_pid=$(cat "$stack/run/scheduler.pid")
  reg_pid=$(cat "$stack/run/registry.pid")
  env BENCH_E2E="$E2E" BENCH_SESSIONS="${BENCH_API_SESSIONS:-20000}" BENCH_GROUP="${BENCH_GROUP:-default}" \
    BENCH_API_BACKLOG="${BENCH_API_BACKLOG:-1}" BENCH_SCHEDULER_PID="$sched_pid" BENCH_BUSCTL="$BIN/tessera-busctl" \
    BENCH_API_HOLD_REGISTRY="${BENCH_API_HOLD_REGISTRY:-0}" BENCH_REGISTRY_PID="$reg_pid" \
    BENCH_API_RESULT="${BENCH_API_RESULT:-}" \
    python3 "$here/bench_api.py" || rc=$?
  sched_summary "$TESSERA_SCHEDULER_URL" "$(for n in scheduler registry gateway auth redis postgres devbus; do
    cat "$stack/run/$n.pid" 2>/dev/null; echo; done) $pids"
  echo "postgres with its backends: $(cpu_of "$(cat "$stack/run/postgres.pid")") s CPU;" \
    "registry context cache: hits $(metric "$TESSERA_REGISTRY_URL" tessera_registry_context_cache_hits_total)," \
    "misses $(metric "$TESSERA_REGISTRY_URL" tessera_registry_context_cache_misses_total)"
  if [ "${BENCH_PG_STATEMENTS:-0}" = 1 ]; then
    psql "$TESSERA_PG_DSN" -X -q -v ON_ERROR_STOP=1 >"$DIR/pg_stat_statements.txt" 2>&1 <<'SQL' &&
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
SELECT round(total_exec_time::numeric) AS total_ms, calls, rows,
       round((total_exec_time / calls)::numeric, 3) AS ms_per_call,
       left(regexp_replace(query, '\s+', ' ', 'g'), 160) AS statement
  FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 30;
SQL
      echo "PostgreSQL's costliest statements: $DIR/pg_stat_statements.txt" ||
      echo "pg_stat_statements could not be read: $DIR/pg_stat_statements.txt"
  fi
  cleanup
  return $rc
}

run_bus() {

set -- $(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
REDIS_PORT=$1 DEVBUS_PORT=$2 SCHED_PORT=$3 SIM_PORT=$4

redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no --logfile "$DIR/redis.log" &
pids="$pids $!"
env TESSERA_HTTP_LISTEN="127.0.0.1:$DEVBUS_PORT" TESSERA_DEVBUS_BOOTSTRAP_FILE="$DIR/bootstrap" \
  TESSERA_LOG_LEVEL=warn "$BIN/tessera-devbus" >"$DIR/devbus.log" 2>&1 &
pids="$pids $!"
i=0
until [ -s "$DIR/bootstrap" ]; do
  i=$((i + 1)); [ $i -lt 300 ] || { echo "devbus did not start (see $DIR)"; exit 1; }; sleep 0.1
done
KAFKA=$(head -n 1 "$DIR/bootstrap")
export KAFKA_BOOTSTRAP="$KAFKA"
# the mock cluster waits every empty fetch out: the fetch wait this path has
# always run with (100ms, kafka.fetch_wait's default until it became 500ms)
export TESSERA_KAFKA_FETCH_WAIT="${TESSERA_KAFKA_FETCH_WAIT:-100ms}"
env TESSERA_HTTP_LISTEN="127.0.0.1:$SCHED_PORT" TESSERA_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" \
  TESSERA_SERVICE_INSTANCE=bench-scheduler TESSERA_LOG_LEVEL=warn \
  TESSERA_SCHEDULER_RESERVE_BATCH="${BENCH_BATCH:-64}" \
  "$BIN/tessera-scheduler" >"$DIR/scheduler.log" 2>&1 &
pids="$pids $!"
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SCHED_PORT/readyz")" = 200 ]; do
  i=$((i + 1)); [ $i -lt 300 ] || { echo "scheduler not ready (see $DIR)"; exit 1; }; sleep 0.1
done
start_simagent "$KAFKA" bench "$SIM_PORT" "http://127.0.0.1:$SCHED_PORT"
echo "bench-scheduler (bus): redis, devbus, scheduler and $AGENTS simulated agents up (logs: $DIR)"
rc=0
env BENCH_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" BENCH_GROUP=bench "$E2E" || rc=$?
sched_summary "http://127.0.0.1:$SCHED_PORT" "$pids"
cleanup
return $rc
}

rc=0
case $VIA in
  bus) run_bus || rc=$? ;;
  api) run_api || rc=$? ;;
  both) run_bus || rc=$?; echo; run_api || rc=$? ;;
esac
exit $rc
