#!/bin/sh
# run-compat.sh [PYTEST ARGS...]: run the compatibility suite (tests/compat)
# with pytest from the repository root: Backend.AI's JavaScript SDK (npm
# backend.ai-client 21.3.1 under Node, tests/compat/run.mjs) called through
# each of its public methods against a temporary development stack, each
# outcome compared with tests/compat/expected.txt. Prints a table (method,
# expected, got, detail) and "compat: N/T methods ok, M not served yet
# (listed), K unexpected". Needs root (the stack runs sessions), node, and
# tests/compat/node_modules (`make compat` runs npm ci first).
# "No tests collected" (pytest exit 5) is a failure: a suite that runs
# nothing must not pass.
set -u
cd "$(dirname "$0")/.." || exit 1
. tools/pytest-lib.sh
suite_needs_root compat "the stack runs sessions with runc"
suite_python compat "pytest, requests"
command -v node >/dev/null 2>&1 || { echo "compat: node is missing: run tools/deps.sh" >&2; exit 1; }
"$PY" -m pytest -q -p no:cacheprovider $(suite_where tests/compat "$@") "$@"
suite_exit compat $?
