"""Bad input to the admin REST API (domains, projects, members, resource
policies, resource-group access, access-log query): every case gets a 4xx
problem body (type URL and title checked) and changes nothing (the list
totals and the patched objects read back the same before and after).

Decisions checked here (docs/api.md "Admin REST"):
- unknown fields are a 400, never silently ignored;
- names of domains, projects, policies and resource groups are 1 to 64
  characters of UTF-8: non-ASCII is accepted (checked with Korean, accented
  and emoji names), '/', control characters, "." / ".." and leading or
  trailing spaces are not; slot names, vfolder host names and access keys are
  ASCII only;
- descriptions are at most 1000 characters;
- a body above http.max_body (1 MiB by default) is a 413 request-too-large.
Both transports: tessera-auth's internal API and the signed gateway.
"""
import json
import urllib.parse
import uuid

import pytest
import requests

import bai_signer
import svc_signer
from test_admin_scoping import Caller, fresh, ok, service_urls

PROBS = "https://api.backend.ai/probs/"


class Fixture:
    def __init__(self, stack):
        self.urls = service_urls(stack)
        ak, sk = stack["TESSERA_ADMIN_ACCESS_KEY"], stack["TESSERA_ADMIN_SECRET_KEY"]
        cred = svc_signer.call(self.urls["keys"], "gateway", "GET", f"{self.urls['auth']}/v1/credentials/{ak}",
                               timeout=10).json()
        self.keys = (cred["user"]["id"], ak, sk)
        self.su = Caller("super", "internal", self.urls, *self.keys)
        su = self.su
        self.domain = ok(su.post("/admin/domains", {"name": fresh("bad-dom")}))["name"]
        self.project = ok(su.post("/admin/projects", {"name": fresh("bad-proj"),
                                                      "domain_name": self.domain}))["id"]
        self.kp = ok(su.post("/admin/keypair-resource-policies", {"name": fresh("bad-kp")}))["name"]
        self.up = ok(su.post("/admin/user-resource-policies", {"name": fresh("bad-up")}))["name"]

    def snapshot(self):
        """What a bad request must not change."""
        su, snap = self.su, {}
        for path in ("/admin/domains", "/admin/projects", "/admin/keypair-resource-policies",
                     "/admin/user-resource-policies", "/admin/resource-group-access",
                     f"/admin/projects/{self.project}/members"):
            snap[path] = ok(su.get(path, params={"limit": 1}))["total"]
        for path in (f"/admin/domains/{self.domain}", f"/admin/projects/{self.project}",
                     f"/admin/keypair-resource-policies/{self.kp}",
                     f"/admin/user-resource-policies/{self.up}"):
            snap[path] = ok(su.get(path))
        return snap


@pytest.fixture(scope="module")
def fx(stack):
    if "TESSERA_ADMIN_ACCESS_KEY" not in stack:
        pytest.skip("dev-up wrote no TESSERA_ADMIN_ACCESS_KEY (tessera-auth bootstrap missing)")
    return Fixture(stack)


@pytest.fixture(params=["internal", "gateway"])
def su(request, fx):
    return Caller("super", request.param, fx.urls, *fx.keys)


def raw(caller, method, path, data, content_type="application/json", params=None):
    """Send bytes as they are (no JSON encoding), over the caller's transport."""
    if caller.transport == "gateway":
        url = caller.urls["gateway"] + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        h = bai_signer.signed_headers(caller.access_key, caller.secret_key, method, url,
                                      content_type=content_type)
        return requests.request(method, url, data=data, headers=h, timeout=30)
    h = {"X-Tessera-Caller": caller.user_id, "X-Tessera-Caller-Access-Key": caller.access_key,
         "Content-Type": content_type}
    return svc_signer.call(caller.urls["keys"], "gateway", method, caller.urls["auth"] + "/v1" + path,
                           data=data, params=params, headers=h, timeout=30)


# ---- the cases ---------------------------------------------------------------
# (id, method, path template, body (bytes, or an object to JSON-encode), expected status, kind)
# Path templates may name {domain}, {project}, {kp}, {up}.

LONG = "x" * 10240
N65 = "n" * 65
KOREAN65 = "가" * 65
GENERIC = [  # for every endpoint that takes a JSON body
    ("malformed-json", b'{"name": ', 400),
    ("trailing-garbage", b'{"name": "a"} x', 400),
    ("array-body", b"[]", 400),
    ("string-body", b'"name"', 400),
    ("number-body", b"42", 400),
    ("null-body", b"null", 400),
    ("empty-body", b"", 400),
    ("invalid-utf8", b'{"name": "\xff\xfe\xfd"}', 400),
    ("nul-escape", b'{"name": "a\\u0000b"}', 400),
    ("oversized", b'{"name": "' + b"x" * (2 << 20) + b'"}', 413),
]

BODY_ENDPOINTS = {
    "domain-create": ("POST", "/admin/domains"),
    "domain-patch": ("PATCH", "/admin/domains/{domain}"),
    "project-create": ("POST", "/admin/projects"),
    "project-patch": ("PATCH", "/admin/projects/{project}"),
    "members-add": ("POST", "/admin/projects/{project}/members"),
    "members-remove": ("DELETE", "/admin/projects/{project}/members"),
    "kp-policy-create": ("POST", "/admin/keypair-resource-policies"),
    "kp-policy-patch": ("PATCH", "/admin/keypair-resource-policies/{kp}"),
    "user-policy-create": ("POST", "/admin/user-resource-policies"),
    "user-policy-patch": ("PATCH", "/admin/user-resource-policies/{up}"),
    "rg-grant": ("POST", "/admin/resource-group-access"),
    "rg-revoke": ("DELETE", "/admin/resource-group-access"),
}

BAD_SLOTS = [
    ("slots-not-object", ["cpu", 1]), ("slots-negative", {"cpu": -1}),
    ("slots-negative-text", {"cpu": "-1"}), ("slots-nan", {"cpu": "NaN"}),
    ("slots-inf", {"cpu": "inf"}), ("slots-exponent", {"cpu": "1e3"}),
    ("slots-bool", {"cpu": True}), ("slots-null-amount", {"cpu": None}),
    ("slots-object-amount", {"cpu": {"v": 1}}), ("slots-unit-on-cpu", {"cpu": "2g"}),
    ("slots-bad-unit", {"mem": "1.5x"}), ("slots-fractional-bytes", {"mem": "0.5"}),
    ("slots-too-many-digits", {"cpu": "1" * 19}), ("slots-too-precise", {"cpu": "0.0000001"}),
    ("slots-blank", {"cpu": " 1"}), ("slots-bad-name", {"CPU Cores": 1}),
    ("slots-empty-name", {"": 1}), ("slots-huge-mem", {"mem": "9999999t"}),
]
BAD_HOSTS = [
    ("hosts-not-object", ["local"]), ("hosts-perm-string", {"local": "mount-in-session"}),
    ("hosts-unknown-perm", {"local": ["fly"]}), ("hosts-dup-perm", {"local": ["upload-file", "upload-file"]}),
    ("hosts-bad-name", {"local host!": []}), ("hosts-non-ascii", {"호스트": []}),
]
BAD_NAMES = [
    ("name-65", N65), ("name-65-korean", KOREAN65), ("name-10k", LONG), ("name-empty", ""),
    ("name-slash", "a/b"), ("name-dot", "."), ("name-dotdot", ".."), ("name-control", "a\u0001b"),
    ("name-newline", "a\nb"), ("name-lead-space", " a"), ("name-trail-space", "a "),
    ("name-number", 5), ("name-array", ["a"]), ("name-object", {"a": 1}), ("name-bool", True),
]


def _cases():
    cases = []
    for ep, (method, path) in BODY_ENDPOINTS.items():
        for cid, body, status in GENERIC:
            cases.append((f"{ep}/{cid}", method, path, body, status, None))
        cases.append((f"{ep}/unknown-field", method, path, {"bogus": 1}, 400, "bogus"))
    # names and descriptions
    for ep, field, extra in (("domain-create", "name", {}),
                             ("project-create", "name", {"domain_name": "{domain}"}),
                             ("project-patch", "name", {}),
                             ("kp-policy-create", "name", {}), ("user-policy-create", "name", {}),
                             ("rg-grant", "resource_group", {"scope_type": "domain",
                                                             "scope_id": "{domain}"})):
        method, path = BODY_ENDPOINTS[ep]
        for cid, value in BAD_NAMES:
            cases.append((f"{ep}/{cid}", method, path, dict(extra, **{field: value}), 400, field))
    for ep in ("domain-create", "project-create"):
        method, path = BODY_ENDPOINTS[ep]
        base = {"name": fresh("ok-name"), "domain_name": "{domain}"} if ep == "project-create" \
            else {"name": fresh("ok-name")}
        cases.append((f"{ep}/missing-name", method, path,
                      {k: v for k, v in base.items() if k != "name"}, 400, "name"))
        cases.append((f"{ep}/description-10k", method, path, dict(base, description=LONG), 400,
                      "description"))
        cases.append((f"{ep}/description-number", method, path, dict(base, description=1), 400,
                      "description"))
        cases.append((f"{ep}/is-active-string", method, path, dict(base, is_active="yes"), 400,
                      "is_active"))
        for cid, value in BAD_SLOTS:
            cases.append((f"{ep}/{cid}", method, path, dict(base, total_resource_slots=value), 400,
                          "total_resource_slots"))
        for cid, value in BAD_HOSTS:
            cases.append((f"{ep}/{cid}", method, path, dict(base, allowed_vfolder_hosts=value), 400,
                          "allowed_vfolder_hosts"))
    cases.append(("domain-patch/description-10k", "PATCH", "/admin/domains/{domain}",
                  {"description": LONG}, 400, "description"))
    cases.append(("domain-patch/rename", "PATCH", "/admin/domains/{domain}", {"name": "other"}, 400,
                  "name"))
    cases.append(("project-patch/move-domain", "PATCH", "/admin/projects/{project}",
                  {"domain_name": "default"}, 400, "domain_name"))
    cases.append(("project-create/no-such-domain", "POST", "/admin/projects",
                  {"name": fresh("p"), "domain_name": fresh("nodomain")}, 400, "does not exist"))
    # policies
    for cid, value in BAD_SLOTS:
        cases.append((f"kp-policy-patch/{cid}", "PATCH", "/admin/keypair-resource-policies/{kp}",
                      {"total_resource_slots": value}, 400, "total_resource_slots"))
    for field, value in (("max_concurrent_sessions", "5"), ("max_concurrent_sessions", -1),
                         ("max_concurrent_sessions", 1.5), ("max_concurrent_sessions", 2 ** 40),
                         ("max_containers_per_session", 0), ("idle_timeout", True),
                         ("max_session_lifetime", -5), ("max_pending_session_count", "x")):
        cases.append((f"kp-policy-patch/{field}-{value!r}", "PATCH",
                      "/admin/keypair-resource-policies/{kp}", {field: value}, 400, field))
    for field, value in (("max_vfolder_count", -1), ("max_vfolder_count", "10"),
                         ("max_quota_scope_size", 2 ** 64), ("max_quota_scope_size", -1)):
        cases.append((f"user-policy-patch/{field}-{value!r}", "PATCH",
                      "/admin/user-resource-policies/{up}", {field: value}, 400,
                      field if value != 2 ** 64 else "too big"))  # jansson refuses it first
    cases.append(("kp-policy-create/duplicate", "POST", "/admin/keypair-resource-policies",
                  {"name": "{kp}"}, 409, "already exists"))
    # members
    for cid, body in (("user-ids-string", {"user_ids": "x"}), ("user-ids-empty", {"user_ids": []}),
                      ("user-ids-not-uuid", {"user_ids": ["not-a-uuid"]}),
                      ("user-ids-number", {"user_ids": [5]}),
                      ("user-ids-unknown", {"user_ids": [str(uuid.uuid4())]}),
                      ("both-keys", {"user_ids": [str(uuid.uuid4())], "emails": ["a@b.c"]}),
                      ("neither-key", {}), ("emails-number", {"emails": [5]}),
                      ("emails-unknown", {"emails": ["nobody-" + uuid.uuid4().hex + "@example.com"]}),
                      ("emails-10k", {"emails": [LONG + "@example.com"]}),
                      ("too-many", {"user_ids": [str(uuid.uuid4())] * 1001})):
        for ep in ("members-add", "members-remove"):
            method, path = BODY_ENDPOINTS[ep]
            cases.append((f"{ep}/{cid}", method, path, body, 400, None))
    # resource-group access
    for cid, body in (("scope-type-unknown", {"scope_type": "galaxy", "scope_id": "x"}),
                      ("scope-type-number", {"scope_type": 1, "scope_id": "x"}),
                      ("project-not-uuid", {"scope_type": "project", "scope_id": "nope"}),
                      ("keypair-lowercase", {"scope_type": "keypair", "scope_id": "a" * 20}),
                      ("scope-id-missing", {"scope_type": "domain"}),
                      ("scope-id-10k", {"scope_type": "domain", "scope_id": LONG}),
                      ("domain-unknown", {"scope_type": "domain", "scope_id": fresh("nodomain")}),
                      ("rg-missing", None)):
        body = dict(body or {"scope_type": "domain", "scope_id": "{domain}"})
        if cid != "rg-missing":
            body["resource_group"] = "rg-bad"
        for ep in ("rg-grant", "rg-revoke"):
            if ep == "rg-revoke" and cid == "domain-unknown":
                continue  # a superadmin may revoke entries whose scope is gone
            method, path = BODY_ENDPOINTS[ep]
            cases.append((f"{ep}/{cid}", method, path, body, 400, None))
    return cases


CASES = _cases()


def _fill(value, fx):
    names = {"{domain}": fx.domain, "{project}": fx.project, "{kp}": fx.kp, "{up}": fx.up}
    if isinstance(value, str):
        for k, v in names.items():
            value = value.replace(k, v)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, fx) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, fx) for v in value]
    return value


def assert_problem(r, status, kind=None):
    assert r.status_code == status, f"{r.status_code} {r.text[:300]}"
    assert r.headers["Content-Type"].startswith("application/problem+json"), r.headers
    body = r.json()
    assert body["type"].startswith(PROBS) and body["title"] and isinstance(body.get("msg"), str)
    if kind:
        assert body["type"] == PROBS + kind, body


KINDS = {400: "invalid-api-params", 404: "not-found", 409: None, 413: "request-too-large"}


@pytest.mark.parametrize("method,path,body,status,hint", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_bad_body(fx, su, method, path, body, status, hint):
    before = fx.snapshot()
    data = body if isinstance(body, bytes) else json.dumps(_fill(body, fx)).encode()
    r = raw(su, method, _fill(path, fx), data)
    assert_problem(r, status, KINDS[status])
    if hint:  # the message says what was wrong
        assert hint in r.json()["msg"], r.json()["msg"]
    assert fx.snapshot() == before


QUERY_CASES = [
    ("limit-zero", "/admin/domains", {"limit": "0"}), ("limit-1001", "/admin/projects", {"limit": "1001"}),
    ("limit-text", "/admin/keypair-resource-policies", {"limit": "ten"}),
    ("offset-negative", "/admin/user-resource-policies", {"offset": "-1"}),
    ("is-active-text", "/admin/domains", {"is_active": "maybe"}),
    ("project-domain-slash", "/admin/projects", {"domain": "a/b"}),
    ("rg-scope-type", "/admin/resource-group-access", {"scope_type": "galaxy"}),
    ("rg-scope-id-form", "/admin/resource-group-access", {"scope_type": "project", "scope_id": "x"}),
    ("log-since-words", "/admin/access-log", {"since": "yesterday"}),
    ("log-until-bad-date", "/admin/access-log", {"until": "2024-13-01"}),
    ("log-since-no-time-sep", "/admin/access-log", {"since": "2024-01-01X10:00"}),
    ("log-status-text", "/admin/access-log", {"status": "ok"}),
    ("log-status-range", "/admin/access-log", {"status": "999"}),
    ("log-user-id", "/admin/access-log", {"user_id": "not-a-uuid"}),
    ("log-method", "/admin/access-log", {"method": "G3T"}),
    ("log-path-prefix", "/admin/access-log", {"path_prefix": "no-slash"}),
    ("log-path-prefix-10k", "/admin/access-log", {"path_prefix": "/" + LONG}),
    ("log-access-key-space", "/admin/access-log", {"access_key": "A B"}),
]


@pytest.mark.parametrize("path,params", [pytest.param(*c[1:], id=c[0]) for c in QUERY_CASES])
def test_bad_query(fx, su, path, params):
    r = su.get(path, params=params)
    assert_problem(r, 400, "invalid-api-params")


def test_invalid_utf8_in_query_and_path(fx, su):
    # Raw percent-escapes that decode to bytes that are not UTF-8.
    for path in ("/admin/access-log?path_prefix=/%FF%FE", "/admin/projects?domain=%FF"):
        r = raw(su, "GET", path, None)
        assert_problem(r, 400, "invalid-api-params")
    for path in ("/admin/domains/%FF%FE", "/admin/keypair-resource-policies/%C0%AF",
                 "/admin/projects/not-a-uuid", "/admin/projects/not-a-uuid/members"):
        r = raw(su, "GET", path, None)
        assert_problem(r, 404, "not-found")


def test_non_ascii_names_are_accepted(fx, su):
    """UTF-8 names up to 64 characters (not bytes) work everywhere a name is."""
    for name in ("연구소-" + uuid.uuid4().hex[:6], "Équipe " + uuid.uuid4().hex[:6],
                 "🚀" * 56 + uuid.uuid4().hex[:8]):
        d = ok(su.post("/admin/domains", {"name": name, "description": "données ✓"}), 201)
        assert d["name"] == name and d["description"] == "données ✓"
        assert ok(su.get(f"/admin/domains/{name}"))["name"] == name
        p = ok(su.post("/admin/projects", {"name": name, "domain_name": name}), 201)
        assert p["name"] == name and p["domain_name"] == name
        pol = ok(su.post("/admin/keypair-resource-policies", {"name": name}), 201)
        assert ok(su.get(f"/admin/keypair-resource-policies/{name}"))["name"] == pol["name"]
        ok(su.delete(f"/admin/keypair-resource-policies/{name}"))
        g = ok(su.post("/admin/resource-group-access",
                       {"resource_group": name, "scope_type": "domain", "scope_id": name}), 201)
        assert g["domain_name"] == name


def test_slot_amounts_are_normalized(fx, su):
    name = fresh("norm")
    pol = ok(su.post("/admin/keypair-resource-policies", {
        "name": name,
        "total_resource_slots": {"cpu": "08.50", "mem": "32g", "cuda.shares": 0.25,
                                 "cuda.device": 2, "rocm.device": "1.000"},
        "allowed_vfolder_hosts": {"local:volume1": ["mount-in-session", "upload-file"]},
        "max_pending_session_count": 3}), 201)
    assert pol["total_resource_slots"] == {"cpu": "8.5", "mem": "34359738368", "cuda.shares": "0.25",
                                           "cuda.device": "2", "rocm.device": "1"}
    assert pol["allowed_vfolder_hosts"] == {"local:volume1": ["mount-in-session", "upload-file"]}
    # Patch: untouched fields stay, null lifts the pending-session limit.
    pol2 = ok(su.patch(f"/admin/keypair-resource-policies/{name}",
                       {"max_pending_session_count": None, "idle_timeout": 60}))
    assert pol2["max_pending_session_count"] is None and pol2["idle_timeout"] == 60
    assert pol2["total_resource_slots"] == pol["total_resource_slots"]
    d = ok(su.patch(f"/admin/domains/{fx.domain}", {"total_resource_slots": {"mem": "1.5k"}}))
    assert d["total_resource_slots"] == {"mem": "1536"}
    ok(su.patch(f"/admin/domains/{fx.domain}", {"total_resource_slots": {}}))


def test_policy_in_use_cannot_be_deleted(fx, su):
    r = su.delete("/admin/keypair-resource-policies/default")
    assert_problem(r, 409, "conflict")
    name = fresh("inuse")
    ok(su.post("/admin/user-resource-policies", {"name": name}), 201)
    u = ok(su.post("/admin/users", {"email": f"{name}@example.com", "username": name,
                                    "password": "Passw0rd-long", "domain_name": fx.domain,
                                    "resource_policy": name}), 201)
    r = su.delete(f"/admin/user-resource-policies/{name}")
    assert_problem(r, 409, "conflict")
    assert ok(su.get(f"/admin/user-resource-policies/{name}"))["name"] == name
    assert u["resource_policy"] == name


def test_member_adds_are_idempotent(fx, su):
    name = fresh("member")
    u = ok(su.post("/admin/users", {"email": f"{name}@example.com", "username": name,
                                    "password": "Passw0rd-long", "domain_name": fx.domain}), 201)
    path = f"/admin/projects/{fx.project}/members"
    first = ok(su.post(path, {"user_ids": [u["id"], u["id"]]}))
    assert first["added"] == [u["id"]] and first["unchanged"] == []
    again = ok(su.post(path, {"emails": [f"{name.upper()}@EXAMPLE.com"]}))  # case-insensitive
    assert again["added"] == [] and again["unchanged"] == [u["id"]]
    gone = ok(su.delete(path, {"user_ids": [u["id"]]}))
    assert gone["removed"] == [u["id"]]
    gone2 = ok(su.delete(path, {"user_ids": [u["id"]]}))
    assert gone2["removed"] == [] and gone2["unchanged"] == [u["id"]]
