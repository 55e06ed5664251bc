#!/bin/sh
# run-integration.sh [PYTEST ARGS...]: run the integration tests (tests/integration)
# with pytest from the repository root. Extra arguments go to pytest (-k, -x, a
# file). "No tests collected" (pytest exit 5) is a failure: a suite that runs
# nothing must not pass.
set -u
cd "$(dirname "$0")/.." || exit 1
. tools/pytest-lib.sh
suite_python integration "pytest, requests"
"$PY" -m pytest -q tests/integration "$@"
suite_exit integration $?
