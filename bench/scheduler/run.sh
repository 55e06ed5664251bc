#!/bin/sh
# run.sh: `make bench-scheduler`, the scheduler end to end on this machine:
# redis-server, tessera-devbus (Kafka mock cluster), tessera-scheduler and
# tessera-simagent (BENCH_AGENTS nodes x 8 GPUs) on free loopback ports, then
# bench_e2e enqueues BENCH_SESSIONS sessions and prints the table. Everything it
# started is stopped at the end (by pid). Logs stay in $BENCH_DIR (a temp dir).
#
#   BENCH_AGENTS (1000)  BENCH_SESSIONS (20000)  BENCH_VIA (bus | api)
#   BENCH_BATCH (scheduler.reserve_batch, 64)  BENCH_RATE (0: as fast as taken)
#   TESSERA_BIN_DIR  BENCH_E2E
set -eu
BIN=${TESSERA_BIN_DIR:?}
E2E=${BENCH_E2E:?}
AGENTS=${BENCH_AGENTS:-1000}
DIR=${BENCH_DIR:-$(mktemp -d /tmp/tessera-bench-sched.XXXXXX)}
mkdir -p "$DIR"
pids=""
cleanup() {
  for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

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
env TESSERA_HTTP_LISTEN="127.0.0.1:$SCHED_PORT" TESSERA_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" \
  TESSERA_SERVICE_INSTANCE=bench-scheduler TESSERA_LOG_LEVEL=warn \
  TESSERA_SCHEDULER_RESERVE_BATCH="${BENCH_BATCH:-64}" \
  "$BIN/tessera-scheduler" >"$DIR/scheduler.log" 2>&1 &
pids="$pids $!"
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n {print $2}'; }
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SCHED_PORT/readyz")" = 200 ]; do
  i=$((i + 1)); [ $i -lt 300 ] || { echo "scheduler not ready (see $DIR)"; exit 1; }; sleep 0.1
done
env TESSERA_HTTP_LISTEN="127.0.0.1:$SIM_PORT" TESSERA_SIMAGENT_COUNT="$AGENTS" \
  TESSERA_SIMAGENT_GPUS=8 TESSERA_SIMAGENT_CPU=64 TESSERA_SIMAGENT_MEM=512g \
  TESSERA_SIMAGENT_RESOURCE_GROUP=bench TESSERA_SIMAGENT_HEARTBEAT_INTERVAL=5s \
  TESSERA_SERVICE_INSTANCE=bench-simagent TESSERA_LOG_LEVEL=warn \
  "$BIN/tessera-simagent" >"$DIR/simagent.log" 2>&1 &
pids="$pids $!"
i=0
while [ "$(metric "$SCHED_PORT" tessera_scheduler_agents)" != "$AGENTS" ]; do
  i=$((i + 1)); [ $i -lt 600 ] || { echo "the scheduler did not see $AGENTS agents (see $DIR)"; exit 1; }
  sleep 0.1
done
echo "bench-scheduler: redis, devbus, scheduler and $AGENTS simulated agents up (logs: $DIR)"
rc=0
env BENCH_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" BENCH_GROUP=bench "$E2E" || rc=$?
echo
echo "scheduler: passes $(metric "$SCHED_PORT" tessera_scheduler_passes_total)," \
  "pass time $(metric "$SCHED_PORT" tessera_scheduler_pass_seconds_total) s," \
  "refused $(metric "$SCHED_PORT" tessera_scheduler_reservations_refused_total)," \
  "unschedulable published $(metric "$SCHED_PORT" tessera_scheduler_unschedulable_published_total)"
echo "process CPU (s): $(for p in $pids; do [ -r /proc/$p/stat ] && awk -v p=$p '{printf "%s=%.1f ", p, ($14+$15)/100}' /proc/$p/stat; done)"
exit $rc
