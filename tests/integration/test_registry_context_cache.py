"""tessera-registry's cache of tessera-auth's session contexts (docs/sessions.md,
`registry.context_cache_ttl`, default 5 s in the dev stack).

The registry is called as the gateway would (caller headers), so that the
gateway's own credential cache plays no part. A burst of creates by one
keypair is answered from the cache (the hit counter grows, auth's is asked
once), and every change made through auth's admin API reaches the next create
within one second through tessera.auth.v1, well inside the 5 s TTL: a revoked
keypair and a deactivated user are refused (issue 3's rule), a lowered
keypair policy, a lowered project total, a membership removed and resource
group access revoked refuse or limit the create, and a second keypair of
the deactivated user too. Sessions go to a resource group of their own with
no agent (accepted as PENDING, never placed) and are destroyed at the end.
"""
import time
import uuid

import pytest
import requests

import svc_signer

from conftest import wait_until

TAG = uuid.uuid4().hex[:6]
GROUP = f"ctxc-{TAG}"
IMAGE = f"test.local/ctxc/app-{TAG}:1"
_n = [0]


def fresh(prefix):
    _n[0] += 1
    return f"{prefix}-{TAG}-{_n[0]}"


class Ctx:
    def __init__(self, stack):
        self.reg = stack["TESSERA_REGISTRY_URL"]
        self.auth = stack["TESSERA_AUTH_URL"]
        ak = stack["TESSERA_ADMIN_ACCESS_KEY"]
        self.keys = stack["TESSERA_SERVICE_KEYS_DIR"]  # calls are signed as the gateway
        r = svc_signer.call(self.keys, "gateway", "GET", f"{self.auth}/v1/credentials/{ak}", timeout=10)
        r.raise_for_status()
        self.admin = (r.json()["user"]["id"], ak)
        self.created = []  # (who, session id)

    def call(self, base, method, path, body=None, who=None):
        who = who or self.admin
        h = {"X-Tessera-Caller": who[0], "X-Tessera-Caller-Access-Key": who[1]}
        return svc_signer.call(self.keys, "gateway", method, base + path, json=body, headers=h, timeout=30)

    def auth_ok(self, method, path, body=None):
        r = self.call(self.auth, method, path, body)
        assert r.status_code in (200, 201, 204), f"{method} {path}: {r.status_code} {r.text}"
        return r.json() if r.content else None

    def user(self, policy, project_ids=()):
        name = fresh("ctxc-user")
        u = self.auth_ok("POST", "/v1/admin/users", {
            "email": f"{name}@example.com", "username": name, "password": "ctxc-Passw0rd!",
            "role": "user"})
        k = self.auth_ok("POST", "/v1/admin/keypairs", {"user_id": u["id"], "resource_policy": policy})
        for p in (self.default_project, *project_ids):
            self.auth_ok("POST", f"/v1/admin/projects/{p}/members", {"user_ids": [u["id"]]})
        return (u["id"], k["access_key"])

    def create(self, who, cpu="1", group=None):
        body = {"image": IMAGE, "name": fresh("s"), "enqueueOnly": True, "type": "interactive",
                "config": {"scaling_group": GROUP, "resources": {"cpu": cpu, "mem": "1g"}}}
        if group:
            body["group_name"] = group
        r = self.call(self.reg, "POST", "/v1/sessions", body, who)
        if r.status_code == 201:
            self.created.append((who, r.json()["sessionId"]))
        return r

    def metric(self, name):
        for line in requests.get(self.reg + "/metrics", timeout=5).text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"{name} not in the registry's /metrics")

    def settle(self):
        """Wait until the auth events of the setup have reached the registry
        (its event counter unchanged for 0.3 s)."""
        last, since = None, time.monotonic()
        deadline = since + 10
        while time.monotonic() < deadline:
            n = self.metric("tessera_registry_auth_events_total")
            if n != last:
                last, since = n, time.monotonic()
            elif time.monotonic() - since >= 0.3:
                return
            time.sleep(0.05)
        pytest.fail("tessera.auth.v1 events kept arriving for 10 s")

    def refused_within(self, who, status, text, seconds=1.0, **kw):
        """After a change: creates until one is answered status with text in
        its msg; the elapsed time since the call. Fails past seconds."""
        t0 = time.monotonic()
        last = None
        while True:
            r = self.create(who, **kw)
            if r.status_code == status and text in r.json().get("msg", ""):
                return time.monotonic() - t0
            last = r
            if time.monotonic() - t0 > seconds:
                pytest.fail(f"still {last.status_code} {last.text} {seconds} s after the change "
                            f"(wanted {status} '{text}')")
            time.sleep(0.02)


@pytest.fixture(scope="module")
def ctx(stack):
    c = Ctx(stack)
    r = c.call(c.reg, "POST", "/v1/admin/resource-groups", {"name": GROUP})
    assert r.status_code == 201, r.text
    # an architecture no agent has: nothing is ever placed
    r = c.call(c.reg, "POST", "/v1/admin/images", {"reference": IMAGE, "architecture": "fakearch"})
    assert r.status_code == 201, r.text
    c.auth_ok("POST", "/v1/admin/resource-group-access",
              {"resource_group": GROUP, "scope_type": "domain", "scope_id": "default"})
    projects = c.auth_ok("GET", "/v1/admin/projects?limit=1000")["items"]
    c.default_project = next(p["id"] for p in projects
                             if p["name"] == "default" and p["domain_name"] == "default")
    yield c
    for who, sid in c.created:
        c.call(c.reg, "DELETE", f"/v1/sessions/{sid}", who=c.admin)


def policy(c, **fields):
    name = fresh("ctxc-pol")
    c.auth_ok("POST", "/v1/admin/keypair-resource-policies",
              dict({"name": name, "max_concurrent_sessions": 0, "max_pending_session_count": 0},
                   **fields))
    return name


def test_the_cache_answers_a_burst(ctx):
    who = ctx.user(policy(ctx))
    # the registry caches only once its auth events consumer is live (readiness)
    assert requests.get(ctx.reg + "/readyz", timeout=5).status_code == 200
    ctx.settle()  # a late PolicyChanged of the setup would empty the cache mid-burst
    hits, misses = (ctx.metric("tessera_registry_context_cache_hits_total"),
                    ctx.metric("tessera_registry_context_cache_misses_total"))
    for _ in range(5):
        r = ctx.create(who)
        assert r.status_code == 201, r.text
    # one miss for the burst (the first create), the rest from the cache
    assert ctx.metric("tessera_registry_context_cache_misses_total") - misses == 1
    assert ctx.metric("tessera_registry_context_cache_hits_total") - hits == 4
    assert ctx.metric("tessera_registry_context_cache_entries") >= 1


def test_revoked_keypair_refused_within_one_second(ctx):
    who = ctx.user(policy(ctx))
    # a late event of the setup (the membership, the policy) empties the
    # cache; then the refusal below would come from auth, not the revocation
    ctx.settle()
    assert ctx.create(who).status_code == 201
    hits = ctx.metric("tessera_registry_context_cache_hits_total")
    assert ctx.create(who).status_code == 201
    assert ctx.metric("tessera_registry_context_cache_hits_total") == hits + 1  # cached now
    events = ctx.metric("tessera_registry_auth_events_total")
    ctx.auth_ok("DELETE", f"/v1/admin/keypairs/{who[1]}")
    ctx.refused_within(who, 401, "not an active keypair")
    # the revocation reached the registry as an event (it may trail a refusal
    # that an unrelated event's cache drop let through to auth)
    wait_until(lambda: ctx.metric("tessera_registry_auth_events_total") > events, timeout=2.0,
               interval=0.02, message="KeypairRevoked consumed by the registry")


def test_deactivated_user_refused_within_one_second(ctx):
    pol = policy(ctx)
    who = ctx.user(pol)
    second = (who[0], ctx.auth_ok("POST", "/v1/admin/keypairs",
                                  {"user_id": who[0], "resource_policy": pol})["access_key"])
    for w in (who, second):
        assert ctx.create(w).status_code == 201
        assert ctx.create(w).status_code == 201
    ctx.auth_ok("PATCH", f"/v1/admin/users/{who[0]}", {"status": "inactive"})
    ctx.refused_within(who, 401, "not an active keypair")
    ctx.refused_within(second, 401, "not an active keypair")


def test_reactivated_keypair_accepted_again(ctx):
    who = ctx.user(policy(ctx))
    assert ctx.create(who).status_code == 201
    ctx.auth_ok("PATCH", f"/v1/admin/keypairs/{who[1]}", {"is_active": False})
    ctx.refused_within(who, 401, "not an active keypair")
    # the inactive context was cached (a 200 answer); the reactivation's
    # KeypairChanged drops it
    ctx.auth_ok("PATCH", f"/v1/admin/keypairs/{who[1]}", {"is_active": True})
    wait_until(lambda: ctx.create(who).status_code == 201, timeout=1.0, interval=0.02,
               message="reactivated keypair accepted within one second")


def test_lowered_keypair_policy_applies_within_one_second(ctx):
    pol = policy(ctx, total_resource_slots={"cpu": "8"})
    who = ctx.user(pol)
    assert ctx.create(who, cpu="4").status_code == 201
    assert ctx.create(who, cpu="4").status_code == 201
    ctx.auth_ok("PATCH", f"/v1/admin/keypair-resource-policies/{pol}",
                {"total_resource_slots": {"cpu": "2"}})
    ctx.refused_within(who, 412, "exceeds the keypair resource policy's total cpu limit",
                       cpu="4")
    # and a keypair moved to another policy
    pol2 = policy(ctx, total_resource_slots={"cpu": "1"})
    assert ctx.create(who, cpu="2").status_code == 201
    ctx.auth_ok("PATCH", f"/v1/admin/keypairs/{who[1]}", {"resource_policy": pol2})
    ctx.refused_within(who, 412, "total cpu limit (1)", cpu="2")


def test_project_changes_apply_within_one_second(ctx):
    proj = ctx.auth_ok("POST", "/v1/admin/projects",
                       {"name": fresh("ctxc-proj"), "domain_name": "default"})
    who = ctx.user(policy(ctx), project_ids=[proj["id"]])
    assert ctx.create(who, cpu="4", group=proj["name"]).status_code == 201
    assert ctx.create(who, cpu="4", group=proj["name"]).status_code == 201
    # the project's total
    ctx.auth_ok("PATCH", f"/v1/admin/projects/{proj['id']}", {"total_resource_slots": {"cpu": "2"}})
    ctx.refused_within(who, 412, "exceeds the project's total cpu limit", cpu="4",
                       group=proj["name"])
    # membership
    assert ctx.create(who, cpu="1", group=proj["name"]).status_code == 201
    ctx.auth_ok("DELETE", f"/v1/admin/projects/{proj['id']}/members", {"user_ids": [who[0]]})
    ctx.refused_within(who, 403, "not a member of project", group=proj["name"])


def test_revoked_resource_group_access_applies_within_one_second(ctx):
    other = fresh("ctxc-rg")
    r = ctx.call(ctx.reg, "POST", "/v1/admin/resource-groups", {"name": other})
    assert r.status_code == 201, r.text
    who = ctx.user(policy(ctx))
    grant = {"resource_group": other, "scope_type": "keypair", "scope_id": who[1]}
    ctx.auth_ok("POST", "/v1/admin/resource-group-access", grant)

    def create_in_other():
        body = {"image": IMAGE, "name": fresh("s"), "enqueueOnly": True,
                "config": {"scaling_group": other, "resources": {"cpu": "1", "mem": "1g"}}}
        r = ctx.call(ctx.reg, "POST", "/v1/sessions", body, who)
        if r.status_code == 201:
            ctx.created.append((who, r.json()["sessionId"]))
        return r
    wait_until(lambda: create_in_other().status_code == 201, timeout=1.0, interval=0.02,
               message="granted access applies within one second")
    assert create_in_other().status_code == 201
    r = ctx.call(ctx.auth, "DELETE", "/v1/admin/resource-group-access", grant)
    assert r.status_code == 200 and r.json()["removed"] is True, r.text
    t0 = time.monotonic()
    while True:
        r = create_in_other()
        if r.status_code == 403 and f"resource group {other} is not allowed" in r.json()["msg"]:
            break
        assert time.monotonic() - t0 < 1.0, f"still {r.status_code} {r.text} after 1 s"
        time.sleep(0.02)


def test_auth_errors_are_not_cached(ctx):
    # an unknown group: 400 from auth's 404, asked again each time
    who = ctx.user(policy(ctx))
    misses = ctx.metric("tessera_registry_context_cache_misses_total")
    for _ in range(3):
        r = ctx.create(who, group="no-such-project-" + TAG)
        assert r.status_code == 400, r.text
    assert ctx.metric("tessera_registry_context_cache_misses_total") - misses == 3
