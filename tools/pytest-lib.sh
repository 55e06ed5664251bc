# pytest-lib.sh: what the test-suite runners (run-integration.sh,
# run-security.sh, run-faults.sh) share; sourced, not run.

# suite_python NAME MODULES: set PY to the first python3 that imports every
# module in MODULES (Debian's python3-pytest, python3-requests, ...: a python3
# earlier in PATH, e.g. pyenv's, may lack them), or exit 1 saying so.
suite_python() {
  PY=""
  for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c "import $2" 2>/dev/null; then PY=$p; return 0; fi
  done
  echo "$1: no python3 with $2: run tools/deps.sh" >&2
  exit 1
}

# suite_needs_root NAME WHY: exit 1 unless root.
suite_needs_root() {
  [ "$(id -u)" -eq 0 ] && return 0
  echo "$1: FAILED: needs root ($2)" >&2
  exit 1
}

# suite_where DEFAULT ARGS...: print DEFAULT unless ARGS name a file or folder
# of the tests (then pytest runs only those).
suite_where() {
  d=$1
  shift
  for a in "$@"; do case $a in tests/*|./tests/*) d="" ;; esac; done
  echo "$d"
}

# suite_exit NAME RC: the runner's exit. "No tests collected" (pytest exit 5)
# is a failure: a suite that runs nothing must not pass.
suite_exit() {
  case $2 in
    0) ;;
    5) echo "$1: FAILED: pytest collected no tests (exit 5)" >&2; exit 1 ;;
    *) echo "$1: FAILED (pytest exit $2)" >&2 ;;
  esac
  exit "$2"
}
