# shellcheck shell=sh
# lib.sh: helpers of the development stack's scripts (dev-up.sh, dev-down.sh,
# restart.sh), sourced by each. POSIX sh; every name the scripts use is
# defined here once.

# pg_bindir: the PostgreSQL server binaries (initdb, pg_ctl), newest version.
# shellcheck disable=SC2012 # version dirs are plain names
pg_bindir() {
  _pd=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$_pd" ] && [ -x "$_pd/pg_ctl" ]; then echo "$_pd"; return 0; fi
  _pc=$(command -v pg_ctl 2>/dev/null) || return 1
  dirname "$_pc"
}
# dev_stat PID: /proc/PID/stat after the "(comm) ", so field 1 is the state
# and field 20 the start time; fails when the process does not exist.
dev_stat() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null; }
dev_starttime() { _ds=$(dev_stat "$1") && [ -n "$_ds" ] && echo "$_ds" | cut -d' ' -f20; }
# dev_alive RUN NAME: the process recorded in RUN/NAME.pid runs (not a zombie)
# and is the one recorded (same start time: no pid reuse).
dev_alive() {
  _dp=$(cat "$1/$2.pid" 2>/dev/null) || return 1
  case $_dp in ''|*[!0-9]*) return 1 ;; esac
  _dst=$(dev_stat "$_dp") && [ -n "$_dst" ] || return 1
  [ "${_dst%% *}" != Z ] || return 1
  [ -s "$1/$2.start" ] || return 0
  [ "$(echo "$_dst" | cut -d' ' -f20)" = "$(cat "$1/$2.start")" ]
}
# pid_running PID: exists and is not a zombie.
pid_running() { _rst=$(dev_stat "$1") && [ -n "$_rst" ] && [ "${_rst%% *}" != Z ]; }
now() { date +%s; }
# dev_curl ARGS...: curl, trusting the stack's CA when it has one (TLS: the
# nodes' agents answer on https, docs/operations.md "Several hosts:
# encryption"); $STATE is the caller's.
dev_curl() {
  if [ -s "$STATE/tls/ca.crt" ]; then curl --cacert "$STATE/tls/ca.crt" "$@"; else curl "$@"; fi
}

# A one-node stack's agent slot <n> (0-99): its CNI network tsdev<n> with
# subnet 10.214.<n>.0/24 and its host ports 20000+100n .. 20099+100n. Two
# stacks on one host (the test tiers run side by side) must not share one: the
# same host port handed out twice sends an app's traffic to another stack's
# container. The claim is a directory, made atomically:
# DEV_SLOTS/<n>/state names the owner's state dir. A claim is stale when that
# state dir is gone, or when none of its processes runs and it is older than
# 10 minutes (a stack still starting has none yet).
DEV_SLOTS=/run/tessera-dev/slots
dev_slot_stale() {
  _ss=$(cat "$DEV_SLOTS/$1/state" 2>/dev/null) || return 0
  [ -d "$_ss" ] || return 0
  for _sf in "$_ss"/run/*.pid; do
    [ -e "$_sf" ] || continue
    dev_alive "$_ss/run" "$(basename "$_sf" .pid)" && return 1
  done
  [ -n "$(find "$DEV_SLOTS/$1" -maxdepth 0 -mmin +10 2>/dev/null)" ]
}
# dev_slot_claim STATE START: the first free slot from START on (mod 100),
# claimed, recorded in STATE/agent/slot and printed.
dev_slot_claim() {
  mkdir -p "$DEV_SLOTS" "$1/agent" || return 1
  _si=0
  while [ "$_si" -lt 200 ]; do
    _sn=$((($2 + _si) % 100))
    _si=$((_si + 1))
    if ! mkdir "$DEV_SLOTS/$_sn" 2>/dev/null; then
      # a stale claim is taken over on the second round only (first the free ones)
      [ "$_si" -gt 100 ] && dev_slot_stale "$_sn" || continue
      rm -rf "$DEV_SLOTS/$_sn"
      mkdir "$DEV_SLOTS/$_sn" 2>/dev/null || continue
    fi
    # a network left by a stack that did not go down cleanly: not this one
    if ip link show "tsdev$_sn" >/dev/null 2>&1; then rmdir "$DEV_SLOTS/$_sn"; continue; fi
    echo "$1" >"$DEV_SLOTS/$_sn/state" && echo "$_sn" >"$1/agent/slot" && echo "$_sn"
    return
  done
  echo "no free agent slot in $DEV_SLOTS (0-99)" >&2
  return 1
}
# dev_slot_release STATE: give back STATE's slot (if it is still STATE's).
dev_slot_release() {
  _sn=$(cat "$1/agent/slot" 2>/dev/null) || return 0
  [ "$(cat "$DEV_SLOTS/$_sn/state" 2>/dev/null)" = "$1" ] && rm -rf "${DEV_SLOTS:?}/$_sn"
  rm -f "$1/agent/slot"
}

# The services a stack may run several instances of (TESSERA_DEV_REPLICAS):
# <svc>@1 .. <svc>@N, one port each, all listening on the service's address
# too. At most REPLICAS_MAX.
# shellcheck disable=SC2034 # read by dev-up.sh
REPLICAS_MAX=4
REPLICATED_SERVICES="gateway registry scheduler wsproxy"
dev_replicated() { case " $REPLICATED_SERVICES " in *" $1 "*) return 0 ;; esac; return 1; }
# dev_instances RUN NAME...: each NAME, and for a replicated one its
# instances recorded in RUN (NAME@1 ..), in order.
dev_instances() {
  _ir=$1; shift
  for _in in "$@"; do
    echo "$_in"
    dev_replicated "$_in" || continue
    for _if in "$_ir/$_in"@[0-9]*.pid; do
      [ -e "$_if" ] && basename "$_if" .pid
    done
  done
}
