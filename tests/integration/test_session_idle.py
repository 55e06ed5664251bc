"""Idle reclamation, the network/interaction checker (docs/sessions.md, "Idle
reclamation"; services/registry/idle_network.h): a keypair policy's
idle_timeout (seconds, taken at create; 0: never idle) ends an interactive
session nobody used for that long, with the reason "idle: no app traffic or
exec for N s"; an exec every few seconds (REST execute relayed by the
registry, the gateway's execute stream) keeps it; the remaining time shows
in GET /session/{name} (idleChecks), GraphQL idle_checks and `tessera
session info`; a registry killed mid-countdown neither forgets the session
nor ends it twice. The activity route refuses another user's session."""
import json
import os
import re
import subprocess
import time
import uuid
from datetime import datetime

from conftest import wait_until
from test_apps import _running
from test_cli import base_env
from test_cli import ok as cli_ok
from test_graphql import data as gql_data
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj  # noqa: F401
from test_streams import Exec

TAG = uuid.uuid4().hex[:6]
IDLE = 8
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RESTART = os.path.join(REPO, "deploy", "dev", "restart.sh")


def _idle_user(admin, gw, prefix, timeout=IDLE, **policy_extra):  # noqa: F811
    client, user = _new_user(admin, gw, prefix)
    policy = f"{prefix}-{TAG}-{uuid.uuid4().hex[:4]}"
    okj(admin.post("/admin/keypair-resource-policies",
                   {"name": policy, "idle_timeout": timeout, **policy_extra}), 200, 201)
    okj(admin.patch(f"/admin/keypairs/{client.access_key}", {"resource_policy": policy}))
    client.user = user
    return client


def _status(client, sid):
    return okj(client.get(f"/session/{sid}")).get("status")


def _ran(client, sid):
    """Seconds from the first RUNNING to the first TERMINATING, and the number
    of TERMINATING rows in the session's history."""
    rows = okj(client.get(f"/session/{sid}/history"))["items"]
    at = {}
    for r in rows:
        at.setdefault(r["status"], datetime.fromisoformat(r["at"]))
    assert "RUNNING" in at and "TERMINATING" in at, rows
    return ((at["TERMINATING"] - at["RUNNING"]).total_seconds(),
            sum(1 for r in rows if r["status"] == "TERMINATING"))


def _metric(stack, pattern):
    import requests
    text = requests.get(stack["TESSERA_REGISTRY_URL"] + "/metrics", timeout=10).text
    m = re.search(r"^" + pattern + r" (\d+)", text, re.M)
    assert m, pattern
    return int(m.group(1))


RECLAIMED = r'tessera_registry_idle_reclaimed_total\{checker="network_timeout"\}'
PUSHED = "tessera_registry_idle_deadlines_pushed_total"


def _remaining(info):
    return info["idleChecks"]["network_timeout"]["remaining"]


def test_an_idle_session_is_reclaimed_with_its_reason(admin, gw, image_registered, stack, bin_dir,  # noqa: F811
                                                      tmp_path):
    client = _idle_user(admin, gw, "idle-a")
    sname = f"idle-a-{TAG}"
    reclaimed = _metric(stack, RECLAIMED)
    try:
        sid = _running(client, image_registered, sname)["sessionUuid"]
        info = okj(client.get(f"/session/{sname}"))
        checks = info["idleChecks"]["network_timeout"]
        assert checks["remaining_time_type"] == "expire_after", info
        assert checks["extra"] == {"timeout": IDLE, "level": "keypair_policy"}, info
        assert 0 < checks["remaining"] <= IDLE, info
        # GraphQL, Backend.AI's shape (a JSON string)
        d = gql_data(client, "query($id: UUID!) { compute_session(id: $id) { idle_checks } }",
                     {"id": sid})
        g = json.loads(d["compute_session"]["idle_checks"])
        assert 0 <= g["network_timeout"]["remaining"] <= IDLE, g
        # the CLI's session info
        env = base_env(tmp_path, TESSERA_GATEWAY_URL=stack["TESSERA_GATEWAY_URL"],
                       TESSERA_ACCESS_KEY=client.access_key, TESSERA_SECRET_KEY=client.secret_key)
        out = cli_ok(bin_dir, env, "session", "info", sname)
        assert "reclaimed in" in out and f"idle timeout {IDLE} s, keypair policy's" in out, out
        assert _remaining(info) is not None and info["idleChecks"]["session_lifetime"]["remaining"] is None

        wait_until(lambda: _status(client, sid) in ("TERMINATING", "TERMINATED"),
                   timeout=IDLE + 30, message="the idle session to be reclaimed")
        info = okj(client.get(f"/session/{sid}"))
        assert f"idle: no app traffic or exec for {IDLE} s" in (info.get("statusInfo") or ""), info
        ran, ends = _ran(client, sid)
        assert IDLE <= ran < IDLE + 10, ran
        assert ends == 1
        assert _metric(stack, RECLAIMED) == reclaimed + 1
        wait_until(lambda: _status(client, sid) == "TERMINATED", timeout=60)
        # an ended session is not checked any more
        assert _remaining(okj(client.get(f"/session/{sid}"))) is None
    finally:
        client.delete(f"/session/{sname}")


def test_an_exec_every_few_seconds_keeps_it(admin, gw, image_registered, stack):  # noqa: F811
    client = _idle_user(admin, gw, "idle-b")
    rest, stream = f"idle-b-{TAG}", f"idle-s-{TAG}"
    pushed = _metric(stack, PUSHED)
    try:
        a = _running(client, image_registered, rest)["sessionUuid"]
        b = _running(client, image_registered, stream)["sessionUuid"]
        end = time.monotonic() + 2.5 * IDLE
        while time.monotonic() < end:
            # REST execute (relayed by the registry) on one, the gateway's
            # execute stream on the other
            r = okj(client.post(f"/session/{rest}", {"mode": "batch", "options": {"exec": "true"}},
                                timeout=60))
            assert r["result"]["exitCode"] == 0, r
            e = Exec(client, stream, {"mode": "query", "code": "true"})
            assert e.results()[-1]["status"] == "finished"
            e.s.close()
            assert _status(client, a) == "RUNNING" and _status(client, b) == "RUNNING"
            time.sleep(2)
        # used a moment ago: most of the timeout is left
        assert _remaining(okj(client.get(f"/session/{a}"))) > IDLE / 2
        # the deadlines passed and were moved on (two sessions, 2.5 timeouts)
        assert _metric(stack, PUSHED) >= pushed + 2
        # left alone, both go
        for sid in (a, b):
            wait_until(lambda: _status(client, sid) in ("TERMINATING", "TERMINATED"),
                       timeout=IDLE + 30, message="the session to be reclaimed once left alone")
    finally:
        client.delete(f"/session/{rest}")
        client.delete(f"/session/{stream}")


def test_idle_timeout_zero_is_never_idle(admin, gw, image_registered, stack, bin_dir,  # noqa: F811
                                         tmp_path):
    """0: never idle; the session's lifetime shows as the session_lifetime
    checker (Backend.AI's), in the API and the CLI."""
    client = _idle_user(admin, gw, "idle-z", timeout=0, max_session_lifetime=300)
    sname = f"idle-z-{TAG}"
    try:
        sid = _running(client, image_registered, sname)["sessionUuid"]
        info = okj(client.get(f"/session/{sid}"))
        assert _remaining(info) is None and info["idleChecks"]["network_timeout"]["extra"] is None
        life = info["idleChecks"]["session_lifetime"]
        assert 280 < life["remaining"] <= 300 and life["extra"] == {"max_lifetime": 300}, life
        assert life["remaining_time_type"] == "expire_after"
        env = base_env(tmp_path, TESSERA_GATEWAY_URL=stack["TESSERA_GATEWAY_URL"],
                       TESSERA_ACCESS_KEY=client.access_key, TESSERA_SECRET_KEY=client.secret_key)
        out = cli_ok(bin_dir, env, "session", "info", sname)
        assert "not checked" in out and "(max lifetime 300 s)" in out, out
        time.sleep(4)
        assert _status(client, sid) == "RUNNING"
    finally:
        client.delete(f"/session/{sname}")


def test_a_registry_restart_mid_countdown(admin, gw, image_registered, stack):  # noqa: F811
    """Killed halfway and down for 2 s: the session is still reclaimed (the
    deadline lives in PostgreSQL), once."""
    client = _idle_user(admin, gw, "idle-r", timeout=12)
    sname = f"idle-r-{TAG}"
    try:
        sid = _running(client, image_registered, sname)["sessionUuid"]
        time.sleep(4)
        env = dict(os.environ, TESSERA_STATE_DIR=stack["TESSERA_STATE_DIR"])
        r = subprocess.run(["sh", RESTART, "registry", "--kill", "--down", "2"], env=env,
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        wait_until(lambda: _status(client, sid) in ("TERMINATING", "TERMINATED"),
                   timeout=60, message="the idle session to be reclaimed after the restart")
        info = okj(client.get(f"/session/{sid}"))
        assert "idle: no app traffic or exec for 12 s" in (info.get("statusInfo") or ""), info
        ran, ends = _ran(client, sid)
        assert ran >= 12, ran
        assert ends == 1
    finally:
        client.delete(f"/session/{sname}")


def test_activity_is_refused_for_another_users_session(admin, gw, image_registered, stack):  # noqa: F811
    """The registry's activity route (the gateway's streams call it) answers
    another user's session 404, as every session route does; an unknown one
    404 too; and the owner's 204."""
    import svc_signer
    owner = _idle_user(admin, gw, "idle-o", timeout=600)
    other, other_user = _new_user(admin, gw, "idle-x")
    sname = f"idle-o-{TAG}"
    try:
        sid = _running(owner, image_registered, sname)["sessionUuid"]
        base = stack["TESSERA_REGISTRY_URL"].rstrip("/")

        def post(user_id, access_key, sid):
            h = {"X-Tessera-Caller": user_id, "X-Tessera-Caller-Access-Key": access_key}
            return svc_signer.call(stack, "gateway", "POST", f"{base}/v1/sessions/{sid}/activity",
                                   headers=h, timeout=10).status_code
        assert post(other_user["id"], other.access_key, sid) == 404
        assert post(other_user["id"], other.access_key, uuid.uuid4()) == 404
        assert post(owner.user["id"], owner.access_key, sid) == 204
    finally:
        owner.delete(f"/session/{sname}")
