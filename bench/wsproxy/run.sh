#!/bin/sh
# bench/wsproxy/run.sh: `make bench-wsproxy` (README.md next to this file).
# One run, same machine, same backend for everyone:
#   backend   nginx serving a 612-byte static page (its own instance, 1 worker)
#   nginx     a second nginx as reverse proxy to it (upstream keepalive)
#   wsproxy   tessera-wsproxy to it (a route made through its internal API)
# wrk against the backend directly, through nginx and through wsproxy
# (alternating, ROUNDS times, median kept); then WebSocket echo round trips
# (ws_echo, ws_rtt) direct, through nginx and through wsproxy.
# Env: BENCH_WORKERS (proxy workers each, default 1), BENCH_CONNS (64),
# BENCH_THREADS (wrk threads, 1), BENCH_DURATION (10s), ROUNDS (3),
# WS_ROUNDTRIPS (20000), TESSERA_BIN_DIR, BENCH_BIN_DIR.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${TESSERA_BIN_DIR:?}
BBIN=${BENCH_BIN_DIR:?}
WORKERS=${BENCH_WORKERS:-1}
CONNS=${BENCH_CONNS:-64}
THREADS=${BENCH_THREADS:-1}
DUR=${BENCH_DURATION:-10s}
ROUNDS=${ROUNDS:-3}
WSN=${WS_ROUNDTRIPS:-20000}
for t in wrk nginx redis-server curl python3; do
  command -v $t >/dev/null 2>&1 || { echo "bench-wsproxy: $t is missing (apt-get install wrk nginx redis-server curl)" >&2; exit 1; }
done
# a python3 with requests and cryptography (Debian's; pyenv's may lack them)
PY=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import requests, cryptography' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "bench-wsproxy: no python3 with requests and cryptography (tools/deps.sh)" >&2; exit 1; }
T=$(mktemp -d /tmp/tessera-bench-ws.XXXXXX)
chmod 755 "$T"
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null || true; done
  [ -f "$T/nginx-b.pid" ] && kill "$(cat "$T/nginx-b.pid")" 2>/dev/null || true
  [ -f "$T/nginx-p.pid" ] && kill "$(cat "$T/nginx-p.pid")" 2>/dev/null || true
  sleep 0.3
  rm -rf "$T"
}
trap cleanup EXIT INT TERM

set -- $(python3 -c '
import socket
s=[socket.socket() for _ in range(6)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')
RP=$1 BP=$2 NP=$3 AP=$4 PP=$5 EP=$6

redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" >/dev/null 2>&1 &
PIDS="$PIDS $!"
"$BBIN/ws_echo" "$EP" &
PIDS="$PIDS $!"

mkdir -p "$T/www"
python3 -c 'import sys; sys.stdout.write("<!DOCTYPE html>\n<html><head><title>bench</title></head><body>" + "x"*536 + "</body></html>\n")' > "$T/www/index.html"
common="error_log $T/error.log warn; events { worker_connections 8192; }"
temps="client_body_temp_path $T/cb; proxy_temp_path $T/pt; fastcgi_temp_path $T/ft; uwsgi_temp_path $T/ut; scgi_temp_path $T/st;"
cat > "$T/nginx-b.conf" <<CONF
worker_processes 1; pid $T/nginx-b.pid; daemon on; $common
http { access_log off; $temps keepalive_requests 1000000;
  server { listen 127.0.0.1:$BP; location / { root $T/www; } } }
CONF
cat > "$T/nginx-p.conf" <<CONF
worker_processes $WORKERS; pid $T/nginx-p.pid; daemon on; $common
http { access_log off; $temps keepalive_requests 1000000;
  upstream backend { server 127.0.0.1:$BP; keepalive 256; }
  upstream wsecho { server 127.0.0.1:$EP; }
  server { listen 127.0.0.1:$NP;
    location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection ""; }
    location /ws { proxy_pass http://wsecho; proxy_http_version 1.1; proxy_set_header Upgrade \$http_upgrade;
                   proxy_set_header Connection "upgrade"; proxy_read_timeout 1h; } } }
CONF
nginx -c "$T/nginx-b.conf" -p "$T"
nginx -c "$T/nginx-p.conf" -p "$T"

# the gateway's service key, which alone may make routes, and the proxy's trust file;
# shared mode (one origin for every app: wsproxy.shared_origin) so that wrk
# reaches the app at 127.0.0.1 with its cookie, as in the earlier runs
"$BIN/tessera-gateway" --new-service-key "$T/gateway.key" >"$T/trusted" ||
  { echo "bench-wsproxy: could not make a service key" >&2; exit 1; }
TESSERA_SERVICE_AUTH_TRUST_FILE="$T/trusted" \
TESSERA_REDIS_URL="redis://127.0.0.1:$RP/0" TESSERA_HTTP_LISTEN="127.0.0.1:$AP" \
  TESSERA_WSPROXY_LISTEN="127.0.0.1:$PP" TESSERA_WSPROXY_WORKERS="$WORKERS" TESSERA_LOG_LEVEL=warn \
  TESSERA_WSPROXY_SHARED_ORIGIN=true \
  "$BIN/tessera-wsproxy" 2>"$T/wsproxy.log" &
PIDS="$PIDS $!"
i=0
until curl -sf "http://127.0.0.1:$AP/readyz" >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "bench-wsproxy: tessera-wsproxy did not start" >&2; cat "$T/wsproxy.log" >&2; exit 1; }
  sleep 0.1
done
route() {
  "$PY" - "$T" "http://127.0.0.1:$AP/v1/routes" "$1" "$2" "$repo/tests/integration" <<'PY'
import sys
sys.path.insert(0, sys.argv[5])
import svc_signer
tmp, url, app, port = sys.argv[1:5]
body = {"user_id": "bench", "session_id": f"bench-{app}", "app": app, "target": f"127.0.0.1:{port}"}
r = svc_signer.call(tmp, "gateway", "POST", url, json=body, timeout=10)
r.raise_for_status()
print(r.json()["url"])
PY
}
HTTP_URL=$(route web "$BP")
WS_URL=$(route ws "$EP")
COOKIE=$(curl -si "$HTTP_URL" | sed -n 's/^Set-Cookie: \([^;]*\);.*/\1/p' | tr -d '\r')
[ -n "$COOKIE" ] || { echo "bench-wsproxy: no cookie from $HTTP_URL" >&2; exit 1; }
for u in "http://127.0.0.1:$BP/" "http://127.0.0.1:$NP/"; do
  curl -sf -o /dev/null "$u" || { echo "bench-wsproxy: $u does not answer" >&2; exit 1; }
done
curl -sf -o /dev/null -H "Cookie: $COOKIE" "http://127.0.0.1:$PP/" || { echo "bench-wsproxy: wsproxy does not answer" >&2; exit 1; }

# wrk: "rps p50_ms p99_ms non2xx sockerr" per run; wrk's report in $T/wrk.out
run_wrk() { # url [header]
  if [ $# -gt 1 ]; then
    wrk -t"$THREADS" -c"$CONNS" -d"$DUR" --latency -H "$2" "$1" >"$T/wrk.out" 2>&1 || return 1
  else
    wrk -t"$THREADS" -c"$CONNS" -d"$DUR" --latency "$1" >"$T/wrk.out" 2>&1 || return 1
  fi
  python3 -c '
import sys,re
t=sys.stdin.read()
def ms(v):
    m=re.match(r"([\d.]+)(us|ms|s)",v); x=float(m.group(1)); return x/1000 if m.group(2)=="us" else x*1000 if m.group(2)=="s" else x
try:
    rps=float(re.search(r"Requests/sec:\s+([\d.]+)",t).group(1))
    # the lines of the distribution: "Latency ... 89.50%" above has a 50% too
    p50=ms(re.search(r"^\s*50%\s+(\S+)",t,re.M).group(1)); p99=ms(re.search(r"^\s*99%\s+(\S+)",t,re.M).group(1))
except (AttributeError, ValueError):
    sys.exit(1)  # no latency distribution: no request completed
err=re.search(r"Non-2xx or 3xx responses: (\d+)",t); sock=re.search(r"Socket errors: (.*)",t)
print(rps,p50,p99,err.group(1) if err else 0, "1" if sock else "0")' <"$T/wrk.out"
}
# wrk_row NAME URL [header]: one line of $T/results, or the run ends with wrk's report
wrk_row() {
  name=$1
  shift
  row=$(run_wrk "$@") || {
    echo "bench-wsproxy: wrk against $name ($1) gave no figures; its report:" >&2
    cat "$T/wrk.out" >&2
    exit 1
  }
  echo "$name $row" >>"$T/results"
}
# ws_row NAME HOST:PORT PATH: one line of $T/ws, or the run ends
ws_row() {
  row=$("$BBIN/ws_rtt" "$2" "$3" "$WSN") || { echo "bench-wsproxy: ws_rtt through $1 failed" >&2; exit 1; }
  echo "$1 $row" >>"$T/ws"
}
echo "bench-wsproxy: $(nproc) CPUs; proxies with $WORKERS worker(s) each; wrk -t$THREADS -c$CONNS -d$DUR, $ROUNDS rounds; 612-byte page"
: > "$T/results"
for r in $(seq 1 "$ROUNDS"); do
  wrk_row direct "http://127.0.0.1:$BP/"
  wrk_row nginx "http://127.0.0.1:$NP/"
  wrk_row wsproxy "http://127.0.0.1:$PP/" "Cookie: $COOKIE"
  echo "  round $r done"
done
WS_TOKEN=${WS_URL#*token=}
: > "$T/ws"
for r in $(seq 1 "$ROUNDS"); do
  ws_row direct "127.0.0.1:$EP" /
  ws_row nginx "127.0.0.1:$NP" /ws
  ws_row wsproxy "127.0.0.1:$PP" "/?token=$WS_TOKEN"
done
python3 - "$T/results" "$T/ws" "$WSN" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    name, rps, p50, p99, non2xx, sockerr = line.split()
    rows.setdefault(name, []).append((float(rps), float(p50), float(p99), int(non2xx), sockerr))
def med(name, i): return statistics.median(r[i] for r in rows[name])
print()
print("HTTP (wrk, median of rounds)   requests/s   p50 ms   p99 ms   vs nginx")
for name in ("direct", "nginx", "wsproxy"):
    bad = sum(r[3] for r in rows[name])
    sock = sum(r[4] == "1" for r in rows[name])
    print(f"  {name:28s} {med(name,0):10.0f} {med(name,1):8.2f} {med(name,2):8.2f}   {med(name,0)/med('nginx',0):6.2f}x"
          + (f"  ({bad} non-2xx!)" if bad else "") + (f"  (socket errors in {sock} round(s)!)" if sock else ""))
print("  all rounds: " + "; ".join(f"{n} " + ", ".join(f"{r[0]:.0f}" for r in rows[n]) for n in rows))
ws = {}
for line in open(sys.argv[2]):
    name, *vals = line.split()
    ws.setdefault(name, []).append(list(map(float, vals)))
d, n, w = ([statistics.median(r[i] for r in ws[k]) for i in range(4)] for k in ("direct", "nginx", "wsproxy"))
print()
print(f"WebSocket echo, {sys.argv[3]} x 32 B round trips, median of rounds   p50 us   p99 us  p99.9 us   added p50 / p99 us")
print(f"  direct                                                {d[0]:8.1f} {d[1]:8.1f} {d[2]:9.1f}")
print(f"  nginx                                                 {n[0]:8.1f} {n[1]:8.1f} {n[2]:9.1f}   {n[0]-d[0]:6.1f} / {n[1]-d[1]:6.1f}")
print(f"  wsproxy                                               {w[0]:8.1f} {w[1]:8.1f} {w[2]:9.1f}   {w[0]-d[0]:6.1f} / {w[1]-d[1]:6.1f}")
print("  p99 per round: " + "; ".join(f"{k} " + ", ".join(f"{r[1]:.0f}" for r in ws[k]) for k in ws))
ratio = med("wsproxy", 0) / med("nginx", 0)
print()
print(f"targets: requests/s >= 1.0x nginx: {ratio:.2f}x {'PASS' if ratio >= 1.0 else 'MISS'}; "
      f"WebSocket p99 added < 100 us: {w[1]-d[1]:.1f} us {'PASS' if w[1]-d[1] < 100 else 'MISS'}")
PY
