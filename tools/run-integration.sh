#!/bin/sh
# run-integration.sh [PYTEST ARGS...]: run the integration tests (tests/integration)
# with pytest from the repository root. Extra arguments go to pytest (-k, -x, a
# file: then only the files or folders named under tests/ run). "No tests
# collected" (pytest exit 5) is a failure: a suite that runs nothing must not pass.
set -u
cd "$(dirname "$0")/.." || exit 1
. tools/pytest-lib.sh
suite_python integration "pytest, requests"
# shellcheck disable=SC2046 # no words, or one: the default folder
"$PY" -m pytest -q $(suite_where tests/integration "$@") "$@"
suite_exit integration $?
