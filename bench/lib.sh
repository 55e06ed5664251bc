# bench/lib.sh: what the benchmarks' run.sh scripts share (sourced). The
# caller sets NAME (e.g. bench-idle: its messages' prefix), repo (the
# checkout) and BIN (the binaries: made absolute here), and later STATE (its
# own state dir, from mktemp).

case "$BIN" in /*) ;; *) BIN=$repo/$BIN ;; esac

say() { echo "$NAME: $*"; }
die() {
  echo "$NAME: $*" >&2
  exit 1
}

# bench_stop_nginx PID: nginx asked to stop (QUIT), killed after 5 s; nothing
# when PID is empty or gone.
bench_stop_nginx() {
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 0
  kill -QUIT "$1" 2>/dev/null || true
  _i=0
  while kill -0 "$1" 2>/dev/null && [ $_i -lt 50 ]; do
    sleep 0.1
    _i=$((_i + 1))
  done
  kill -KILL "$1" 2>/dev/null || true
}

# bench_end RC [shared]: the bench's own stack in STATE stopped (not
# with "shared": the stack is someone else's, BENCH_STACK); STATE kept, and
# said so, when BENCH_KEEP_STATE=1 or the run failed (RC not 0), else removed.
bench_end() {
  if [ "${2:-}" != shared ]; then
    TESSERA_STATE_DIR=$STATE TESSERA_BIN_DIR=$BIN sh "$repo/deploy/dev/dev-down.sh" \
      >"$STATE/dev-down.out" 2>&1 || {
      echo "$NAME: dev-down failed:" >&2
      cat "$STATE/dev-down.out" >&2
    }
  fi
  if [ "${BENCH_KEEP_STATE:-0}" = 1 ] || [ "$1" -ne 0 ]; then
    echo "$NAME: state and logs kept in $STATE" >&2
  else
    rm -rf "$STATE"
  fi
}
