#!/bin/sh
# bench/gateway/run.sh: signed-request throughput of tessera-gateway against
# nginx serving a static file, on the same machine in the same run (wrk).
# Starts the development stack in a temporary state dir, and nginx on another
# loopback port; signs one GET /auth/test?echo=x with the tests' independent
# signer (tests/integration/bai_signer.py) for a keypair whose rate_limit is 0;
# runs wrk against both; prints requests/s, p50, p99 and the ratio to nginx;
# tears everything down. See bench/gateway/README.md.
#
# A third run repeats the gateway's with tessera-auth paused (SIGSTOP): the
# gateway still verifies and publishes every audit record, but auth does not
# ingest them into PostgreSQL on the same cores meanwhile. It shows what the
# access-log ingestion costs the gateway when everything shares one machine.
#
# Environment: TESSERA_BIN_DIR (default <repo>/build/bin), BENCH_DURATION
# (20s), BENCH_CONNECTIONS (64), BENCH_THREADS (wrk threads, 2),
# BENCH_HTTP_THREADS (the services' http.threads, default: the CPU count),
# BENCH_CATCHUP_MAX (how long the access log may take to catch up, 120 s),
# BENCH_KEEP_STATE=1 keeps the state dir (logs, wrk reports), BENCH_STACK (the
# state dir of a development stack already running, e.g. the integration
# tier's: the bench uses it instead of starting one, leaves it running, and
# its own files go to a temporary dir; its services then run with that
# stack's settings, not the two above).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BIN=${TESSERA_BIN_DIR:-$repo/build/bin}
NAME=bench-gateway
. "$repo/bench/lib.sh"
DURATION=${BENCH_DURATION:-20s}
CONNS=${BENCH_CONNECTIONS:-64}
THREADS=${BENCH_THREADS:-2}
HTTP_THREADS=${BENCH_HTTP_THREADS:-$(nproc)}
CATCHUP_MAX=${BENCH_CATCHUP_MAX:-120}
TARGET_RPS=20000
TARGET_P99_MS=5


for c in wrk nginx python3 psql curl; do
  command -v "$c" >/dev/null 2>&1 || die "$c is missing: run tools/deps.sh"
done
[ -x "$BIN/tessera-gateway" ] || die "$BIN/tessera-gateway is missing: build first (make)"

if [ -n "${BENCH_STACK:-}" ]; then
  [ -f "$BENCH_STACK/env" ] && [ -f "$BENCH_STACK/run/gateway.pid" ] ||
    die "BENCH_STACK=$BENCH_STACK is not the state dir of a running stack (no env, run/gateway.pid)"
fi
STATE=$(mktemp -d "${TMPDIR:-/tmp}/tessera-bench-gw.XXXXXX")
# STACK: the stack's state dir (its env, pids, PostgreSQL); the bench's own
# stack lives in STATE
STACK=${BENCH_STACK:-$STATE}
NGX=$STATE/nginx
nginx_pid=""
auth_pid=""

cleanup() {
  rc=$?
  trap - EXIT INT TERM
  [ -z "$auth_pid" ] || kill -CONT "$auth_pid" 2>/dev/null || true
  bench_stop_nginx "$nginx_pid"
  bench_end $rc ${BENCH_STACK:+shared}
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the stack ------------------------------------------------------------------
if [ -n "${BENCH_STACK:-}" ]; then
  say "on the running stack in $STACK"
else
  say "starting the development stack in $STATE (http.threads $HTTP_THREADS)"
  # http.threads = the CPU count (more MHD threads than cores only adds
  # context switches); a credential cache TTL longer than the run, so that the
  # run with auth paused never needs auth (the TTL costs nothing per request).
  TESSERA_HTTP_THREADS=$HTTP_THREADS TESSERA_AUTH_CACHE_TTL=10m \
    TESSERA_STATE_DIR=$STATE TESSERA_BIN_DIR=$BIN sh "$repo/deploy/dev/dev-up.sh" \
    >"$STATE/dev-up.out" 2>&1 || {
    cat "$STATE/dev-up.out" >&2
    die "dev-up failed"
  }
fi
# shellcheck disable=SC1091 # written by dev-up.sh
. "$STACK/env"
GW=$TESSERA_GATEWAY_URL

# A user and a keypair with rate_limit 0 (so no Redis round trip per request),
# straight into auth's tables: the bench does not depend on the admin API.
# The user's name is unique, so that a stack can be benched more than once.
# shellcheck disable=SC2046 # four words, split on purpose
set -- $(python3 -c '
import secrets, string, uuid
a = string.ascii_uppercase + string.digits
print("".join(secrets.choice(a) for _ in range(20)),
      "".join(secrets.choice(a + string.ascii_lowercase) for _ in range(40)), uuid.uuid4(),
      secrets.token_hex(4))')
AK=$1 SK=$2 USER_ID=$3 BENCH_USER=bench-$4
psql "$TESSERA_PG_DSN" -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL || die "could not create the bench keypair"
INSERT INTO auth.domains (name) VALUES ('bench') ON CONFLICT DO NOTHING;
INSERT INTO auth.user_resource_policies (name) VALUES ('bench') ON CONFLICT DO NOTHING;
INSERT INTO auth.keypair_resource_policies (name) VALUES ('bench') ON CONFLICT DO NOTHING;
INSERT INTO auth.users (id, email, username, password_hash, role, status, domain_name, resource_policy)
  VALUES ('$USER_ID', '$BENCH_USER@example.test', '$BENCH_USER', 'not-a-hash', 'user', 'active', 'bench', 'bench');
INSERT INTO auth.keypairs (access_key, secret_key, user_id, resource_policy, rate_limit)
  VALUES ('$AK', '$SK', '$USER_ID', 'bench', 0);
SQL

# ---- nginx on another loopback port ----------------------------------------------
NGX_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$NGX/www" "$NGX/tmp"
printf '{"authorized":"yes","echo":"x"}' >"$NGX/www/test.json"
NGX_USER=""
[ "$(id -u)" -ne 0 ] || NGX_USER="user root root;"
cat >"$NGX/nginx.conf" <<NGINX
# generated by bench/gateway/run.sh: a stock-like static file server
$NGX_USER
worker_processes auto;
daemon off;
pid $NGX/nginx.pid;
error_log $NGX/error.log warn;
events { worker_connections 4096; }
http {
    access_log $NGX/access.log combined buffer=64k flush=1s;
    client_body_temp_path $NGX/tmp/body;
    proxy_temp_path $NGX/tmp/proxy;
    fastcgi_temp_path $NGX/tmp/fastcgi;
    uwsgi_temp_path $NGX/tmp/uwsgi;
    scgi_temp_path $NGX/tmp/scgi;
    keepalive_requests 1000000;
    default_type application/json;
    server {
        listen 127.0.0.1:$NGX_PORT;
        root $NGX/www;
    }
}
NGINX
setsid nginx -p "$NGX" -c "$NGX/nginx.conf" -e "$NGX/error.log" </dev/null >"$NGX/stdout.log" 2>&1 &
nginx_pid=$!
NGX_URL=http://127.0.0.1:$NGX_PORT/test.json
i=0
until curl -sf -o /dev/null "$NGX_URL"; do
  if ! kill -0 "$nginx_pid" 2>/dev/null; then
    cat "$NGX/error.log" "$NGX/stdout.log" >&2
    die "nginx exited"
  fi
  i=$((i + 1))
  [ $i -lt 100 ] || die "nginx did not answer in 10 s"
  sleep 0.1
done

# ---- signed headers, once (the date stays valid for 15 minutes) ----------------------
GW_URL=$GW/auth/test?echo=x
BENCH_REPO=$repo python3 - "$AK" "$SK" "$GW_URL" >"$STATE/headers" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["BENCH_REPO"], "tests", "integration"))
import bai_signer
for k, v in bai_signer.signed_headers(sys.argv[1], sys.argv[2], "GET", sys.argv[3]).items():
    print(f"{k}: {v}")
PY
set --
while IFS= read -r line; do set -- "$@" -H "$line"; done <"$STATE/headers"
answer=$(curl -s "$@" "$GW_URL")
[ "$answer" = '{"authorized":"yes","echo":"x"}' ] || die "the signed request is refused: $answer"

# ---- wrk -----------------------------------------------------------------------------
# run_wrk NAME URL [-H header]...: wrk's report in $STATE/wrk.NAME
run_wrk() {
  name=$1 url=$2
  shift 2
  say "wrk -t$THREADS -c$CONNS -d$DURATION --latency $url ($name)"
  wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$@" "$url" >"$STATE/wrk.$name" 2>&1 || {
    cat "$STATE/wrk.$name" >&2
    die "wrk failed against $name"
  }
  if grep -q "Non-2xx" "$STATE/wrk.$name"; then
    cat "$STATE/wrk.$name" >&2
    die "$name answered errors during the run"
  fi
}
# cpu_ticks PID: user+system CPU time of a process, in clock ticks
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
# pg_ticks: CPU of the PostgreSQL server with its current processes (CPU is
# counted per process; one that exits takes its share with it: a floor).
pg_ticks() {
  pm=$(head -n 1 "$STACK/pg/postmaster.pid")
  sum=0
  for p in "$pm" $(ps -o pid= --ppid "$pm"); do
    t=$(cpu_ticks "$p" 2>/dev/null) || continue
    sum=$((sum + t))
  done
  echo "$sum"
}
# stored: ApiAccess records tessera-auth has stored so far
stored() {
  curl -s "$TESSERA_AUTH_URL/metrics" | awk '/^tessera_auth_access_records_stored_total / { printf "%d", $2 }'
}
# gw_metric NAME: a gateway counter (0 when the binary has none)
gw_metric() {
  curl -s "$GW/metrics" | awk -v n="$1" '$1 == n { printf "%d", $2; f = 1 } END { if (!f) print 0 }'
}
gw_pid=$(cat "$STACK/run/gateway.pid")
auth_pid=$(cat "$STACK/run/auth.pid")
bus_pid=$(cat "$STACK/run/devbus.pid")
run_wrk nginx "$NGX_URL"
t0=$(cpu_ticks "$gw_pid") a0=$(cpu_ticks "$auth_pid") p0=$(pg_ticks) s0=$(stored)
d0=$(cpu_ticks "$bus_pid") b0=$(gw_metric tessera_gateway_audit_batches_total)
r0=$(gw_metric tessera_gateway_audit_records_total)
run_wrk gateway "$GW_URL" "$@"
t1=$(cpu_ticks "$gw_pid") a1=$(cpu_ticks "$auth_pid") p1=$(pg_ticks) s1=$(stored)
d1=$(cpu_ticks "$bus_pid") b1=$(gw_metric tessera_gateway_audit_batches_total)
r1=$(gw_metric tessera_gateway_audit_records_total)
# Let the access log catch up (at most BENCH_CATCHUP_MAX seconds) before the
# next run, and measure what it cost per record, the backlog included.
reqs=$(awk '/requests in/ { print $1 }' "$STATE/wrk.gateway")
w0=$(date +%s)
until [ $(($(stored) - s0)) -ge "$reqs" ] || [ $(($(date +%s) - w0)) -ge "$CATCHUP_MAX" ]; do
  sleep 0.2
done
lag=$(($(date +%s) - w0)) a2=$(cpu_ticks "$auth_pid") p2=$(pg_ticks) s2=$(stored)
kill -STOP "$auth_pid"
d3=$(cpu_ticks "$bus_pid")
run_wrk gateway-noingest "$GW_URL" "$@"
d4=$(cpu_ticks "$bus_pid")
kill -CONT "$auth_pid"
auth_pid=""

# rps NAME; pct NAME 99%: numbers from a wrk report (latencies in ms)
rps() { awk '/^Requests\/sec:/ { print $2 }' "$STATE/wrk.$1"; }
pct() {
  awk -v p="$2" '$1 == p {
    v = $2; u = v; sub(/^[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
    if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000
    printf "%.2f", v }' "$STATE/wrk.$1"
}
G_RPS=$(rps gateway) N_RPS=$(rps nginx)
G_P50=$(pct gateway 50%) G_P99=$(pct gateway 99%)
I_RPS=$(rps gateway-noingest) I_P50=$(pct gateway-noingest 50%) I_P99=$(pct gateway-noingest 99%)
N_P50=$(pct nginx 50%) N_P99=$(pct nginx 99%)

cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
echo
echo "bench-gateway: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($cpu), wrk -t$THREADS -c$CONNS -d$DURATION"
awk -v gr="$G_RPS" -v g50="$G_P50" -v g99="$G_P99" -v nr="$N_RPS" -v n50="$N_P50" -v n99="$N_P99" \
  -v ir="$I_RPS" -v i50="$I_P50" -v i99="$I_P99" 'BEGIN {
  printf "| %-40s | %9s | %7s | %7s | %8s |\n", "target", "req/s", "p50 ms", "p99 ms", "vs nginx"
  printf "|%s|%s|%s|%s|%s|\n", "------------------------------------------", "-----------",
         "---------", "---------", "----------"
  printf "| %-40s | %9.0f | %7.2f | %7.2f | %8.2f |\n", "tessera-gateway GET /auth/test (signed)",
         gr, g50, g99, gr / nr
  printf "| %-40s | %9.0f | %7.2f | %7.2f | %8.2f |\n", "the same, auth paused (no ingestion)",
         ir, i50, i99, ir / nr
  printf "| %-40s | %9.0f | %7.2f | %7.2f | %8.2f |\n", "nginx static file (31 bytes)", nr, n50,
         n99, 1
}'
verdict=met
awk -v r="$G_RPS" -v t="$TARGET_RPS" 'BEGIN { exit !(r >= t) }' || verdict="NOT met"
awk -v p="$G_P99" -v t="$TARGET_P99_MS" 'BEGIN { exit !(p < t) }' || verdict="NOT met"
echo "target (>= $TARGET_RPS signed req/s and p99 < $TARGET_P99_MS ms at $CONNS connections, full stack): $verdict"
metrics=$(curl -s "$GW/metrics")
ok=$(echo "$metrics" | awk '/^tessera_gateway_auth_total\{result="ok"\}/ { print $2 }')
miss=$(echo "$metrics" | awk '/^tessera_gateway_cred_cache_misses_total / { print $2 }')
cpu_us=$(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$reqs" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
echo "gateway: $ok signatures verified, $miss credential look-ups sent to tessera-auth, $cpu_us us of gateway CPU per request (full-stack run)"
# us TICKS N: microseconds of CPU per item
us() { awk -v t="$1" -v hz="$(getconf CLK_TCK)" -v n="$2" 'BEGIN { printf "%.1f", n ? t / hz * 1e6 / n : 0 }'; }
echo "access-log ingestion during the full-stack run: $(us $((a1 - a0)) "$reqs") us of tessera-auth and $(us $((p1 - p0)) "$reqs") us of PostgreSQL CPU per request; $((s1 - s0)) of $reqs records stored by its end"
nreqs=$(awk '/requests in/ { print $1 }' "$STATE/wrk.gateway-noingest")
batching="one ApiAccess per request"
[ $((b1 - b0)) -eq 0 ] ||
  batching="$((b1 - b0)) ApiAccessBatch envelopes, $(awk -v r=$((r1 - r0)) -v b=$((b1 - b0)) 'BEGIN { printf "%.1f", r / b }') records each"
echo "the bus (tessera-devbus): $(us $((d1 - d0)) "$reqs") us of CPU per request in the full-stack run, $(us $((d4 - d3)) "$nreqs") us with auth paused; $batching"
# socket errors (connect, read, write, timeout) are reported, not fatal: under
# a full run's load a few timeouts say something about the machine
for n in nginx gateway gateway-noingest; do
  e=$(sed -n 's/^ *Socket errors: //p' "$STATE/wrk.$n")
  echo "wrk socket errors ($n): ${e:-none}"
done
caught="caught up ${lag} s after the run"
[ $((s2 - s0)) -ge "$reqs" ] || caught="NOT caught up ${lag} s after the run ($((s2 - s0)) of $reqs)"
echo "access-log ingestion, backlog included: $(us $((a2 - a0)) $((s2 - s0))) us of tessera-auth and $(us $((p2 - p0)) $((s2 - s0))) us of PostgreSQL CPU per record stored; $caught"
