#!/bin/sh
# dev-up.sh: start the one-machine Tessera development stack on free loopback
# ports: PostgreSQL, Redis, tessera-devbus (Kafka mock cluster), the OCI registry
# (Debian's docker-registry), then auth, registry, scheduler, agent, vfolder,
# wsproxy and gateway; wait until every service's /readyz answers 200.
#
# Environment:
#   TESSERA_STATE_DIR     where everything lives (default <repo>/.tessera-dev):
#                         logs/ (one log per process), run/ (pid files, sockets),
#                         pg/, redis/, oci-registry/, <service>/ (service state),
#                         keys/ (each service's key and the shared trust file),
#                         env (export lines for a shell or a test), services
#                         ("name pid url" per process), cmd/<name> (the
#                         command that started each process, quoted for sh:
#                         deploy/dev/restart.sh replays it).
#   TESSERA_BIN_DIR       the built binaries (default <repo>/build/bin)
#   TESSERA_DEV_SERVICES  which Tessera processes to start (default all:
#                         "devbus auth registry scheduler agent vfolder wsproxy
#                         gateway"); set it empty for PostgreSQL, Redis and the
#                         OCI registry only.
#   TESSERA_DEV_TIMEOUT   seconds to wait for readiness (default 60)
#   TESSERA_DEV_MOCK_GPUS mock GPUs of the agent (default 2); 0 on a host with
#                         NVIDIA GPUs makes the agent use the real ones
#   TESSERA_DEV_NODES     nodes (default 1: one agent on 127.0.0.1, as ever);
#                         N > 1 (root, at most 16): N nodes, each a network
#                         namespace on a bridge of its own with an agent in it
#                         (agent@node1 ..), the control plane listening on the
#                         bridge's address (deploy/dev/nodes.sh)
#   TESSERA_DEV_TLS       on|off: TLS between the processes (default on with
#                         TESSERA_DEV_NODES > 1, off with one node): a CA and
#                         certificates in <state>/tls (deploy/dev/tls.sh),
#                         PostgreSQL with ssl (sslmode=verify-full), Redis on
#                         its TLS port only (a stunnel tunnel on 127.0.0.1 for
#                         the services), the bus behind a TLS terminator
#                         (stunnel; kafka.security_protocol=ssl). off with
#                         nodes is the explicit choice of plain text between
#                         hosts (kafka.allow_plaintext). docs/operations.md,
#                         "Several hosts: encryption".
#   TESSERA_DEV_REPLICAS  instances of each of gateway, registry, scheduler and
#                         wsproxy (default 1, as ever); N > 1 (at most 4):
#                         processes <svc>@1 .. <svc>@N, each on a port of its
#                         own (its /readyz, /metrics; <state>/services) and all
#                         on the service's one address (SO_REUSEPORT:
#                         http.shared_listen, wsproxy.listen_shared), which the
#                         env file names (docs/operations.md, "Replicas")
#   TESSERA_DEV_AGENT_CPU, TESSERA_DEV_AGENT_MEM
#                         what every agent offers to kernels (agent.cpu,
#                         agent.mem: "2", "4g"; default: the host's); kept by
#                         restart.sh (<state>/cmd) and named in <state>/env
#   TESSERA_DEV_PG_OPTIONS more PostgreSQL server options, appended to the
#                         stack's own ("-c wal_init_zero=off -c ..."); read
#                         when PostgreSQL starts
#   TESSERA_IMAGE_CACHE   where the busybox demo image is built once (default
#                         <repo>/build/images); it is pushed to the OCI registry
#                         and named in env as TESSERA_DEMO_IMAGE.
#
# Stop with deploy/dev/dev-down.sh (`make dev-down`), same TESSERA_STATE_DIR;
# restart one process with deploy/dev/restart.sh NAME.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
STATE=${TESSERA_STATE_DIR:-$repo/.tessera-dev}
BIN=${TESSERA_BIN_DIR:-$repo/build/bin}
ALL_SERVICES="devbus auth registry scheduler agent vfolder wsproxy gateway"
SERVICES=${TESSERA_DEV_SERVICES-$ALL_SERVICES}
TIMEOUT=${TESSERA_DEV_TIMEOUT:-60}

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
case "$BIN" in /*) ;; *) BIN=$(cd "$BIN" 2>/dev/null && pwd || echo "$repo/$BIN") ;; esac
RUN=$STATE/run
LOGS=$STATE/logs
mkdir -p "$RUN" "$LOGS"
# Never let a service think systemd supervises it.
unset NOTIFY_SOCKET || true

# ---- helpers shared with dev-down.sh and restart.sh --------------------------
# shellcheck source=deploy/dev/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=deploy/dev/nodes.sh
. "$(dirname "$0")/nodes.sh"
# shellcheck source=deploy/dev/tls.sh
. "$(dirname "$0")/tls.sh"

say() { echo "dev-up: $*"; }
die() { echo "dev-up: $*" >&2; exit 1; }

for s in $SERVICES; do
  case " $ALL_SERVICES " in *" $s "*) ;; *) die "unknown service '$s' in TESSERA_DEV_SERVICES" ;; esac
  [ -x "$BIN/tessera-$s" ] || die "$BIN/tessera-$s is missing: build first (make)"
done
for c in python3 curl; do command -v $c >/dev/null 2>&1 || die "$c is missing: run tools/deps.sh"; done
command -v redis-server >/dev/null 2>&1 || die "redis-server is missing: run tools/deps.sh"
command -v docker-registry >/dev/null 2>&1 || die "docker-registry is missing: run tools/deps.sh"
PGBIN=$(pg_bindir) || die "PostgreSQL server binaries not found: run tools/deps.sh"

# ---- nodes and replicas --------------------------------------------------------
# PROCS: the Tessera processes by name; with nodes, the agent is one per node
# (agent@node1 ..); with replicas, each replicated service one per instance
# (gateway@1 ..).
NODES=${TESSERA_DEV_NODES:-1}
case $NODES in ''|*[!0-9]*) die "TESSERA_DEV_NODES must be a number, not '$NODES'" ;; esac
if [ "$NODES" -lt 1 ] || [ "$NODES" -gt "$NODES_MAX" ]; then die "TESSERA_DEV_NODES must be 1 to $NODES_MAX"; fi
REPLICAS=${TESSERA_DEV_REPLICAS:-1}
case $REPLICAS in ''|*[!0-9]*) die "TESSERA_DEV_REPLICAS must be a number, not '$REPLICAS'" ;; esac
if [ "$REPLICAS" -lt 1 ] || [ "$REPLICAS" -gt "$REPLICAS_MAX" ]; then
  die "TESSERA_DEV_REPLICAS must be 1 to $REPLICAS_MAX"
fi
PROCS=""
for s in $SERVICES; do
  if [ "$s" = agent ] && [ "$NODES" -gt 1 ]; then
    k=1
    while [ "$k" -le "$NODES" ]; do PROCS="$PROCS agent@node$k"; k=$((k + 1)); done
  elif [ "$REPLICAS" -gt 1 ] && dev_replicated "$s"; then
    k=1
    while [ "$k" -le "$REPLICAS" ]; do PROCS="$PROCS $s@$k"; k=$((k + 1)); done
  else
    PROCS="$PROCS $s"
  fi
done
if [ "$NODES" -gt 1 ]; then
  [ "$(id -u)" -eq 0 ] || die "TESSERA_DEV_NODES=$NODES needs root (network namespaces, a bridge, iptables)"
  for c in ip nsenter iptables; do command -v $c >/dev/null 2>&1 || die "$c is missing: run tools/deps.sh"; done
fi

# ---- TLS -----------------------------------------------------------------------
TLS=${TESSERA_DEV_TLS:-}
if [ -z "$TLS" ]; then if [ "$NODES" -gt 1 ]; then TLS=on; else TLS=off; fi; fi
case $TLS in on|off) ;; *) die "TESSERA_DEV_TLS must be on or off, not '$TLS'" ;; esac
# the TLS helpers: redis-tunnel (the services' Redis, 127.0.0.1, to Redis's TLS
# port) and, with the bus, bus-tls (the mock brokers' TLS terminator)
TLS_PROCS=""
if [ "$TLS" = on ]; then
  for c in openssl stunnel4; do command -v $c >/dev/null 2>&1 || die "$c is missing (TESSERA_DEV_TLS=on): run tools/deps.sh"; done
  TLS_PROCS="redis-tunnel"
  case " $SERVICES " in *" devbus "*) TLS_PROCS="$TLS_PROCS bus-tls" ;; esac
fi

# Replicas share their service's address through SO_REUSEPORT. A listener
# that goes (a kill, a drain) resets the connections still in its accept
# queue unless the kernel hands them to another listener of the address:
# net.ipv4.tcp_migrate_req (Linux 5.14; it concerns only such shared
# addresses, so it is turned on for good).
if [ "$REPLICAS" -gt 1 ] && [ -w /proc/sys/net/ipv4/tcp_migrate_req ] &&
   [ "$(cat /proc/sys/net/ipv4/tcp_migrate_req)" = 0 ]; then
  echo 1 >/proc/sys/net/ipv4/tcp_migrate_req && say "net.ipv4.tcp_migrate_req set to 1 (replicas)"
fi

# ---- already up? ---------------------------------------------------------------
expected="postgres redis $TLS_PROCS oci-registry $PROCS"
up=""; down=""; any=no
for n in $expected; do
  if [ -f "$RUN/$n.pid" ] && dev_alive "$RUN" "$n"; then up="$up $n"; any=yes; else down="$down $n"; fi
done
if [ "$any" = yes ]; then
  if [ -z "$down" ] && [ -f "$STATE/services" ]; then
    notready=""
    while read -r n _ url; do
      case " $SERVICES " in *" $n "*) ;; *) continue ;; esac
      [ "$(dev_curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/readyz" 2>/dev/null)" = 200 ] ||
        notready="$notready $n"
    done <"$STATE/services"
    [ -z "$notready" ] ||
      die "the stack in $STATE is running but not ready:$notready (see $LOGS/); restart: deploy/dev/dev-down.sh, then dev-up"
    say "the stack in $STATE is already up (pids alive:$up); nothing started"
    say "environment: . $STATE/env; stop: TESSERA_STATE_DIR='$STATE' make dev-down"
    exit 0
  fi
  die "the stack in $STATE is partly up (alive:$up; not running:$down); run deploy/dev/dev-down.sh first"
fi
# Leftovers of a previous run that died: stale pid files, bootstrap file, its
# node network.
rm -f "$RUN"/*.pid "$RUN"/*.start "$RUN/devbus.bootstrap" "$STATE/env" "$STATE/services"
nodes_down "$STATE" || die "could not remove the node network of a previous run (see above)"
mkdir -p "$STATE/nodes"
echo "$NODES" >"$STATE/nodes/count"
echo "$REPLICAS" >"$STATE/replicas"

# ---- ports ---------------------------------------------------------------------
# Ask the kernel for distinct free loopback ports: bind them all at once (so no
# two are the same), then release them for the processes to take. With
# replicas, one more per instance of each replicated service (its own
# http.listen; the service's port above is the one they share).
NPORTS=13
[ "$REPLICAS" -eq 1 ] || NPORTS=$((13 + 4 * REPLICAS))
# shellcheck disable=SC2046 # the ports are numbers, split on purpose
set -- $(python3 -c '
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
' "$NPORTS")
[ $# -eq "$NPORTS" ] || die "could not pick free ports"
PG_PORT=$1 REDIS_PORT=$2 OCI_PORT=$3 DEVBUS_PORT=$4 AUTH_PORT=$5 REGISTRY_PORT=$6
SCHEDULER_PORT=$7 AGENT_PORT=$8 VFOLDER_PORT=$9
shift 9
WSPROXY_PORT=$1 GATEWAY_PORT=$2 WSPROXY_APP_PORT=$3 REDIS_TLS_PORT=$4
shift 4
# INSTANCE_PORTS: "<svc>@<k>=<port>" per instance, in the order of
# REPLICATED_SERVICES
INSTANCE_PORTS=""
if [ "$REPLICAS" -gt 1 ]; then
  for s in $REPLICATED_SERVICES; do
    k=1
    while [ "$k" -le "$REPLICAS" ]; do
      INSTANCE_PORTS="$INSTANCE_PORTS $s@$k=$1"
      shift
      k=$((k + 1))
    done
  done
fi

# HOST: where the internal services, the bus and the OCI registry listen;
# PUBLIC: the gateway and wsproxy's apps (browsers, the CLI). Both 127.0.0.1
# on one node. With nodes, HOST is the node network's control-plane address
# (the host reaches it too: it is one of its addresses); PostgreSQL and Redis
# listen on both (PG_DSN and REDIS_URL keep 127.0.0.1 for the host's
# processes, CP_PG_DSN and CP_REDIS_URL name the network's address).
HOST=127.0.0.1
PUBLIC=127.0.0.1
LISTEN_ADDRS=127.0.0.1
NODE_NET=""
if [ "$NODES" -gt 1 ]; then
  nodes_claim "$STATE" $((AGENT_PORT % 250)) || die "could not make the node network (see above)"
  NODE_NET=$(nodes_net "$STATE")
  HOST=$(nodes_cp_addr "$NODE_NET")
  LISTEN_ADDRS="127.0.0.1 $HOST"
  k=1
  while [ "$k" -le "$NODES" ]; do
    node_up "$NODE_NET" "$k" || die "could not make node $k's namespace (see above; deploy/dev/dev-down.sh removes the rest)"
    k=$((k + 1))
  done
fi
APPS_URL="http://*.apps.localhost:$WSPROXY_APP_PORT"
# TLS: the stack's CA and the control plane's certificate (for 127.0.0.1 and
# the control plane's address); every client checks it (verify-full).
TLSDIR=$STATE/tls
PG_SSL=sslmode=disable
if [ "$TLS" = on ]; then
  if [ "$HOST" = 127.0.0.1 ]; then tls_make_certs "$TLSDIR" 127.0.0.1 || die "could not make the certificates in $TLSDIR"
  else tls_make_certs "$TLSDIR" 127.0.0.1 "$HOST" || die "could not make the certificates in $TLSDIR"; fi
  if [ "$(id -u)" -eq 0 ]; then tls_pg_copy "$TLSDIR" postgres; else tls_pg_copy "$TLSDIR" ""; fi
  k=1
  while [ "$NODES" -gt 1 ] && [ "$k" -le "$NODES" ]; do
    tls_make_leaf "$TLSDIR" "node$k" "$(node_addr "$NODE_NET" "$k")" ||
      die "could not make node $k's certificate in $TLSDIR"
    k=$((k + 1))
  done
  PG_SSL="sslmode=verify-full&sslrootcert=$(tls_uri_escape "$TLSDIR/ca.crt")"
fi
PG_DSN="postgresql://tessera@127.0.0.1:$PG_PORT/tessera?$PG_SSL"
REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
CP_PG_DSN="postgresql://tessera@$HOST:$PG_PORT/tessera?$PG_SSL"
CP_REDIS_URL="redis://$HOST:$REDIS_PORT/0"
OCI="$HOST:$OCI_PORT"
# the OCI registry: https with TLS (the server certificate), else plain HTTP
OCI_SCHEME=http
[ "$TLS" = off ] || OCI_SCHEME=https

# started NAME PID: record a process as soon as it exists, so that dev-down can
# stop it even when a later step fails.
started() {
  echo "$2" >"$RUN/$1.pid"
  dev_starttime "$2" >"$RUN/$1.start" 2>/dev/null || true
}

# tail_log NAME: the last lines of a process's log, for failure messages.
tail_log() {
  echo "---- last 20 lines of $LOGS/$1.log ----" >&2
  tail -n 20 "$LOGS/$1.log" >&2 2>/dev/null || true
  echo "----" >&2
}

# q WORD: WORD quoted for sh.
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
# record_cmd NAME CMD...: the command line that starts NAME, quoted for sh, in
# cmd/NAME (deploy/dev/restart.sh replays it: same environment, arguments and
# log).
record_cmd() {
  _rn=$1; shift
  mkdir -p "$STATE/cmd"
  for _w in "$@"; do q "$_w"; printf ' '; done >"$STATE/cmd/$_rn.tmp"
  echo >>"$STATE/cmd/$_rn.tmp"
  mv "$STATE/cmd/$_rn.tmp" "$STATE/cmd/$_rn"
}

# launch NAME CMD...: start CMD in its own session (so a terminal's ^C or the
# caller's exit does not reach it), output appended to logs/NAME.log. setsid
# execs in place here (the background child is never a process-group leader in
# a non-interactive shell), so $! is the process itself. The command goes to
# cmd/NAME first.
launch() {
  n=$1; shift
  record_cmd "$n" "$@"
  echo "==== $(date '+%Y-%m-%d %H:%M:%S') starting: $*" >>"$LOGS/$n.log"
  setsid "$@" </dev/null >>"$LOGS/$n.log" 2>&1 &
  started "$n" $!
}


# ---- PostgreSQL ----------------------------------------------------------------
PGDATA=$STATE/pg
PGSOCK=$RUN/pgsock
mkdir -p "$PGSOCK"
: >>"$LOGS/postgres.log"
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || die "running as root needs the 'postgres' user (apt-get install postgresql)"
  # PostgreSQL refuses to run as root: its files belong to 'postgres', which
  # must be able to reach them (mkdtemp makes 0700 directories).
  chmod go+x "$STATE" "$RUN"
  mkdir -p "$PGDATA"
  chown postgres: "$PGDATA" "$PGSOCK" "$LOGS/postgres.log"
  chmod 0700 "$PGDATA"
  asp() { runuser -u postgres -- "$@"; }
  asp test -w "$PGDATA" ||
    die "user 'postgres' cannot reach $PGDATA (check the permissions of its parent directories) - choose another TESSERA_STATE_DIR"
else
  mkdir -p "$PGDATA"
  chmod 0700 "$PGDATA"
  asp() { "$@"; }
fi

if [ ! -f "$PGDATA/PG_VERSION" ]; then
  rm -rf "${PGDATA:?}"/* 2>/dev/null || true
  asp "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust --no-locale -E UTF8 \
    >>"$LOGS/postgres.log" 2>&1 || { tail_log postgres; die "initdb failed"; }
fi
# Remove a postmaster.pid left by a killed server (it no longer runs: checked above).
if [ -f "$PGDATA/postmaster.pid" ] && ! asp "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
  rm -f "$PGDATA/postmaster.pid"
fi
# Who may connect (rewritten at each start): trust from this host, as
# initdb's; with TLS over TLS only (hostnossl: refused). The nodes need no
# PostgreSQL.
{
  echo "# generated by deploy/dev/dev-up.sh at each start"
  echo "local all all trust"
  echo "local replication all trust"
  if [ "$TLS" = on ]; then
    echo "hostnossl all all all reject"
    hba=hostssl
  else
    hba=host
  fi
  echo "$hba all all 127.0.0.1/32 trust"
  echo "$hba all all ::1/128 trust"
} >"$STATE/pg_hba.conf.tmp"
asp sh -c 'cat >"$1"' sh "$PGDATA/pg_hba.conf" <"$STATE/pg_hba.conf.tmp"
rm -f "$STATE/pg_hba.conf.tmp"
PG_TLS_OPTIONS=""
[ "$TLS" = off ] ||
  PG_TLS_OPTIONS="-c ssl=on -c ssl_cert_file=$TLSDIR/pg/server.crt -c ssl_key_file=$TLSDIR/pg/server.key"
# fsync off and friends: a throwaway development database. The start command
# goes to cmd/postgres (restart.sh postgres starts it the same way).
set -- "$PGBIN/pg_ctl" -D "$PGDATA" -l "$LOGS/postgres.log" -w -t 60 -s \
  -o "-p $PG_PORT -k $PGSOCK -c listen_addresses=$(echo "$LISTEN_ADDRS" | tr ' ' ',') -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c log_lock_waits=on $PG_TLS_OPTIONS ${TESSERA_DEV_PG_OPTIONS:-}" \
  start
[ "$(id -u)" -ne 0 ] || set -- runuser -u postgres -- "$@"
record_cmd postgres "$@"
"$@" </dev/null >>"$LOGS/postgres.log" 2>&1 || true
pgpid=$(head -n 1 "$PGDATA/postmaster.pid" 2>/dev/null || true)
[ -n "$pgpid" ] && started postgres "$pgpid"
if [ -z "$pgpid" ] || ! dev_alive "$RUN" postgres; then tail_log postgres; die "PostgreSQL did not start"; fi
psql_() { asp "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PGSOCK" -p "$PG_PORT" -U postgres -d postgres "$@"; }
psql_ -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'tessera'" | grep -q 1 ||
  psql_ -c "CREATE ROLE tessera LOGIN SUPERUSER" >>"$LOGS/postgres.log" 2>&1 ||
  { tail_log postgres; die "could not create role tessera"; }
psql_ -tAc "SELECT 1 FROM pg_database WHERE datname = 'tessera'" | grep -q 1 ||
  psql_ -c "CREATE DATABASE tessera OWNER tessera" >>"$LOGS/postgres.log" 2>&1 ||
  { tail_log postgres; die "could not create database tessera"; }

# ---- Redis ---------------------------------------------------------------------
mkdir -p "$STATE/redis"
if [ "$TLS" = on ]; then
  # TLS only (port 0: no plain port), on both addresses; the services' client
  # (hiredis 0.14) has no TLS: they reach it through redis-tunnel, a stunnel
  # client on 127.0.0.1:REDIS_PORT that checks the certificate.
  # shellcheck disable=SC2086 # one or two addresses, split on purpose
  launch redis redis-server --bind $LISTEN_ADDRS --port 0 --tls-port "$REDIS_TLS_PORT" \
    --tls-cert-file "$TLSDIR/server.crt" --tls-key-file "$TLSDIR/server.key" \
    --tls-ca-cert-file "$TLSDIR/ca.crt" --tls-auth-clients no --save "" --appendonly no \
    --daemonize no --dir "$STATE/redis" --logfile ""
  cat >"$TLSDIR/redis-tunnel.conf" <<EOF
; generated by deploy/dev/dev-up.sh: the services' Redis (plain, 127.0.0.1)
; to Redis's TLS port, the certificate checked against the stack's CA
foreground = yes
pid =
syslog = no
debug = notice
[redis]
client = yes
accept = 127.0.0.1:$REDIS_PORT
connect = 127.0.0.1:$REDIS_TLS_PORT
CAfile = $TLSDIR/ca.crt
verifyChain = yes
checkIP = 127.0.0.1
EOF
  launch redis-tunnel stunnel4 "$TLSDIR/redis-tunnel.conf"
else
  # shellcheck disable=SC2086 # one or two addresses, split on purpose
  launch redis redis-server --bind $LISTEN_ADDRS --port "$REDIS_PORT" --save "" --appendonly no \
    --daemonize no --dir "$STATE/redis" --logfile ""
fi
deadline=$(( $(now) + 20 ))
until python3 - "$REDIS_PORT" <<'EOF' 2>/dev/null
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"PING\r\n")
sys.exit(0 if s.recv(16).startswith(b"+PONG") else 1)
EOF
do
  dev_alive "$RUN" redis || { tail_log redis; die "Redis exited"; }
  [ "$TLS" = off ] || dev_alive "$RUN" redis-tunnel || { tail_log redis-tunnel; die "the Redis tunnel (stunnel) exited"; }
  [ "$(now)" -lt "$deadline" ] || { tail_log redis; die "Redis did not answer PING in 20 s"; }
  sleep 0.1
done

# ---- tessera-devbus (Kafka mock cluster) -------------------------------------------
KAFKA=""
case " $SERVICES " in *" devbus "*)
  # with TLS the brokers listen on 127.0.0.2 and bus-tls on the address they
  # advertise, the same ports
  BUS_LISTEN=""
  [ "$TLS" = off ] || BUS_LISTEN=127.0.0.2
  # (with nodes, its HTTP API is on the node network's address in plain
  # text: http.allow_plaintext, as the control plane's services)
  launch devbus env "TESSERA_HTTP_LISTEN=$HOST:$DEVBUS_PORT" \
    "TESSERA_HTTP_ALLOW_PLAINTEXT=$([ "$NODES" -gt 1 ] && echo true || echo false)" \
    "TESSERA_SERVICE_INSTANCE=dev-devbus" "TESSERA_DEVBUS_BROKER_ADDR=$HOST" \
    "TESSERA_DEVBUS_LISTEN_ADDR=$BUS_LISTEN" \
    "TESSERA_DEVBUS_BOOTSTRAP_FILE=$RUN/devbus.bootstrap" \
    "$BIN/tessera-devbus"
  deadline=$(( $(now) + 30 ))
  until [ -s "$RUN/devbus.bootstrap" ]; do
    dev_alive "$RUN" devbus || { tail_log devbus; die "tessera-devbus exited"; }
    [ "$(now)" -lt "$deadline" ] || { tail_log devbus; die "tessera-devbus wrote no bootstrap file in 30 s"; }
    sleep 0.1
  done
  KAFKA=$(head -n 1 "$RUN/devbus.bootstrap")
  if [ "$TLS" = on ]; then
    {
      echo "; generated by deploy/dev/dev-up.sh: TLS in front of each mock broker"
      echo "foreground = yes"
      echo "pid ="
      echo "syslog = no"
      echo "debug = notice"
      for hp in $(echo "$KAFKA" | tr ',' ' '); do
        echo "[broker-${hp##*:}]"
        echo "accept = $hp"
        echo "connect = $BUS_LISTEN:${hp##*:}"
        echo "cert = $TLSDIR/server.crt"
        echo "key = $TLSDIR/server.key"
      done
    } >"$TLSDIR/bus-tls.conf"
    launch bus-tls stunnel4 "$TLSDIR/bus-tls.conf"
    deadline=$(( $(now) + 20 ))
    until python3 -c '
import socket, sys
for hp in sys.argv[1].split(","):
    h, p = hp.rsplit(":", 1)
    socket.create_connection((h, int(p)), timeout=1).close()
' "$KAFKA" 2>/dev/null
    do
      dev_alive "$RUN" bus-tls || { tail_log bus-tls; die "the bus's TLS terminator (stunnel) exited"; }
      [ "$(now)" -lt "$deadline" ] || { tail_log bus-tls; die "the bus's TLS terminator did not listen in 20 s"; }
      sleep 0.1
    done
  fi
  ;;
esac

# ---- OCI registry ----------------------------------------------------------------
mkdir -p "$STATE/oci-registry"
cat >"$STATE/oci-registry.yml" <<EOF
# generated by deploy/dev/dev-up.sh
version: 0.1
log:
  level: info
  fields:
    service: oci-registry
storage:
  filesystem:
    rootdirectory: $STATE/oci-registry
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: $OCI
$(if [ "$TLS" = on ]; then printf '  tls:\n    certificate: %s\n    key: %s\n' "$TLSDIR/server.crt" "$TLSDIR/server.key"; fi)
  headers:
    X-Content-Type-Options: [nosniff]
EOF
launch oci-registry docker-registry serve "$STATE/oci-registry.yml"
deadline=$(( $(now) + 30 ))
until [ "$(dev_curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$OCI_SCHEME://$OCI/v2/" 2>/dev/null)" = 200 ]; do
  dev_alive "$RUN" oci-registry || { tail_log oci-registry; die "docker-registry exited"; }
  [ "$(now)" -lt "$deadline" ] || { tail_log oci-registry; die "docker-registry did not answer GET /v2/ in 30 s"; }
  sleep 0.1
done

# ---- demo image ---------------------------------------------------------------------
# The busybox test and demo image (tools/oci-image.py from Debian's busybox-static),
# built once into the image cache (rebuilt when /bin/busybox changes) and pushed
# to this registry; its reference goes to <state>/env as TESSERA_DEMO_IMAGE.
IMAGE_CACHE=${TESSERA_IMAGE_CACHE:-$repo/build/images}
DEMO_IMAGE=""
if [ -x /bin/busybox ]; then
  if [ ! -s "$IMAGE_CACHE/busybox/index.json" ] ||
     [ -n "$(find /bin/busybox "$repo/tools/oci-image.py" -newer "$IMAGE_CACHE/busybox/index.json" 2>/dev/null)" ]; then
    python3 "$repo/tools/oci-image.py" busybox "$IMAGE_CACHE/busybox" >>"$LOGS/images.log" 2>&1 ||
      { tail_log images; die "building the busybox image failed"; }
  fi
  if [ "$TLS" = on ]; then
    # https, the certificate checked against the stack's CA (Python's default
    # context reads SSL_CERT_FILE)
    SSL_CERT_FILE="$TLSDIR/ca.crt" python3 "$repo/tools/oci-image.py" push "$IMAGE_CACHE/busybox" \
      "$OCI/tessera/busybox:latest" >>"$LOGS/images.log" 2>&1 ||
      { tail_log images; die "pushing the busybox image to $OCI failed"; }
  else
    python3 "$repo/tools/oci-image.py" push "$IMAGE_CACHE/busybox" "$OCI/tessera/busybox:latest" --insecure \
      >>"$LOGS/images.log" 2>&1 || { tail_log images; die "pushing the busybox image to $OCI failed"; }
  fi
  DEMO_IMAGE="$OCI/tessera/busybox:latest"
else
  say "warning: /bin/busybox is missing (tools/deps.sh installs busybox-static): no demo image"
fi

# ---- Tessera services ------------------------------------------------------------
port_of() {
  case $1 in
    devbus) echo "$DEVBUS_PORT" ;; auth) echo "$AUTH_PORT" ;; registry) echo "$REGISTRY_PORT" ;;
    scheduler) echo "$SCHEDULER_PORT" ;; agent|agent@*) echo "$AGENT_PORT" ;;
    vfolder) echo "$VFOLDER_PORT" ;; wsproxy) echo "$WSPROXY_PORT" ;; gateway) echo "$GATEWAY_PORT" ;;
    *@[0-9]*) for _ip in $INSTANCE_PORTS; do [ "${_ip%%=*}" != "$1" ] || echo "${_ip#*=}"; done ;;
  esac
}
# host_of NAME: the address a process listens on (a node's agent: the node's;
# "agent" with nodes: node 1's)
host_of() {
  case $1 in
    gateway|gateway@*) echo "$PUBLIC" ;;
    agent@node*) node_addr "$NODE_NET" "${1#agent@node}" ;;
    agent) if [ "$NODES" -gt 1 ]; then node_addr "$NODE_NET" 1; else echo "$HOST"; fi ;;
    *) echo "$HOST" ;;
  esac
}
# url_of NAME: where clients reach a process; with TLS, a node's agent answers
# on https (its own listener, with node<k>.crt)
url_of() {
  case "$TLS $1" in
    "on agent@node"*) echo "https://$(host_of "$1"):$(port_of "$1")" ;;
    *) echo "http://$(host_of "$1"):$(port_of "$1")" ;;
  esac
}

# Single sign-on (docs/console.md "Single sign-on"): the HS256 secret the
# development stack shares with a token issuer (tests mint tokens with it;
# TESSERA_SSO_SECRET_FILE in the env file). Kept across restarts.
SSO_SECRET=$STATE/auth/sso.secret
mkdir -p "$STATE/auth"
if [ ! -s "$SSO_SECRET" ]; then
  (umask 077 && od -An -vtx1 -N32 /dev/urandom | tr -d ' \n' >"$SSO_SECRET")
fi

# Service credentials (docs/operations.md, "Service credentials"): each
# service's own key in keys/<service>.key (0600, kept across restarts), and
# keys/trusted with every service's public key, which all of them read.
KEYS=$STATE/keys
mkdir -p "$KEYS"
chmod 0700 "$KEYS"
: >"$KEYS/trusted.tmp"
for s in gateway auth registry scheduler agent vfolder wsproxy; do
  [ -x "$BIN/tessera-$s" ] || continue
  if [ -s "$KEYS/$s.key" ]; then
    "$BIN/tessera-$s" --service-public-key "$KEYS/$s.key" >>"$KEYS/trusted.tmp" ||
      die "$KEYS/$s.key is not a usable service key (remove it to make a new one)"
  else
    rm -f "$KEYS/$s.key"
    "$BIN/tessera-$s" --new-service-key "$KEYS/$s.key" >>"$KEYS/trusted.tmp" ||
      die "could not make a service key for $s in $KEYS"
  fi
done
mv "$KEYS/trusted.tmp" "$KEYS/trusted"

# start_service SERVICE [NODE [INSTANCE]]: launch one Tessera process; the
# agent of node NODE (agent@node<NODE>) in that node's network namespace;
# instance INSTANCE of a replicated service (<svc>@<INSTANCE>) on its own
# port and, shared with the others, the service's.
start_service() {
  s=$1 node=${2:-} inst=${3:-}
  name=$s sdir=$STATE/$s pg=$PG_DSN redis=$REDIS_URL
  [ -z "$inst" ] || name=$s@$inst
  if [ -n "$node" ]; then
    # a node reaches the control plane over the node network only
    name=agent@node$node sdir=$STATE/node$node/agent pg=$CP_PG_DSN redis=$CP_REDIS_URL
  fi
  mkdir -p "$sdir"
  # Every service gets the same connection settings (a service reads only the
  # options it has); <svc>.state_dir is where a service that keeps files
  # (agent: bundles and image cache; vfolder: its volumes) puts them.
  svc_state_var="TESSERA_$(echo "$s" | tr '[:lower:]' '[:upper:]')_STATE_DIR"
  set -- env "$svc_state_var=$sdir" \
    "TESSERA_HTTP_LISTEN=$(host_of "$name"):$(port_of "$name")" \
    "TESSERA_SERVICE_INSTANCE=dev-$(echo "$name" | tr @ -)" \
    "TESSERA_SHUTDOWN_DRAIN_TIMEOUT=${TESSERA_SHUTDOWN_DRAIN_TIMEOUT:-5s}" \
    "TESSERA_KAFKA_FETCH_WAIT=${TESSERA_KAFKA_FETCH_WAIT:-10ms}" \
    "TESSERA_KAFKA_CONTROL_FETCH_WAIT=${TESSERA_KAFKA_CONTROL_FETCH_WAIT:-3ms}" \
    "TESSERA_PG_DSN=$pg" \
    "TESSERA_REDIS_URL=$redis" \
    "TESSERA_AUTH_URL=$(url_of auth)" \
    "TESSERA_REGISTRY_URL=$(url_of registry)" \
    "TESSERA_VFOLDER_URL=$(url_of vfolder)" \
    "TESSERA_WSPROXY_URL=$(url_of wsproxy)" \
    "TESSERA_OCI_REGISTRY=$OCI" \
    "TESSERA_STATE_DIR=$STATE" \
    "TESSERA_SERVICE_AUTH_KEY_FILE=$KEYS/$s.key" \
    "TESSERA_SERVICE_AUTH_TRUST_FILE=$KEYS/trusted"
  [ -z "$KAFKA" ] || set -- "$@" "TESSERA_KAFKA_BOOTSTRAP=$KAFKA" "KAFKA_BOOTSTRAP=$KAFKA"
  # TLS to the bus; without it, a bus on the node network is plain text
  # between hosts, which the services refuse unless told (TESSERA_DEV_TLS=off
  # is that choice)
  if [ "$TLS" = on ]; then
    set -- "$@" "TESSERA_KAFKA_SECURITY_PROTOCOL=ssl" "TESSERA_KAFKA_SSL_CA_FILE=$TLSDIR/ca.crt" \
      "TESSERA_HTTP_CA_FILE=$TLSDIR/ca.crt" "TESSERA_OCI_PLAIN_HTTP=false" \
      "TESSERA_OCI_CA_FILE=$TLSDIR/ca.crt" "TESSERA_AGENT_REGISTRY_CA_FILE=$TLSDIR/ca.crt"
  elif [ "$NODES" -gt 1 ]; then
    set -- "$@" "TESSERA_KAFKA_ALLOW_PLAINTEXT=true"
  fi
  # with nodes, the control plane listens on the node network's address in
  # plain HTTP: its services are all on this host and no node calls them
  # (the agents only answer), the explicit choice of http.allow_plaintext
  if [ "$NODES" -gt 1 ] && [ -z "$node" ]; then
    set -- "$@" "TESSERA_HTTP_ALLOW_PLAINTEXT=true"
  fi
  # an instance: its own port above, and the service's, shared with the
  # other instances (SO_REUSEPORT), where its clients reach it
  if [ -n "$inst" ]; then
    set -- "$@" "TESSERA_HTTP_SHARED_LISTEN=$(host_of "$s"):$(port_of "$s")"
    [ "$s" != wsproxy ] || set -- "$@" "TESSERA_WSPROXY_LISTEN_SHARED=true"
  fi
  # wsproxy: its app proxy on a port of its own, the same after a restart
  # (deploy/dev/restart.sh), so that app links handed out stay valid. Each
  # app on a host name of its own, <hash>.apps.localhost (Chromium, Firefox
  # and curl take *.localhost for this machine): never on the console's
  # 127.0.0.1, whose cookies (the console's login) a browser would send it.
  [ "$s" != wsproxy ] || set -- "$@" "TESSERA_WSPROXY_LISTEN=$PUBLIC:$WSPROXY_APP_PORT" \
    "TESSERA_WSPROXY_PUBLIC_URL=$APPS_URL"
  # auth's first start writes the superadmin's keys there (0600; later starts
  # leave it as it is).
  [ "$s" != auth ] || set -- "$@" "TESSERA_BOOTSTRAP_CREDENTIALS_FILE=$STATE/auth/admin-credentials" \
    "TESSERA_AUTH_SSO_SECRET_FILE=$SSO_SECRET"
  # agent: 2 mock GPUs; a CNI bridge, subnet and host port pool of its own
  # (derived from its HTTP port, so stacks side by side do not collide); the
  # development OCI registry speaks plain HTTP.
  # A create that waits for RUNNING holds an HTTP worker thread in the gateway
  # and in the registry until it is answered (suspending those connections is
  # still to do): give both enough threads for several waiting creates.
  if [ "$s" = gateway ] || [ "$s" = registry ]; then
    set -- "$@" "TESSERA_HTTP_THREADS=${TESSERA_HTTP_THREADS:-16}"
  fi
  # the gateway's GET /admin/status probes its upstreams and the agents by
  # itself; the scheduler and the dev bus are named here
  if [ "$s" = gateway ]; then
    targets=""
    for t in scheduler devbus; do
      case " $SERVICES " in *" $t "*) ;; *) continue ;; esac
      if [ "$REPLICAS" -gt 1 ] && dev_replicated "$t"; then
        _r=1 # not k: the caller's loop runs over k
        while [ "$_r" -le "$REPLICAS" ]; do
          targets="$targets${targets:+,}$t@$_r=$(url_of "$t@$_r")"
          _r=$((_r + 1))
        done
      else
        targets="$targets${targets:+,}$t=$(url_of "$t")"
      fi
    done
    set -- "$@" "TESSERA_GATEWAY_STATUS_TARGETS=$targets"
  fi
  [ "$s" != registry ] || set -- "$@" "TESSERA_REGISTRY_MAX_WAITING_CREATES=${TESSERA_REGISTRY_MAX_WAITING_CREATES:-8}"
  # the registry's event consumers (3 groups x registry.event_consumers) and
  # its HTTP threads each may hold a PostgreSQL connection
  [ "$s" != registry ] || set -- "$@" "TESSERA_PG_POOL_SIZE=${TESSERA_REGISTRY_PG_POOL_SIZE:-16}"
  if [ "$s" = agent ] && [ -n "$node" ]; then
    # a node: its own id, bridge, kernels' subnet and port pool (nodes.sh);
    # its kernels reach neither the control plane nor the other nodes
    # (agent.cni_deny), and only the control plane's address reaches their
    # published ports (the gateway and wsproxy: agent.cni_publish_from)
    # with TLS it serves https itself on the node's address (node<k>.crt,
    # http.tls_cert/http.tls_key) and advertises https://<node address>:<port>;
    # without, plain HTTP between hosts is the explicit choice
    # (http.allow_plaintext)
    if [ "$TLS" = on ]; then
      set -- "$@" "TESSERA_HTTP_TLS_CERT=$TLSDIR/node$node.crt" \
        "TESSERA_HTTP_TLS_KEY=$TLSDIR/node$node.key" \
        "TESSERA_AGENT_ADVERTISE_ADDR=$(url_of "$name")"
    else
      set -- "$@" "TESSERA_HTTP_ALLOW_PLAINTEXT=true"
    fi
    set -- "$@" "TESSERA_AGENT_ID=node$node" \
      "TESSERA_AGENT_CNI_NETWORK=$(node_cni_network "$NODE_NET" "$node")" \
      "TESSERA_AGENT_CNI_SUBNET=$(node_cni_subnet "$NODE_NET" "$node")" \
      "TESSERA_AGENT_PORT_RANGE=$(node_port_range "$NODE_NET" "$node")" \
      "TESSERA_AGENT_CNI_DENY=169.254.0.0/16,$(nodes_subnet "$NODE_NET")" \
      "TESSERA_AGENT_CNI_PUBLISH_FROM=$HOST/32"
  elif [ "$s" = agent ]; then
    # the stack's slot (lib.sh, dev_slot_claim): its own network and host
    # ports. dev-down.sh removes this network's rules and bridge when the
    # agent could not (its published ports answer on 127.0.0.1, the address
    # the agent is bound to and wsproxy connects to)
    n=$(dev_slot_claim "$STATE" $((AGENT_PORT % 100))) || die "could not claim an agent slot (see above)"
    echo "tsdev$n" >"$STATE/agent/cni_network"
    set -- "$@" "TESSERA_AGENT_CNI_NETWORK=tsdev$n" "TESSERA_AGENT_CNI_SUBNET=10.214.$n.0/24" \
      "TESSERA_AGENT_PORT_RANGE=$((20000 + n * 100))-$((20099 + n * 100))"
  fi
  if [ "$s" = agent ]; then
    [ -z "${TESSERA_DEV_AGENT_CPU:-}" ] || set -- "$@" "TESSERA_AGENT_CPU=$TESSERA_DEV_AGENT_CPU"
    [ -z "${TESSERA_DEV_AGENT_MEM:-}" ] || set -- "$@" "TESSERA_AGENT_MEM=$TESSERA_DEV_AGENT_MEM"
    set -- "$@" "TESSERA_AGENT_MOCK_GPUS=${TESSERA_DEV_MOCK_GPUS:-2}" "TESSERA_AGENT_MOCK_GPU_MEMORY=16g" \
      "TESSERA_AGENT_DESTROY_ON_STOP=true"
    # the development registry speaks plain HTTP, or https with TLS
    [ "$TLS" = on ] || set -- "$@" "TESSERA_AGENT_INSECURE_REGISTRIES=$OCI"
    # the CUDA shim the build made (build/lib), or an installed one (lib/tessera);
    # without one (no CUDA toolkit at build time) GPU kernels run without it
    shim="$(dirname "$BIN")/lib/libtessera-cuda.so"
    [ -f "$shim" ] || shim="$(dirname "$BIN")/lib/tessera/libtessera-cuda.so"
    if [ -f "$shim" ]; then set -- "$@" "TESSERA_AGENT_CUDA_SHIM_PATH=$shim"
    else set -- "$@" "TESSERA_AGENT_CUDA_SHIM=false"; fi
  fi
  # vfolder: one volume, "local", in its state dir (the default host).
  [ "$s" != vfolder ] || set -- "$@" "TESSERA_VFOLDER_VOLUMES=local:$STATE/vfolder/volumes/local" \
    "TESSERA_VFOLDER_DEFAULT_HOST=local"
  if [ -n "$node" ]; then
    launch "$name" nsenter "--net=/run/netns/$(node_netns "$NODE_NET" "$node")" "$@" "$BIN/tessera-$s"
  else
    launch "$name" "$@" "$BIN/tessera-$s"
  fi
}

for s in $SERVICES; do
  [ "$s" = devbus ] && continue
  if [ "$s" = agent ] && [ "$NODES" -gt 1 ]; then
    k=1
    while [ "$k" -le "$NODES" ]; do start_service agent "$k"; k=$((k + 1)); done
  elif [ "$REPLICAS" -gt 1 ] && dev_replicated "$s"; then
    k=1
    while [ "$k" -le "$REPLICAS" ]; do start_service "$s" "" "$k"; k=$((k + 1)); done
  else
    start_service "$s"
  fi
done

# ---- env and services files (written before the wait, for inspection) -----------
{
  echo "# Tessera development stack: . this file (generated by deploy/dev/dev-up.sh)"
  echo "export TESSERA_STATE_DIR=$(q "$STATE")"
  for s in gateway auth registry scheduler agent vfolder wsproxy devbus; do
    var="TESSERA_$(echo "$s" | tr '[:lower:]' '[:upper:]')_URL"
    echo "export $var=$(q "$(url_of "$s")")"
  done
  if [ -n "$KAFKA" ]; then
    echo "export KAFKA_BOOTSTRAP=$(q "$KAFKA")"
    echo "export TESSERA_KAFKA_BOOTSTRAP=$(q "$KAFKA")"
  fi
  echo "export TESSERA_PG_DSN=$(q "$PG_DSN")"
  echo "export TESSERA_REDIS_URL=$(q "$REDIS_URL")"
  echo "export TESSERA_OCI_REGISTRY=$(q "$OCI")"
  [ -z "$DEMO_IMAGE" ] || echo "export TESSERA_DEMO_IMAGE=$(q "$DEMO_IMAGE")"
  echo "export TESSERA_BIN_DIR=$(q "$BIN")"
  echo "export TESSERA_SERVICE_KEYS_DIR=$(q "$KEYS")"
  echo "export TESSERA_SERVICE_TRUST_FILE=$(q "$KEYS/trusted")"
  echo "export TESSERA_LOG_DIR=$(q "$LOGS")"
  echo "export PGHOST='127.0.0.1' PGPORT=$(q "$PG_PORT") PGUSER='tessera' PGDATABASE='tessera'"
  # the nodes (TESSERA_DEV_NODES > 1): the node network, each node's name,
  # address, network namespace and agent URL
  echo "export TESSERA_DEV_NODES=$(q "$NODES")"
  echo "export TESSERA_DEV_TLS=$(q "$TLS")"
  if [ "$TLS" = on ]; then
    echo "export TESSERA_TLS_CA_FILE=$(q "$TLSDIR/ca.crt")"
    echo "export TESSERA_TLS_CERT_FILE=$(q "$TLSDIR/server.crt")"
    echo "export TESSERA_TLS_KEY_FILE=$(q "$TLSDIR/server.key")"
    echo "export TESSERA_REDIS_TLS_URL=$(q "rediss://$HOST:$REDIS_TLS_PORT/0")"
    echo "export PGSSLMODE='verify-full' PGSSLROOTCERT=$(q "$TLSDIR/ca.crt")"
    if [ -n "$KAFKA" ]; then
      echo "export TESSERA_KAFKA_SECURITY_PROTOCOL='ssl'"
      echo "export TESSERA_KAFKA_SSL_CA_FILE=$(q "$TLSDIR/ca.crt")"
    fi
  fi
  # the replicas (TESSERA_DEV_REPLICAS > 1): each instance's own URL (the
  # service's URL above is the address they share)
  echo "export TESSERA_DEV_REPLICAS=$(q "$REPLICAS")"
  # the agents' capacity when limited (TESSERA_DEV_AGENT_CPU / _MEM)
  [ -z "${TESSERA_DEV_AGENT_CPU:-}" ] || echo "export TESSERA_DEV_AGENT_CPU=$(q "$TESSERA_DEV_AGENT_CPU")"
  [ -z "${TESSERA_DEV_AGENT_MEM:-}" ] || echo "export TESSERA_DEV_AGENT_MEM=$(q "$TESSERA_DEV_AGENT_MEM")"
  for n in $PROCS; do
    case $n in *@[0-9]*)
      echo "export TESSERA_$(echo "${n%@*}" | tr '[:lower:]' '[:upper:]')_${n#*@}_URL=$(q "$(url_of "$n")")" ;;
    esac
  done
  if [ "$NODES" -gt 1 ]; then
    echo "export TESSERA_NODE_NETWORK=$(q "$(nodes_bridge "$NODE_NET")")"
    echo "export TESSERA_NODE_SUBNET=$(q "$(nodes_subnet "$NODE_NET")")"
    echo "export TESSERA_CONTROL_PLANE_ADDR=$(q "$HOST")"
    k=1
    while [ "$k" -le "$NODES" ]; do
      echo "export TESSERA_NODE_${k}_NAME=$(q "node$k")"
      echo "export TESSERA_NODE_${k}_ADDR=$(q "$(node_addr "$NODE_NET" "$k")")"
      echo "export TESSERA_NODE_${k}_NETNS=$(q "$(node_netns "$NODE_NET" "$k")")"
      case " $PROCS " in *" agent@node$k "*)
        echo "export TESSERA_NODE_${k}_AGENT_URL=$(q "$(url_of "agent@node$k")")" ;;
      esac
      k=$((k + 1))
    done
  fi
} >"$STATE/env.tmp"
mv "$STATE/env.tmp" "$STATE/env"
{
  echo "postgres $(cat "$RUN/postgres.pid") $PG_DSN"
  echo "redis $(cat "$RUN/redis.pid") $REDIS_URL"
  for t in $TLS_PROCS; do echo "$t $(cat "$RUN/$t.pid") tls"; done
  echo "oci-registry $(cat "$RUN/oci-registry.pid") $OCI_SCHEME://$OCI"
  for s in $PROCS; do echo "$s $(cat "$RUN/$s.pid") $(url_of "$s")"; done
} >"$STATE/services.tmp"
mv "$STATE/services.tmp" "$STATE/services"

# ---- readiness -------------------------------------------------------------------
deadline=$(( $(now) + TIMEOUT ))
pending=$PROCS
while [ -n "$pending" ]; do
  still=""
  for s in $pending; do
    if ! dev_alive "$RUN" "$s"; then
      echo "dev-up: tessera-$s exited before it was ready" >&2
      tail_log "$s"
      die "see $LOGS/$s.log; stop the rest with deploy/dev/dev-down.sh"
    fi
    code=$(dev_curl -s -o "$RUN/readyz.$s" -w '%{http_code}' --max-time 2 "$(url_of "$s")/readyz" 2>/dev/null) || true
    [ "$code" = 200 ] || still="$still $s"
  done
  pending=$still
  [ -z "$pending" ] && break
  if [ "$(now)" -ge "$deadline" ]; then
    for s in $pending; do
      echo "dev-up: tessera-$s is not ready after ${TIMEOUT} s; GET $(url_of "$s")/readyz:" >&2
      cat "$RUN/readyz.$s" >&2 2>/dev/null || true
      echo >&2
      tail_log "$s"
    done
    die "not ready:$pending (left running for inspection; stop with deploy/dev/dev-down.sh)"
  fi
  sleep 0.2
done
rm -f "$RUN"/readyz.*

# ---- the superadmin's credentials, for shells, tests and Backend.AI clients ----
CREDS=$STATE/auth/admin-credentials
case " $SERVICES " in *" auth "*)
  [ -s "$CREDS" ] || die "tessera-auth is ready but wrote no $CREDS (see $LOGS/auth.log)"
  # shellcheck disable=SC1090 # written by tessera-auth: NAME='value' lines
  . "$CREDS"
  {
    echo "export TESSERA_ADMIN_ACCESS_KEY=$(q "$TESSERA_ADMIN_ACCESS_KEY")"
    echo "export TESSERA_ADMIN_SECRET_KEY=$(q "$TESSERA_ADMIN_SECRET_KEY")"
    echo "export TESSERA_ADMIN_EMAIL=$(q "$TESSERA_ADMIN_EMAIL")"
    echo "export TESSERA_ADMIN_PASSWORD=$(q "$TESSERA_ADMIN_PASSWORD")"
    echo "export BACKEND_ENDPOINT=$(q "$(url_of gateway)")"
    echo "export BACKEND_ACCESS_KEY=$(q "$TESSERA_ADMIN_ACCESS_KEY")"
    echo "export BACKEND_SECRET_KEY=$(q "$TESSERA_ADMIN_SECRET_KEY")"
    echo "export BACKEND_ENDPOINT_TYPE='api'"
    echo "export TESSERA_SSO_SECRET_FILE=$(q "$SSO_SECRET")"
  } >>"$STATE/env"
  ;;
esac
case " $SERVICES " in *" gateway "*)
  echo "export TESSERA_CONSOLE_URL=$(q "$(url_of gateway)/console/")" >>"$STATE/env"
  ;;
esac

# ---- summary -------------------------------------------------------------------
echo "dev-up: Tessera development stack is up in $STATE"
for s in $PROCS; do printf '  %-10s %s\n' "$s" "$(url_of "$s")"; done
printf '  %-10s %s\n' postgres "$PG_DSN" redis "$REDIS_URL" oci "$OCI"
[ -n "$KAFKA" ] && printf '  %-10s %s\n' kafka "$KAFKA"
if [ "$NODES" -gt 1 ]; then
  echo "  nodes: $NODES on $(nodes_bridge "$NODE_NET") $(nodes_subnet "$NODE_NET") (control plane $HOST);" \
    "a node's shell: ip netns exec $(node_netns "$NODE_NET" 1) sh"
fi
case " $SERVICES " in *" gateway "*)
  echo "  console: $(url_of gateway)/console/"
  echo "           log in as ${TESSERA_ADMIN_EMAIL:-?} with password ${TESSERA_ADMIN_PASSWORD:-?}"
  echo "  apps:    $APPS_URL (each app at <hash>.apps.localhost: a browser on this machine)"
  [ -f "$repo/build/console/index.html" ] || [ -n "${TESSERA_CONSOLE_DIR:-}" ] ||
    echo "  (the console's files are not built: run make)" ;;
esac
echo "  logs:  $LOGS/"
echo "  env:   . $STATE/env"
if [ "$STATE" = "$repo/.tessera-dev" ]; then echo "  stop:  make dev-down"
else echo "  stop:  TESSERA_STATE_DIR='$STATE' make dev-down"; fi
