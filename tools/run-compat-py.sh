#!/bin/sh
# run-compat-py.sh [PYTEST ARGS...]: the Python compatibility suite
# (tests/compat_py) with pytest from the repository root: Backend.AI's Python
# client 24.09.14 (the `backend.ai` CLI and its SDK, unchanged) called command
# by command, in API and in session mode, against a temporary development
# stack, each outcome compared with tests/compat_py/expected.txt. Prints a
# table (case, expected, got, detail) and "compat-py: N/T ok, M expected
# failures (...), K unexpected". Needs root (the stack runs sessions) and
# Debian's python3-* packages the client imports (tools/deps.sh).
#
# The client comes from $BAI_PY_CLIENT (make sets it to
# ../shared/clients/backend.ai-python-24.09 beside the repository); when it
# is not there the suite is skipped, saying so. "No tests collected" (pytest
# exit 5) is a failure: a suite that runs nothing must not pass.
set -u
cd "$(dirname "$0")/.." || exit 1
. tools/pytest-lib.sh
BAI_PY_CLIENT=${BAI_PY_CLIENT:-$(pwd)/../shared/clients/backend.ai-python-24.09}
if [ ! -d "$BAI_PY_CLIENT/lib/ai/backend/client" ]; then
  echo "compat-py: SKIPPED: Backend.AI's Python client is not at $BAI_PY_CLIENT (set BAI_PY_CLIENT)"
  exit 0
fi
export BAI_PY_CLIENT
suite_needs_root compat-py "the stack runs sessions with runc"
suite_python compat-py "pytest, requests, aiohttp, click, tabulate, humanize, appdirs, janus, rich, Cryptodome"
"$PY" -m pytest -q -p no:cacheprovider $(suite_where tests/compat_py "$@") "$@"
suite_exit compat-py $?
