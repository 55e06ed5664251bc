"""Tenant scoping of the admin REST API (docs/api.md "Admin REST").

Two domains A and B with objects in each; three callers (a user of A, the
domain admin of A, the superadmin); every operation (list, get, create, patch,
delete, where the resource has it) on every resource: domains, projects,
members, users, keypairs, keypair and user resource policies (global objects),
resource-group access (domain, project and keypair scopes) and the access log.
Every cell asserts allowed or denied, and that a denied change changed nothing
(read back as the superadmin).

Each cell runs over two transports: `internal` (tessera-auth's /v1/admin/...
with the X-Tessera-Caller headers the gateway would add) and `gateway` (signed
requests to the gateway's /admin/...; skipped while the gateway does not
answer a signed GET /auth/test with 200).
"""
import os
import subprocess
import urllib.parse
import uuid

import pytest

import bai_signer
import svc_signer
from conftest import service_urls

PASSWORD = "scoping-Passw0rd"
TAG = uuid.uuid4().hex[:8]
_counter = [0]


def fresh(prefix):
    _counter[0] += 1
    return f"{prefix}-{TAG}-{_counter[0]}"



def psql(stack, sql):
    out = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


class Caller:
    """One identity speaking the admin API over one transport. Paths are the
    public ones ("/admin/domains"); internally they become /v1/admin/..."""

    def __init__(self, label, transport, urls, user_id, access_key, secret_key):
        self.label = label
        self.transport = transport
        self.urls = urls
        self.user_id = user_id
        self.access_key = access_key
        self.secret_key = secret_key

    def request(self, method, path, json=None, params=None):
        path = urllib.parse.quote(path, safe="/%:@")  # names may be non-ASCII
        if self.transport == "gateway":
            client = bai_signer.Client(self.urls["gateway"], self.access_key, self.secret_key)
            return client.request(method, path, json=json, params=params)
        headers = {"X-Tessera-Caller": self.user_id, "X-Tessera-Caller-Access-Key": self.access_key}
        return svc_signer.call(self.urls["keys"], "gateway", method, self.urls["auth"] + "/v1" + path,
                               json=json, params=params, headers=headers, timeout=10)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, json=None, **kw):
        return self.request("POST", path, json=json, **kw)

    def patch(self, path, json=None, **kw):
        return self.request("PATCH", path, json=json, **kw)

    def delete(self, path, json=None, **kw):
        return self.request("DELETE", path, json=json, **kw)


def ok(r, *codes):
    assert r.status_code in (codes or (200, 201)), f"{r.request.method} {r.url}: {r.status_code} {r.text}"
    return r.json()


def items(r):
    return r.json()["items"] if r.status_code == 200 else []


class World:
    """Everything the matrix needs, created by the superadmin through auth's
    internal API. Domain keys are "A" and "B"."""

    def __init__(self, stack):
        self.stack = stack
        self.urls = service_urls(stack)
        ak, sk = stack["TESSERA_ADMIN_ACCESS_KEY"], stack["TESSERA_ADMIN_SECRET_KEY"]
        cred = svc_signer.call(self.urls["keys"], "gateway", "GET", f"{self.urls['auth']}/v1/credentials/{ak}",
                               timeout=10)
        assert cred.status_code == 200, cred.text
        self.super_id = cred.json()["user"]["id"]
        self.su = Caller("super", "internal", self.urls, self.super_id, ak, sk)
        self.super_keys = (self.super_id, ak, sk)
        su = self.su
        self.domain = {d: ok(su.post("/admin/domains", {"name": fresh(f"it-{d.lower()}")}))["name"]
                       for d in "AB"}
        self.keys = {}  # label -> (user_id, access_key, secret_key)
        self.admin_a = self.new_user("A", "admin", keypair=True)
        self.user_a = self.new_user("A", "user", keypair=True)
        # Per domain: the object user (with a keypair), a membership candidate.
        self.user2 = {d: self.new_user(d, "user", keypair=True) for d in "AB"}
        self.user3 = {d: self.new_user(d, "user") for d in "AB"}
        self.ak2 = {d: self.keys[self.user2[d]][1] for d in "AB"}
        self.project = {d: self.new_project(d) for d in "AB"}
        for d in "AB":
            ok(su.post(f"/admin/projects/{self.project[d]}/members", {"user_ids": [self.user2[d]]}))
        self.rg = fresh("rg")
        self.scope = {}  # (scope_type, dom) -> scope_id
        for d in "AB":
            self.scope[("domain", d)] = self.domain[d]
            self.scope[("project", d)] = self.project[d]
            self.scope[("keypair", d)] = self.ak2[d]
        for (stype, _d), sid in self.scope.items():
            ok(su.post("/admin/resource-group-access",
                       {"resource_group": self.rg, "scope_type": stype, "scope_id": sid}))
        self.policy = {"keypair-resource-policies": ok(su.post("/admin/keypair-resource-policies",
                                                               {"name": fresh("it-kp")}))["name"],
                       "user-resource-policies": ok(su.post("/admin/user-resource-policies",
                                                            {"name": fresh("it-up")}))["name"]}
        # Access records of each domain's object user, and one of user A itself.
        self.record = {}
        for who, uid in (("A", self.user2["A"]), ("B", self.user2["B"]), ("self", self.user_a)):
            eid = str(uuid.uuid4())
            ak_ = self.keys[uid][1]
            # A block of one record (auth.access_blocks; the view auth.access_log).
            psql(stack, "INSERT INTO auth.access_blocks VALUES"
                        f" ('{eid}', now(), now(), 1, 'it', ARRAY['{ak_}'], ARRAY[1], ARRAY['{uid}'],"
                        " ARRAY[1],"
                        f" ARRAY['{eid}']::uuid[], ARRAY[now()], ARRAY['{ak_}'], ARRAY['{uid}'],"
                        f" ARRAY['127.0.0.1'], ARRAY['GET'], ARRAY['/it/{TAG}'], ARRAY[200],"
                        f" ARRAY[10]::bigint[], ARRAY['it-{TAG}'])")
            self.record[who] = eid

    def new_user(self, d, role, keypair=False):
        name = fresh(f"it-{role}-{d.lower()}")
        u = ok(self.su.post("/admin/users", {"email": f"{name}@example.com", "username": name,
                                             "password": PASSWORD, "role": role,
                                             "domain_name": self.domain[d]}))
        ak = sk = ""
        if keypair:
            k = ok(self.su.post("/admin/keypairs", {"user_id": u["id"]}))
            ak, sk = k["access_key"], k["secret_key"]
        self.keys[u["id"]] = (u["id"], ak, sk)
        return u["id"]

    def new_project(self, d):
        return ok(self.su.post("/admin/projects", {"name": fresh("it-proj"),
                                                   "domain_name": self.domain[d]}))["id"]

    def caller(self, label, transport):
        uid, ak, sk = {"super": self.super_keys, "adminA": self.keys[self.admin_a],
                       "userA": self.keys[self.user_a]}[label]
        return Caller(label, transport, self.urls, uid, ak, sk)


@pytest.fixture(scope="module")
def world(stack):
    if "TESSERA_ADMIN_ACCESS_KEY" not in stack:
        pytest.skip("dev-up wrote no TESSERA_ADMIN_ACCESS_KEY (tessera-auth bootstrap missing)")
    return World(stack)


@pytest.fixture(params=["internal", "gateway"])
def transport(request, world):
    return request.param


# ---- the operations ----------------------------------------------------------
# Each takes (world, caller, dom) and returns (allowed, response, changed):
# allowed from the caller's answer, changed read back as the superadmin
# (None where there is nothing to read back).

def _in(r, key, value):
    return r.status_code == 200 and any(i.get(key) == value for i in items(r))


# domains ---------------------------------------------------------------------

def domains_list(w, c, d):
    r = c.get("/admin/domains", params={"limit": 1000})
    return _in(r, "name", w.domain[d]), r, None


def domains_get(w, c, d):
    r = c.get(f"/admin/domains/{w.domain[d]}")
    return r.status_code == 200, r, None


def domains_create(w, c, d):
    name = fresh(f"it-new-{d.lower()}")
    r = c.post("/admin/domains", {"name": name, "description": "created in a scoping cell"})
    return r.status_code == 201, r, w.su.get(f"/admin/domains/{name}").status_code == 200


def domains_patch(w, c, d):
    desc = fresh("desc")
    r = c.patch(f"/admin/domains/{w.domain[d]}", {"description": desc})
    after = ok(w.su.get(f"/admin/domains/{w.domain[d]}"))
    return r.status_code == 200, r, after["description"] == desc


def domains_delete(w, c, d):
    r = c.delete(f"/admin/domains/{w.domain[d]}")
    after = ok(w.su.get(f"/admin/domains/{w.domain[d]}"))
    if not after["is_active"]:  # put it back for the other cells
        ok(w.su.patch(f"/admin/domains/{w.domain[d]}", {"is_active": True}))
    return r.status_code == 200, r, not after["is_active"]


# projects ----------------------------------------------------------------------

def projects_list(w, c, d):
    r = c.get("/admin/projects", params={"domain": w.domain[d], "limit": 1000})
    return _in(r, "id", w.project[d]), r, None


def projects_get(w, c, d):
    r = c.get(f"/admin/projects/{w.project[d]}")
    return r.status_code == 200, r, None


def projects_create(w, c, d):
    name = fresh("it-proj")
    r = c.post("/admin/projects", {"name": name, "domain_name": w.domain[d]})
    after = w.su.get("/admin/projects", params={"domain": w.domain[d], "limit": 1000})
    return r.status_code == 201, r, _in(after, "name", name)


def projects_patch(w, c, d):
    desc = fresh("desc")
    r = c.patch(f"/admin/projects/{w.project[d]}", {"description": desc})
    return r.status_code == 200, r, ok(w.su.get(f"/admin/projects/{w.project[d]}"))["description"] == desc


def projects_delete(w, c, d):
    victim = w.new_project(d)
    r = c.delete(f"/admin/projects/{victim}")
    return r.status_code == 200, r, not ok(w.su.get(f"/admin/projects/{victim}"))["is_active"]


# members -------------------------------------------------------------------------

def _members(w, d):
    return {m["id"] for m in ok(w.su.get(f"/admin/projects/{w.project[d]}/members",
                                         params={"limit": 1000}))["items"]}


def members_list(w, c, d):
    r = c.get(f"/admin/projects/{w.project[d]}/members")
    return _in(r, "id", w.user2[d]), r, None


def members_create(w, c, d):
    cand = w.user3[d]
    r = c.post(f"/admin/projects/{w.project[d]}/members", {"user_ids": [cand]})
    changed = cand in _members(w, d)
    ok(w.su.delete(f"/admin/projects/{w.project[d]}/members", {"user_ids": [cand]}))
    return r.status_code == 200, r, changed


def members_delete(w, c, d):
    cand = w.user3[d]
    ok(w.su.post(f"/admin/projects/{w.project[d]}/members", {"user_ids": [cand]}))
    r = c.delete(f"/admin/projects/{w.project[d]}/members", {"user_ids": [cand]})
    changed = cand not in _members(w, d)
    ok(w.su.delete(f"/admin/projects/{w.project[d]}/members", {"user_ids": [cand]}))
    return r.status_code == 200, r, changed


# users (tessera-auth core) ---------------------------------------------------------

def users_list(w, c, d):
    r = c.get("/admin/users", params={"domain": w.domain[d], "limit": 1000})
    return _in(r, "id", w.user2[d]), r, None


def users_get(w, c, d):
    r = c.get(f"/admin/users/{w.user2[d]}")
    return r.status_code == 200, r, None


def users_create(w, c, d):
    name = fresh("it-new-user")
    r = c.post("/admin/users", {"email": f"{name}@example.com", "username": name,
                                "password": PASSWORD, "domain_name": w.domain[d]})
    after = w.su.get("/admin/users", params={"q": name})
    return r.status_code == 201, r, _in(after, "username", name)


def users_patch(w, c, d):
    full = fresh("Full Name")
    r = c.patch(f"/admin/users/{w.user2[d]}", {"full_name": full})
    return r.status_code == 200, r, ok(w.su.get(f"/admin/users/{w.user2[d]}"))["full_name"] == full


def users_delete(w, c, d):
    victim = w.new_user(d, "user")
    r = c.delete(f"/admin/users/{victim}")
    return r.status_code in (200, 204), r, ok(w.su.get(f"/admin/users/{victim}"))["status"] == "deleted"


# keypairs (tessera-auth core) --------------------------------------------------------

def _keypairs_of(w, uid):
    return {k["access_key"] for k in ok(w.su.get("/admin/keypairs",
                                                 params={"user": uid, "limit": 1000}))["items"]}


def keypairs_list(w, c, d):
    r = c.get("/admin/keypairs", params={"user": w.user2[d], "limit": 1000})
    return _in(r, "access_key", w.ak2[d]), r, None


def keypairs_get(w, c, d):
    r = c.get(f"/admin/keypairs/{w.ak2[d]}")
    return r.status_code == 200, r, None


def keypairs_create(w, c, d):
    before = _keypairs_of(w, w.user2[d])
    r = c.post("/admin/keypairs", {"user_id": w.user2[d]})
    return r.status_code == 201, r, _keypairs_of(w, w.user2[d]) != before


def keypairs_patch(w, c, d):
    rate = 100 + _counter[0]
    fresh("rate")
    r = c.patch(f"/admin/keypairs/{w.ak2[d]}", {"rate_limit": rate})
    return r.status_code == 200, r, ok(w.su.get(f"/admin/keypairs/{w.ak2[d]}"))["rate_limit"] == rate


def keypairs_delete(w, c, d):
    victim = ok(w.su.post("/admin/keypairs", {"user_id": w.user2[d]}))["access_key"]
    r = c.delete(f"/admin/keypairs/{victim}")
    return r.status_code in (200, 204), r, not ok(w.su.get(f"/admin/keypairs/{victim}"))["is_active"]


# resource policies (global objects) ------------------------------------------------------

def _policy_ops(kind, patch_field):
    base = f"/admin/{kind}"

    def list_(w, c, d):
        r = c.get(base, params={"limit": 1000})
        return _in(r, "name", w.policy[kind]), r, None

    def get(w, c, d):
        r = c.get(f"{base}/{w.policy[kind]}")
        return r.status_code == 200, r, None

    def create(w, c, d):
        name = fresh("it-pol")
        r = c.post(base, {"name": name, patch_field: 3})
        return r.status_code == 201, r, w.su.get(f"{base}/{name}").status_code == 200

    def patch(w, c, d):
        value = _counter[0]
        fresh("pol-value")
        r = c.patch(f"{base}/{w.policy[kind]}", {patch_field: value})
        return r.status_code == 200, r, ok(w.su.get(f"{base}/{w.policy[kind]}"))[patch_field] == value

    def delete(w, c, d):
        victim = ok(w.su.post(base, {"name": fresh("it-victim")}))["name"]
        r = c.delete(f"{base}/{victim}")
        return r.status_code == 200, r, w.su.get(f"{base}/{victim}").status_code == 404

    return {"list": list_, "get": get, "create": create, "patch": patch, "delete": delete}


# resource-group access -----------------------------------------------------------------------

def _rg_ops(stype):
    def entry(w, d, rg):
        return {"resource_group": rg, "scope_type": stype, "scope_id": w.scope[(stype, d)]}

    def present(w, e):
        r = w.su.get("/admin/resource-group-access", params=e)
        return r.status_code == 200 and r.json()["total"] == 1

    def list_(w, c, d):
        r = c.get("/admin/resource-group-access",
                  params={"resource_group": w.rg, "scope_type": stype, "limit": 1000})
        return _in(r, "scope_id", w.scope[(stype, d)]), r, None

    def create(w, c, d):
        e = entry(w, d, fresh("rg"))
        r = c.post("/admin/resource-group-access", e)
        return r.status_code in (200, 201), r, present(w, e)

    def delete(w, c, d):
        e = entry(w, d, fresh("rg"))
        ok(w.su.post("/admin/resource-group-access", e))
        r = c.delete("/admin/resource-group-access", e)
        return r.status_code == 200 and r.json()["removed"], r, not present(w, e)

    return {"list": list_, "create": create, "delete": delete}


# access log ----------------------------------------------------------------------------------------

def access_log_list(w, c, d):
    r = c.get("/admin/access-log", params={"path_prefix": f"/it/{TAG}", "limit": 1000})
    return _in(r, "event_id", w.record[d]), r, None


def access_log_by_user(w, c, d):
    r = c.get("/admin/access-log", params={"user_id": w.user2[d]})
    return _in(r, "event_id", w.record[d]), r, None


RESOURCES = {
    "domains": {"list": domains_list, "get": domains_get, "create": domains_create,
                "patch": domains_patch, "delete": domains_delete},
    "projects": {"list": projects_list, "get": projects_get, "create": projects_create,
                 "patch": projects_patch, "delete": projects_delete},
    "members": {"list": members_list, "create": members_create, "delete": members_delete},
    "users": {"list": users_list, "get": users_get, "create": users_create, "patch": users_patch,
              "delete": users_delete},
    "keypairs": {"list": keypairs_list, "get": keypairs_get, "create": keypairs_create,
                 "patch": keypairs_patch, "delete": keypairs_delete},
    "keypair-resource-policies": _policy_ops("keypair-resource-policies", "max_concurrent_sessions"),
    "user-resource-policies": _policy_ops("user-resource-policies", "max_vfolder_count"),
    "rg-access-domain": _rg_ops("domain"),
    "rg-access-project": _rg_ops("project"),
    "rg-access-keypair": _rg_ops("keypair"),
    "access-log": {"list": access_log_list, "get": access_log_by_user},
}
GLOBAL = {"keypair-resource-policies", "user-resource-policies"}
MINE = {"domains", "projects", "members", "keypair-resource-policies", "user-resource-policies",
        "rg-access-domain", "rg-access-project", "rg-access-keypair", "access-log"}


def expected(resource, op, caller, dom):
    """True when the caller may do op on the object of domain dom."""
    if caller == "super":
        return True
    if caller == "userA":  # the objects are never the user itself
        return False
    if resource == "domains" and op in ("create", "delete"):
        return False
    if resource in GLOBAL:
        return op in ("list", "get")
    return dom == "A"


def denial_status(resource, op, caller, dom):
    """The status a denied cell answers on the endpoints of this module (the
    403/404 rule of docs/api.md); None: a 200 list without the object."""
    if resource == "access-log":
        return None  # filters narrow the caller's scope
    if caller == "userA":
        if resource == "projects" and op == "list":
            # users list the projects they are members of (not this one), in their domain
            return None if dom == "A" else 403
        return 403  # these resources are for admins only
    if resource.startswith("rg-access"):
        return None if op == "list" else 403  # naming a scope outside the domain
    if resource == "domains":
        return 403 if op in ("create", "delete") else (None if op == "list" else 404)
    if resource in GLOBAL:
        return 403
    if resource == "projects" and op in ("list", "create"):
        return 403  # ?domain= / domain_name of another domain
    return 404  # an object of another domain: its existence does not leak


CELLS = []
for _res, _ops in RESOURCES.items():
    for _op in _ops:
        for _caller in ("userA", "adminA", "super"):
            for _dom in (("-",) if _res in GLOBAL else ("A", "B")):
                CELLS.append(pytest.param(_res, _op, _caller, _dom,
                                          id=f"{_res}/{_op}/{_caller}/{'obj-' + _dom if _dom != '-' else 'global'}"))


@pytest.mark.parametrize("resource,op,caller,dom", CELLS)
def test_scoping_matrix(world, transport, resource, op, caller, dom):
    c = world.caller(caller, transport)
    allowed, r, changed = RESOURCES[resource][op](world, c, "A" if dom == "-" else dom)
    want = expected(resource, op, caller, dom)
    assert allowed == want, f"expected {'allowed' if want else 'denied'}: {r.status_code} {r.text[:300]}"
    if changed is not None:
        assert changed == want, "the change took effect" if changed else "the change did not take effect"
    if want:
        return
    assert r.status_code < 500, r.text
    if r.status_code != 200:
        assert r.status_code in (403, 404), r.text
        body = r.json()
        assert r.headers["Content-Type"].startswith("application/problem+json")
        assert body["type"] == "https://api.backend.ai/probs/" + ("forbidden" if r.status_code == 403
                                                                  else "not-found")
        assert body["title"]
    if resource in MINE:
        assert r.status_code == (denial_status(resource, op, caller, dom) or 200), r.text


# ---- the user's own objects, and what the admin of A may do in its domain --------------------

def test_user_sees_itself_only(world, transport):
    c = world.caller("userA", transport)
    me = c.get(f"/admin/users/{world.user_a}")
    assert me.status_code == 200 and me.json()["id"] == world.user_a
    mine = c.get("/admin/keypairs")
    assert mine.status_code == 200
    assert {k["user_id"] for k in mine.json()["items"]} == {world.user_a}
    log = c.get("/admin/access-log", params={"path_prefix": f"/it/{TAG}"})
    assert log.status_code == 200
    assert [i["event_id"] for i in log.json()["items"]] == [world.record["self"]]
    for path in ("/admin/domains", "/admin/keypair-resource-policies",
                 "/admin/user-resource-policies", "/admin/resource-group-access"):
        r = c.get(path)
        assert r.status_code == 403, (path, r.text)
        assert r.json()["type"].endswith("/forbidden")
    # projects: only those it is a member of (user_a is in none; user2 of A in one)
    assert c.get("/admin/projects").json()["items"] == []
    c2 = Caller("user2A", transport, world.urls, *world.keys[world.user2["A"]])
    assert [p["id"] for p in ok(c2.get("/admin/projects"))["items"]] == [world.project["A"]]


def test_domain_admin_lists_only_its_domain(world, transport):
    c = world.caller("adminA", transport)
    for path, key in (("/admin/domains", "domain_name"), ("/admin/projects", "domain_name"),
                      ("/admin/resource-group-access", "domain_name")):
        r = c.get(path, params={"limit": 1000})
        assert r.status_code == 200, r.text
        got = {i.get(key, i.get("name")) for i in r.json()["items"]}
        assert got == {world.domain["A"]}, (path, got)
    log = c.get("/admin/access-log", params={"path_prefix": f"/it/{TAG}", "limit": 1000})
    ids = {i["event_id"] for i in log.json()["items"]}
    assert ids == {world.record["A"], world.record["self"]}


def test_domain_admin_patches_only_the_description(world, transport):
    c = world.caller("adminA", transport)
    r = c.patch(f"/admin/domains/{world.domain['A']}", {"is_active": False})
    assert r.status_code == 403
    r = c.patch(f"/admin/domains/{world.domain['A']}", {"total_resource_slots": {"cpu": 1000}})
    assert r.status_code == 403
    d = ok(world.su.get(f"/admin/domains/{world.domain['A']}"))
    assert d["is_active"] and d["total_resource_slots"] == {}


def test_members_of_another_domain_are_refused(world, transport):
    """Adding a user of B to a project of A is a 400 for everyone (the
    superadmin too), and adds nothing, not even the valid entries."""
    for label in ("adminA", "super"):
        c = world.caller(label, transport)
        pa = world.project["A"]
        r = c.post(f"/admin/projects/{pa}/members",
                   {"user_ids": [world.user3["A"], world.user3["B"]]})
        assert r.status_code == 400, r.text
        assert r.json()["type"].endswith("/invalid-api-params")
        assert world.user3["B"] in r.json()["msg"]
        assert world.user3["A"] not in _members(world, "A")


def test_rg_access_scope_must_exist(world, transport):
    c = world.caller("super", transport)
    for stype, sid in (("domain", fresh("no-such-domain")), ("project", str(uuid.uuid4())),
                       ("keypair", "AKNOSUCHKEY000000000")):
        r = c.post("/admin/resource-group-access",
                   {"resource_group": world.rg, "scope_type": stype, "scope_id": sid})
        assert r.status_code == 400, (stype, r.text)
    # A domain admin gets 403 for a scope that is not in its domain, existing or not.
    a = world.caller("adminA", transport)
    for sid in (world.domain["B"], fresh("no-such-domain")):
        r = a.post("/admin/resource-group-access",
                   {"resource_group": world.rg, "scope_type": "domain", "scope_id": sid})
        assert r.status_code == 403, r.text


def test_policy_changes_are_published(world):
    """Create, patch and delete of a policy: three PolicyChanged on tessera.auth.v1."""
    from conftest import wait_until
    for kind in ("keypair-resource-policies", "user-resource-policies"):
        name = fresh("it-evt")
        ok(world.su.post(f"/admin/{kind}", {"name": name}))
        ok(world.su.patch(f"/admin/{kind}/{name}", {}))
        ok(world.su.delete(f"/admin/{kind}/{name}"))

        def published():
            c = subprocess.run(["kcat", "-b", world.stack["KAFKA_BOOTSTRAP"], "-C", "-t", "tessera.auth.v1",
                                "-o", "beginning", "-e", "-q", "-f", "%k\n"],
                               capture_output=True, timeout=60)
            return c.stdout.decode(errors="replace").splitlines().count(name) == 3
        assert wait_until(published, 30), f"three PolicyChanged keyed {name} never arrived"
