#!/bin/sh
# run-integration.sh [PYTEST ARGS...]: run the integration tests (tests/integration)
# with pytest from the repository root. Extra arguments go to pytest (-k, -x, a
# file). "No tests collected" (pytest exit 5) is a failure: a suite that runs
# nothing must not pass.
set -u
cd "$(dirname "$0")/.." || exit 1
# The tests use Debian's python3-pytest and python3-requests: take the first
# python3 that has them (a python3 earlier in PATH, e.g. pyenv's, may not).
PY=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import pytest, requests' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "integration: no python3 with pytest and requests: run tools/deps.sh" >&2; exit 1; }
"$PY" -m pytest -q tests/integration "$@"
rc=$?
case $rc in
  0) ;;
  5) echo "integration: FAILED: pytest collected no tests (exit 5)" >&2; exit 1 ;;
  *) echo "integration: FAILED (pytest exit $rc)" >&2 ;;
esac
exit $rc
