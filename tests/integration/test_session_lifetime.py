"""A keypair policy's max_session_lifetime ends a session that has run that
long (session_lifetime.c): a user whose keypair's policy allows 4 s sees its
session terminated with the reason "session lifetime: ran more than 4 s",
not before 4 s of RUNNING, while another user's session under the default
policy (no lifetime) runs on. A change of the policy applies to sessions
created afterwards: the lifetime is taken when a session is created."""
import time
import uuid
from datetime import datetime

from conftest import wait_until
from test_apps import _running
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj  # noqa: F401

TAG = uuid.uuid4().hex[:6]
LIFETIME = 4


def _history(client, sid):
    return okj(client.get(f"/session/{sid}/status-history"))


def test_a_session_ends_at_its_policys_lifetime(admin, gw, image_registered):  # noqa: F811
    short, su = _new_user(admin, gw, "life-short")
    free, _ = _new_user(admin, gw, "life-free")
    policy = f"life-{TAG}"
    okj(admin.post("/admin/keypair-resource-policies",
                   {"name": policy, "max_session_lifetime": LIFETIME}), 200, 201)
    okj(admin.patch(f"/admin/keypairs/{short.access_key}", {"resource_policy": policy}))
    try:
        ended = _running(short, image_registered, f"life-s-{TAG}")
        kept = _running(free, image_registered, f"life-f-{TAG}")
        sid, kid = ended["sessionUuid"], kept["sessionUuid"]

        def status(client, s):
            return okj(client.get(f"/session/{s}")).get("status")
        wait_until(lambda: status(short, sid) in ("TERMINATING", "TERMINATED"),
                   timeout=LIFETIME + 30, message="the short session to end at its lifetime")
        info = okj(short.get(f"/session/{sid}"))
        assert f"session lifetime: ran more than {LIFETIME} s" in (info.get("statusInfo") or "")
        # not before its lifetime: from RUNNING to TERMINATING
        rows = okj(short.get(f"/session/{sid}/history"))["items"]
        at = {}
        for r in rows:  # oldest first: the first RUNNING, the first TERMINATING
            at.setdefault(r["status"], datetime.fromisoformat(r["at"]))
        assert "RUNNING" in at and "TERMINATING" in at, rows
        ran = (at["TERMINATING"] - at["RUNNING"]).total_seconds()
        assert LIFETIME <= ran < LIFETIME + 15, rows
        wait_until(lambda: status(short, sid) == "TERMINATED", timeout=60)
        # the other session, under a policy without a lifetime, runs on
        assert status(free, kid) == "RUNNING"
        time.sleep(1)
        assert status(free, kid) == "RUNNING"
    finally:
        short.delete(f"/session/life-s-{TAG}")
        free.delete(f"/session/life-f-{TAG}")


def test_the_lifetime_is_taken_at_create(admin, gw, image_registered):  # noqa: F811
    """A session created before its policy got a lifetime keeps running."""
    client, _ = _new_user(admin, gw, "life-late")
    policy = f"life-late-{TAG}"
    okj(admin.post("/admin/keypair-resource-policies", {"name": policy}), 200, 201)
    okj(admin.patch(f"/admin/keypairs/{client.access_key}", {"resource_policy": policy}))
    sname = f"life-l-{TAG}"
    try:
        sid = _running(client, image_registered, sname)["sessionUuid"]
        okj(admin.patch(f"/admin/keypair-resource-policies/{policy}", {"max_session_lifetime": 1}))
        time.sleep(4)
        assert okj(client.get(f"/session/{sid}")).get("status") == "RUNNING"
    finally:
        client.delete(f"/session/{sname}")
