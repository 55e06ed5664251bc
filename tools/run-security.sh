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
if [ "$(id -u)" -ne 0 ]; then
  echo "security: FAILED: needs root (sessions run with runc; checks enter network namespaces)" >&2
  exit 1
fi
# Debian's python3-pytest, python3-requests and python3-cryptography: take the
# first python3 that has them (a python3 earlier in PATH, e.g. pyenv's, may not).
PY=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import pytest, requests, cryptography' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "security: no python3 with pytest, requests and cryptography: run tools/deps.sh" >&2; exit 1; }
# the whole suite unless a file or directory of it is named
where=tests/security
for a in "$@"; do case $a in tests/*|./tests/*) where="" ;; esac; done
"$PY" -m pytest -q -p no:cacheprovider --tb=no -rN $where "$@"
rc=$?
case $rc in
  0) ;;
  5) echo "security: FAILED: pytest collected no tests (exit 5)" >&2; exit 1 ;;
  *) echo "security: FAILED (pytest exit $rc)" >&2 ;;
esac
exit $rc
