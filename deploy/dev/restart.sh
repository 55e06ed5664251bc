#!/bin/sh
# restart.sh NAME [--kill] [--down SECONDS] [--no-wait]: restart one process of
# the development stack that deploy/dev/dev-up.sh started in $TESSERA_STATE_DIR
# (default <repo>/.tessera-dev), exactly as dev-up started it: the command
# line, environment and log recorded in <state>/cmd/NAME, output appended to
# <state>/logs/NAME.log, the new pid in <state>/run/NAME.pid and in
# <state>/services.
#
#   NAME       gateway auth registry scheduler agent vfolder wsproxy (Tessera
#              services), agent@node<k> (node k's agent in a stack with
#              TESSERA_DEV_NODES > 1: restarted in the node's network
#              namespace), <svc>@<k> (instance k of gateway, registry,
#              scheduler or wsproxy in a stack with TESSERA_DEV_REPLICAS > 1:
#              the others go on serving the service's address), redis,
#              oci-registry, postgres; or bus: the devbus's
#              mock brokers are taken down and brought up again (SIGUSR1 /
#              SIGUSR2 to tessera-devbus, docs/testing.md "tessera-devbus"),
#              the process and its messages stay. devbus itself is refused:
#              its process holds the only copy of every message, so a restart
#              is not a fault a real Kafka cluster has.
#   --kill     stop with SIGKILL at once (a crash), not SIGTERM with a grace
#              period (TESSERA_DEV_STOP_GRACE, default 10 s); for postgres,
#              `pg_ctl stop -m immediate` instead of `-m fast`
#   --down S   stay down S seconds (may be fractional) before starting again
#   --no-wait  do not wait for readiness (/readyz 200, Redis PING, the OCI
#              registry's /v2/) after the start
#
# A process that is not running is started (after --down). Exit 0 when the
# process runs again (and is ready, unless --no-wait), 1 otherwise.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
STATE=${TESSERA_STATE_DIR:-$repo/.tessera-dev}
GRACE=${TESSERA_DEV_STOP_GRACE:-10}
TIMEOUT=${TESSERA_DEV_TIMEOUT:-60}

say() { echo "restart: $*"; }
die() { echo "restart: $*" >&2; exit 1; }
usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

[ $# -ge 1 ] || usage
NAME=$1; shift
KILL=no DOWN=0 WAIT=yes
while [ $# -gt 0 ]; do
  case $1 in
    --kill) KILL=yes ;;
    --down) [ $# -ge 2 ] || usage; DOWN=$2; shift ;;
    --no-wait) WAIT=no ;;
    -h|--help) usage ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
case $DOWN in ''|*[!0-9.]*) die "--down needs a number of seconds, not '$DOWN'" ;; esac
case $NAME in
  gateway|auth|registry|scheduler|agent|vfolder|wsproxy|redis|oci-registry|postgres|bus) ;;
  agent@node[1-9]|agent@node[1-9][0-9]) ;;
  gateway@[1-9]|registry@[1-9]|scheduler@[1-9]|wsproxy@[1-9]) ;;
  devbus) die "devbus is not restarted: its process holds the only copy of the bus's messages (a real cluster keeps them); take its brokers down instead: restart.sh bus --down SECONDS" ;;
  -h|--help) usage ;;
  *) die "unknown process '$NAME' (see --help)" ;;
esac
[ -d "$STATE" ] || die "$STATE does not exist: start the stack with deploy/dev/dev-up.sh"
STATE=$(cd "$STATE" && pwd)
RUN=$STATE/run
LOGS=$STATE/logs
unset NOTIFY_SOCKET || true

# ---- helpers shared with dev-up.sh and dev-down.sh --------------------------
# shellcheck source=deploy/dev/lib.sh
. "$(dirname "$0")/lib.sh"
# pid_dying PID: not yet gone. A killed process's main thread can be a zombie
# while other threads still exit (one in uninterruptible sleep, say) and hold
# its files, listening sockets included: only a zombie with no other thread
# is done.
pid_dying() {
  pid_running "$1" && return 0
  [ -d "/proc/$1/task" ] || return 1
  # shellcheck disable=SC2012 # task ids are numbers
  [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -gt 1 ]
}
started() {
  echo "$2" >"$RUN/$1.pid"
  dev_starttime "$2" >"$RUN/$1.start" 2>/dev/null || true
  # the services file: the same line with the new pid; under a lock, as
  # several restarts may run at once (one instance of each replicated
  # service), each with a temporary file of its own
  if [ -f "$STATE/services" ]; then
    (
      flock 9 || true
      awk -v n="$1" -v p="$2" '$1 == n { $2 = p } { print }' "$STATE/services" >"$STATE/services.tmp.$$" &&
        mv "$STATE/services.tmp.$$" "$STATE/services"
    ) 9>"$RUN/services.lock"
  fi
}
url_of() { awk -v n="$1" '$1 == n { print $3 }' "$STATE/services" 2>/dev/null; }
tail_log() {
  echo "---- last 20 lines of $LOGS/$1.log ----" >&2
  tail -n 20 "$LOGS/$1.log" >&2 2>/dev/null || true
  echo "----" >&2
}
# pause S: sleep S seconds (fractions allowed where sleep takes them)
pause() { [ "$1" = 0 ] || sleep "$1"; }

# ---- bus: brokers down and up ----------------------------------------------------
if [ "$NAME" = bus ]; then
  dev_alive "$RUN" devbus || die "tessera-devbus is not running (no live pid in $RUN/devbus.pid)"
  pid=$(cat "$RUN/devbus.pid")
  # brokers_wait 0|1: until the devbus's /metrics says so (at most 10 s)
  brokers_wait() {
    _bd=$(( $(now) + 10 ))
    until curl -s --max-time 2 "$(url_of devbus)/metrics" 2>/dev/null | grep -qx "tessera_devbus_brokers_up $1"; do
      [ "$(now)" -lt "$_bd" ] || die "tessera-devbus's /metrics does not show tessera_devbus_brokers_up $1 after 10 s"
      sleep 0.1
    done
  }
  kill -USR1 "$pid" || die "could not signal tessera-devbus ($pid)"
  brokers_wait 0
  say "devbus brokers down (pid $pid) for ${DOWN} s"
  pause "$DOWN"
  dev_alive "$RUN" devbus || die "tessera-devbus exited while its brokers were down"
  kill -USR2 "$pid" || die "could not signal tessera-devbus ($pid)"
  brokers_wait 1
  say "devbus brokers up"
  exit 0
fi

# ---- PostgreSQL: pg_ctl stop, pg_ctl start as dev-up ran it -----------------------
if [ "$NAME" = postgres ]; then
  PGBIN=$(pg_bindir) || die "PostgreSQL server binaries not found"
  PGDATA=$STATE/pg
  [ -s "$STATE/cmd/postgres" ] || die "$STATE/cmd/postgres is missing (a stack started by an older dev-up.sh: restart it with dev-down/dev-up)"
  asp() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
  mode=fast; [ "$KILL" = no ] || mode=immediate
  if asp "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
    asp "$PGBIN/pg_ctl" -D "$PGDATA" -m "$mode" -w -t "$GRACE" -s stop >>"$LOGS/postgres.log" 2>&1 ||
      die "pg_ctl stop -m $mode failed (see $LOGS/postgres.log)"
    say "postgres stopped (-m $mode)"
  fi
  pause "$DOWN"
  eval "set -- $(cat "$STATE/cmd/postgres")"
  "$@" </dev/null >>"$LOGS/postgres.log" 2>&1 || { tail_log postgres; die "PostgreSQL did not start"; }
  pgpid=$(head -n 1 "$PGDATA/postmaster.pid" 2>/dev/null || true)
  [ -n "$pgpid" ] || { tail_log postgres; die "PostgreSQL wrote no postmaster.pid"; }
  started postgres "$pgpid"
  say "postgres started (pid $pgpid)"
  exit 0
fi

# ---- a process dev-up launched ---------------------------------------------------
CMD=$STATE/cmd/$NAME
if [ "$NAME" = agent ] && [ ! -s "$CMD" ] && [ -s "$STATE/cmd/agent@node1" ]; then
  die "this stack's agents run on its nodes: restart one with restart.sh agent@node<k> (see $STATE/services)"
fi
case $NAME in gateway|registry|scheduler|wsproxy)
  if [ ! -s "$CMD" ] && [ -s "$STATE/cmd/$NAME@1" ]; then
    die "this stack runs replicas of $NAME: restart one with restart.sh $NAME@<k> (see $STATE/services)"
  fi ;;
esac
[ -s "$CMD" ] || die "$CMD is missing (a stack started by an older dev-up.sh, or $NAME was not started)"
if dev_alive "$RUN" "$NAME"; then
  pid=$(cat "$RUN/$NAME.pid")
  if [ "$KILL" = yes ]; then
    kill -KILL "$pid" 2>/dev/null
  else
    kill -TERM "$pid" 2>/dev/null
  fi
  deadline=$(( $(now) + GRACE ))
  while pid_dying "$pid"; do
    if [ "$(now)" -ge "$deadline" ]; then
      echo "restart: $NAME ($pid) still running after ${GRACE} s, sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null
      deadline=$(( $(now) + GRACE ))
    fi
    sleep 0.05
  done
  if [ "$KILL" = yes ]; then say "$NAME killed (SIGKILL, pid $pid)"; else say "$NAME stopped (pid $pid)"; fi
fi
pause "$DOWN"
eval "set -- $(cat "$CMD")"
echo "==== $(date '+%Y-%m-%d %H:%M:%S') restarting (deploy/dev/restart.sh): $*" >>"$LOGS/$NAME.log"
setsid "$@" </dev/null >>"$LOGS/$NAME.log" 2>&1 &
pid=$!
started "$NAME" "$pid"
say "$NAME started (pid $pid)"
[ "$WAIT" = yes ] || exit 0

# readiness
deadline=$(( $(now) + TIMEOUT ))
while :; do
  dev_alive "$RUN" "$NAME" || { tail_log "$NAME"; die "$NAME exited after its start"; }
  case $NAME in
    redis)
      port=$(url_of redis | sed 's|.*:\([0-9]*\)/.*|\1|')
      python3 - "$port" <<'EOF' 2>/dev/null && break
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"PING\r\n")
sys.exit(0 if s.recv(16).startswith(b"+PONG") else 1)
EOF
      ;;
    oci-registry)
      [ "$(dev_curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$(url_of oci-registry)/v2/" 2>/dev/null)" = 200 ] && break ;;
    *)
      [ "$(dev_curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$(url_of "$NAME")/readyz" 2>/dev/null)" = 200 ] && break ;;
  esac
  [ "$(now)" -lt "$deadline" ] || { tail_log "$NAME"; die "$NAME is not ready after ${TIMEOUT} s (left running)"; }
  sleep 0.1
done
say "$NAME ready"
