#!/bin/sh
# run-faults.sh [PYTEST ARGS...]: run the fault suite (tests/faults,
# docs/reliability.md) with pytest from the repository root, on a temporary
# development stack: sessions driven through the API while each fault is
# applied in turn (kill -9 of every service, Redis FLUSHALL, PostgreSQL
# stopped, the bus's brokers down, a full vfolder volume), then the
# invariants. Prints a table per fault and "N passed, M failed".
#   TESSERA_FAULTS=all (default) | smoke | "kill-9 agent,postgres stop"
#   TESSERA_FAULTS_OUTAGE=SECONDS  the outages (default 30; smoke 10)
# Needs root (runc, a tmpfs for the vfolder volume).
# "No tests collected" (pytest exit 5) is a failure.
set -u
cd "$(dirname "$0")/.." || exit 1
if [ "$(id -u)" -ne 0 ]; then
  echo "faults: FAILED: needs root (sessions run with runc; the volume is a tmpfs)" >&2
  exit 1
fi
PY=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import pytest, requests' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "faults: no python3 with pytest and requests: run tools/deps.sh" >&2; exit 1; }
where=tests/faults
for a in "$@"; do case $a in tests/*|./tests/*) where="" ;; esac; done
t0=$(date +%s)
"$PY" -m pytest -q -s -p no:cacheprovider --tb=no -rN $where "$@"
rc=$?
echo "faults: ${TESSERA_FAULTS:-all}: $(( $(date +%s) - t0 )) s"
case $rc in
  0) ;;
  5) echo "faults: FAILED: pytest collected no tests (exit 5)" >&2; exit 1 ;;
  *) echo "faults: FAILED (pytest exit $rc)" >&2 ;;
esac
exit $rc
