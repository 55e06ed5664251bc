#!/bin/sh
# run.sh: `make bench-scale`, one scheduler and one registry at scale: BENCH_AGENTS
# (10,000) simulated agents heartbeating every BENCH_HEARTBEAT_INTERVAL (20 s:
# 500 heartbeats/s) and BENCH_SESSIONS (200,000) sessions enqueued through the
# API while the scheduler is held, then released to place the backlog
# (bench/scheduler/run.sh with BENCH_VIA=api, bench_api.py), with
# bench/scale/sample.py sampling every 2 s. Prints one table (report.py): API
# enqueue rate, placements/s the registry recorded, placement latency p50/p99
# (release -> SCHEDULED), registry lag (SessionScheduled -> SCHEDULED), heartbeat
# lag (oldest ALIVE agent's last heartbeat minus the interval; heartbeats published
# minus handled), peak RSS per service, scheduler and registry RSS per agent and
# per queued session; a "reason:" line for each figure not recorded.
#
#   BENCH_AGENTS (10000)  BENCH_SESSIONS (200000)  BENCH_HEARTBEAT_INTERVAL (20s)
#   BENCH_AGENT_LOST_TIMEOUT (the registry's registry.agent_lost_timeout: three
#     heartbeat intervals, 60s at 20s; its default 30s left 10 s of slack and
#     a registry behind by more marked agents LOST, whose next heartbeats then
#     took the costly path: docs/benchmarks.md "Scale")
#   BENCH_HOG (1: a busy loop pinned to CPU 0 for the whole run; 0 the default)
#   BENCH_TIMEOUT (bench_api's wait for the placements, seconds: 900)
#   BENCH_CLIENTS, BENCH_USERS, BENCH_EVENT_CONSUMERS, BENCH_BATCH: as bench-scheduler
#   BENCH_DIR (where logs, samples.jsonl and api.json stay; a temp dir)
#   TESSERA_BIN_DIR  BENCH_E2E
# run.sh --help prints this.
set -eu
case ${1:-} in -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
DIR=${BENCH_DIR:-$(mktemp -d /tmp/tessera-bench-scale.XXXXXX)}
mkdir -p "$DIR"
chmod go+x "$DIR"
AGENTS=${BENCH_AGENTS:-10000}
SESSIONS=${BENCH_SESSIONS:-200000}
HB=${BENCH_HEARTBEAT_INTERVAL:-20s}
case $HB in
  *ms) lost=$(( ${HB%ms} * 3 ))ms ;;
  *s) lost=$(( ${HB%s} * 3 ))s ;;
  *) lost=60s ;;
esac
LOST=${BENCH_AGENT_LOST_TIMEOUT:-$lost}
hog=""
stop_hog() { [ -z "$hog" ] || kill "$hog" 2>/dev/null || true; hog=""; }
trap stop_hog EXIT INT TERM
if [ "${BENCH_HOG:-0}" = 1 ]; then
  taskset -c 0 sh -c 'while :; do :; done' &
  hog=$!
  echo "bench-scale: CPU hog on CPU 0 (pid $hog)"
fi
rm -f "$DIR/samples.jsonl" "$DIR/api.json"
echo "bench-scale: $AGENTS agents (heartbeat every $HB, LOST after $LOST), $SESSIONS sessions (logs: $DIR)"
rc=0
env BENCH_VIA=api BENCH_AGENTS="$AGENTS" BENCH_API_SESSIONS="$SESSIONS" BENCH_HEARTBEAT_INTERVAL="$HB" \
  BENCH_API_BACKLOG=1 BENCH_TIMEOUT="${BENCH_TIMEOUT:-900}" BENCH_DIR="$DIR/run" \
  BENCH_SAMPLE="$DIR/samples.jsonl" BENCH_API_RESULT="$DIR/api.json" \
  TESSERA_REGISTRY_AGENT_LOST_TIMEOUT="$LOST" \
  sh "$repo/bench/scheduler/run.sh" >"$DIR/bench.log" 2>&1 || rc=$?
stop_hog
cat "$DIR/bench.log"
echo
python3 "$here/report.py" "$DIR" "$AGENTS" "$HB" "${BENCH_HOG:-0}" || rc=${rc:-1}
[ $rc = 0 ] || echo "bench-scale: the API bench exited $rc (its output: $DIR/bench.log)"
exit $rc
