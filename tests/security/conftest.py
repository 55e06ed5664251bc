"""The security suite's fixtures and its report.

The development stack comes from tests/integration/conftest.py, loaded here
under a name of its own (its `stack` and `bin_dir` fixtures and helpers are
re-exported, nothing is copied): one stack for the whole suite, brought up by
deploy/dev/dev-up.sh in a temporary dir and checked for leftovers at the end.

At the end of the run a table is printed, one row per check (check | result |
detail), then `N passed, M failed` and the skipped checks with their reasons.
A test adds a detail to its row with `note(request, text)`.
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
IT_DIR = os.path.abspath(os.path.join(HERE, "..", "integration"))
if IT_DIR not in sys.path:
    sys.path.insert(1, IT_DIR)  # bai_signer, svc_signer


import suitekit  # noqa: E402

_it = suitekit.integration_conftest()

# Fixtures and helpers of the integration tests, for this suite's tests.
stack = _it.stack
cluster_stack = _it.cluster_stack  # test_node_network.py
bin_dir = _it.bin_dir
wait_until = _it.wait_until
parse_env_file = _it.parse_env_file
parse_services_file = _it.parse_services_file
REPO = _it.REPO

import seclib  # noqa: E402  (after sys.path is set)


def note(request, text):
    """Put `text` into this check's detail column."""
    request.node.user_properties.append(("detail", str(text)))


# ---- the report ------------------------------------------------------------------------------

_rows = {}    # nodeid -> [check, result, detail]
_order = []


def _check_name(nodeid):
    path, _, rest = nodeid.partition("::")
    base = os.path.basename(path)
    if base.startswith("test_"):
        base = base[5:]
    if base.endswith(".py"):
        base = base[:-3]
    if rest.startswith("test_"):
        rest = rest[5:]
    return f"{base}::{rest}" if rest else base


def _first_line(text, limit=200):
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    for prefix in ("AssertionError: ", "Failed: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _failure_detail(report):
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None:
        return _first_line(crash.message)
    return _first_line(str(report.longrepr))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        # the integration conftest keeps the stack's logs when a test failed
        _it._failed_tests.append(item.nodeid)


def pytest_runtest_logreport(report):
    nid = report.nodeid
    if nid not in _rows:
        _rows[nid] = [_check_name(nid), None, ""]
        _order.append(nid)
    row = _rows[nid]
    detail = "; ".join(v for k, v in report.user_properties if k == "detail")
    if report.when == "call":
        if report.passed:
            row[1], row[2] = "passed", detail
        elif report.failed:
            row[1], row[2] = "FAILED", _failure_detail(report)
        elif report.skipped:
            row[1] = "skipped"
            row[2] = _skip_reason(report)
    elif report.failed and report.when == "setup":
        # the check could not run (a fixture failed): it counts as failed
        row[1], row[2] = "FAILED", f"setup: {_failure_detail(report)}"
    elif report.failed:
        # teardown (e.g. the stack's: processes or containers left behind): a
        # row of its own, the check itself keeps its result
        tid = nid + " [teardown]"
        if tid not in _rows:
            _order.append(tid)
        _rows[tid] = [row[0] + " [teardown]", "FAILED", _failure_detail(report)]
    elif report.skipped and report.when == "setup":
        row[1], row[2] = "skipped", _skip_reason(report)


def _skip_reason(report):
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return lr[2].replace("Skipped: ", "")
    return _first_line(str(lr))


def pytest_terminal_summary(terminalreporter):
    rows = [_rows[n] for n in _order if _rows[n][1]]
    if not rows:
        return
    tr = terminalreporter
    shown = [r for r in rows if r[1] != "skipped"]
    skipped = [r for r in rows if r[1] == "skipped"]
    w = max([len(r[0]) for r in shown] + [5])
    tr.write_sep("=", "tessera security suite")
    tr.write_line(f"{'check'.ljust(w)} | result | detail")
    tr.write_line(f"{'-' * w}-|--------|-------")
    for check, result, detail in shown:
        tr.write_line(f"{check.ljust(w)} | {result.ljust(6)} | {detail}")
    passed = sum(1 for r in shown if r[1] == "passed")
    failed = sum(1 for r in shown if r[1] == "FAILED")
    if skipped:
        tr.write_line("")
        tr.write_line(f"skipped ({len(skipped)}):")
        for check, _result, reason in skipped:
            tr.write_line(f"  {check}: {reason}")
    tr.write_line("")
    tr.write_line(f"{passed} passed, {failed} failed" + (f" ({len(skipped)} skipped)" if skipped else ""))


# ---- shared fixtures ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def admin(stack):
    """The superadmin's signed client (bai_signer.Client) against the gateway."""
    try:
        return seclib.admin_client(stack)
    except seclib.SetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def probe_bin(bin_dir):
    """The static probe (built with gcc -static when `make security` did not)."""
    try:
        return seclib.probe_path(bin_dir)
    except seclib.SetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def probe_image(stack, admin, probe_bin):
    """The busybox test image with the probe at /opt/tessera-probe/probe, pushed
    to the stack's OCI registry and registered."""
    try:
        ref = seclib.build_and_push_image(stack, probe_bin, stack["TESSERA_STATE_DIR"])
        seclib.okj(admin.post("/admin/images", {"reference": ref}), 200, 201)
    except seclib.SetupError as e:
        pytest.fail(str(e), pytrace=False)
    return ref


class Tenants:
    """Two tenants in two domains: .a (the default domain; its keypair allows
    two containers per session) and .b (a domain of its own)."""


@pytest.fixture(scope="session")
def tenants(admin):
    t = Tenants()
    try:
        policy = seclib.okj(admin.post("/admin/keypair-resource-policies",
                                       {"name": f"sec-multi-{seclib.TAG}",
                                        "max_containers_per_session": 2}), 200, 201)["name"]
        t.domain_b = seclib.new_domain(admin, "sec-dom-b")
        t.a = seclib.new_tenant(admin, None, "sec-a", policy=policy)
        t.b = seclib.new_tenant(admin, t.domain_b, "sec-b")
    except seclib.SetupError as e:
        pytest.fail(f"making the tenants: {e}", pytrace=False)
    return t


class Sessions:
    """The suite's sessions, created together and RUNNING: .a (tenant a), .b
    (tenant b, another domain), .multi (tenant a, cluster_size 2; or the
    SetupError saying why not)."""


@pytest.fixture(scope="session")
def sessions(tenants, probe_image):
    s = Sessions()
    names = {"a": f"sec-a-{seclib.TAG}", "b": f"sec-b-{seclib.TAG}", "multi": f"sec-m-{seclib.TAG}"}
    got = seclib.create_sessions(probe_image, [
        (tenants.a, names["a"], None),
        (tenants.b, names["b"], None),
        (tenants.a, names["multi"], {"cluster_size": 2, "cluster_mode": "single-node"}),
    ])
    for key in ("a", "b"):
        if isinstance(got[names[key]], Exception):
            pytest.fail(f"session {key}: {got[names[key]]}", pytrace=False)
    s.a, s.b, s.multi = got[names["a"]], got[names["b"]], got[names["multi"]]
    yield s
    for sess in (s.a, s.b, s.multi):
        if isinstance(sess, seclib.Session):
            sess.tenant.client.delete(f"/session/{sess.name}")
