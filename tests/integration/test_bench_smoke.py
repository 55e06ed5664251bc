"""Every benchmark run small (issue 35): the same script as its make target
(bench/*/run.sh, bench.py, the bench binaries, tests/shim/bench.sh), with
its size knobs turned down so that it takes seconds, and its peer (nginx,
bare runc, Debian's portmap, a direct connection, the driver called without
the shim) in the same run. So a benchmark that rots (a link that no longer
resolves, a route that moved, a table that lost a row) fails `make test`
instead of the next person who wants a figure.

Correctness, never speed: the run exits 0 without a traceback, its table has
every row (the peer's included), every figure in it is a positive number,
and it reports no errors (wrk's non-2xx answers and socket errors, sessions
that did not reach RUNNING, downloads of the wrong size, a broken Redis
invariant). The figures themselves go to docs/benchmarks.md from full runs.

The gateway, session and vfolder benches run on the tier's `stack`
(BENCH_STACK: no stack of their own); the others start only what they
measure. The API scheduling bench has its smoke in
test_bench_scheduler_smoke.py. `make bench-smoke` runs both files."""
import os
import re
import subprocess

import pytest

from conftest import BIN_DIR, REPO

BUILD = os.path.dirname(BIN_DIR)
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
NUM = r"(-?[0-9]+(?:\.[0-9]+)?)"


def run_bench(cmd, timeout=300, **env):
    """Run a bench command from the repository root; its output (stdout and
    stderr), after checking that it exited 0 without a traceback."""
    e = dict(os.environ, TESSERA_BIN_DIR=BIN_DIR, **env)
    # Debian's python3 (requests, cryptography) ahead of pyenv's
    e["PATH"] = "/usr/bin:" + e.get("PATH", "")
    r = subprocess.run(cmd, cwd=REPO, env=e, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=timeout)
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out[-4000:]
    assert r.returncode == 0, f"exit {r.returncode}:\n{out[-4000:]}"
    return out


def row(out, pattern, n, where=""):
    """The n numbers of the one line that matches pattern (a regular
    expression with n groups of NUM), each checked to be positive."""
    m = re.findall(pattern, out, re.M)
    assert len(m) == 1, f"{where}: expected one line matching {pattern!r}:\n{out[-4000:]}"
    vals = [float(x) for x in (m[0] if isinstance(m[0], tuple) else (m[0],))]
    assert len(vals) == n
    assert all(v > 0 for v in vals), f"{where}: a figure is not positive in {pattern!r}: {vals}\n{out[-4000:]}"
    return vals


def needs_root(why):
    if os.geteuid() != 0:
        pytest.skip(f"needs root ({why}), as the full bench does")


def test_gateway_bench_smoke(stack):
    """bench/gateway/run.sh on the tier's stack: wrk against nginx, the
    gateway with signed requests, and the gateway with auth paused."""
    out = run_bench(["sh", "bench/gateway/run.sh"], BENCH_STACK=stack["TESSERA_STATE_DIR"],
                    BENCH_DURATION="1s", BENCH_CONNECTIONS="8", BENCH_THREADS="1", BENCH_CATCHUP_MAX="60")
    cell = r"\s*\|\s*" + NUM
    for name in (r"tessera-gateway GET /auth/test \(signed\)", r"the same, auth paused \(no ingestion\)",
                 r"nginx static file \(31 bytes\)"):
        row(out, r"^\|\s*" + name + cell * 4 + r"\s*\|$", 4, "gateway")
    for run in ("nginx", "gateway", "gateway-noingest"):
        assert f"wrk socket errors ({run}): none" in out, out[-4000:]
    assert re.search(r"^target \(.*\): (met|NOT met)$", out, re.M), out[-4000:]
    row(out, r"^gateway: ([0-9]+) signatures verified, [0-9]+ credential look-ups", 1, "gateway")
    # every request's access record reached PostgreSQL
    assert re.search(r"; caught up [0-9]+ s after the run$", out, re.M), out[-4000:]


def test_session_bench_smoke(stack):
    """bench/session/run.sh on the tier's stack: sessions one after another
    and two at a time through the signed API, beside bare `runc run`."""
    needs_root("the agent's and the yardstick's runc")
    serial, par, conc, nrunc = 2, 2, 2, 2
    out = run_bench(["sh", "bench/session/run.sh"], timeout=400, BENCH_STACK=stack["TESSERA_STATE_DIR"],
                    BENCH_SERIAL=str(serial), BENCH_PARALLEL=str(par), BENCH_CONCURRENCY=str(conc),
                    BENCH_RUNC=str(nrunc))
    assert "sessions failed" not in out, out[-4000:]
    cell = r"\s*\|\s*" + NUM
    for label, n in (("create -> RUNNING, serial", serial), ("destroy -> TERMINATED, serial", serial),
                     (f"create -> RUNNING, {conc} at a time", par),
                     (f"destroy -> TERMINATED, {conc} at a time", par),
                     ("bare runc run, kernel's bundle", 2 * nrunc),
                     (f"bare runc run, kernel's bundle, {conc} at a time", nrunc),
                     ("bare runc run, `runc spec` default", nrunc)):
        vals = row(out, r"^\|\s*" + re.escape(label) + cell * 3 + r"\s*\|\s*" + NUM + r"x\s*\|$", 4, "session")
        assert vals[0] == n, f"{label}: {vals[0]:.0f} of {n} done\n{out[-4000:]}"


def test_wsproxy_bench_smoke(bin_dir):
    """bench/wsproxy/run.sh: wrk direct, through nginx and through
    tessera-wsproxy; WebSocket echo round trips the same three ways."""
    out = run_bench(["sh", "bench/wsproxy/run.sh"], BENCH_BIN_DIR=os.path.join(BUILD, "bench", "wsproxy"),
                    BENCH_CONNS="8", BENCH_DURATION="1s", ROUNDS="1", WS_ROUNDTRIPS="500")
    assert "non-2xx!" not in out and "socket errors in" not in out, out[-4000:]
    for name in ("direct", "nginx", "wsproxy"):
        row(out, r"^  " + name + r"\s+" + r"\s+".join([NUM] * 3) + r"\s+" + NUM + r"x$", 4, "wsproxy HTTP")
    row(out, r"^  direct\s+" + r"\s+".join([NUM] * 3) + r"$", 3, "wsproxy WebSocket")
    for name in ("nginx", "wsproxy"):
        m = re.findall(r"^  " + name + r"\s+" + r"\s+".join([NUM] * 3) + r"\s+-?[0-9.]+ / +-?[0-9.]+$",
                       out, re.M)
        assert len(m) == 1 and all(float(x) > 0 for x in m[0]), f"WebSocket {name}:\n{out[-4000:]}"
    assert re.search(r"^targets: requests/s >= 1\.0x nginx: ", out, re.M), out[-4000:]


def test_vfolder_bench_smoke(stack):
    """bench/vfolder/run.sh on the tier's stack: downloads beside nginx
    serving the same files, a tus upload beside dd; every transfer's size
    checked by the bench; its folder purged after."""
    out = run_bench(["sh", "bench/vfolder/run.sh"], BENCH_STACK=stack["TESSERA_STATE_DIR"], BENCH_RUNS="1",
                    BENCH_BIG_MIB="8", BENCH_SMALL_COUNT="20", BENCH_SMALL_KIB="64")
    # (64 KiB files, not smaller: a figure is printed in whole MiB/s)
    for what, base in (("download 8 MiB file", "nginx"), ("download 20 x 64 KiB, one by one", "nginx"),
                       ("download 20 x 64 KiB as one zip", "nginx 1 by 1"),
                       ("upload 8 MiB (tus PATCH, fsync)", "dd conv=fsync")):
        row(out, r"^" + re.escape(what) + r"\s+" + NUM + r"\s+" + NUM + r"\s+" + re.escape(base) + r"\s+" + NUM +
            r"\s+>=[0-9.]+\s+(?:yes|NO)$", 3, "vfolder")
    assert "bench-vfolder: DELETE" not in out and "bench-vfolder: POST" not in out, out[-4000:]


def test_portmap_bench_smoke(bin_dir):
    """bench/portmap/bench.py: CNI ADD and DEL of tessera-portmap beside
    Debian's portmap on the same input."""
    needs_root("iptables and network namespaces")
    out = run_bench(["python3", "bench/portmap/bench.py", os.path.join(bin_dir, "tessera-portmap")],
                    BENCH_RUNS="3")
    for plugin in ("tessera-portmap", r"portmap \(Debian\)"):
        for cmd in ("ADD", "DEL"):
            row(out, r"^  " + plugin + r"\s+" + cmd + r"\s+" + r"\s+".join([NUM] * 3) + r"$", 3, "portmap")
    for cmd in ("ADD", "DEL"):
        row(out, r"^  " + cmd + r": tessera-portmap " + NUM + r" ms vs portmap " + NUM + r" ms \(" + NUM + r"x\)$",
            3, "portmap")


def test_scheduler_core_bench_smoke(bin_dir):
    """bench_placement (`make bench-scheduler-core`): the engine alone and
    with Redis reservation (its own redis-server), 20 agents, 300 requests;
    the bench itself exits non-zero when the Redis invariant breaks."""
    out = run_bench([os.path.join(BUILD, "bench", "bench_placement")], BENCH_AGENTS="20", BENCH_SESSIONS="300")
    assert "redis-server not available" not in out, out[-4000:]
    modes = [f"engine: place+commit, {s}" for s in ("concentrated", "dispersed", "roundrobin")] + \
            ["engine: full pass, fifo", "engine: full pass, drf", "engine+Redis: pass, 1 EVALSHA per session",
             "engine+Redis: pass, 64 sessions/EVALSHA", "engine+Redis: pass, 512 sessions/EVALSHA"]
    counts = r"\s+([0-9]+)\s+([0-9]+)\s+" + NUM + r"\s+" + NUM + r"  "
    for mode in modes:
        m = re.findall(r"^" + re.escape(mode) + counts, out, re.M)
        assert len(m) == 1, f"no row {mode!r}:\n{out}"
        placed, failed, secs, rate = int(m[0][0]), int(m[0][1]), float(m[0][2]), float(m[0][3])
        # a pass counts the sessions Redis refused in neither column
        assert placed > 0 and placed + failed <= 300 and secs >= 0 and rate > 0, f"{mode}: {m[0]}\n{out}"
        if mode.startswith("engine: place+commit"):
            assert placed + failed == 300, f"{mode}: {m[0]}\n{out}"
    # after each Redis pass, every reservation released
    released = re.findall(r"^  Redis release of all of them" + counts, out, re.M)
    assert len(released) == 3 and all(int(r[0]) > 0 and int(r[1]) == 0 for r in released), out
    assert "\ninvariant: ok after every Redis run" in out, out


def test_shim_bench_smoke(bin_dir):
    """tests/shim/bench.sh (`make bench-shim`): the CUDA shim's cost per
    call against the fake driver, with and without the shim, with and
    without limits. Skipped without the CUDA toolkit, as `make test-shim` is:
    the shim is not built then."""
    if not os.path.exists(os.path.join(CUDA_HOME, "include", "cuda.h")):
        pytest.skip(f"no CUDA toolkit at {CUDA_HOME} (cuda.h): the shim is not built, as for make test-shim")
    for f in ("lib/libtessera-cuda.so", "shim/tests/bench", "shim/tests/fake/libcuda.so.1"):
        assert os.path.exists(os.path.join(BUILD, f)), f"{BUILD}/{f} is missing: make all builds it"
    out = run_bench(["sh", "tests/shim/bench.sh", BUILD], BENCH_N="2000", BENCH_WALL_N="20000")
    numbers = r"\s+" + r"\s+".join([NUM] * 3) + r"\s+[+-][0-9.]+\s+[+-][0-9.]+$"
    if "valgrind not installed" not in out:
        assert "n/a" not in out, out
        start = out.index("instructions per call")
        for op in ("launch", "alloc", "free"):
            row(out[start:out.index("wall-clock")], r"^  " + op + numbers, 3, "shim instructions")
    wall = out[out.index("wall-clock ns per call"):]
    for op in ("launch", "alloc", "free"):
        row(wall, r"^  " + op + numbers, 3, "shim wall clock")
