#!/bin/sh
# run-security.sh [PYTEST ARGS...]: run the security suite (tests/security) with
# pytest from the repository root: a tenant inside real sessions on a
# temporary development stack (network reach, privileges, dangerous syscalls,
# the internal APIs' service credentials, the cross-tenant API matrix). It
# prints a table of every check and "N passed, M failed" (the detail of a
# failure is its assertion message; --tb=short shows tracebacks). Extra
# arguments go to pytest (-k, -x, a file). Needs root (runc, network
# namespaces) and gcc with a static libc (the probe; `make security` builds it
# first).
# "No tests collected" (pytest exit 5) is a failure: a suite that runs nothing
# must not pass.
set -u
cd "$(dirname "$0")/.." || exit 1
. tools/pytest-lib.sh
suite_needs_root security "sessions run with runc; checks enter network namespaces"
suite_python security "pytest, requests, cryptography"
# the whole suite unless a file or directory of it is named
"$PY" -m pytest -q -p no:cacheprovider --tb=no -rN $(suite_where tests/security "$@") "$@"
suite_exit security $?
