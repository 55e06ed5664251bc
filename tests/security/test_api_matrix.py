"""The cross-tenant API matrix (security suite): every resource of user A
tried by every other actor, through the signed gateway, by name and by id.

World (made once through the admin API by the bootstrap superadmin):

  D1: A (user), B (user), DA1 (domain admin); project P1 (members A and B:
      B is A's closest neighbour, same domain and same project)
  D2: C (user), DA2 (domain admin); project P2 (member C)
  D0: SU (a superadmin of this test, with an unlimited keypair); project P0

Each user has its own keypair (rate_limit 0, so that a few hundred cells in a
minute are not throttled). A owns: a RUNNING session S (busybox demo image,
1 cpu, 256m) with the agent's `ttyd` terminal app, a cloneable vfolder F with
the file hello.txt, a keypair, a profile and access-log records. DA1 made the
project folder PF of P1 (A and B members, permission rw).

The matrix (`test_cross_tenant[<transport>-<actor>-<operation>-<addressing>]`):
each cell is one request, signed or through the web console's session mode
(`/func/<path>` with the actor's login cookie and CSRF token: the same
answers are expected); the expectation comes from the documented rules:

- docs/api.md "Sessions": `{name}` is a name among the *caller's* sessions or
  a session id; another user's session is 404 session-not-found (existence
  does not leak); `owner_access_key` is for administrators (403 for others),
  a domain admin within its domain (docs/sessions.md, as Backend.AI's
  get_access_key_scopes). So DA1 and SU reach S by id or by name with
  owner_access_key, never by a bare name (that is their own namespace).
- docs/vfolders.md "Permissions": owner; a domain admin of the folder's
  domain and a superadmin have admin access, reaching other users' folders
  by id only; anyone else 404 vfolder-not-found; mounting needs a relation
  other than admin access (403).
- docs/api.md "Admin REST": a domain admin manages the users (and their
  keypairs) of its domain, a user only itself (profile fields; keypairs are
  changed by administrators); out of scope 403 or 404; lists and the access
  log are narrowed to the caller's scope (200 without A's objects).

A denial must be a 403/404 problem JSON (never a 200, never a 5xx), and
after it A's resource is checked unchanged (S still RUNNING with the same
history, no code of the caller ran in it, hello.txt still there, the key still
active, the profile and password unchanged). Allowed cells check that the
operation really worked (so an operation broken for everyone is noticed) and
undo what they did; destructive allowed cells work on throw-away victims of A
(a PENDING session, a folder, a keypair).

Other tests here: names are per owner (a same-named session of B or C never
resolves to A's); dot segments and %2F in public paths never reach internal
routes; a domain admin does not reach the sessions and folders of a
superadmin who belongs to its domain (docs/api.md "never superadmins",
Backend.AI's rule); an app cookie of another user never opens A's app
(wsproxy); and A's own restart of S really restarts it (last).

Run: make security, or sh tools/run-security.sh tests/security/test_api_matrix.py
"""
import os
import socket
import sys
import time
import urllib.parse
import uuid

import pytest
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
INTEGRATION = os.path.abspath(os.path.join(HERE, "..", "integration"))
if INTEGRATION not in sys.path:
    sys.path.append(INTEGRATION)
import bai_signer  # noqa: E402  (tests/integration/bai_signer.py: the tests' own signer)

from conftest import wait_until  # noqa: E402  (tests/security/conftest.py, from the integration one)

TAG = uuid.uuid4().hex[:6]
PASSWORD = "matrix-Passw0rd"
CONTENT = f"hello from A {TAG}\n".encode()
_n = [0]


def fresh(prefix):
    _n[0] += 1
    return f"{prefix}-{TAG}-{_n[0]}"


class Client(bai_signer.Client):
    """A signed client with a kept connection; paths are percent-quoted."""

    def __init__(self, label, endpoint, access_key, secret_key, user=None):
        super().__init__(endpoint, access_key, secret_key)
        self.label = label
        self.user = user or {}
        self._session = requests.Session()

    def transport(self):
        return self._session

    def request(self, method, path, json=None, params=None, headers=None, timeout=15):
        return super().request(method, urllib.parse.quote(path, safe="/%:@?&="), json=json,
                               params=params, headers=headers, timeout=timeout)

    @property
    def uid(self):
        return self.user.get("id")

    @property
    def email(self):
        return self.user.get("email")


class ConsoleClient(Client):
    """The same user through the web console's session mode: logged in with
    its password, each request to /func/<path> with the cookie and the CSRF
    token, no signature (the gateway runs it as the user's keypair)."""

    def __init__(self, signed, password):
        super().__init__(signed.label, signed.endpoint, signed.access_key, signed.secret_key,
                         user=signed.user)
        r = self._session.post(f"{self.endpoint}/server/login",
                               json={"username": signed.email, "password": password,
                                     "domain": signed.user["domain_name"]}, timeout=15)
        assert r.status_code == 200, f"console login of {signed.label}: {r.status_code} {r.text}"
        assert r.json()["data"]["access_key"] == signed.access_key
        self.csrf = r.json()["csrf_token"]

    def request(self, method, path, json=None, params=None, headers=None, timeout=15):
        url = self.endpoint + "/func" + urllib.parse.quote(path, safe="/%:@?&=")
        if params:
            url += ("&" if "?" in path else "?") + urllib.parse.urlencode(params)
        h = {"X-CSRF-Token": self.csrf}
        h.update(headers or {})
        return self._session.request(method, url, json=json, headers=h, timeout=timeout)


def ok(r, *codes):
    assert r.status_code in (codes or (200, 201)), \
        f"{r.request.method} {r.request.url}: {r.status_code} {r.text[:500]}"
    return r.json() if r.content else None


def problem(r, codes):
    """r is a problem answer with one of codes (a denial: never 2xx, never 5xx)."""
    assert r.status_code in codes, \
        f"expected a denial {codes}, got {r.status_code}: {r.request.method} {r.request.url}\n{r.text[:800]}"
    ctype = r.headers.get("Content-Type", "")
    assert ctype.startswith("application/problem+json"), f"not problem JSON ({ctype}): {r.text[:300]}"
    p = r.json()
    assert p.get("type", "").startswith("https://api.backend.ai/probs/") and p.get("msg"), p
    return p


TUS = {"Tus-Resumable": "1.0.0"}


# ---- the world ----------------------------------------------------------------------------------

class World:
    def __init__(self, stack):
        self.gw = stack["TESSERA_GATEWAY_URL"]
        self.image = stack["TESSERA_DEMO_IMAGE"]
        boot = Client("boot", self.gw, stack["TESSERA_ADMIN_ACCESS_KEY"], stack["TESSERA_ADMIN_SECRET_KEY"])
        self.boot = boot
        ok(boot.post("/admin/images", {"reference": self.image}))
        self.dom = {d: ok(boot.post("/admin/domains", {"name": fresh(f"sec-{d.lower()}")}))["name"]
                    for d in ("D0", "D1", "D2")}
        self.c = {}
        for label, role, d in (("SU", "superadmin", "D0"), ("A", "user", "D1"), ("B", "user", "D1"),
                               ("DA1", "admin", "D1"), ("C", "user", "D2"), ("DA2", "admin", "D2")):
            self.c[label] = self.new_user(label, role, self.dom[d])
        self.project = {}
        for p, d, members in (("P0", "D0", []), ("P1", "D1", ["A", "B"]), ("P2", "D2", ["C"])):
            proj = ok(boot.post("/admin/projects", {"name": fresh(f"sec-{p.lower()}"),
                                                    "domain_name": self.dom[d]}))
            self.project[p] = proj
            if members:
                ok(boot.post(f"/admin/projects/{proj['id']}/members",
                             {"user_ids": [self.c[m].uid for m in members]}))
        self.group_of = {"A": "P1", "B": "P1", "DA1": "P1", "C": "P2", "DA2": "P2", "SU": "P0"}
        # The same actors through the console's session mode (their one keypair).
        self.cw = {label: ConsoleClient(c, PASSWORD) for label, c in self.c.items()}
        A = self.c["A"]
        self.a_key = A.access_key
        self.a_rate = ok(boot.get(f"/admin/keypairs/{A.access_key}"))["rate_limit"]
        self.a_full_name = ok(boot.patch(f"/admin/users/{A.uid}", {"full_name": f"A {TAG}"}))["full_name"]
        # S: A's RUNNING session.
        self.s_name = fresh("s")
        body = ok(A.post("/session", {"image": self.image, "name": self.s_name, "maxWaitSeconds": 30,
                                      "group_name": self.project["P1"]["name"],
                                      "config": {"resources": {"cpu": "1", "mem": "256m"}}},
                         timeout=45), 201)
        self.s_id = body["sessionUuid"]
        if body["status"] != "RUNNING":
            info = A.get(f"/session/{self.s_id}").json()
            pytest.fail(f"A's session did not reach RUNNING in 30 s: {info.get('status')} "
                        f"({info.get('statusInfo')})")
        self.s_ports = {p["name"] for p in body.get("servicePorts") or []}
        if "ttyd" in self.s_ports:  # started once here (the agent starts tessera-term), reused by the cells
            wait_until(lambda: A.post(f"/session/{self.s_id}/start-service", {"app": "ttyd"},
                                      timeout=40).status_code == 200, timeout=30, message="A's ttyd app")
        self.s_history = len(ok(A.get(f"/session/{self.s_id}/history"))["items"])
        # F: A's folder with hello.txt.
        self.f = ok(A.post("/folders", {"name": fresh("f"), "cloneable": True}), 201)
        self.upload(A, self.f["id"], "hello.txt", CONTENT)
        # PF: P1's project folder (made by DA1), permission rw.
        self.pf = ok(self.c["DA1"].post("/folders", {"name": fresh("pf"), "group": self.project["P1"]["id"],
                                                     "permission": "rw"}), 201)
        # A's access-log records (written by the gateway in batches): wait for them.
        wait_until(lambda: any(i.get("access_key") == A.access_key for i in ok(
            boot.get("/admin/access-log", params={"access_key": A.access_key, "limit": 10}))["items"]),
            timeout=20, message="A's access-log records")

    def new_user(self, label, role, domain):
        name = fresh(f"sec-{label.lower()}")
        u = ok(self.boot.post("/admin/users", {"email": f"{name}@example.com", "username": name,
                                               "password": PASSWORD, "role": role, "domain_name": domain}))
        # Its one keypair (the one made with the user goes): unthrottled, and the
        # one its console login names.
        for old in ok(self.boot.get("/admin/keypairs", params={"user": u["id"]}))["items"]:
            ok(self.boot.delete(f"/admin/keypairs/{old['access_key']}"), 200, 204)
        k = ok(self.boot.post("/admin/keypairs", {"user_id": u["id"], "rate_limit": 0}))
        return Client(label, self.gw, k["access_key"], k["secret_key"], user=u)

    # helpers
    def upload(self, who, folder, path, data):
        up = ok(who.post(f"/folders/{folder}/request-upload", {"path": path, "size": len(data)}))
        h = dict(TUS, **{"Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
        r = requests.patch(up["url"], params={"token": up["token"]}, headers=h, data=data, timeout=30)
        assert r.status_code == 204, r.text

    def a_files(self):
        return {i["name"]: i for i in ok(self.c["A"].get(f"/folders/{self.f['id']}/files"))["items"]}

    def session_intact(self):
        info = ok(self.c["A"].get(f"/session/{self.s_id}"))
        assert info["status"] == "RUNNING", f"A's session is {info['status']} ({info.get('statusInfo')})"
        assert info["sessionName"] == self.s_name and info["accessKey"] == self.a_key
        hist = ok(self.c["A"].get(f"/session/{self.s_id}/history"))["items"]
        assert len(hist) == self.s_history, f"A's session history changed: {hist[self.s_history - 1:]}"

    def folder_intact(self):
        info = ok(self.c["A"].get(f"/folders/{self.f['id']}"))
        assert info["name"] == self.f["name"] and info["status"] == "ready", info
        assert info["is_owner"] is True
        files = self.a_files()
        assert "hello.txt" in files and files["hello.txt"]["size"] == len(CONTENT), files

    def key_intact(self):
        k = ok(self.boot.get(f"/admin/keypairs/{self.a_key}"))
        assert k["is_active"] and k["rate_limit"] == self.a_rate, k
        assert self.c["A"].get("/auth/test").status_code == 200

    def victim_session(self):
        """A PENDING (starts in an hour) session of A: a victim for allowed destroys."""
        name = fresh("victim")
        body = ok(self.c["A"].post("/session", {"image": self.image, "name": name, "type": "batch",
                                                "startupCommand": "sleep 60", "starts_at": "1h",
                                                "enqueueOnly": True,
                                                "group_name": self.project["P1"]["name"]}), 201)
        return name, body["sessionUuid"]

    def a_session_status(self, sid):
        return ok(self.c["A"].get(f"/session/{sid}"))["status"]


@pytest.fixture(scope="module")
def world(stack):
    for k in ("TESSERA_ADMIN_ACCESS_KEY", "TESSERA_DEMO_IMAGE", "TESSERA_GATEWAY_URL"):
        if k not in stack:
            pytest.skip(f"the stack has no {k}")
    w = World(stack)
    yield w
    w.c["A"].delete(f"/session/{w.s_id}")


# ---- expectations -------------------------------------------------------------------------------

ACTORS = ["A", "B", "C", "DA1", "DA2", "SU"]
ALLOW = "allow"
HIDDEN = "hidden"  # a list or log answered 200 without A's objects (scope narrowing)
NF = (404,)
FB = (403,)
FB_NF = (403, 404)


def session_rule(who, mode, owner_key_honored=True):
    """docs/api.md Sessions (see the module docstring)."""
    if who == "A":
        return ALLOW
    if mode == "by_name":
        return NF  # a bare name is looked up among the caller's own sessions
    if mode == "by_owner_key":
        if who in ("B", "C"):
            return FB if owner_key_honored else NF
        if who == "DA2":
            return FB_NF  # Backend.AI: 403; Tessera answers 404 (not its domain)
        return ALLOW if owner_key_honored else NF
    return ALLOW if who in ("DA1", "SU") else NF


def folder_rule(who, mode):
    """docs/vfolders.md Permissions: admins reach other users' folders by id only."""
    if who == "A":
        return ALLOW
    if who in ("DA1", "SU") and mode == "by_id":
        return ALLOW
    return NF


def admin_rule(who, a_may=True):
    """docs/api.md Admin REST, for A's user record and keypairs."""
    if who == "A":
        return ALLOW if a_may else FB
    if who in ("DA1", "SU"):
        return ALLOW
    return FB_NF


# ---- operations ---------------------------------------------------------------------------------
# Each: run(w, actor, mode, ctx) -> response; allowed(w, r, ctx): what an allowed
# answer must show (and undo it); unchanged(w, ctx): A's resource after a denial.

class Op:
    def __init__(self, name, modes, run, expect, allowed=None, unchanged=None):
        self.name, self.modes, self.run, self.expect = name, modes, run, expect
        self.allowed = allowed or (lambda w, r, ctx: None)
        self.unchanged = unchanged or (lambda w, ctx: None)


OPS = []


def op(name, modes, expect, allowed=None, unchanged=None):
    def deco(run):
        OPS.append(Op(name, modes, run, expect, allowed, unchanged))
        return run
    return deco


SESSION_MODES = ("by_name", "by_id", "by_owner_key")


def s_ref(w, mode, name=None, sid=None):
    """(path segment, query) addressing a session of A."""
    name, sid = name or w.s_name, sid or w.s_id
    if mode in ("by_id", "kernel_by_id"):
        return sid, None
    if mode == "by_owner_key":
        return name, {"owner_access_key": w.a_key}
    return name, None


def _session_unchanged(w, ctx):
    w.session_intact()


# sessions ---------------------------------------------------------------------------------------

def _info_allowed(w, r, ctx):
    body = r.json()
    assert body["sessionUuid"] == w.s_id and body["status"] == "RUNNING", body


def _info_expect(who, mode):
    return session_rule(who, "by_id" if mode == "kernel_by_id" else mode)


@op("session.info", SESSION_MODES + ("kernel_by_id",), _info_expect, _info_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    ref, q = s_ref(w, mode)
    prefix = "/kernel" if mode == "kernel_by_id" else "/session"  # the older clients' alias
    return c.get(f"{prefix}/{ref}", params=q)


def _list_expect(who, mode):
    if who == "A" or (who in ("DA1", "SU")):
        return ALLOW
    return HIDDEN


def _list_has_s(w, r, ctx):
    assert w.s_id in {s["sessionUuid"] for s in r.json()["items"]}, "A's session is not listed"


@op("session.list", ("all", "by_owner_key"), _list_expect, _list_has_s)
def _(w, c, mode, ctx):
    q = {"all": "true", "limit": 1000} if mode == "all" else {"owner_access_key": w.a_key, "limit": 1000}
    return c.get("/session", params=q)


def _exec_allowed(w, r, ctx):
    res = r.json()["result"]
    assert res["status"] == "finished" and res["exitCode"] == 0, res
    assert ["stdout", f"ran-{ctx['marker']}\n"] in res["console"], res


def _exec_unchanged(w, ctx):
    w.session_intact()
    res = ok(w.c["A"].post(f"/session/{w.s_id}", {"mode": "batch", "options": {"exec": "ls /tmp"}},
                           timeout=80))["result"]
    out = "".join(t for k, t in res["console"] if k == "stdout")
    assert ctx["marker"] not in out, f"code of another caller ran in A's session: {out!r}"


@op("session.execute", SESSION_MODES, session_rule, _exec_allowed, _exec_unchanged)
def _(w, c, mode, ctx):
    ctx["marker"] = f"pwned-{c.label}-{mode}-{TAG}"
    ref, q = s_ref(w, mode)
    return c.post(f"/session/{ref}", {"mode": "batch", "runId": ctx["marker"][:40],
                                      "options": {"exec": f"touch /tmp/{ctx['marker']}; echo ran-{ctx['marker']}"}},
                  params=q, timeout=80)


def _logs_allowed(w, r, ctx):
    assert isinstance(r.json()["result"]["logs"], str)


@op("session.logs", SESSION_MODES, session_rule, _logs_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    ref, q = s_ref(w, mode)
    return c.get(f"/session/{ref}/logs", params=q)


def _task_logs_allowed(w, r, ctx):
    assert r.headers["Content-Type"].startswith("text/plain"), r.headers


@op("session.task_logs", ("by_name", "by_id"), session_rule, _task_logs_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    ref, _q = s_ref(w, mode)
    return c.get("/session/_/logs", params={"session_name": ref})


def _history_allowed(w, r, ctx):
    body = r.json()
    assert body["sessionUuid"] == w.s_id and body["items"][0]["status"] == "PENDING", body


@op("session.history", SESSION_MODES, session_rule, _history_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    ref, q = s_ref(w, mode)
    return c.get(f"/session/{ref}/history", params=q)


def _status_history_allowed(w, r, ctx):
    body = r.json()
    assert {"PENDING", "RUNNING"} <= set(body), body


@op("session.status_history", SESSION_MODES, session_rule, _status_history_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    ref, q = s_ref(w, mode)
    return c.get(f"/session/{ref}/status-history", params=q)


def _start_service_expect(who, mode):
    # h_start_service (services/gateway/sessions.c) reads the session without
    # the request's query: owner_access_key is not honored there, the name is
    # looked up among the caller's own sessions (an admin is denied: safe side).
    return session_rule(who, mode, owner_key_honored=False)


def _start_service_allowed(w, r, ctx):
    body = r.json()
    assert body["token"] and body["url"].endswith("?token=" + body["token"]) and body["app"] == "ttyd", body


@op("session.start_service", SESSION_MODES, _start_service_expect, _start_service_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    if "ttyd" not in w.s_ports:
        pytest.skip(f"A's session has no ttyd service port ({sorted(w.s_ports)})")
    ref, q = s_ref(w, mode)
    return c.post(f"/session/{ref}/start-service", {"app": "ttyd"}, params=q, timeout=40)


# streams (docs/sessions.md "Streams"): the answers before the upgrade. The
# gateway reads the session as start-service does (owner_access_key is not
# honored there); an allowed cell gets the 101 and the connection is dropped.
UPGRADE = "upgrade"  # allowed: 101 Switching Protocols with the accept key
WS_HEADERS = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
              "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


def _stream_expect(who, mode):
    rule = session_rule(who, mode, owner_key_honored=False)
    return UPGRADE if rule == ALLOW else rule


def _stream_allowed(w, r, ctx):
    assert r.headers.get("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", r.headers
    assert r.headers.get("Upgrade", "").lower() == "websocket", r.headers


def _upgrade(c, path, q):
    r = c.get(path, params=q, headers=WS_HEADERS, timeout=40)
    if r.status_code == 101:
        c._session.close()  # the socket is a WebSocket now: never reused for a request
    return r


for _route in ("pty", "execute", "tcpproxy"):
    def _stream_run(w, c, mode, ctx, _route=_route):
        if "ttyd" not in w.s_ports:
            pytest.skip(f"A's session has no ttyd service port ({sorted(w.s_ports)})")
        ref, q = s_ref(w, mode)
        path = f"/stream/session/{ref}/{_route}"
        return _upgrade(c, path + ("?app=ttyd" if _route == "tcpproxy" else ""), q)
    op(f"session.stream_{_route}", SESSION_MODES, _stream_expect, _stream_allowed,
       _session_unchanged)(_stream_run)


def _stream_apps_allowed(w, r, ctx):
    assert "ttyd" in {a["name"] for a in r.json()}, r.text


@op("session.stream_apps", SESSION_MODES, _start_service_expect, _stream_apps_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    ref, q = s_ref(w, mode)
    return c.get(f"/stream/session/{ref}/apps", params=q)


def _interrupt_allowed(w, r, ctx):
    assert r.status_code == 204, r.status_code


@op("session.interrupt", SESSION_MODES, _start_service_expect, _interrupt_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    ref, q = s_ref(w, mode)
    return c.post(f"/session/{ref}/interrupt", params=q)


def _create_for_expect(who, mode):
    if who in ("A", "DA1", "SU"):
        return ALLOW
    return FB  # docs/api.md: owner_access_key for non-admins 403; a domain admin only within its domain


def _create_for_allowed(w, r, ctx):
    body = r.json()
    info = ok(w.boot.get(f"/session/{body['sessionUuid']}"))
    assert info["accessKey"] == w.a_key and info["userId"] == w.c["A"].uid, info
    ok(w.c["A"].delete(f"/session/{body['sessionUuid']}"))


def _create_for_unchanged(w, ctx):
    problem(w.c["A"].get(f"/session/{ctx['name']}"), NF)
    assert ctx["name"] not in {s["sessionName"] for s in ok(w.boot.get(
        "/session", params={"owner_access_key": w.a_key, "limit": 1000}))["items"]}


@op("session.create_for_A", ("by_owner_key",), _create_for_expect, _create_for_allowed, _create_for_unchanged)
def _(w, c, mode, ctx):
    ctx["name"] = fresh("for-a")
    return c.post("/session", {"image": w.image, "name": ctx["name"], "type": "batch",
                               "startupCommand": "sleep 60", "starts_at": "1h", "enqueueOnly": True,
                               "group_name": w.project["P1"]["name"], "owner_access_key": w.a_key})


def _rename_allowed(w, r, ctx):
    assert r.status_code == 204, r.text
    info = ok(w.c["A"].get(f"/session/{w.s_id}"))
    assert info["sessionName"] == ctx["new"], info
    r = w.c["A"].post(f"/session/{w.s_id}/rename", {"session_name": w.s_name})
    assert r.status_code == 204, r.text
    w.session_intact()


def _rename_unchanged(w, ctx):
    w.session_intact()
    problem(w.c["A"].get(f"/session/{ctx['new']}"), NF)


@op("session.rename", SESSION_MODES, session_rule, _rename_allowed, _rename_unchanged)
def _(w, c, mode, ctx):
    ctx["new"] = fresh("renamed")
    ref, q = s_ref(w, mode)
    return c.post(f"/session/{ref}/rename", {"session_name": ctx["new"]}, params=q)


def _terms(w):
    """tessera-term processes in A's session S (its ttyd app and open terminals)."""
    r = ok(w.c["A"].post(f"/session/{w.s_id}", {"mode": "batch", "options": {"exec": "ps -o args"}},
                         timeout=80))
    out = "".join(t for k, t in r["result"]["console"] if k == "stdout")
    return sum(1 for line in out.splitlines() if line.startswith("/opt/tessera/bin/tessera-term"))


def _shutdown_allowed(w, r, ctx):
    assert r.status_code == 204, r.text
    assert _terms(w) == 0, "the app still runs after shutdown-service"
    w.session_intact()


def _shutdown_unchanged(w, ctx):
    assert _terms(w) >= 1, "A's app was stopped by a refused shutdown-service"
    w.session_intact()


@op("session.shutdown_service", SESSION_MODES, session_rule, _shutdown_allowed, _shutdown_unchanged)
def _(w, c, mode, ctx):
    # A's terminal app runs before each try
    r = w.c["A"].post(f"/session/{w.s_id}/start-service", {"app": "ttyd"}, timeout=40)
    assert r.status_code == 200, r.text
    ref, q = s_ref(w, mode)
    return c.post(f"/session/{ref}/shutdown-service", {"service_name": "ttyd"}, params=q, timeout=30)


def _usage_all_allowed(w, r, ctx):
    series = ok(r)
    assert len(series) == 2880 and series[-1]["num_sessions"]["value"] >= 1, series[-1]


@op("usage.admin_month", ("all",), lambda who, mode: ALLOW if who == "SU" else FB, _usage_all_allowed)
def _(w, c, mode, ctx):
    return c.get("/resource/stats/admin/month", timeout=30)


def _a_has_usage(w):
    """Wait (once) until A's session S has usage recorded (the agent samples
    it every heartbeat), so that the usage cells below can expect A's rows."""
    if getattr(w, "a_usage_seen", False):
        return
    wait_until(lambda: any(i.get("user") == w.c["A"].uid
                           for i in ok(w.c["A"].get("/usage", timeout=30)).get("items", [])), timeout=60)
    w.a_usage_seen = True


def _usage_s_rows(r):
    """The session ids in a /resource/usage/month or /period answer."""
    body = ok(r)
    ids = set()
    for g in body:
        ids |= {c["session_id"] for c in g.get("c_infos", [])}
        ids |= set(g.get("sessions", {}))
    return ids


def _usage_totals_allowed(w, r, ctx):
    items = ok(r)["items"]
    users = {i["user"] for i in items}
    if ctx["who"] in ("A", "DA1", "SU"):
        assert w.c["A"].uid in users, f"{ctx['who']} should see A's usage: {items}"
    if ctx["who"] == "A":
        assert users == {w.c["A"].uid}, f"A sees other users' usage: {items}"


@op("usage.totals", ("by_user",),
    lambda who, mode: ALLOW if who in ("A", "DA1", "SU") else HIDDEN, _usage_totals_allowed)
def _(w, c, mode, ctx):
    _a_has_usage(w)
    ctx["who"] = c.label
    return c.get("/usage", params={"group_by": "user"}, timeout=30)


def _usage_report_rule(who, mode):
    return ALLOW if who in ("DA1", "DA2", "SU") else FB


def _usage_report_allowed(w, r, ctx):
    rows = _usage_s_rows(r)
    if ctx["who"] == "DA2":
        assert w.s_id not in rows, "a domain admin of D2 sees A's session in the usage report"
    else:
        assert w.s_id in rows, f"{ctx['who']} should see A's session in the usage report"


@op("usage.report", ("month", "period"), _usage_report_rule, _usage_report_allowed)
def _(w, c, mode, ctx):
    _a_has_usage(w)
    ctx["who"] = c.label
    if mode == "month":
        return c.get("/resource/usage/month", params={"month": time.strftime("%Y%m", time.gmtime())},
                     timeout=30)
    # yesterday to today: S has used something in it at any time of day
    days = [time.strftime("%Y%m%d", time.gmtime(time.time() - d)) for d in (86400, 0)]
    return c.get("/resource/usage/period", params={"start_date": days[0], "end_date": days[1]},
                 timeout=30)


def _recalc_allowed(w, r, ctx):
    assert r.status_code == 200, r.text
    assert ok(r)["kernels"] >= 1, r.text
    w.session_intact()


@op("occupancy.recalculate", ("all",), lambda who, mode: ALLOW if who == "SU" else FB, _recalc_allowed,
    _session_unchanged)
def _(w, c, mode, ctx):
    return c.post("/resource/recalculate-usage", {}, timeout=40)


def _victim_or_s(w, c, mode, ctx, expect_allowed):
    """Allowed destructive cells act on a victim; denied ones on S itself."""
    if expect_allowed:
        name, sid = w.victim_session()
        ctx["victim"] = sid
        return s_ref(w, mode, name, sid)
    return s_ref(w, mode)


RESTART_REACHED = "restart-reached"


def _restart_expect(who, mode):
    e = session_rule(who, mode)
    return RESTART_REACHED if e == ALLOW else e


@op("session.restart", SESSION_MODES, _restart_expect, None, _session_unchanged)
def _(w, c, mode, ctx):
    ref, q = _victim_or_s(w, c, mode, ctx, _restart_expect(c.label, mode) == RESTART_REACHED)
    return c.patch(f"/session/{ref}", params=q)


def _destroy_allowed(w, r, ctx):
    assert r.json()["status"] == "CANCELLED", r.json()
    assert w.a_session_status(ctx["victim"]) == "CANCELLED"


@op("session.destroy", SESSION_MODES, session_rule, _destroy_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    ref, q = _victim_or_s(w, c, mode, ctx, session_rule(c.label, mode) == ALLOW)
    return c.delete(f"/session/{ref}", params=q)


def _forced_expect(who, mode):
    if who in ("A", "B", "C"):
        return FB  # forced is for administrators: refused before the session is looked up
    return session_rule(who, mode)


def _forced_unchanged(w, ctx):
    if "victim" in ctx:
        assert w.a_session_status(ctx["victim"]) == "PENDING"
        w.c["A"].delete(f"/session/{ctx['victim']}")
    w.session_intact()


@op("session.destroy_forced", SESSION_MODES, _forced_expect, _destroy_allowed, _forced_unchanged)
def _(w, c, mode, ctx):
    # A is refused (403) but gets a victim anyway: a bug there must not end S.
    ref, q = _victim_or_s(w, c, mode, ctx, _forced_expect(c.label, mode) == ALLOW or c.label == "A")
    return c.delete(f"/session/{ref}", params=dict(q or {}, forced="true"))


# vfolders ---------------------------------------------------------------------------------------

FOLDER_MODES = ("by_name", "by_id")


def f_ref(w, mode, f=None):
    f = f or w.f
    return f["id"] if mode == "by_id" else f["name"]


def _folder_unchanged(w, ctx):
    w.folder_intact()


def _info_f_allowed(w, r, ctx):
    assert r.json()["id"] == w.f["id"], r.json()


@op("vfolder.info", FOLDER_MODES, folder_rule, _info_f_allowed, _folder_unchanged)
def _(w, c, mode, ctx):
    return c.get(f"/folders/{f_ref(w, mode)}")


def _list_f_expect(who, mode):
    if who == "A":
        return ALLOW if mode == "mine" else FB  # all=true is for administrators
    return ALLOW if who in ("DA1", "SU") and mode == "all" else HIDDEN


def _list_f_allowed(w, r, ctx):
    assert w.f["id"] in {f["id"] for f in r.json()}, "A's folder is not listed"


@op("vfolder.list", ("mine", "all"), _list_f_expect, _list_f_allowed)
def _(w, c, mode, ctx):
    return c.get("/folders", params={"all": "true"} if mode == "all" else None)


def _files_allowed(w, r, ctx):
    assert "hello.txt" in {i["name"] for i in r.json()["items"]}


@op("vfolder.files", FOLDER_MODES, folder_rule, _files_allowed, _folder_unchanged)
def _(w, c, mode, ctx):
    return c.get(f"/folders/{f_ref(w, mode)}/files", params={"path": ""})


def _mkdir_allowed(w, r, ctx):
    assert ctx["dir"] in w.a_files()
    ok(w.c["A"].delete(f"/folders/{w.f['id']}/delete_files", {"files": [ctx["dir"]], "recursive": True}))


def _mkdir_unchanged(w, ctx):
    w.folder_intact()
    assert ctx["dir"] not in w.a_files()


@op("vfolder.mkdir", FOLDER_MODES, folder_rule, _mkdir_allowed, _mkdir_unchanged)
def _(w, c, mode, ctx):
    ctx["dir"] = fresh(f"mk-{c.label}")
    return c.post(f"/folders/{f_ref(w, mode)}/mkdir", {"path": ctx["dir"]})


def _delete_file_allowed(w, r, ctx):
    assert ctx["victim"] not in w.a_files()
    w.folder_intact()


@op("vfolder.delete_file", FOLDER_MODES, folder_rule, _delete_file_allowed, _folder_unchanged)
def _(w, c, mode, ctx):
    if folder_rule(c.label, mode) == ALLOW:  # a victim directory; denials aim at hello.txt
        ctx["victim"] = fresh("rm")
        ok(w.c["A"].post(f"/folders/{w.f['id']}/mkdir", {"path": ctx["victim"]}), 201)
        target = ctx["victim"]
    else:
        target = "hello.txt"
    return c.delete(f"/folders/{f_ref(w, mode)}/delete_files", {"files": [target], "recursive": True})


def _upload_allowed(w, r, ctx):
    up = r.json()
    assert up["token"] and up["url"], up
    t = requests.delete(up["url"], params={"token": up["token"]}, headers=TUS, timeout=30)
    assert t.status_code == 204, t.text


def _upload_unchanged(w, ctx):
    w.folder_intact()
    assert ctx["path"] not in w.a_files()


@op("vfolder.upload_token", FOLDER_MODES, folder_rule, _upload_allowed, _upload_unchanged)
def _(w, c, mode, ctx):
    ctx["path"] = fresh(f"up-{c.label}") + ".bin"
    return c.post(f"/folders/{f_ref(w, mode)}/request-upload", {"path": ctx["path"], "size": 4})


def _download_allowed(w, r, ctx):
    d = r.json()
    got = requests.get(d["url"], params={"token": d["token"]}, timeout=30)
    assert got.status_code == 200 and got.content == CONTENT, (got.status_code, got.content[:100])


@op("vfolder.download_token", FOLDER_MODES, folder_rule, _download_allowed, _folder_unchanged)
def _(w, c, mode, ctx):
    return c.post(f"/folders/{f_ref(w, mode)}/request-download", {"file": "hello.txt"})


def _rename_f_allowed(w, r, ctx):
    assert ok(w.c["A"].get(f"/folders/{w.f['id']}"))["name"] == ctx["new"]
    ok(w.c["A"].post(f"/folders/{w.f['id']}/rename", {"new_name": w.f["name"]}), 201)
    w.folder_intact()


@op("vfolder.rename", FOLDER_MODES, folder_rule, _rename_f_allowed, _folder_unchanged)
def _(w, c, mode, ctx):
    ctx["new"] = fresh("f-renamed")
    return c.post(f"/folders/{f_ref(w, mode)}/rename", {"new_name": ctx["new"]})


def _delete_f_allowed(w, r, ctx):
    problem(w.c["A"].get(f"/folders/{ctx['victim']['id']}"), NF)  # in the trash
    w.folder_intact()


@op("vfolder.delete", FOLDER_MODES, folder_rule, _delete_f_allowed, _folder_unchanged)
def _(w, c, mode, ctx):
    target = w.f
    if folder_rule(c.label, mode) == ALLOW:
        target = ctx["victim"] = ok(w.c["A"].post("/folders", {"name": fresh("f-victim")}), 201)
    return c.delete(f"/folders/{f_ref(w, mode, target)}")


def _pending_for_b(w, folder_id):
    return [i for i in ok(w.c["B"].get("/folders/invitations/list"))["invitations"]
            if i["vfolder_id"] == folder_id]


def _invite_allowed(w, r, ctx):
    mine = _pending_for_b(w, w.f["id"])
    assert len(mine) == 1, mine
    for i in mine:  # cancel it (as the owner) for the next cell
        ok(w.c["A"].delete("/folders/invitations/delete", {"inv_id": i["id"]}))


def _invite_unchanged(w, ctx):
    w.folder_intact()
    assert not _pending_for_b(w, w.f["id"]), "an invitation to A's folder was made"


@op("vfolder.invite", FOLDER_MODES, folder_rule, _invite_allowed, _invite_unchanged)
def _(w, c, mode, ctx):
    return c.post(f"/folders/{f_ref(w, mode)}/invite", {"perm": "rw", "emails": [w.c["B"].email]})


def _clone_allowed(w, r, ctx):
    clone = r.json()
    c = ctx["caller"]
    assert clone["name"] == ctx["target"] and clone["id"] != w.f["id"], clone
    assert "hello.txt" in {i["name"] for i in ok(c.get(f"/folders/{clone['id']}/files"))["items"]}
    ok(c.delete(f"/folders/{clone['id']}"), 204)


def _clone_unchanged(w, ctx):
    w.folder_intact()
    problem(ctx["caller"].get(f"/folders/{ctx['target']}"), NF)


@op("vfolder.clone", FOLDER_MODES, folder_rule, _clone_allowed, _clone_unchanged)
def _(w, c, mode, ctx):
    ctx["caller"], ctx["target"] = c, fresh(f"clone-{c.label}")
    return c.post(f"/folders/{f_ref(w, mode)}/clone", {"target_name": ctx["target"]}, timeout=60)


def _mount_expect(who, mode):
    if who == "A":
        return ALLOW
    if who in ("DA1", "SU") and mode == "by_id":
        return FB  # "administrators cannot mount other users' folders"
    return NF


def _mount_allowed(w, r, ctx):
    sid = r.json()["sessionUuid"]
    info = ok(w.c["A"].get(f"/session/{sid}"))
    ok(w.c["A"].delete(f"/session/{sid}"))
    assert info["accessKey"] == w.a_key


def _mount_unchanged(w, ctx):
    w.folder_intact()
    problem(ctx["caller"].get(f"/session/{ctx['name']}"), NF)


@op("vfolder.mount", FOLDER_MODES, _mount_expect, _mount_allowed, _mount_unchanged)
def _(w, c, mode, ctx):
    ctx["caller"], ctx["name"] = c, fresh(f"mount-{c.label}")
    return c.post("/session", {"image": w.image, "name": ctx["name"], "type": "batch",
                               "startupCommand": "sleep 60", "starts_at": "1h", "enqueueOnly": True,
                               "group_name": w.project[w.group_of[c.label]]["name"],
                               "config": {"mounts": [f_ref(w, mode)]}})


def _share_expect(who, mode):
    if who in ("DA1", "SU"):
        return ALLOW  # project folders: admins of the domain (by name too: docs/vfolders.md)
    if who in ("A", "B"):
        return FB  # members see it (rw) but sharing needs the owner
    return NF


def _perm_on_pf(w, who):
    return ok(w.c[who].get(f"/folders/{w.pf['id']}"))["permission"]


def _a_perm_on_pf(w):
    return _perm_on_pf(w, "A")


def _share_allowed(w, r, ctx):
    assert _a_perm_on_pf(w) == "ro"
    ok(w.boot.delete(f"/folders/{w.pf['id']}/unshare", {"emails": [w.c["A"].email]}))
    assert _a_perm_on_pf(w) == "rw"


def _share_unchanged(w, ctx):
    assert _a_perm_on_pf(w) == "rw"
    assert ok(w.c["B"].get(f"/folders/{w.pf['id']}"))["permission"] == "rw"


@op("vfolder.share_project_folder", FOLDER_MODES, _share_expect, _share_allowed, _share_unchanged)
def _(w, c, mode, ctx):
    # P1's folder: A's permission there is the resource (set to ro by a share)
    return c.post(f"/folders/{f_ref(w, mode, w.pf)}/share", {"permission": "ro", "emails": [w.c["A"].email]})


def _unshare_allowed(w, r, ctx):
    assert _perm_on_pf(w, "B") == "rw"  # back to the folder's own permission


def _unshare_unchanged(w, ctx):
    assert _perm_on_pf(w, "B") == "ro", "B's own permission on P1's folder was removed"
    ok(w.boot.delete(f"/folders/{w.pf['id']}/unshare", {"emails": [w.c["B"].email]}))


@op("vfolder.unshare_project_folder", FOLDER_MODES, _share_expect, _unshare_allowed, _unshare_unchanged)
def _(w, c, mode, ctx):
    ok(w.boot.post(f"/folders/{w.pf['id']}/share", {"permission": "ro", "emails": [w.c["B"].email]}))
    assert _perm_on_pf(w, "B") == "ro"
    return c.delete(f"/folders/{f_ref(w, mode, w.pf)}/unshare", {"emails": [w.c["B"].email]})


def _project_folder_expect(who, mode):
    if who == "DA1":
        return ALLOW
    if who in ("A", "B"):
        return FB  # members may not create project folders
    # Everyone else is of another domain. The project is looked up in the
    # caller's own domain (auth's session-context?group=, called by
    # services/vfolder/folders.c _find_project), so SU (of D0) is refused too:
    # safe, but see the report (docs/vfolders.md reads as if a superadmin could).
    return (400, 403, 404) if mode == "by_name" else FB_NF


def _project_folder_allowed(w, r, ctx):
    f = r.json()
    assert f["ownership_type"] == "group" and f["group"] == w.project["P1"]["id"], f
    ok(w.boot.delete(f"/folders/{f['id']}"), 204)


def _project_folder_unchanged(w, ctx):
    names = {f["name"] for f in ok(w.boot.get("/folders", params={"all": "true"}))}
    assert ctx["name"] not in names, "a folder was created in A's project"


@op("vfolder.create_in_A_project", ("by_name", "by_id"), _project_folder_expect, _project_folder_allowed,
    _project_folder_unchanged)
def _(w, c, mode, ctx):
    ctx["name"] = fresh(f"pf-{c.label}")
    group = w.project["P1"]["id"] if mode == "by_id" else w.project["P1"]["name"]
    return c.post("/folders", {"name": ctx["name"], "group": group})


def _trashed_victim(w, ctx):
    f = ok(w.c["A"].post("/folders", {"name": fresh("f-trash")}), 201)
    w.upload(w.c["A"], f["id"], "kept.txt", CONTENT)
    ok(w.c["A"].delete(f"/folders/{f['id']}"), 204)
    ctx["victim"] = f


def _still_trashed(w, ctx):
    # still in the trash with its file: A restores it, reads it, trashes it again
    f = ctx["victim"]
    ok(w.c["A"].post("/folders/restore-from-trash", {"vfolder_id": f["id"]}), 204)
    assert "kept.txt" in {i["name"] for i in ok(w.c["A"].get(f"/folders/{f['id']}/files"))["items"]}
    ok(w.c["A"].delete(f"/folders/{f['id']}"), 204)


def _restored(w, r, ctx):
    f = ctx["victim"]
    assert ok(w.c["A"].get(f"/folders/{f['id']}"))["status"] == "ready"
    ok(w.c["A"].delete(f"/folders/{f['id']}"), 204)


@op("vfolder.restore_from_trash", ("by_id",), folder_rule, _restored, _still_trashed)
def _(w, c, mode, ctx):
    _trashed_victim(w, ctx)
    return c.post("/folders/restore-from-trash", {"vfolder_id": ctx["victim"]["id"]})


def _purged(w, r, ctx):
    problem(w.c["A"].post("/folders/restore-from-trash", {"vfolder_id": ctx["victim"]["id"]}), NF)


@op("vfolder.purge", ("by_id",), folder_rule, _purged, _still_trashed)
def _(w, c, mode, ctx):
    _trashed_victim(w, ctx)
    return c.post("/folders/purge", {"vfolder_id": ctx["victim"]["id"]})


def _rename_file_allowed(w, r, ctx):
    files = w.a_files()
    assert ctx["new"] in files and ctx["victim"] not in files
    ok(w.c["A"].delete(f"/folders/{w.f['id']}/delete_files", {"files": [ctx["new"]], "recursive": True}))
    w.folder_intact()


def _rename_file_unchanged(w, ctx):
    w.folder_intact()
    assert ctx["new"] not in w.a_files()


@op("vfolder.rename_file", FOLDER_MODES, folder_rule, _rename_file_allowed, _rename_file_unchanged)
def _(w, c, mode, ctx):
    ctx["new"] = fresh("moved")
    target = "hello.txt"
    if folder_rule(c.label, mode) == ALLOW:  # a victim directory; denials aim at hello.txt
        target = ctx["victim"] = fresh("mv")
        ok(w.c["A"].post(f"/folders/{w.f['id']}/mkdir", {"path": target}), 201)
    return c.post(f"/folders/{f_ref(w, mode)}/rename_file", {"target_path": target, "new_name": ctx["new"]})


def _invitation(w, ctx):
    """A fresh folder of A and A's pending invitation of B to it."""
    f = ok(w.c["A"].post("/folders", {"name": fresh("f-inv")}), 201)
    inv = ok(w.c["A"].post(f"/folders/{f['id']}/invite", {"perm": "rw", "emails": [w.c["B"].email]}), 201)
    ctx["folder"], ctx["inv"] = f, inv["invited_ids"][0]


def _inv_still_pending(w, ctx):
    assert [i["id"] for i in _pending_for_b(w, ctx["folder"]["id"])] == [ctx["inv"]]
    ok(w.c["A"].delete(f"/folders/{ctx['folder']['id']}"), 204)


def _accept_allowed(w, r, ctx):
    assert ok(w.c["B"].get(f"/folders/{ctx['folder']['id']}"))["permission"] == "rw"
    ok(w.c["A"].delete(f"/folders/{ctx['folder']['id']}"), 204)


@op("vfolder.invitation_accept", ("by_id",), lambda who, mode: ALLOW if who == "B" else NF,
    _accept_allowed, _inv_still_pending)
def _(w, c, mode, ctx):
    _invitation(w, ctx)
    return c.post("/folders/invitations/accept", {"inv_id": ctx["inv"]})


def _cancel_allowed(w, r, ctx):
    assert r.json()["state"] == ("rejected" if ctx["caller"].label == "B" else "canceled"), r.json()
    assert not _pending_for_b(w, ctx["folder"]["id"])
    ok(w.c["A"].delete(f"/folders/{ctx['folder']['id']}"), 204)


@op("vfolder.invitation_cancel", ("by_id",),
    lambda who, mode: NF if who in ("C", "DA2") else ALLOW, _cancel_allowed, _inv_still_pending)
def _(w, c, mode, ctx):
    _invitation(w, ctx)
    ctx["caller"] = c
    return c.delete("/folders/invitations/delete", {"inv_id": ctx["inv"]})


# keypairs ---------------------------------------------------------------------------------------

def _key_unchanged(w, ctx):
    w.key_intact()


def _key_get_allowed(w, r, ctx):
    body = r.json()
    assert body["access_key"] == w.a_key and body["is_active"], body
    assert "secret_key" not in body, "a keypair read shows its secret key"


@op("keypair.get", ("by_id",), lambda who, mode: admin_rule(who), _key_get_allowed, _key_unchanged)
def _(w, c, mode, ctx):
    return c.get(f"/admin/keypairs/{w.a_key}")


def _key_list_allowed(w, r, ctx):
    items = r.json()["items"]
    assert w.a_key in {k["access_key"] for k in items}, items
    assert not any("secret_key" in k for k in items), "a keypair list shows secret keys"


@op("keypair.list", ("by_user",), lambda who, mode: ALLOW if admin_rule(who) == ALLOW else HIDDEN,
    _key_list_allowed, _key_unchanged)
def _(w, c, mode, ctx):
    return c.get("/admin/keypairs", params={"user": w.c["A"].uid, "limit": 1000})


def _key_patch_allowed(w, r, ctx):
    assert ok(w.boot.get(f"/admin/keypairs/{w.a_key}"))["rate_limit"] == ctx["rate"]
    ok(w.boot.patch(f"/admin/keypairs/{w.a_key}", {"rate_limit": w.a_rate}))
    w.key_intact()


@op("keypair.patch", ("by_id",), lambda who, mode: admin_rule(who, a_may=False), _key_patch_allowed,
    _key_unchanged)
def _(w, c, mode, ctx):
    ctx["rate"] = 7
    return c.patch(f"/admin/keypairs/{w.a_key}", {"rate_limit": ctx["rate"]})


def _key_revoke_allowed(w, r, ctx):
    assert not ok(w.boot.get(f"/admin/keypairs/{ctx['victim']}"))["is_active"]
    w.key_intact()


def _key_revoke_unchanged(w, ctx):
    if "victim" in ctx:
        assert ok(w.boot.get(f"/admin/keypairs/{ctx['victim']}"))["is_active"]
        ok(w.boot.delete(f"/admin/keypairs/{ctx['victim']}"))
    w.key_intact()


@op("keypair.revoke", ("by_id",), lambda who, mode: admin_rule(who, a_may=False), _key_revoke_allowed,
    _key_revoke_unchanged)
def _(w, c, mode, ctx):
    target = w.a_key
    if c.label in ("A", "DA1", "SU"):  # a victim key of A (A itself is refused: a bug must not cut A off)
        target = ctx["victim"] = ok(w.boot.post("/admin/keypairs", {"user_id": w.c["A"].uid}))["access_key"]
    return c.delete(f"/admin/keypairs/{target}")


def _a_keys(w):
    return {k["access_key"] for k in ok(w.boot.get("/admin/keypairs", params={"user": w.c["A"].uid,
                                                                              "limit": 1000}))["items"]}


def _issue_allowed(w, r, ctx):
    k = r.json()
    assert k["user_id"] == w.c["A"].uid and k["secret_key"], k
    ok(w.boot.delete(f"/admin/keypairs/{k['access_key']}"))


def _issue_unchanged(w, ctx):
    assert _a_keys(w) == ctx["before"], "a keypair was issued for A"
    w.key_intact()


@op("keypair.issue_for_A", ("by_id",), lambda who, mode: admin_rule(who, a_may=False), _issue_allowed,
    _issue_unchanged)
def _(w, c, mode, ctx):
    ctx["before"] = _a_keys(w)
    return c.post("/admin/keypairs", {"user_id": w.c["A"].uid})


# users ------------------------------------------------------------------------------------------

def _user_unchanged(w, ctx):
    u = ok(w.boot.get(f"/admin/users/{w.c['A'].uid}"))
    assert u["full_name"] == w.a_full_name and u["status"] == "active", f"A's profile was changed: {u}"


def _user_get_allowed(w, r, ctx):
    body = r.json()
    assert body["id"] == w.c["A"].uid and "password" not in body and "password_hash" not in body, body


@op("user.get", ("by_id",), lambda who, mode: admin_rule(who), _user_get_allowed, _user_unchanged)
def _(w, c, mode, ctx):
    return c.get(f"/admin/users/{w.c['A'].uid}")


def _user_list_allowed(w, r, ctx):
    assert w.c["A"].uid in {u["id"] for u in r.json()["items"]}


@op("user.list", ("by_name",), lambda who, mode: ALLOW if admin_rule(who) == ALLOW else HIDDEN,
    _user_list_allowed, _user_unchanged)
def _(w, c, mode, ctx):
    return c.get("/admin/users", params={"q": w.c["A"].user["username"], "limit": 1000})


def _user_patch_allowed(w, r, ctx):
    assert ok(w.boot.get(f"/admin/users/{w.c['A'].uid}"))["full_name"] == ctx["full_name"]
    ok(w.boot.patch(f"/admin/users/{w.c['A'].uid}", {"full_name": w.a_full_name}))


@op("user.patch_profile", ("by_id",), lambda who, mode: admin_rule(who), _user_patch_allowed, _user_unchanged)
def _(w, c, mode, ctx):
    ctx["full_name"] = fresh(f"set by {c.label}")
    return c.patch(f"/admin/users/{w.c['A'].uid}", {"full_name": ctx["full_name"]})


def _a_can_log_in(w, password):
    A = w.c["A"]
    r = requests.post(w.gw + "/auth/authorize", json={"type": "keypair", "domain": A.user["domain_name"],
                                                      "username": A.user["username"], "password": password},
                      timeout=15)
    return r.status_code == 200


def _password_allowed(w, r, ctx):
    assert _a_can_log_in(w, ctx["password"])
    ok(w.boot.patch(f"/admin/users/{w.c['A'].uid}", {"password": PASSWORD}))
    assert _a_can_log_in(w, PASSWORD)


def _password_unchanged(w, ctx):
    assert _a_can_log_in(w, PASSWORD), "A's password was changed"


@op("user.set_password", ("by_id",), lambda who, mode: admin_rule(who, a_may=False), _password_allowed,
    _password_unchanged)
def _(w, c, mode, ctx):
    ctx["password"] = fresh("Other-Passw0rd")
    return c.patch(f"/admin/users/{w.c['A'].uid}", {"password": ctx["password"]})


# access log -------------------------------------------------------------------------------------

def _log_allowed(w, r, ctx):
    items = r.json()["items"]
    assert items and all(i["access_key"] == w.a_key or i["user_id"] == w.c["A"].uid for i in items), items[:3]


@op("access_log.of_A", ("by_key", "by_user"), lambda who, mode: ALLOW if admin_rule(who) == ALLOW else HIDDEN,
    _log_allowed)
def _(w, c, mode, ctx):
    q = {"access_key": w.a_key} if mode == "by_key" else {"user_id": w.c["A"].uid}
    return c.get("/admin/access-log", params=dict(q, limit=20))


# event streams (server-sent events) ---------------------------------------------------------------
# An allowed stream never ends: the cell reads its first bytes (": stream open")
# and closes it; the gateway frees it (tests/integration/test_events.py).

def _open_stream(c, path, params):
    url = c.endpoint + ("/func" if isinstance(c, ConsoleClient) else "") + path
    url += "?" + urllib.parse.urlencode(params)
    if isinstance(c, ConsoleClient):
        h = {"X-CSRF-Token": c.csrf}
    else:
        h = bai_signer.signed_headers(c.access_key, c.secret_key, "GET", url, content_type=None)
    r = c._session.get(url, headers=h, stream=True, timeout=15)
    if r.status_code == 200:
        first = next(r.iter_content(chunk_size=None), b"")
        r.close()
        r._content = first  # what the cell checks (and the suite's table shows)
    return r


def _stream_allowed(w, r, ctx):
    assert r.headers["Content-Type"].startswith("text/event-stream"), r.headers
    assert r.content.startswith(b": stream open"), r.content[:100]


def _events_expect(who, mode):
    if mode == "all":
        return ALLOW  # everyone has a stream; what it carries is scoped (test_events.py)
    # ownerAccessKey: a user may name only its own key (403), administrators any
    # (a domain admin of another domain gets a stream that carries none of A's)
    return FB if who in ("B", "C") else ALLOW


@op("events.session", ("all", "by_owner_key"), _events_expect, _stream_allowed)
def _(w, c, mode, ctx):
    q = {"ownerAccessKey": w.a_key} if mode == "by_owner_key" else {"sessionName": "*"}
    return _open_stream(c, "/events/session", q)


def _bgtask_of_su(w):
    """A background task of SU (an image scan through GraphQL), made once."""
    if not getattr(w, "su_task", None):
        r = w.c["SU"].post("/admin/gql", {"query": "mutation { rescan_images { ok task_id } }"})
        res = ok(r, 200)["data"]["rescan_images"]
        assert res["ok"] and res["task_id"], res
        w.su_task = res["task_id"]
    return w.su_task


@op("events.background_task", ("by_id",), lambda who, mode: ALLOW if who == "SU" else NF,
    _stream_allowed)
def _(w, c, mode, ctx):
    return _open_stream(c, "/events/background-task", {"taskId": _bgtask_of_su(w)})


# configuration store (docs/api.md "Configuration store"): superadmins only ----------------------

CONFIG_KEY = "config/security-matrix/value"


def _config_rule(who, mode):
    return ALLOW if who == "SU" else FB


def _config_seed(w):
    ok(w.boot.post("/config/set", {"key": CONFIG_KEY, "value": "seeded"}))


def _config_unchanged(w, ctx):
    r = ok(w.boot.post("/config/get", {"key": CONFIG_KEY}))
    assert r["result"] == "seeded", f"the setting was changed: {r}"


def _config_get_allowed(w, r, ctx):
    assert r.json()["result"] == "seeded", r.text


def _config_set_allowed(w, r, ctx):
    assert ok(w.boot.post("/config/get", {"key": CONFIG_KEY}))["result"] == ctx["value"]
    _config_seed(w)


def _config_delete_allowed(w, r, ctx):
    assert ok(w.boot.post("/config/get", {"key": CONFIG_KEY}))["result"] is None
    _config_seed(w)


@op("config.get", ("by_key",), _config_rule, _config_get_allowed, _config_unchanged)
def _(w, c, mode, ctx):
    _config_seed(w)
    return c.post("/config/get", {"key": CONFIG_KEY})


@op("config.set", ("by_key",), _config_rule, _config_set_allowed, _config_unchanged)
def _(w, c, mode, ctx):
    _config_seed(w)
    ctx["value"] = fresh(f"set by {c.label}")
    return c.post("/config/set", {"key": CONFIG_KEY, "value": ctx["value"]})


@op("config.delete", ("by_key",), _config_rule, _config_delete_allowed, _config_unchanged)
def _(w, c, mode, ctx):
    _config_seed(w)
    return c.post("/config/delete", {"key": CONFIG_KEY, "prefix": True})


def _registries_allowed(w, r, ctx):
    assert isinstance(r.json(), dict), r.text


@op("config.docker_registries", ("all",), _config_rule, _registries_allowed)
def _(w, c, mode, ctx):
    return c.get("/config/docker-registries")


# The platform status (docs/api.md "Platform status"): service addresses and
# dependency versions are for superadmins alone (domain admins too are refused).
def _status_allowed(w, r, ctx):
    rows = {s["service"]: s for s in r.json()["services"]}
    assert rows["auth"]["state"] == "ready" and rows["registry"]["address"].startswith("http"), rows


@op("admin.platform_status", ("all",), lambda who, mode: ALLOW if who == "SU" else FB,
    _status_allowed)
def _(w, c, mode, ctx):
    return c.get("/admin/status", params={"agents": "false"}, timeout=30)


# ---- the matrix ---------------------------------------------------------------------------------

# GraphQL (docs/api.md "GraphQL") -------------------------------------------------------------------
# The legacy endpoint /admin/graphql: the data itself when allowed; any
# refusal is a 400 graphql-error problem (its "data" holds GraphQL's errors).

GQL_DENIED = (400,)
GQL_REFUSED = "gql-refused"  # a mutation refused: a graphql-error, or 200 with ok: false (as Backend.AI)


def _gql(c, query, variables):
    return c.post("/admin/graphql", {"query": query, "variables": variables})


def _gql_rule(rule):
    """A REST rule's outcome over GraphQL: allowed stays allowed, a refusal is
    a graphql-error, a narrowed list stays narrowed."""
    return rule if rule in (ALLOW, HIDDEN) else GQL_DENIED


def _gql_session_allowed(w, r, ctx):
    assert r.json()["compute_session"]["id"] == w.s_id, r.json()


@op("gql.compute_session", ("by_id",), lambda who, mode: _gql_rule(session_rule(who, "by_id")),
    _gql_session_allowed, _session_unchanged)
def _(w, c, mode, ctx):
    return _gql(c, "query($id: UUID!) { compute_session(id: $id) { id name access_key status } }",
                {"id": w.s_id})


def _gql_session_list_allowed(w, r, ctx):
    items = r.json()["compute_session_list"]["items"]
    assert w.s_id in {s["id"] for s in items}, "A's session is not listed"


@op("gql.compute_session_list", ("all", "by_owner_key"), _list_expect, _gql_session_list_allowed,
    _session_unchanged)
def _(w, c, mode, ctx):
    args = {"ak": w.a_key} if mode == "by_owner_key" else {}
    return _gql(c, "query($ak: String) { compute_session_list(limit: 1000, offset: 0, access_key: $ak,"
                   " status: \"RUNNING\") { items { id access_key user_id } total_count } }", args)


def _gql_key_allowed(w, r, ctx):
    k = r.json()["keypair"]
    assert k["access_key"] == w.a_key and k["secret_key"] is None, k


@op("gql.keypair", ("by_id",), lambda who, mode: _gql_rule(admin_rule(who)), _gql_key_allowed,
    _key_unchanged)
def _(w, c, mode, ctx):
    return _gql(c, "query($ak: String) { keypair(access_key: $ak) { access_key secret_key is_active } }",
                {"ak": w.a_key})


def _gql_key_list_allowed(w, r, ctx):
    items = r.json()["keypair_list"]["items"]
    assert w.a_key in {k["access_key"] for k in items}, items


@op("gql.keypair_list", ("by_user",), lambda who, mode: ALLOW if admin_rule(who) == ALLOW else HIDDEN,
    _gql_key_list_allowed, _key_unchanged)
def _(w, c, mode, ctx):
    return _gql(c, "query { keypair_list(limit: 1000, offset: 0) { items { access_key user } total_count } }",
                {})


def _gql_user_allowed(w, r, ctx):
    assert r.json()["user"]["id"] == w.c["A"].uid, r.json()


@op("gql.user", ("by_name",), lambda who, mode: _gql_rule(admin_rule(who)), _gql_user_allowed,
    _user_unchanged)
def _(w, c, mode, ctx):
    return _gql(c, "query($e: String) { user(email: $e) { id email password } }",
                {"e": w.c["A"].user["email"]})


def _gql_folders_allowed(w, r, ctx):
    assert w.f["id"] in {f["id"] for f in r.json()["vfolder_list"]["items"]}


@op("gql.vfolder_list", ("all",), lambda who, mode: ALLOW if who in ("A", "DA1", "SU") else HIDDEN,
    _gql_folders_allowed)
def _(w, c, mode, ctx):
    return _gql(c, "query { vfolder_list(limit: 1000, offset: 0) { items { id name user } total_count } }",
                {})


def _gql_key_patch_allowed(w, r, ctx):
    assert r.json()["modify_keypair"]["ok"] is True, r.json()
    _key_patch_allowed(w, r, ctx)


@op("gql.modify_keypair", ("by_id",),
    lambda who, mode: ALLOW if admin_rule(who, a_may=False) == ALLOW else GQL_REFUSED,
    _gql_key_patch_allowed, _key_unchanged)
def _(w, c, mode, ctx):
    ctx["rate"] = 9
    return _gql(c, "mutation($ak: String!, $i: ModifyKeyPairInput!) { modify_keypair(access_key: $ak,"
                   " props: $i) { ok msg } }", {"ak": w.a_key, "i": {"rate_limit": ctx["rate"]}})


def _a_objects_in(w, r):
    """A's objects in a list / log answer (for HIDDEN cells)."""
    body = r.json()
    items = body if isinstance(body, list) else body.get("items", [])
    if isinstance(body, dict) and len(body) == 1:  # a GraphQL answer: {root: {"items": [...]}}
        (root,) = body.values()
        if isinstance(root, dict) and isinstance(root.get("items"), list):
            items = root["items"]
    found = []
    for i in items:
        if not isinstance(i, dict):
            continue
        if (i.get("sessionUuid") == w.s_id or i.get("accessKey") == w.a_key or i.get("access_key") == w.a_key
                or i.get("id") in (w.f["id"], w.c["A"].uid, w.s_id) or i.get("user_id") == w.c["A"].uid
                or i.get("user") == w.c["A"].uid
                or i.get("userId") == w.c["A"].uid):
            found.append(i)
    return found


OPS_BY_NAME = {o.name: o for o in OPS}
CELLS = [pytest.param(who, o.name, mode, id=f"{who}-{o.name}-{mode}")
         for o in OPS for mode in o.modes for who in ACTORS]


def _detail(r):
    """The answer, for the suite's table ("403 forbidden", "200")."""
    kind = ""
    if r.headers.get("Content-Type", "").startswith("application/problem+json"):
        try:
            kind = " " + r.json().get("type", "").rsplit("/", 1)[-1]
        except ValueError:
            pass
    return f"{r.request.method} -> {r.status_code}{kind}"


@pytest.mark.parametrize("who,opname,mode", CELLS)
@pytest.mark.parametrize("transport", ["signed", "console"])
def test_cross_tenant(request, world, transport, who, opname, mode):
    """One cell, through a signed request or the console's session mode
    (/func/ with the login's cookie and CSRF token): the same answer."""
    o = OPS_BY_NAME[opname]
    want = o.expect(who, mode)
    ctx = {}
    r = o.run(world, (world.c if transport == "signed" else world.cw)[who], mode, ctx)
    request.node.user_properties.append(("detail", _detail(r)))  # tests/security/conftest.py's table
    assert r.status_code < 500, f"{r.status_code} (a 5xx): {r.request.method} {r.request.url}\n{r.text[:800]}"
    if want == UPGRADE:
        assert r.status_code == 101, \
            f"{who} should get the upgrade: {r.status_code} {r.request.method} {r.request.url}\n{r.text[:800]}"
        o.allowed(world, r, ctx)
    elif want == ALLOW:
        assert 200 <= r.status_code < 300, \
            f"{who} should be allowed: {r.status_code} {r.request.method} {r.request.url}\n{r.text[:800]}"
        o.allowed(world, r, ctx)
    elif want == HIDDEN:
        if r.status_code == 200:
            leaked = _a_objects_in(world, r)
            assert not leaked, f"{who} sees A's objects: {leaked[:3]}"
        else:
            problem(r, FB)
        o.unchanged(world, ctx)
    elif want == GQL_REFUSED:
        if r.status_code == 200:
            results = list(r.json().values())
            assert results and all(x.get("ok") is False for x in results), r.text[:800]
        else:
            problem(r, GQL_DENIED)
        o.unchanged(world, ctx)
    elif want == RESTART_REACHED:
        p = problem(r, (409,))
        assert "RUNNING" in p["msg"], p
        assert world.a_session_status(ctx["victim"]) == "PENDING"
        world.c["A"].delete(f"/session/{ctx['victim']}")
    else:
        problem(r, want)
        o.unchanged(world, ctx)


# ---- names are per owner ------------------------------------------------------------------------

def test_same_name_of_another_owner_never_resolves_to_As_session(world):
    """B (same project) and C (another domain) own a session named like A's:
    every by-name call of theirs reaches their own, and a destroy by that
    name ends theirs, not A's."""
    theirs = {}
    for who in ("B", "C"):
        c = world.c[who]
        body = ok(c.post("/session", {"image": world.image, "name": world.s_name, "type": "batch",
                                      "startupCommand": "sleep 60", "starts_at": "1h", "enqueueOnly": True,
                                      "group_name": world.project[world.group_of[who]]["name"]}), 201)
        theirs[who] = body["sessionUuid"]
        assert theirs[who] != world.s_id
    for who, sid in theirs.items():
        c = world.c[who]
        info = ok(c.get(f"/session/{world.s_name}"))
        assert info["sessionUuid"] == sid and info["accessKey"] == c.access_key, info
        assert ok(c.get(f"/session/{world.s_name}/history"))["sessionUuid"] == sid
        # their own session is PENDING: execute and start-service refer to it (409), not to A's
        problem(c.post(f"/session/{world.s_name}", {"mode": "batch", "options": {"exec": "true"}}), (409,))
        problem(c.post(f"/session/{world.s_name}/start-service", {"app": "ttyd"}), (409,))
        # an admin naming the owner gets that owner's session
        assert ok(world.c["SU"].get(f"/session/{world.s_name}",
                                    params={"owner_access_key": c.access_key}))["sessionUuid"] == sid
        assert ok(c.delete(f"/session/{world.s_name}"))["sessionUuid"] == sid
        assert ok(c.get(f"/session/{sid}"))["status"] == "CANCELLED"
        world.session_intact()
    # DA1 by a bare name: its own namespace (none), even though it may reach A's by id
    problem(world.c["DA1"].get(f"/session/{world.s_name}"), NF)


# ---- encoded paths do not reach internal routes ---------------------------------------------------

def _raw(client, method, target, body=b""):
    """A signed request whose target is sent exactly as written (requests
    would normalize dot segments)."""
    u = urllib.parse.urlsplit(client.endpoint)
    h = bai_signer.signed_headers(client.access_key, client.secret_key, method, client.endpoint + target)
    head = (f"{method} {target} HTTP/1.1\r\nHost: {u.netloc}\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n")
    with socket.create_connection((u.hostname, u.port), timeout=15) as s:
        s.sendall(head.encode() + body)
        out = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    status = int(out.split(b" ", 2)[1])
    return status, out.split(b"\r\n\r\n", 1)[-1][:400]


def test_encoded_paths_do_not_reach_internal_routes(world):
    """Dot segments and %2F in a public path never reach the services'
    internal routes (tessera-vfolder's POST /v1/mounts/resolve, the
    registry's GET /v1/vfolder-mounts/{id}) or another user's objects."""
    B, fid = world.c["B"], world.f["id"]
    resolve = ('{"access_key": "%s", "names": ["%s"]}' % (world.a_key, fid)).encode()
    cases = [("POST", "/folders/../mounts/resolve", resolve),
             ("POST", "/folders/%2E%2E/mounts/resolve", resolve),
             ("POST", "/folders/..%2Fmounts%2Fresolve", resolve),
             ("POST", "/folders/x/../../mounts/resolve", resolve),
             ("GET", f"/folders/{fid}%2F..%2F..%2Fmounts%2Fresolve", b""),
             ("GET", f"/folders/x/..%2F{fid}", b""),
             ("GET", f"/folders/x/../{fid}/files", b""),
             ("GET", f"/session/..%2Fvfolder-mounts%2F{fid}", b""),
             ("GET", f"/session/../vfolder-mounts/{fid}", b""),
             ("GET", f"/session/x/..%2F..%2Fvfolder-mounts%2F{fid}", b""),
             ("GET", f"/session/x%2F..%2F{world.s_id}", b""),
             ("GET", f"/session/x/../{world.s_id}", b""),
             ("GET", f"/session/_/logs?session_name=..%2F{world.s_id}", b"")]
    for method, target, body in cases:
        status, text = _raw(B, method, target, body)
        assert status in (400, 404, 405), f"B {method} {target}: {status} {text!r}"
        for leak in (b'"sessionUuid"', b'"host_path"', b'"sessions"', b'"items"', CONTENT):
            assert leak not in text, f"B {method} {target}: {status} {text!r}"
    world.session_intact()
    world.folder_intact()


# ---- a domain admin and a superadmin who belongs to its domain --------------------------------------

@pytest.fixture(scope="module")
def su1(world):
    """SU1: a superadmin whose domain is D1 (as the bootstrap superadmin's is
    `default`), with a PENDING session and a folder."""
    c = world.new_user("SU1", "superadmin", world.dom["D1"])
    name = fresh("su1")
    sess = ok(c.post("/session", {"image": world.image, "name": name, "type": "batch",
                                  "startupCommand": "sleep 60", "starts_at": "1h", "enqueueOnly": True,
                                  "group_name": world.project["P1"]["name"]}), 201)
    folder = ok(c.post("/folders", {"name": fresh("su1-f")}), 201)
    world.upload(c, folder["id"], "secret.txt", b"SU1's secret\n")
    yield {"c": c, "name": name, "sid": sess["sessionUuid"], "folder": folder}
    c.delete(f"/session/{sess['sessionUuid']}")


SU1_CASES = ["user.get", "keypair.get", "session.info-by_id", "session.info-by_owner_key",
             "session.destroy-by_id", "session.create_for", "vfolder.info-by_id", "vfolder.download_token-by_id",
             "session.list_all", "vfolder.list_all"]


@pytest.mark.parametrize("case", SU1_CASES)
def test_domain_admin_vs_superadmin_of_its_domain(world, su1, case):
    """docs/api.md Admin REST: a domain admin manages its domain's objects
    "and never superadmins"; Backend.AI's get_access_key_scopes refuses a
    domain admin acting for a superadmin ("Domain-admins cannot perform
    operations on behalf of super-admins"). DA1 must not reach SU1's session
    or folder any more than SU1's user record."""
    DA1, SU1 = world.c["DA1"], su1["c"]
    if case == "user.get":
        r = DA1.get(f"/admin/users/{SU1.uid}")
    elif case == "keypair.get":
        r = DA1.get(f"/admin/keypairs/{SU1.access_key}")
    elif case == "session.info-by_id":
        r = DA1.get(f"/session/{su1['sid']}")
    elif case == "session.info-by_owner_key":
        r = DA1.get(f"/session/{su1['name']}", params={"owner_access_key": SU1.access_key})
    elif case == "session.destroy-by_id":
        victim = ok(SU1.post("/session", {"image": world.image, "name": fresh("su1-victim"), "type": "batch",
                                          "startupCommand": "sleep 60", "starts_at": "1h", "enqueueOnly": True,
                                          "group_name": world.project["P1"]["name"]}), 201)["sessionUuid"]
        r = DA1.delete(f"/session/{victim}")
        SU1.delete(f"/session/{victim}")
    elif case == "session.create_for":
        name = fresh("for-su1")
        r = DA1.post("/session", {"image": world.image, "name": name, "type": "batch", "enqueueOnly": True,
                                  "startupCommand": "sleep 60", "starts_at": "1h",
                                  "group_name": world.project["P1"]["name"], "owner_access_key": SU1.access_key})
        if r.status_code == 201:
            SU1.delete(f"/session/{r.json()['sessionUuid']}")
    elif case == "vfolder.info-by_id":
        r = DA1.get(f"/folders/{su1['folder']['id']}")
    elif case in ("session.list_all", "vfolder.list_all"):
        # the domain's listings leave SU1's things out (and still list A's)
        if case == "session.list_all":
            items = ok(DA1.get("/session", params={"all": "true", "limit": 500}))["items"]
            ids = {i.get("id") or i.get("sessionUuid") for i in items}
            assert su1["sid"] not in ids, "DA1 lists SU1's session"
            assert world.s_id in ids, "DA1 no longer lists A's session"
        else:
            got = ok(DA1.get("/folders", params={"all": "true"}))
            rows = got if isinstance(got, list) else got.get("items", [])
            ids = {f["id"] for f in rows}
            assert su1["folder"]["id"] not in ids, "DA1 lists SU1's folder"
            assert world.f["id"] in ids, "DA1 no longer lists A's folder"
        return
    else:
        r = DA1.post(f"/folders/{su1['folder']['id']}/request-download", {"file": "secret.txt"})
        if r.status_code == 200:
            got = requests.get(r.json()["url"], params={"token": r.json()["token"]}, timeout=30)
            pytest.fail(f"DA1 downloads SU1's file: {got.status_code} {got.content[:60]!r}")
    problem(r, FB_NF)
    assert ok(SU1.get(f"/session/{su1['sid']}"))["status"] == "PENDING"


# ---- app cookies: another user's never opens A's app ---------------------------------------------

def _open(url, cookies=None):
    return requests.get(url, cookies=cookies or {}, timeout=10, allow_redirects=False)


def _app_cookie(resp):
    got = [(c.name, c.value) for c in resp.cookies if c.name.startswith("tessera_app_")]
    assert len(got) == 1, resp.headers
    return got[0]


def _start_app(client, ref):
    r = wait_until(lambda: (lambda a: a if a.status_code != 409 else None)(
        client.post(f"/session/{ref}/start-service", {"app": "ttyd"}, timeout=40)),
        timeout=30, message="ttyd to listen")
    return ok(r)


def test_app_tokens_and_cookies_are_not_transferable(world):
    if "ttyd" not in world.s_ports:
        pytest.skip(f"A's session has no ttyd service port ({sorted(world.s_ports)})")
    A, B = world.c["A"], world.c["B"]
    a_link = _start_app(A, world.s_id)
    r = wait_until(lambda: (lambda x: x if x.status_code == 200 else None)(_open(a_link["url"])),
                   timeout=20, message="A's terminal through wsproxy")
    a_cookie = _app_cookie(r)
    # B's own running session and app: B's cookie
    b_name = fresh("b-app")
    body = ok(B.post("/session", {"image": world.image, "name": b_name, "maxWaitSeconds": 30,
                                  "group_name": world.project["P1"]["name"],
                                  "config": {"resources": {"cpu": "1", "mem": "256m"}}}, timeout=45), 201)
    try:
        assert body["status"] == "RUNNING", body
        b_link = _start_app(B, b_name)
        r = wait_until(lambda: (lambda x: x if x.status_code == 200 else None)(_open(b_link["url"])),
                       timeout=20, message="B's terminal through wsproxy")
        b_cookie = _app_cookie(r)
        assert b_cookie[0] != a_cookie[0], "A's and B's apps share a cookie name"
        base = a_link["wsproxy_addr"] + "/"
        assert _open(base, {a_cookie[0]: a_cookie[1]}).status_code == 200  # A's own cookie works
        # B's cookie value under the name of A's app: another app's cookie (403), never A's terminal
        assert _open(base, {a_cookie[0]: b_cookie[1]}).status_code == 403
        # A's cookie value under B's app's name: at A's host name only A's cookie
        # counts (apps have host names of their own), so nothing opens: 401
        assert _open(base, {b_cookie[0]: a_cookie[1]}).status_code == 401
        # A's link token is not a cookie; a made-up token or cookie opens nothing
        assert _open(base, {a_cookie[0]: a_link["token"]}).status_code == 401
        assert _open(base + "?token=" + "x" * 43).status_code == 401
        assert _open(base, {a_cookie[0]: "y" * 43}).status_code == 401
        # B's link token opens B's app only: the route's session is B's
        assert b_link["token"] != a_link["token"]
        problem(B.post(f"/session/{world.s_id}/start-service", {"app": "ttyd"}), NF)
    finally:
        B.delete(f"/session/{b_name}")
    world.session_intact()


# ---- last: A's own restart really restarts S ------------------------------------------------------

def test_zz_owner_restart_really_restarts(world):
    A = world.c["A"]
    before = ok(A.get(f"/session/{world.s_id}"))["kernels"][0]
    assert ok(A.patch(f"/session/{world.s_name}"))["status"] in ("RESTARTING", "RUNNING")
    wait_until(lambda: A.get(f"/session/{world.s_id}").json()["status"] == "RUNNING", timeout=30,
               message="RUNNING again after the restart")
    statuses = [i["status"] for i in ok(A.get(f"/session/{world.s_id}/history"))["items"]]
    assert "RESTARTING" in statuses[world.s_history:], statuses
    after = ok(A.get(f"/session/{world.s_id}"))["kernels"][0]
    assert after["id"] == before["id"]
