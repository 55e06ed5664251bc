"""`make bench-scheduler` through the API, small (issue 35): bench/scheduler/run.sh
with BENCH_VIA=api, 100 simulated agents and 2,000 sessions enqueued with
signed POST /session through the gateway, the scheduler held during the
enqueue and released after (the bench's backlog mode). Asserts correctness,
not speed: every session created, every placement recorded by the registry,
Redis reservations = occupancy = PostgreSQL kernels holding slots, and a
table, never a traceback. Its own stack (run.sh starts and stops it).

And the bench's report when placements are not recorded: a reason line
naming what is missing, and a non-zero exit (bench_api.reasons)."""
import importlib.util
import os
import re
import subprocess
import sys
import unittest.mock

from conftest import BIN_DIR, REPO

RUN_SH = os.path.join(REPO, "bench", "scheduler", "run.sh")
BENCH_E2E = os.path.join(os.path.dirname(BIN_DIR), "bench", "bench_e2e")


def test_api_bench_smoke_records_every_placement():
    env = dict(os.environ, TESSERA_BIN_DIR=BIN_DIR, BENCH_E2E=BENCH_E2E, BENCH_VIA="api",
               BENCH_AGENTS="100", BENCH_API_SESSIONS="2000", BENCH_USERS="5", BENCH_CLIENTS="8",
               BENCH_TIMEOUT="180", PATH="/usr/bin:" + os.environ.get("PATH", ""))
    r = subprocess.run(["sh", RUN_SH], capture_output=True, text=True, timeout=600, env=env)
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out[-4000:]
    assert r.returncode == 0, out[-4000:]
    assert "sessions enqueued (201)" in out and "2000 of 2000 (0 refused)" in out, out[-4000:]
    # 100 agents x 8 GPUs hold about 1,700 of the mix; the rest stay PENDING
    # with an unschedulable reason
    recorded = int(re.search(r"^scheduled \(SCHEDULED in status history\) +(\d+)$", out, re.M).group(1))
    published = int(re.search(r"^release -> last SessionScheduled .*\((\d+) published\)$", out, re.M).group(1))
    pending = int(re.search(r"^still PENDING \(no room left\) +(\d+)$", out, re.M).group(1))
    assert recorded == published > 1000, out[-4000:]
    assert recorded + pending == 2000, out[-4000:]
    assert re.search(r"^invariant \(Redis reservations = occupancy\) +ok$", out, re.M), out[-4000:]
    assert f"{recorded} scheduled -> ok" in out, out[-4000:]
    assert "reason:" not in out, out[-4000:]


def _bench_api():
    """bench_api.py as a module (it reads BACKEND_ENDPOINT when loaded: one
    for the load only, so that no later stack's processes inherit it)."""
    spec = importlib.util.spec_from_file_location(
        "bench_api", os.path.join(REPO, "bench", "scheduler", "bench_api.py"))
    mod = importlib.util.module_from_spec(spec)
    with unittest.mock.patch.dict(os.environ, {"BACKEND_ENDPOINT": os.environ.get(
            "BACKEND_ENDPOINT", "http://127.0.0.1:1")}):
        spec.loader.exec_module(mod)
    return mod


def test_bench_reports_unrecorded_placements():
    b = _bench_api()
    why = b.reasons(created=2000, ns=0, pending=2000, statuses="PENDING 2000", ev=[1] * 1670,
                    inv="ok", allocs=1670, sess=1670, holding=0, holding_run=0, errors=[])
    assert any("registry recorded no placement (statuses: PENDING 2000)" in w
               and "published 1670 SessionScheduled" in w for w in why), why
    why = b.reasons(created=2000, ns=1600, pending=400, statuses="PENDING 400, SCHEDULED 1600",
                    ev=[1] * 1690, inv="ok", allocs=1690, sess=1690, holding=1600, holding_run=1600,
                    errors=[])
    assert any("90 of the 1690 placements the scheduler published were not recorded" in w
               for w in why), why
    # sessions PENDING for want of room, every placement recorded: no reason
    assert b.reasons(created=2000, ns=1693, pending=307, statuses="PENDING 307, RUNNING 1693",
                     ev=[1] * 1693, inv="ok", allocs=1693, sess=1693, holding=1693, holding_run=1693,
                     errors=[]) == []
    assert b.reasons(created=5, ns=5, pending=0, statuses="SCHEDULED 5", ev=[1] * 5, inv="ok",
                     allocs=5, sess=5, holding=5, holding_run=5, errors=[]) == []


def test_bench_help_is_not_a_traceback():
    r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "scheduler", "bench_api.py"), "--help"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "bench_api.py" in r.stdout
