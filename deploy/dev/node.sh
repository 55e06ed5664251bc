#!/bin/sh
# node.sh down|up|status K [--kill]: take node K of a multi-node development
# stack (TESSERA_DEV_NODES > 1, started by deploy/dev/dev-up.sh in
# $TESSERA_STATE_DIR, default <repo>/.tessera-dev) off the cluster and bring
# it back, as a node that loses power or its network would
# (docs/operations.md, "Several hosts": "A node's loss").
#
#   down K     node K disappears at once: the host end of its link
#              (tsnet<n>n<K>) goes down, so nothing reaches the node and it
#              reaches nothing, and its agent (agent@node<K>) is frozen
#              (SIGSTOP), or killed with --kill (SIGKILL). Its kernels'
#              containers stay, as on a node whose control plane link broke;
#              they are unreachable. The registry declares the agent LOST after
#              registry.agent_lost_timeout and ends its sessions.
#   up K       node K comes back: its link up, its agent thawed (SIGCONT) or,
#              when it was killed (or is not running), started again as dev-up
#              started it (deploy/dev/restart.sh agent@node<K>: it adopts
#              the containers it finds); waits for the agent's /readyz
#   status [K] each node (or node K): up, or down (frozen|killed)
#   --kill     with down: kill the agent instead of freezing it
#
# The state is kept in <state>/nodes/down.<K> ("frozen" or "killed"), so
# that up knows what to undo and dev-down.sh thaws a frozen agent before it
# stops it. Exit 0 when done, 1 on failure, 2 on a usage error.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
STATE=${TESSERA_STATE_DIR:-$repo/.tessera-dev}
TIMEOUT=${TESSERA_DEV_TIMEOUT:-60}

say() { echo "node: $*"; }
die() { echo "node: $*" >&2; exit 1; }
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

[ $# -ge 1 ] || usage
ACTION=$1; shift
K="" KILL=no
while [ $# -gt 0 ]; do
  case $1 in
    --kill) KILL=yes ;;
    -h|--help) usage ;;
    ''|*[!0-9]*) echo "node: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    *) K=$1 ;;
  esac
  shift
done
case $ACTION in
  down|up) [ -n "$K" ] || { echo "node: $ACTION needs a node number" >&2; exit 2; } ;;
  status) ;;
  -h|--help) usage ;;
  *) echo "node: unknown action '$ACTION' (see --help)" >&2; exit 2 ;;
esac
[ -d "$STATE" ] || die "$STATE does not exist: start the stack with deploy/dev/dev-up.sh"
STATE=$(cd "$STATE" && pwd)
RUN=$STATE/run

# shellcheck source=deploy/dev/lib.sh
. "$here/lib.sh"
# shellcheck source=deploy/dev/nodes.sh
. "$here/nodes.sh"

N=$(nodes_net "$STATE") || die "this stack has no nodes (start it with TESSERA_DEV_NODES=N, N > 1)"
COUNT=$(nodes_count "$STATE")
if [ -n "$K" ] && { [ "$K" -lt 1 ] || [ "$K" -gt "$COUNT" ]; }; then
  die "no node $K: this stack has nodes 1 to $COUNT"
fi

if [ "$ACTION" = status ]; then
  k=${K:-1}
  last=${K:-$COUNT}
  while [ "$k" -le "$last" ]; do
    if [ -s "$STATE/nodes/down.$k" ]; then echo "node$k down ($(cat "$STATE/nodes/down.$k"))"
    else echo "node$k up"; fi
    k=$((k + 1))
  done
  exit 0
fi

NAME=agent@node$K
VETH=$(node_veth "$N" "$K")
MARK=$STATE/nodes/down.$K

if [ "$ACTION" = down ]; then
  [ ! -s "$MARK" ] || die "node $K is down already ($(cat "$MARK")): node.sh up $K first"
  # the link first: from now on no heartbeat, command or answer crosses
  ip link set "$VETH" down || die "could not take $VETH down"
  how=frozen
  if dev_alive "$RUN" "$NAME"; then
    pid=$(cat "$RUN/$NAME.pid")
    if [ "$KILL" = yes ]; then
      kill -KILL "$pid" 2>/dev/null
      how=killed
    else
      kill -STOP "$pid" 2>/dev/null || die "could not freeze $NAME ($pid)"
    fi
  else
    how=killed # not running: up starts it
  fi
  echo "$how" >"$MARK"
  say "node $K down: link $VETH down, $NAME $how"
  exit 0
fi

# up
how=$(cat "$MARK" 2>/dev/null || echo "")
ip link set "$VETH" up || die "could not bring $VETH up"
if [ "$how" = frozen ] && dev_alive "$RUN" "$NAME"; then
  kill -CONT "$(cat "$RUN/$NAME.pid")" 2>/dev/null || die "could not thaw $NAME"
  rm -f "$MARK"
  say "node $K up: link $VETH up, $NAME thawed"
  url=$(awk -v n="$NAME" '$1 == n { print $3 }' "$STATE/services" 2>/dev/null)
  deadline=$(( $(now) + TIMEOUT ))
  until [ "$(dev_curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/readyz" 2>/dev/null)" = 200 ]; do
    [ "$(now)" -lt "$deadline" ] || die "$NAME is not ready after ${TIMEOUT} s (left running)"
    sleep 0.2
  done
  say "$NAME ready"
  exit 0
fi
rm -f "$MARK"
say "node $K up: link $VETH up, starting $NAME"
exec sh "$here/restart.sh" "$NAME"
