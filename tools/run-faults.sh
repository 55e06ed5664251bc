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
. tools/pytest-lib.sh
suite_needs_root faults "sessions run with runc; the volume is a tmpfs"
suite_python faults "pytest, requests"
t0=$(date +%s)
"$PY" -m pytest -q -s -p no:cacheprovider --tb=no -rN $(suite_where tests/faults "$@") "$@"
rc=$?
echo "faults: ${TESSERA_FAULTS:-all}: $(( $(date +%s) - t0 )) s"
suite_exit faults $rc
