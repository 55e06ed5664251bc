"""The registry's reconcile pass (docs/operations.md, "Reconciliation";
services/registry/reconcile.h): the system of record (PostgreSQL) is made
to disagree with what the agent runs and with Redis, as lost events and
dependency outages leave it, and the pass must repair it within its bounds,
with a reason, the normal events and a metric per repair. Also wsproxy's app
routes, restored from PostgreSQL after a Redis FLUSHALL (docs/wsproxy.md).

The stack runs with the defaults: registry.kernel_reconcile_interval 10 s,
registry.stuck_timeout 60 s; a test makes a status "stuck" by moving its
status_changed_at an hour back, so it waits for passes, not for the bound."""
import re
import subprocess
import time
import uuid

import pytest
import requests

import svc_signer
from conftest import service_urls, wait_until
from test_apps import BOOTSTRAP, PAGE, _open, _running, start_when_listening
from test_sessions_api import admin, gw, image, image_registered, user  # noqa: F401

TAG = uuid.uuid4().hex[:6]
PASS_WAIT = 45  # two passes of 10 s, the agent's answer, and a slow machine


def psql(stack, sql):
    p = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-X", "-At", "-q", "-v", "ON_ERROR_STOP=1",
                        "-c", sql], capture_output=True, text=True, timeout=30, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def redis(stack, *args):
    p = subprocess.run(["redis-cli", "-u", stack["TESSERA_REDIS_URL"], *args],
                       capture_output=True, text=True, timeout=10, check=True)
    return p.stdout.strip()


def repairs(stack, kind):
    text = requests.get(stack["TESSERA_REGISTRY_URL"] + "/metrics", timeout=10).text
    m = re.search(r'^tessera_registry_reconcile_repairs_total\{kind="%s"\} (\d+)' % kind, text,
                  re.M)
    assert m, f"no repairs metric for kind {kind}"
    return int(m.group(1))


def ids_of(stack, sname):
    """(session id, kernel id, agent id) of the newest session of that name."""
    row = psql(stack, "SELECT s.id, k.id, coalesce(k.agent_id, '') FROM registry.sessions s"
                      " JOIN registry.kernels k ON k.session_id = s.id"
                      f" WHERE s.name = '{sname}' ORDER BY s.created_at DESC, k.cluster_idx LIMIT 1")
    return tuple(row.split("|"))


def status(stack, sid):
    return psql(stack, f"SELECT status FROM registry.sessions WHERE id = '{sid}'")


def ended_session(stack, client, image, sname):
    """A session that ran and was destroyed: the agent keeps its tombstone."""
    _running(client, image, sname)
    sid, kid, agent = ids_of(stack, sname)
    assert client.delete(f"/session/{sname}").status_code == 200
    wait_until(lambda: status(stack, sid) == "TERMINATED", timeout=30,
               message="the session TERMINATED")
    return sid, kid, agent


def test_running_kernel_without_container_ends_the_session(stack, user, image_registered):  # noqa: F811
    """The database says RUNNING (the agent's KernelTerminated was lost); the
    agent has only the tombstone: the session ends in ERROR with a reconcile
    reason, and its slots are released in PostgreSQL and Redis."""
    sid, kid, agent = ended_session(stack, user, image_registered, f"rc-lost-{TAG}")
    before = repairs(stack, "kernel_lost")
    psql(stack, "UPDATE registry.sessions SET status = 'RUNNING', terminated_at = NULL"
                f" WHERE id = '{sid}';"
                "UPDATE registry.kernels SET status = 'RUNNING', holds_slots = true"
                f" WHERE id = '{kid}'")
    wait_until(lambda: status(stack, sid) == "ERROR", timeout=PASS_WAIT,
               message="the RUNNING session without a container to end")
    info = psql(stack, f"SELECT status_info FROM registry.sessions WHERE id = '{sid}'")
    assert "reconcile:" in info and kid in info, info
    assert psql(stack, f"SELECT holds_slots FROM registry.kernels WHERE id = '{kid}'") == "f"
    assert repairs(stack, "kernel_lost") > before
    # the reservation the rebuild or the scheduler held is gone again
    wait_until(lambda: redis(stack, "EXISTS", f"alloc:{kid}") == "0", timeout=PASS_WAIT,
               message="its Redis reservation released")


def test_stuck_preparing_session_with_a_running_kernel_returns_to_running(stack, user, image_registered):  # noqa: F811
    """Kernel events were dead-lettered during an outage: the session is left
    PREPARING (its kernel CREATING) while the container runs; then PREPARING
    with its kernel RUNNING. Both come back to RUNNING."""
    sname = f"rc-stuck-{TAG}"
    _running(user, image_registered, sname)
    try:
        sid, kid, _ = ids_of(stack, sname)
        started = repairs(stack, "kernel_started")
        psql(stack, "UPDATE registry.sessions SET status = 'PREPARING',"
                    f" status_changed_at = now() - interval '1 hour' WHERE id = '{sid}';"
                    "UPDATE registry.kernels SET status = 'CREATING',"
                    f" status_changed_at = now() - interval '1 hour' WHERE id = '{kid}'")
        wait_until(lambda: status(stack, sid) == "RUNNING", timeout=PASS_WAIT,
                   message="the stuck session to be RUNNING again")
        assert psql(stack, f"SELECT status FROM registry.kernels WHERE id = '{kid}'") == "RUNNING"
        assert repairs(stack, "kernel_started") > started
        # the session only (its kernel RUNNING)
        running = repairs(stack, "session_running")
        psql(stack, "UPDATE registry.sessions SET status = 'PULLING',"
                    f" status_changed_at = now() - interval '1 hour' WHERE id = '{sid}'")
        wait_until(lambda: status(stack, sid) == "RUNNING", timeout=PASS_WAIT,
                   message="the stuck session to be RUNNING again")
        assert repairs(stack, "session_running") > running
        hist = psql(stack, "SELECT status FROM registry.session_status_history"
                           f" WHERE session_id = '{sid}' ORDER BY id DESC LIMIT 1")
        assert hist == "RUNNING"
        # a session that is merely PREPARING recently is left alone
        psql(stack, "UPDATE registry.sessions SET status = 'PREPARING',"
                    f" status_changed_at = now() WHERE id = '{sid}'")
        time.sleep(12)
        assert status(stack, sid) == "PREPARING"
        psql(stack, f"UPDATE registry.sessions SET status = 'RUNNING' WHERE id = '{sid}'")
    finally:
        user.delete(f"/session/{sname}")


def test_stuck_terminating_session_without_container_finishes(stack, user, image_registered):  # noqa: F811
    """TERMINATING with no container left (the KernelTerminated was lost),
    still holding slots: the termination is finished, the slots released."""
    sid, kid, _ = ended_session(stack, user, image_registered, f"rc-term-{TAG}")
    before = repairs(stack, "termination_finished")
    psql(stack, "UPDATE registry.sessions SET status = 'TERMINATING', terminated_at = NULL,"
                f" status_changed_at = now() - interval '1 hour' WHERE id = '{sid}';"
                "UPDATE registry.kernels SET status = 'TERMINATING', holds_slots = true,"
                f" status_changed_at = now() - interval '1 hour' WHERE id = '{kid}'")
    wait_until(lambda: status(stack, sid) == "TERMINATED", timeout=PASS_WAIT,
               message="the stuck TERMINATING session to end")
    assert psql(stack, f"SELECT status, holds_slots FROM registry.kernels WHERE id = '{kid}'") \
        == "TERMINATED|f"
    assert repairs(stack, "termination_finished") > before


def test_reservations_without_a_live_kernel_are_released(stack, user, image_registered):  # noqa: F811
    """A reservation in Redis that no live kernel holds (consistent with the
    agent's counters) is released; counters that drifted from the
    reservations are rebuilt."""
    sname = f"rc-occ-{TAG}"
    _running(user, image_registered, sname)  # an agent with occupancy
    try:
        _, _, agent = ids_of(stack, sname)
        akey = f"agent:{agent}"
        used = redis(stack, "HGET", akey, "used:cpu")
        fake_k, fake_s = str(uuid.uuid4()), str(uuid.uuid4())
        stale = repairs(stack, "reservation_stale")
        redis(stack, "HSET", f"alloc:{fake_k}", "session", fake_s, "agent", agent,
              "slots", "cpu=40 mem=33554432", "devs", "", "usage", "")
        redis(stack, "HINCRBY", akey, "used:cpu", "40")
        redis(stack, "HINCRBY", akey, "used:mem", "33554432")
        redis(stack, "SET", f"sess:{fake_s}", "1")
        wait_until(lambda: redis(stack, "EXISTS", f"alloc:{fake_k}") == "0", timeout=PASS_WAIT,
                   message="the fake reservation to be released")
        assert redis(stack, "HGET", akey, "used:cpu") == used
        assert redis(stack, "EXISTS", f"sess:{fake_s}") == "0"
        assert repairs(stack, "reservation_stale") > stale
        # drift: the counter alone
        drift = repairs(stack, "occupancy_drift")
        redis(stack, "HINCRBY", akey, "used:cpu", "40")
        wait_until(lambda: redis(stack, "HGET", akey, "used:cpu") == used, timeout=PASS_WAIT,
                   message="the drifted counter to be rebuilt")
        assert repairs(stack, "occupancy_drift") > drift
    finally:
        user.delete(f"/session/{sname}")


def test_app_routes_come_back_after_redis_flushall(stack, user, image_registered):  # noqa: F811
    sname = f"rc-app-{TAG}"
    _running(user, image_registered, sname, bootstrap_script=BOOTSTRAP)
    try:
        sid, _, _ = ids_of(stack, sname)
        body = start_when_listening(user, sname)
        got = wait_until(lambda: (lambda a: a if a.status_code == 200 and PAGE in a.text else None)(
            _open(body["url"])), timeout=20, message="the app through wsproxy")
        cookie = [c for c in got.cookies if c.name.startswith("tessera_app_")]
        assert cookie
        jar = {cookie[0].name: cookie[0].value}
        base = body["wsproxy_addr"] + "/"
        assert _open(base, cookies=jar).status_code == 200
        # the registry has copied the token and the cookie
        wait_until(lambda: int(psql(stack, "SELECT count(*) FROM registry.app_routes"
                                           f" WHERE session_id = '{sid}'")) >= 2, timeout=15,
                   message="the routes copied into PostgreSQL")
        before = repairs(stack, "routes_restored")
        redis(stack, "FLUSHALL")
        assert redis(stack, "EXISTS", f"session:{sid}:routes") == "0"
        wait_until(lambda: repairs(stack, "routes_restored") > before, timeout=20,
                   message="the registry to restore the routes")
        # past wsproxy's cache (wsproxy.cache_ttl, 1 s): the answers come from Redis
        time.sleep(1.5)
        # the link and the open tab work again, without restarting the session
        wait_until(lambda: _open(base, cookies=jar).status_code == 200, timeout=10,
                   message="the app's cookie to work again")
        assert _open(body["url"]).status_code in (200, 302)
        assert redis(stack, "EXISTS", f"session:{sid}:routes") == "1"
        assert status(stack, sid) == "RUNNING"
        # and they still end with the session
        assert user.delete(f"/session/{sname}").status_code == 200
        wait_until(lambda: _open(base, cookies=jar).status_code == 401, timeout=10,
                   message="the cookie refused after destroy")
    finally:
        user.delete(f"/session/{sname}")


def test_route_restore_callers_and_bad_input(stack):
    """POST /v1/routes/restore on tessera-wsproxy: only the registry may call
    it (unsigned 401, another service 403), and a malformed body is a 400
    problem that restores nothing."""
    urls = service_urls(stack)
    url = urls["wsproxy"] + "/v1/routes/restore"
    r = requests.post(url, json={"routes": []}, timeout=10)
    assert r.status_code == 401, r.text
    r = svc_signer.call(urls["keys"], "gateway", "POST", url, json={"routes": []})
    assert r.status_code == 403, r.text
    assert r.headers["Content-Type"].startswith("application/problem+json")
    for body in ({"routes": "x"}, {"routes": 5}, {}):
        r = svc_signer.call(urls["keys"], "registry", "POST", url, json=body)
        assert r.status_code == 400, (body, r.text)
        assert r.headers["Content-Type"].startswith("application/problem+json")
    r = svc_signer.call(urls["keys"], "registry", "POST", url, data=b"{not json",
                        headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text


def test_recalculate_usage_rebuilds_occupancy_on_request(stack, admin, user, image_registered):  # noqa: F811
    """Backend.AI's POST /resource/recalculate-usage (superadmins): occupancy is
    rebuilt from PostgreSQL at once (no reconcile pass to wait for), keeping
    the live reservations; a placement in flight (a reservation whose kernel
    the registry has not recorded yet) makes it wait, then refuse with 503
    rather than drop it."""
    sname = f"rc-recalc-{TAG}"
    _running(user, image_registered, sname)
    try:
        _, kid, agent = ids_of(stack, sname)
        akey = f"agent:{agent}"
        used = redis(stack, "HGET", akey, "used:cpu")
        # a stale reservation and a drifted counter, repaired on request
        fake_k, fake_s = str(uuid.uuid4()), str(uuid.uuid4())
        redis(stack, "HSET", f"alloc:{fake_k}", "session", fake_s, "agent", agent,
              "slots", "cpu=40 mem=33554432", "devs", "", "usage", "")
        redis(stack, "HINCRBY", akey, "used:cpu", "77")
        t0 = time.monotonic()
        r = admin.post("/resource/recalculate-usage", {}, timeout=40)
        assert r.status_code == 200, r.text
        assert time.monotonic() - t0 < 8
        body = r.json()
        assert body["kernels"] >= 1 and body["agents"] >= 1, body
        assert redis(stack, "EXISTS", f"alloc:{fake_k}") == "0"
        assert redis(stack, "EXISTS", f"alloc:{kid}") == "1"
        assert redis(stack, "HGET", akey, "used:cpu") == used
        assert redis(stack, "EXISTS", "rebuild") == "0"
        # only superadmins
        p = user.post("/resource/recalculate-usage", {}, timeout=20)
        assert p.status_code == 403, p.text
        assert redis(stack, "EXISTS", f"alloc:{kid}") == "1"

        # a placement in flight: a reservation whose kernel the database does
        # not record as holding slots yet (as between the scheduler's reserve
        # and the registry applying SessionScheduled)
        psql(stack, f"UPDATE registry.kernels SET holds_slots = false WHERE id = '{kid}'")
        try:
            t0 = time.monotonic()
            r = admin.post("/resource/recalculate-usage", {}, timeout=40)
            waited = time.monotonic() - t0
            assert r.status_code == 503, r.text
            assert "try again" in r.json()["msg"], r.text
            assert 4 < waited < 20, waited
            # nothing dropped, and the lock is gone
            assert redis(stack, "EXISTS", f"alloc:{kid}") == "1"
            assert redis(stack, "HGET", akey, "used:cpu") == used
            assert redis(stack, "EXISTS", "rebuild") == "0"
        finally:
            psql(stack, f"UPDATE registry.kernels SET holds_slots = true WHERE id = '{kid}'")
        # recorded: it goes through again
        r = admin.post("/resource/recalculate-usage", {}, timeout=40)
        assert r.status_code == 200, r.text
        assert redis(stack, "HGET", akey, "used:cpu") == used
    finally:
        user.delete(f"/session/{sname}")
