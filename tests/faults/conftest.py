"""The fault suite's fixtures and its report (docs/reliability.md).

The development stack comes from tests/integration/conftest.py, loaded under
a name of its own (its `stack` fixture is re-exported, nothing is copied): one
stack for the whole suite, brought up by deploy/dev/dev-up.sh in a temporary
dir and checked for leftovers at the end.

At the end of the run a table is printed, one row per fault (fault |
sessions | running | lost | stuck | drift | containers | 5xx | hangs | noanswer | alog |
s | result), the self-checks of the checks, then the failures' details and
`N passed, M failed`.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
IT_DIR = os.path.abspath(os.path.join(HERE, "..", "integration"))
for d in (HERE, IT_DIR):
    if d not in sys.path:
        sys.path.insert(1, d)  # faultlib, bai_signer


import suitekit  # noqa: E402

_it = suitekit.integration_conftest()
stack = _it.stack
bin_dir = _it.bin_dir
parse_env_file = _it.parse_env_file

import faultlib  # noqa: E402

# ---- the report -----------------------------------------------------------------------------

RESULTS = []      # faultlib.Result per fault, in order
_checks = {}      # nodeid -> [name, result, detail] of the self-checks and setup failures
_order = []


def _first_line(text, limit=240):
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    for prefix in ("AssertionError: ", "Failed: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text if len(text) <= limit else text[:limit - 3] + "..."


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        _it._failed_tests.append(item.nodeid)  # keep the stack's logs


def pytest_runtest_logreport(report):
    if "test_fault[" in report.nodeid and report.when == "call":
        return  # a fault's row comes from its Result
    if report.when == "call" or report.failed:
        nid = report.nodeid + ("" if report.when == "call" else f" [{report.when}]")
        if nid not in _checks:
            _order.append(nid)
        name = nid.split("::", 1)[-1]
        if report.passed:
            _checks[nid] = [name, "passed", ""]
        elif report.skipped:
            lr = report.longrepr
            _checks[nid] = [name, "skipped", lr[2] if isinstance(lr, tuple) else str(lr)]
        else:
            crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
            _checks[nid] = [name, "FAILED",
                            _first_line(crash.message if crash else str(report.longrepr))]


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if not RESULTS and not _checks:
        return
    tr.write_sep("=", "tessera fault suite")
    cols = faultlib.Result.COLUMNS
    w = max([len(r.fault) for r in RESULTS] + [5])
    head = f"{'fault'.ljust(w)} | " + " | ".join(cols) + " |    s | result"
    tr.write_line(head)
    tr.write_line("-" * len(head))
    for r in RESULTS:
        cells = " | ".join(str(r.counts[c]).rjust(len(c)) for c in cols)
        tr.write_line(f"{r.fault.ljust(w)} | {cells} | {r.seconds:4.0f} | "
                      f"{'passed' if r.passed else 'ERROR' if r.error else 'FAILED'}")
    failed_rows = [r for r in RESULTS if not r.passed]
    if failed_rows:
        tr.write_line("")
        tr.write_line("what failed:")
        for r in failed_rows:
            for d in r.details:
                tr.write_line(f"  {r.fault}: {d}")
    checks = [_checks[n] for n in _order]
    if checks:
        tr.write_line("")
        tr.write_line("self-checks and setup:")
        for name, result, detail in checks:
            tr.write_line(f"  {name}: {result}" + (f" ({detail})" if detail else ""))
    passed = sum(1 for r in RESULTS if r.passed) + sum(1 for c in checks if c[1] == "passed")
    failed = sum(1 for r in RESULTS if not r.passed) + sum(1 for c in checks if c[1] == "FAILED")
    tr.write_line("")
    tr.write_line(f"{passed} passed, {failed} failed")


# ---- fixtures --------------------------------------------------------------------------------

class Ctx:
    """What the faults share: the stack, the admin's client, the image, the
    vfolder volume (a tmpfs)."""


@pytest.fixture(scope="session")
def volume(stack):
    """The vfolder volume "local" on a 64 MiB tmpfs (so that filling it is
    harmless to the host): its content copied, the tmpfs bind-mounted over it,
    tessera-vfolder restarted to use it. Unmounted at the end."""
    vol = os.path.join(stack["TESSERA_STATE_DIR"], "vfolder", "volumes", "local")
    tmp = tempfile.mkdtemp(prefix="tessera-faults-vol-")
    mounted = False
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0755", "tmpfs", tmp],
                       check=True, capture_output=True, text=True, timeout=30)
        if os.path.isdir(vol):
            subprocess.run(["cp", "-a", vol + "/.", tmp + "/"], check=True, timeout=60)
        os.makedirs(vol, exist_ok=True)
        subprocess.run(["mount", "--bind", tmp, vol], check=True, capture_output=True, text=True,
                       timeout=30)
        mounted = True
        subprocess.run(["umount", tmp], check=False, timeout=30)
        faultlib.restart(stack, "vfolder")
    except (subprocess.CalledProcessError, RuntimeError) as e:
        pytest.fail(f"the vfolder volume on a tmpfs: {getattr(e, 'stderr', '') or e}", pytrace=False)
    yield vol
    if mounted:
        subprocess.run(["umount", "-l", vol], check=False, timeout=30)
    subprocess.run(["umount", "-l", tmp], check=False, capture_output=True, timeout=30)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def ctx(stack, volume):
    c = Ctx()
    c.stack = stack
    c.volume = volume
    rec = faultlib.Recorder()
    try:
        ak, sk = faultlib.admin_keys(stack)
        c.admin = faultlib.Client(stack["TESSERA_GATEWAY_URL"], ak, sk, rec)
        c.image = faultlib.build_image(stack, stack["TESSERA_STATE_DIR"])
        faultlib.okj(c.admin.post("/admin/images", {"reference": c.image}), 200, 201)
    except (faultlib.SetupError, KeyError) as e:
        pytest.fail(f"setup: {e}", pytrace=False)
    c.n = 0
    return c
