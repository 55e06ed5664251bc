#!/bin/sh
# run-check.sh "BACKGROUND TIERS" "FOREGROUND TIERS": `make check` in two lanes.
# The background tiers (the integration tier: the longest, mostly waiting on
# containers) run one after another in their own process group, their output
# in $CHECK_LOG_DIR/<tier>.log and printed whole when the lane ends; the
# foreground tiers run one after another meanwhile, their output live. Every
# tier runs even when one before it failed; the end is a table of each tier's
# result and minutes, and the exit status is 1 when any failed.
#
# The lanes' stacks do not collide: each takes free ports, its own state dir
# and its own agent slot (deploy/dev/lib.sh, dev_slot_claim).
# CHECK_LANES=1 (or a machine with one core): every tier in the foreground, in
# order, background tiers first. MAKE: the make to call (the Makefile's).
set -u
cd "$(dirname "$0")/.." || exit 1
BG=$1
FG=$2
MAKE=${MAKE:-make}
LOGS=${CHECK_LOG_DIR:-build/check}
LANES=${CHECK_LANES:-2}
[ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] || LANES=1
mkdir -p "$LOGS" || exit 1
RESULTS=$LOGS/results
: >"$RESULTS"

now() { date +%s; }
# tier NAME: run `make NAME`, record "NAME ok|FAILED seconds" in RESULTS.
tier() {
  _t0=$(now)
  if $MAKE --no-print-directory "$1"; then _r=ok; else _r=FAILED; fi
  echo "$1 $_r $(($(now) - _t0))" >>"$RESULTS"
  [ "$_r" = ok ]
}

if [ "$LANES" = 1 ]; then
  for t in $BG $FG; do tier "$t"; done
else
  BGLOG=$LOGS/background.log
  : >"$BGLOG"
  echo "check: $BG in the background (output when it ends; live in $BGLOG), the rest meanwhile"
  # its own process group (setsid): stopping this script stops the lane with
  # SIGINT, so pytest tears its stacks down
  setsid sh -c 'for t in $1; do
      echo "==== $t ($(date -u +%H:%M:%S)) ===="
      t0=$(date +%s)
      if "$3" --no-print-directory "$t"; then r=ok; else r=FAILED; fi
      echo "$t $r $(($(date +%s) - t0))" >>"$2"
    done' lane "$BG" "$RESULTS" "$MAKE" >"$BGLOG" 2>&1 </dev/null &
  BGPID=$!
  trap 'kill -INT -- -$BGPID 2>/dev/null; wait $BGPID; exit 130' INT TERM
  for t in $FG; do tier "$t"; done
  if kill -0 "$BGPID" 2>/dev/null; then
    echo "check: the foreground tiers are done; waiting for $BG ($(date -u +%H:%M:%S))"
  fi
  wait "$BGPID"
  trap - INT TERM
  echo "==== the background lane's output ($BG) ===="
  cat "$BGLOG"
fi

echo "==== check: each tier ===="
failed=""
for t in $BG $FG; do
  line=$(awk -v t="$t" '$1 == t { print; exit }' "$RESULTS")
  if [ -z "$line" ]; then
    printf '  %-14s %-7s\n' "$t" "NOT RUN"
    failed="$failed $t"
    continue
  fi
  set -- $line
  printf '  %-14s %-7s %5.1f min\n' "$1" "$2" "$(echo "$3" | awk '{ print $1 / 60 }')"
  [ "$2" = ok ] || failed="$failed $1"
done
if [ -n "$failed" ]; then
  echo "check: FAILED:$failed"
  exit 1
fi
echo "check: every tier passed"
