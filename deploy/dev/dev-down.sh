#!/bin/sh
# dev-down.sh: stop the development stack that deploy/dev/dev-up.sh started in
# $TESSERA_STATE_DIR (default <repo>/.tessera-dev). Services first (SIGTERM,
# they drain), then the OCI registry, devbus, Redis, then PostgreSQL
# (pg_ctl -m fast stop); whatever outlives its grace period gets SIGKILL, and so
# does anything left in the sessions the stack's processes led; then the
# agent's network rules and bridge, if it could not remove them, and with
# nodes (TESSERA_DEV_NODES > 1) what a killed node agent left, every node's
# network namespace, the node network's bridge and the host's rules for it
# (deploy/dev/nodes.sh). Works after a half-failed dev-up or a crash. Keeps the state dir (logs, data), removes the pid files.
# Exit 0 when nothing is left running (also when nothing was), 1 otherwise.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
STATE=${TESSERA_STATE_DIR:-$repo/.tessera-dev}
GRACE=${TESSERA_DEV_STOP_GRACE:-10}

if [ ! -d "$STATE" ]; then
  echo "dev-down: nothing was running ($STATE does not exist)"
  exit 0
fi
STATE=$(cd "$STATE" && pwd)
RUN=$STATE/run

# ---- helpers shared with dev-up.sh and restart.sh ----------------------------
# shellcheck source=deploy/dev/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=deploy/dev/nodes.sh
. "$(dirname "$0")/nodes.sh"

stopped=0
leaders=""   # pids of ours that led a session: sweep their sessions at the end

# stop_group NAME...: SIGTERM each recorded, live process; wait up to GRACE s
# for all of them; SIGKILL (process and its group) what is left.
stop_group() {
  pids=""
  for n in "$@"; do
    dev_alive "$RUN" "$n" || continue
    p=$(cat "$RUN/$n.pid")
    leaders="$leaders $p"
    kill -TERM "$p" 2>/dev/null && { pids="$pids $p"; stopped=$((stopped + 1)); }
  done
  [ -n "$pids" ] || return 0
  deadline=$(( $(now) + GRACE ))
  while :; do
    left=""
    for p in $pids; do pid_running "$p" && left="$left $p"; done
    [ -n "$left" ] || return 0
    [ "$(now)" -lt "$deadline" ] || break
    sleep 0.1
  done
  echo "dev-down: still running after ${GRACE} s, sending SIGKILL:$left" >&2
  for p in $left; do kill -KILL "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  sleep 0.2
}

# Services first, the gateway (the front door) before what it calls; the
# nodes' agents (agent@node<k>) with the agent. A node taken down by
# deploy/dev/node.sh gets its link back and its agent thawed first, so that
# the agent stops as any other (a frozen process would hold SIGTERM).
node_agents=""
for f in "$RUN"/agent@node*.pid; do
  [ -e "$f" ] && node_agents="$node_agents $(basename "$f" .pid)"
done
for f in "$STATE"/nodes/down.*; do
  [ -e "$f" ] || continue
  _k=${f##*.}
  case $_k in ''|*[!0-9]*) continue ;; esac
  _n=$(nodes_net "$STATE") && ip link set "$(node_veth "$_n" "$_k")" up 2>/dev/null
  dev_alive "$RUN" "agent@node$_k" && kill -CONT "$(cat "$RUN/agent@node$_k.pid")" 2>/dev/null
  rm -f "$f"
done
# The replicas of gateway, wsproxy, scheduler and registry (<svc>@<k>) with
# their service.
# shellcheck disable=SC2086,SC2046 # names without blanks, split on purpose
stop_group $(dev_instances "$RUN" gateway wsproxy) vfolder agent $node_agents \
  $(dev_instances "$RUN" scheduler registry) auth
stop_group oci-registry
stop_group bus-tls devbus
stop_group redis-tunnel redis

# PostgreSQL: pg_ctl knows the server from its data dir, even without our pid file.
PGDATA=$STATE/pg
if [ -f "$PGDATA/postmaster.pid" ]; then
  pgpid=$(head -n 1 "$PGDATA/postmaster.pid" 2>/dev/null)
  case $pgpid in ''|*[!0-9]*) pgpid="" ;; esac
  if [ -n "$pgpid" ] && pid_running "$pgpid"; then
    leaders="$leaders $pgpid"
    stopped=$((stopped + 1))
    PGBIN=$(pg_bindir) || PGBIN=""
    if [ -n "$PGBIN" ]; then
      if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t "$GRACE" -s stop >/dev/null 2>&1
      else
        "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t "$GRACE" -s stop >/dev/null 2>&1
      fi
    else
      kill -INT "$pgpid" 2>/dev/null   # SIGINT = fast shutdown
    fi
    deadline=$(( $(now) + GRACE ))
    while pid_running "$pgpid" && [ "$(now)" -lt "$deadline" ]; do sleep 0.1; done
    if pid_running "$pgpid"; then
      echo "dev-down: PostgreSQL still running, sending SIGKILL: $pgpid" >&2
      kill -KILL "-$pgpid" 2>/dev/null; kill -KILL "$pgpid" 2>/dev/null
      sleep 0.2
    fi
  fi
fi

# procs: "pid ppid sid tty stat args" of every process, in one pass.
procs() { ps -eo pid=,ppid=,sid=,tty=,stat=,args= 2>/dev/null; }

# ancestors: this script and the processes it runs under (never to be killed).
ancestors() {
  a=$$
  while [ -n "$a" ] && [ "$a" != 0 ] && [ "$a" != 1 ]; do
    echo "$a"
    a=$(dev_stat "$a" | cut -d' ' -f2)
  done
}
MINE=" $(ancestors | tr '\n' ' ') "

# stray: processes without a terminal whose command line names the state dir: a
# helper that detached into its own session (e.g. a container runtime shim).
# Interactive ones (an editor on a log file) have a terminal and are spared.
stray() {
  # The state dir goes to awk through its environment: on its command line, awk
  # would find itself.
  procs | DEVDOWN_DIR=$STATE DEVDOWN_MINE=$MINE awk '
    BEGIN { dir = ENVIRON["DEVDOWN_DIR"]; mine = ENVIRON["DEVDOWN_MINE"] }
    $5 !~ /^Z/ && $4 == "?" && index(mine, " " $1 " ") == 0 {
      args = $0; sub(/^ *[0-9]+ +[0-9]+ +[0-9]+ +[^ ]+ +[^ ]+ /, "", args)
      if (index(args " ", dir "/") || index(args " ", dir " ")) print $1
    }'
}

# session_members: anything still in a session one of ours led (a daemonized
# helper, a child the service did not reap), or a child of one of ours.
session_members() {
  procs | awk -v leaders=" $leaders " -v mine="$MINE" '
    $5 !~ /^Z/ && index(mine, " " $1 " ") == 0 &&
    (index(leaders, " " $3 " ") || index(leaders, " " $2 " ")) { print $1 }'
}

rest=$(stray)
if [ -n "$rest" ]; then
  echo "dev-down: killing leftover processes that name $STATE:" "$(echo $rest)" >&2
  for p in $rest; do kill -KILL "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  leaders="$leaders $rest"
  sleep 0.3
fi
if [ -n "${leaders# }" ]; then
  rest=$(session_members)
  if [ -n "$rest" ]; then
    echo "dev-down: killing leftover processes:" "$(echo $rest)" >&2
    for p in $rest; do kill -KILL "$p" 2>/dev/null; done
    sleep 0.3
  fi
fi

# The agent's network (services/agent/netfilter.h): a stopping agent removes
# its bridge and rules once no kernel is left; after one that was killed (or
# left kernels behind) this does: every chain named for the network, the jumps
# to them, the session chains its TESSERA-SES goes to, the masquerade rule, the
# records, then the bridge. Only while no agent of this stack runs.
net_cleanup() {
  _net=$1
  case $_net in ''|*[!A-Za-z0-9_.-]*) return 0 ;; esac
  dev_alive "$RUN" agent && return 0
  if command -v iptables-save >/dev/null 2>&1; then
    _rules=$(iptables-save 2>/dev/null | awk -v net="$_net" '
      function q(s) { gsub(/"/, "", s); return s }
      /^\*/ { table = substr($0, 2); next }
      table == "filter" && /^:/ { have[substr($1, 2)] = 1; next }
      table == "filter" && /^-A / {
        for (i = 3; i < NF; i++) {
          if ($i == "-j" && ($(i+1) == "TESSERA-IN-" net || $(i+1) == "TESSERA-FWD-" net) &&
              $2 != "TESSERA-FWD-" net) del[++nd] = "-D" substr($0, 3)
          if ($i == "-g" && $2 == "TESSERA-SES-" net) sess[$(i+1)] = 1
        }
      }
      table == "nat" && /^-A POSTROUTING / {
        for (i = 3; i < NF; i++)
          if ($i == "--comment" && q($(i+1)) == "tessera:" net) nat[++nn] = "-D" substr($0, 3)
      }
      table == "nat" && /^-A TESSERA-HP-DNAT / {
        mine = 0
        for (i = 3; i < NF; i++) {
          if ($i == "--comment" && index(q($(i+1)), "tessera-portmap:" net ":") == 1) mine = 1
          if ($i == "-j" && mine) hp[$(i+1)] = 1
        }
        if (mine) nat[++nn] = "-D" substr($0, 3)
      }
      END {
        own["TESSERA-IN-" net] = own["TESSERA-FWD-" net] = own["TESSERA-SES-" net] = 1
        for (c in sess) own[c] = 1
        for (c in own) if (c in have) { flush = flush "-F " c "\n"; gone = gone "-X " c "\n" }
        for (c in hp) { nflush = nflush "-F " c "\n"; ngone = ngone "-X " c "\n" }
        if (!nd && flush == "" && !nn) exit
        print "*filter"
        for (i = 1; i <= nd; i++) print del[i]
        printf "%s%s", flush, gone
        print "COMMIT"; print "*nat"
        for (i = 1; i <= nn; i++) print nat[i]
        printf "%s%s", nflush, ngone
        print "COMMIT"
      }')
    if [ -n "$_rules" ]; then
      printf '%s\n' "$_rules" | iptables-restore --noflush --wait=10 ||
        echo "dev-down: could not remove the rules of network $_net" >&2
    fi
  fi
  rm -rf "/run/tessera-agent/netfilter/$_net"
  rm -f "/run/tessera-portmap/verified.$_net"
  grep -l "tessera-portmap:$_net:" /run/tessera-portmap/* 2>/dev/null | while IFS= read -r _f; do
    rm -f "$_f"
  done
  ip link delete "$_net" type bridge 2>/dev/null
  cluster_cleanup "$_net"
  return 0
}

# The cluster networks of the agent of network $1 (services/agent/cni_cluster.h):
# bridges tc<6 hex: session's id><6 hex: the network's hash> and their VXLAN
# devices tv..., with their FORWARD rules (comment tessera-cluster:<bridge>),
# left by kernels of a killed agent. The hash is FNV-1a's low 24 bits of the
# network name, which only the low 24 bits of the offset and prime decide.
cluster_cleanup() {
  _h=$((0x222325))
  for _b in $(printf '%s' "$1" | od -An -tu1); do
    _h=$(((( _h ^ _b) * 0x1b3) & 0xffffff))
  done
  _sfx=$(printf '%06x' "$_h")
  for _l in $(ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' |
    grep -E "^t[cv][0-9a-f]{6}$_sfx\$"); do
    ip link delete "$_l" 2>/dev/null
  done
  if command -v iptables-save >/dev/null 2>&1; then
    iptables-save -t filter 2>/dev/null | grep -E "^-A FORWARD .*tessera-cluster:tc[0-9a-f]{6}$_sfx" |
      while IFS= read -r _r; do
        # shellcheck disable=SC2086 # the rule's words as iptables-save wrote them
        eval "iptables -w -D ${_r#-A }" 2>/dev/null
      done
  fi
}
# the kernels a killed agent left (runc's containers, network namespaces)
dev_alive "$RUN" agent || kernels_cleanup "$STATE/agent"
[ -f "$STATE/agent/cni_network" ] && net_cleanup "$(cat "$STATE/agent/cni_network")"
dev_alive "$RUN" agent || dev_slot_release "$STATE"
nodes_down "$STATE" || echo "dev-down: the node network is kept (a node's agent still runs)" >&2

# Mounts an agent that was killed (or that could not destroy a kernel) left
# under the state dir: kernels' root overlays and their disks (a disk's loop
# device goes with its unmount). Deepest first, lazily; only while no agent of
# this stack runs.
if ! dev_alive "$RUN" agent; then
  left=$(DEVDOWN_DIR=$STATE awk 'BEGIN { dir = ENVIRON["DEVDOWN_DIR"] "/" }
    index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  if [ -n "$left" ]; then
    echo "dev-down: unmounting what is left mounted under $STATE:" $left >&2
    for m in $left; do umount -l "$m" 2>/dev/null; done
  fi
fi

# Verify.
survivors=""
for f in "$RUN"/*.pid; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .pid)
  dev_alive "$RUN" "$n" && survivors="$survivors $n($(cat "$f"))"
done
[ -n "${leaders# }" ] && for p in $(session_members); do survivors="$survivors $p"; done
for p in $(stray); do survivors="$survivors $p"; done
if [ -n "$survivors" ]; then
  echo "dev-down: could not stop:$survivors; pid files kept in $RUN" >&2
  exit 1
fi

rm -f "$RUN"/*.pid "$RUN"/*.start "$RUN/devbus.bootstrap" "$RUN"/readyz.*
if [ "$stopped" -eq 0 ]; then
  echo "dev-down: nothing was running in $STATE"
else
  echo "dev-down: stopped $stopped process(es); logs kept in $STATE/logs"
fi
exit 0
