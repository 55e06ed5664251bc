"""`make bench-scale`, small (issue 35): bench/scale/run.sh with 500 simulated
agents heartbeating every 2 s (250/s) and 5,000 sessions enqueued through the
API while the scheduler is held, then placed. Asserts correctness, not speed:
every session created, every placement the scheduler published recorded by
the registry, the invariant, and the scale table with each figure recorded
(no "reason:" line), never a traceback. Its own stack (run.sh starts and
stops it).

And the report alone: figures that were not recorded get a reason line each."""
import json
import os
import re
import subprocess
import sys

from conftest import BIN_DIR, REPO

RUN_SH = os.path.join(REPO, "bench", "scale", "run.sh")
REPORT = os.path.join(REPO, "bench", "scale", "report.py")
BENCH_E2E = os.path.join(os.path.dirname(BIN_DIR), "bench", "bench_e2e")


def _num(pattern, out):
    m = re.search(pattern, out, re.M)
    assert m, (pattern, out[-4000:])
    return float(m.group(1))


def test_scale_bench_smoke_prints_every_figure():
    # run.sh's own temp dir (PostgreSQL, as user postgres, must reach the
    # stack's directory: pytest's tmp_path is closed to it)
    env = dict(os.environ, TESSERA_BIN_DIR=BIN_DIR, BENCH_E2E=BENCH_E2E, BENCH_AGENTS="500",
               BENCH_SESSIONS="5000", BENCH_HEARTBEAT_INTERVAL="2s", BENCH_USERS="5",
               BENCH_CLIENTS="8", BENCH_TIMEOUT="180",
               PATH="/usr/bin:" + os.environ.get("PATH", ""))
    env.pop("BENCH_DIR", None)
    r = subprocess.run(["sh", RUN_SH], capture_output=True, text=True, timeout=900, env=env)
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out[-4000:]
    assert r.returncode == 0, out[-4000:]
    assert re.search(r"^sessions enqueued \(201\) / refused +5000 / 0$", out, re.M), out[-4000:]
    recorded = _num(r"^scheduled \(registry\) / still PENDING +(\d+) / \d+$", out)
    pending = _num(r"^scheduled \(registry\) / still PENDING +\d+ / (\d+)$", out)
    published = _num(r"^release -> last SessionScheduled .*\((\d+) published\)$", out)
    assert recorded == published > 0 and recorded + pending == 5000, out[-4000:]
    assert f"{int(recorded)} scheduled -> ok" in out, out[-4000:]
    assert _num(r"^API enqueue rate +(\d+) creates/s$", out) > 0
    assert _num(r"^placements/s, registry \(recorded\) +(\d+)$", out) > 0
    p50 = _num(r"^placement latency p50 / p99 \(release -> SCHEDULED\) +(\d+) / \d+ ms$", out)
    p99 = _num(r"^placement latency p50 / p99 \(release -> SCHEDULED\) +\d+ / (\d+) ms$", out)
    assert 0 <= p50 <= p99, out[-4000:]
    assert re.search(r"^registry lag p50 / p99 / max +-?\d+ / -?\d+ / -?\d+ ms$", out, re.M)
    assert re.search(r"^heartbeat lag max \(oldest ALIVE heartbeat - interval\) +[\d.]+ s", out,
                     re.M), out[-4000:]
    hb = _num(r"^heartbeats handled by the registry +(\d+)/s", out)
    assert hb > 0, out[-4000:]
    peak = re.search(r"^peak RSS per service \(VmHWM\) +(.*)$", out, re.M).group(1)
    for svc in ("scheduler", "registry", "gateway", "devbus", "simagent"):
        assert re.search(svc + r" \d+ MiB", peak), peak
    assert re.search(r"^scheduler RSS per agent +-?[\d.]+ KiB", out, re.M), out[-4000:]
    assert re.search(r"^scheduler RSS per queued session +-?[\d.]+ KiB", out, re.M), out[-4000:]
    assert "reason:" not in out, out[-4000:]


def test_report_names_what_was_not_recorded(tmp_path):
    # the API bench's figures without a sample, and without a registry lag
    (tmp_path / "api.json").write_text(json.dumps({
        "sessions": 10, "created": 10, "refused": 0, "enqueue_rate": 5.0, "scheduled": 10,
        "pending": 0, "reg_rate": 3.0, "sched_rate": 4.0, "place_p50_ms": 10, "place_p99_ms": 20,
        "reasons": [], "t_enqueue_start": 100.0, "release": 110.0}))
    r = subprocess.run([sys.executable, REPORT, str(tmp_path), "50", "20s", "0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reason: registry lag not recorded" in r.stdout, r.stdout
    assert "reason: no samples" in r.stdout, r.stdout
    assert "reason: heartbeat lag not recorded" in r.stdout, r.stdout
    assert re.search(r"^placements/s, registry \(recorded\) +3$", r.stdout, re.M), r.stdout
    # nothing from the API bench at all: a reason and a failure
    os.remove(tmp_path / "api.json")
    r = subprocess.run([sys.executable, REPORT, str(tmp_path), "50", "20s", "0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "reason: no figures from bench_api.py" in r.stdout, r.stdout


def test_scale_help_is_not_a_traceback():
    r = subprocess.run(["sh", RUN_SH, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "BENCH_HOG" in r.stdout, r.stdout + r.stderr
    for tool in ("sample.py", "report.py"):
        r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "scale", tool), "--help"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and tool in r.stdout, r.stdout + r.stderr
