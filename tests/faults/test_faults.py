"""The fault suite (docs/reliability.md): sessions driven through the public
API while each fault is applied in turn; after each, the invariants.

Which faults: TESSERA_FAULTS = "all" (default: every fault, outages of
faultlib.OUTAGE_FULL_S), "smoke" (faultlib.SMOKE, outages of
faultlib.OUTAGE_SMOKE_S) or a comma-separated list of fault names or
prefixes ("kill-9 agent,postgres stop"); TESSERA_FAULTS_OUTAGE sets the
outages' seconds.

Per fault (run_fault): a tenant of its own (so its access log and sessions
are the fault's), one resident session (RUNNING, its app opened through
wsproxy) that must survive, the load (faultlib.Load) for WARM_S, the fault,
AFTER_S more load, then every session destroyed (destroys retried while
answered 503), and the checks:
  lost        a create answered 201 unknown to PostgreSQL, a session ended
              in ERROR, the resident not RUNNING or its app not answering, a
              RUNNING session without its container
  stuck       a session still PENDING/SCHEDULED/PREPARING/PULLING/RESTARTING/
              TERMINATING STUCK_BOUND_S after the load stopped (and after the
              resident's destroy)
  drift       Redis occupancy != PostgreSQL's kernels holding slots (per
              kernel and per agent), a kernel of an ended session holding
              slots, the occupancy marker missing
  containers  a container of the stack with no kernel, of an ended session,
              or two for one kernel
  5xx         an answer >= 500 other than 503 (507 on /folders while the
              volume is full)
  hangs       no answer within REQUEST_TIMEOUT_S
  noanswer    connection refused or cut (expected only while the gateway is
              dead)
  alog        an answered request missing from auth.access_log after
              ACCESS_LOG_WAIT_S
"""
import os
import time
import uuid

import pytest

import faultlib
from conftest import RESULTS


def _selected():
    sel = os.environ.get("TESSERA_FAULTS", "all").strip() or "all"
    outage = faultlib.OUTAGE_SMOKE_S if sel == "smoke" else faultlib.OUTAGE_FULL_S
    if os.environ.get("TESSERA_FAULTS_OUTAGE"):
        outage = int(os.environ["TESSERA_FAULTS_OUTAGE"])
    faults = faultlib.make_faults(outage)
    if sel == "all":
        return faults
    names = faultlib.SMOKE if sel == "smoke" else [n.strip() for n in sel.split(",") if n.strip()]
    picked = [f for n in names for f in faults if f.name.startswith(n)]
    unknown = [n for n in names if not any(f.name.startswith(n) for f in faults)]
    if unknown:
        raise ValueError(f"TESSERA_FAULTS: unknown faults {unknown} "
                         f"(known: {[f.name for f in faults]})")
    return picked


FAULTS = _selected()


# ---- the checks are able to fail ----------------------------------------------------------------

def test_drift_check_sees_corrupted_occupancy(ctx):
    """Occupancy changed behind the platform's back (used:cpu of an agent
    +7 quanta) is reported as drift; put back, it is not."""
    st = ctx.stack
    agents = faultlib.pg_json(st, "SELECT id FROM registry.agents")
    assert agents, "no agent registered"
    key = f"agent:{agents[0]['id']}"
    r = faultlib.Redis(st["TESSERA_REDIS_URL"])
    before = faultlib.check_drift(st)
    r.cmd("HINCRBY", key, "used:cpu", 7)
    try:
        during = faultlib.check_drift(st)
    finally:
        r.cmd("HINCRBY", key, "used:cpu", -7)
    assert any(f"{key} used:cpu" in d for d in during) and len(during) > len(before), during
    assert faultlib.check_drift(st) == before


def test_container_check_sees_an_orphan(ctx):
    """A container with no kernel is reported."""
    fake = str(uuid.uuid4())
    bad, _missing = faultlib.check_containers(ctx.stack, {fake: "running"})
    assert any(fake in b and "no kernel" in b for b in bad), bad


def test_lost_check_sees_a_missing_session(ctx):
    """A create answered 201 whose session PostgreSQL does not know is lost."""
    fake = str(uuid.uuid4())
    lost = faultlib.check_lost(ctx.stack, "AKNOBODY", {"ghost": fake}, [])
    assert any("ghost" in x for x in lost), lost


def test_request_check_sees_500_and_hangs():
    rows = [{"method": "GET", "path": "/session/x", "status": s, "t": 0.0, "request_id": None,
             "gateway": True} for s in (200, 404, 503, 500, "hang", "noanswer")]
    five, hangs, noans = faultlib.classify_requests(rows, "kill-9 agent", 0, 0)
    assert (len(five), len(hangs), len(noans)) == (1, 1, 1)


# ---- the faults ----------------------------------------------------------------------------------

def run_fault(ctx, fault):
    st = ctx.stack
    ctx.n += 1
    res = faultlib.Result(fault.name)
    t_start = time.monotonic()
    rec = faultlib.Recorder()
    faultlib.log(f"fault {fault.name}: {fault.describe}")
    revived = faultlib.ensure_ready(st)
    if revived:
        res.details.append(f"not ready before the fault, restarted: {', '.join(revived)}")
    tenant = faultlib.new_tenant(ctx.admin, rec, f"fault{ctx.n}")
    folder = f"fault{ctx.n}-{faultlib.TAG}"
    faultlib.okj(tenant.post("/folders", {"name": folder}), 200, 201)
    resident = faultlib.Resident(tenant, ctx.image, f"res{ctx.n}-{faultlib.TAG}")
    load = faultlib.Load(tenant, ctx.image, f"f{ctx.n}-{faultlib.TAG}", folder)
    ctx.load = load
    load.start()
    time.sleep(faultlib.WARM_S)
    t0 = time.time()
    try:
        fault.apply(st, {"volume": ctx.volume})
        apply_error = None
    except Exception as e:  # noqa: BLE001 - reported in the row
        apply_error = str(e)
    t1 = time.time()
    time.sleep(faultlib.AFTER_S)
    load.stop()
    faultlib.log(f"fault {fault.name}: load stopped, {len(load.created)} sessions; settling")
    if apply_error:
        res.error = f"applying the fault failed: {apply_error}"
        res.details.append(res.error)
    never = load.destroy_rest()
    if never:
        res.details.append(f"destroy never answered 2xx/404 in {faultlib.DESTROY_RETRY_S} s: "
                           f"{faultlib.first(never)}")
    stuck = faultlib.settle(st, faultlib.STUCK_BOUND_S)
    res.bad("stuck", len(stuck), faultlib.first(
        [f"{s['name']} {s['status']} for {s['age']} s ({s['status_info']})" for s in stuck]))
    res.counts["sessions"] = len(load.created) + 1
    res.counts["running"] = faultlib.reached_running(st, tenant.access_key)

    lost = faultlib.check_lost(st, tenant.access_key, load.created, [resident])
    bad_c, missing_c = faultlib.converge(lambda: faultlib.check_containers(st))
    drift = faultlib.converge(lambda: faultlib.check_drift(st))

    # the resident ends too; then everything must be at rest and in agreement
    resident_destroyed = False
    deadline = time.monotonic() + faultlib.DESTROY_RETRY_S
    while not resident_destroyed and time.monotonic() < deadline:
        r = tenant.delete(f"/session/{resident.name}")
        resident_destroyed = r is not None and (200 <= r.status_code < 300 or r.status_code == 404)
        if not resident_destroyed:
            time.sleep(1)
    if not resident_destroyed:
        res.details.append("the resident's destroy was never answered 2xx/404")
    stuck2 = faultlib.settle(st, faultlib.STUCK_BOUND_S)
    res.bad("stuck", len(stuck2), "after the resident's destroy: " + faultlib.first(
        [f"{s['name']} {s['status']} for {s['age']} s ({s['status_info']})" for s in stuck2]))
    bad_c2, missing_c2 = faultlib.converge(lambda: faultlib.check_containers(st))
    drift2 = faultlib.converge(lambda: faultlib.check_drift(st))

    lost += missing_c + [m for m in missing_c2 if m not in missing_c]
    res.bad("lost", len(lost), faultlib.first(lost))
    containers = bad_c + [b for b in bad_c2 if b not in bad_c]
    res.bad("containers", len(containers), faultlib.first(containers))
    drift_all = drift + [d for d in drift2 if d not in drift]
    res.bad("drift", len(drift_all), faultlib.first(drift_all))

    five, hangs, noans = faultlib.classify_requests(rec.rows, fault.name, t0, t1)
    res.bad("5xx", len(five), faultlib.first(five))
    res.bad("hangs", len(hangs), faultlib.first(hangs))
    res.bad("noanswer", len(noans), faultlib.first(noans))
    missing = faultlib.missing_access_log(st, tenant.access_key, rec.rows)
    res.bad("alog", len(missing), f"{len(missing)} of "
            f"{sum(1 for r in rec.rows if r['request_id'])} answered requests not in "
            f"auth.access_log after {faultlib.ACCESS_LOG_WAIT_S} s (request ids "
            f"{faultlib.first(missing)})")
    res.seconds = time.monotonic() - t_start
    faultlib.log(f"fault {fault.name}: {'passed' if res.passed else 'FAILED'} "
                 f"({res.seconds:.0f} s, {len(rec.rows)} requests) {res.counts}")
    return res, apply_error


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name.replace(" ", "_") for f in FAULTS])
def test_fault(ctx, fault):
    try:
        res, apply_error = run_fault(ctx, fault)
    except Exception as e:  # noqa: BLE001 - the row says why
        if getattr(ctx, "load", None):
            ctx.load.stop()
        res = faultlib.Result(fault.name)
        res.error = f"could not run: {e}"
        res.details.append(res.error)
        RESULTS.append(res)
        pytest.fail(f"{fault.name}: could not run: {e}", pytrace=False)
    RESULTS.append(res)
    assert apply_error is None, f"{fault.name}: applying the fault failed: {apply_error}"
    assert res.passed, f"{fault.name}: " + " / ".join(res.details)
