"""tessera-auth core, black-box over its internal HTTP API (docs/internal-api.md)
and through the gateway where that path exists: bootstrap (and that a second
start changes nothing), credentials for the gateway, password login with
lockout, role, password change, the admin users and keypairs APIs with their
scoping, bad input that changes nothing, and the tessera.auth.v1 events."""
import contextlib
import os
import re
import signal
import stat
import subprocess
import time
import uuid

import pytest
import requests

import svc_signer

from bai_signer import Client
from conftest import BIN_DIR, service_urls, wait_until

PW = "correct horse battery"


# ---- helpers -----------------------------------------------------------------


def psql(dsn, sql):
    out = subprocess.run(["psql", dsn, "-At", "-c", sql], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


class Auth:
    """tessera-auth's internal API, as the gateway calls it."""

    def __init__(self, url, dsn, keys):
        self.url = url.rstrip("/")
        self.dsn = dsn
        self.keys = keys  # the stack's service keys dir: calls are signed as the gateway

    def call(self, method, path, caller=None, json=None, data=None, headers=None):
        h = dict(headers or {})
        if caller:
            h["X-Tessera-Caller"] = caller
        if data is not None and "Content-Type" not in h:
            h["Content-Type"] = "application/json"
        return svc_signer.call(self.keys, "gateway", method, self.url + path, json=json, data=data, headers=h,
                               timeout=30)

    def sql(self, q):
        return psql(self.dsn, q)

    def admin_id(self):
        return self.sql("SELECT id FROM auth.users WHERE role = 'superadmin' ORDER BY created_at LIMIT 1")

    def authorize(self, username, password, domain="default"):
        return self.call("POST", "/v1/authorize", json={"type": "keypair", "domain": domain,
                                                        "username": username, "password": password,
                                                        "client_addr": "10.0.0.1"})

    def create_user(self, caller, **fields):
        tag = uuid.uuid4().hex[:10]
        body = {"email": f"u-{tag}@example.com", "username": f"u-{tag}", "password": PW}
        body.update(fields)
        r = self.call("POST", "/v1/admin/users", caller, json=body)
        assert r.status_code == 201, r.text
        return r.json()


def problem(r, status, kind=None):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["Content-Type"].startswith("application/problem+json"), r.headers
    body = r.json()
    assert body["type"].startswith("https://api.backend.ai/probs/")
    if kind:
        assert body["type"].endswith("/" + kind), body
    return body


@pytest.fixture(scope="module")
def auth(stack):
    return Auth(service_urls(stack)["auth"], stack["TESSERA_PG_DSN"], stack["TESSERA_SERVICE_KEYS_DIR"])


@pytest.fixture(scope="module")
def admin(auth):
    return auth.admin_id()


def kcat_events(stack, topic="tessera.auth.v1"):
    """Every record on topic as (key, raw value bytes)."""
    c = subprocess.run(["kcat", "-b", stack["KAFKA_BOOTSTRAP"], "-C", "-t", topic, "-o", "beginning",
                        "-e", "-q", "-f", "%k\x1f%s\x1e"], capture_output=True, timeout=60)
    assert c.returncode == 0, c.stderr
    out = []
    for rec in c.stdout.split(b"\x1e"):
        if b"\x1f" in rec:
            k, v = rec.split(b"\x1f", 1)
            out.append((k.decode(errors="replace"), v))
    return out


def event_seen(stack, key, type_name, needle=None):
    for k, v in kcat_events(stack):
        if k == key and type_name.encode() in v and (needle is None or needle.encode() in v):
            return True
    return False


class AuthProc:
    """A second tessera-auth (port 0) on dsn with the stack's bus."""

    def __init__(self, stack, tmp_path, dsn, extra=None, name="auth2"):
        self.log = tmp_path / f"{name}.log"
        self.name = name
        env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERA_")}
        env.update({
            "TESSERA_HTTP_LISTEN": "127.0.0.1:0",
            "TESSERA_SERVICE_INSTANCE": f"it-{name}",
            "TESSERA_PG_DSN": dsn,
            "TESSERA_KAFKA_BOOTSTRAP": stack["KAFKA_BOOTSTRAP"],
            "KAFKA_BOOTSTRAP": stack["KAFKA_BOOTSTRAP"],
            "TESSERA_SHUTDOWN_DRAIN_TIMEOUT": "2s",
            "TESSERA_SERVICE_AUTH_TRUST_FILE": stack["TESSERA_SERVICE_TRUST_FILE"],
        })
        env.update(extra or {})
        with open(self.log, "wb") as out:
            self.p = subprocess.Popen([os.path.join(BIN_DIR, "tessera-auth")], env=env, stdout=out,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_ready(self):
        def port():
            assert self.p.poll() is None, self.log.read_text()
            m = re.search(r'msg="serving HTTP".* port=(\d+)', self.log.read_text())
            return m and int(m.group(1))
        url = f"http://127.0.0.1:{wait_until(port, 30, message=f'{self.name} to listen')}"
        wait_until(lambda: self.p.poll() is None and requests.get(url + "/readyz", timeout=2).status_code == 200,
                   60, message=f"{self.name} to be ready (log: {self.log})")
        return url

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)


@contextlib.contextmanager
def auth_instance(stack, tmp_path, dsn, extra=None, name="auth2"):
    proc = AuthProc(stack, tmp_path, dsn, extra, name)
    try:
        yield proc.wait_ready()
    finally:
        proc.stop()


@pytest.fixture()
def fresh_db(stack):
    """An empty database next to the stack's; its DSN."""
    name = "auth_it_" + uuid.uuid4().hex[:12]
    psql(stack["TESSERA_PG_DSN"], f"CREATE DATABASE {name}")
    yield re.sub(r"/tessera(\?|$)", rf"/{name}\1", stack["TESSERA_PG_DSN"])
    subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
                   capture_output=True, timeout=30)


# ---- bootstrap ---------------------------------------------------------------

def test_bootstrap_credentials_in_stack_env(stack, auth):
    for k in ("TESSERA_ADMIN_ACCESS_KEY", "TESSERA_ADMIN_SECRET_KEY", "TESSERA_ADMIN_EMAIL",
              "TESSERA_ADMIN_PASSWORD", "BACKEND_ENDPOINT", "BACKEND_ACCESS_KEY", "BACKEND_SECRET_KEY"):
        assert stack.get(k), k
    assert stack["BACKEND_ENDPOINT_TYPE"] == "api"
    assert stack["BACKEND_ENDPOINT"] == stack["TESSERA_GATEWAY_URL"]
    assert stack["BACKEND_ACCESS_KEY"] == stack["TESSERA_ADMIN_ACCESS_KEY"]
    ak = stack["TESSERA_ADMIN_ACCESS_KEY"]
    assert re.fullmatch(r"[A-Z0-9]{20}", ak) and re.fullmatch(r"[A-Za-z0-9]{40}", stack["TESSERA_ADMIN_SECRET_KEY"])
    creds = os.path.join(stack["TESSERA_STATE_DIR"], "auth", "admin-credentials")
    assert stat.S_IMODE(os.stat(creds).st_mode) == 0o600

    r = auth.call("GET", f"/v1/credentials/{ak}")
    assert r.status_code == 200, r.text
    c = r.json()
    assert c["secret_key"] == stack["TESSERA_ADMIN_SECRET_KEY"]
    assert c["is_active"] is True and c["is_admin"] is True and c["rate_limit"] == 0
    assert c["resource_policy"] == "default"
    assert c["user"]["role"] == "superadmin" and c["user"]["status"] == "active"
    assert c["user"]["email"] == stack["TESSERA_ADMIN_EMAIL"] and c["user"]["domain_name"] == "default"
    # The defaults exist, and the admin is a member of the default project.
    assert auth.sql("SELECT count(*) FROM auth.domains WHERE name = 'default'") == "1"
    assert auth.sql("SELECT count(*) FROM auth.keypair_resource_policies WHERE name = 'default'") == "1"
    assert auth.sql("SELECT count(*) FROM auth.user_resource_policies WHERE name = 'default'") == "1"
    assert auth.sql("SELECT count(*) FROM auth.project_members m JOIN auth.projects p ON p.id = m.project_id"
                    f" WHERE p.name = 'default' AND m.user_id = '{c['user']['id']}'") == "1"
    # The password is stored hashed (argon2id), never in clear.
    h = auth.sql(f"SELECT password_hash FROM auth.users WHERE id = '{c['user']['id']}'")
    assert h.startswith("$argon2id$") and stack["TESSERA_ADMIN_PASSWORD"] not in h


def test_credentials_unknown_and_malformed_keys_are_404(auth):
    problem(auth.call("GET", "/v1/credentials/AAAAAAAAAAAAAAAAAAAA"), 404, "not-found")
    problem(auth.call("GET", "/v1/credentials/short"), 404, "not-found")
    problem(auth.call("GET", "/v1/credentials/aaaaaaaaaaaaaaaaaaaa"), 404, "not-found")


def test_second_start_changes_nothing(stack, auth, tmp_path):
    creds = os.path.join(stack["TESSERA_STATE_DIR"], "auth", "admin-credentials")
    before = open(creds, "rb").read()
    mtime = os.stat(creds).st_mtime_ns
    counts = "SELECT (SELECT count(*) FROM auth.users WHERE role = 'superadmin'), (SELECT count(*) FROM auth.domains), (SELECT count(*) FROM auth.projects), (SELECT count(*) FROM auth.keypairs)"
    rows = auth.sql(counts)
    with auth_instance(stack, tmp_path, stack["TESSERA_PG_DSN"],
                       {"TESSERA_BOOTSTRAP_CREDENTIALS_FILE": creds}) as url:
        assert requests.get(url + "/readyz", timeout=5).status_code == 200
    assert auth.sql(counts) == rows
    assert auth.sql("SELECT count(*) FROM auth.users WHERE role = 'superadmin'") == "1"
    assert open(creds, "rb").read() == before and os.stat(creds).st_mtime_ns == mtime


def test_concurrent_first_starts_create_one_superadmin(stack, tmp_path, fresh_db):
    f1, f2 = tmp_path / "c1", tmp_path / "c2"
    extra = {"TESSERA_BOOTSTRAP_ADMIN_EMAIL": "root@example.org", "TESSERA_BOOTSTRAP_ADMIN_USERNAME": "root",
             "TESSERA_BOOTSTRAP_ADMIN_PASSWORD": "given-password-1"}
    procs = [AuthProc(stack, tmp_path, fresh_db, {**extra, "TESSERA_BOOTSTRAP_CREDENTIALS_FILE": str(f)}, n)
             for f, n in ((f1, "a1"), (f2, "a2"))]
    try:
        urls = [p.wait_ready() for p in procs]
    finally:
        for p in procs:
            p.stop()
    assert psql(fresh_db, "SELECT count(*) FROM auth.users WHERE role = 'superadmin'") == "1"
    written = [f for f in (f1, f2) if f.exists()]
    assert len(written) == 1, "exactly the start that created the admin writes the file"
    text = written[0].read_text()
    assert "TESSERA_ADMIN_EMAIL='root@example.org'" in text
    assert "TESSERA_ADMIN_PASSWORD='given-password-1'" in text
    ak = re.search(r"TESSERA_ADMIN_ACCESS_KEY='([A-Z0-9]{20})'", text).group(1)
    assert psql(fresh_db, f"SELECT is_admin, rate_limit FROM auth.keypairs WHERE access_key = '{ak}'") == "t|0"
    assert len(urls) == 2


# ---- authorize ---------------------------------------------------------------

def test_authorize(stack, auth, admin):
    r = auth.authorize(stack["TESSERA_ADMIN_EMAIL"], stack["TESSERA_ADMIN_PASSWORD"])
    assert r.status_code == 200, r.text
    d = r.json()["data"]
    assert d == {"access_key": stack["TESSERA_ADMIN_ACCESS_KEY"], "secret_key": stack["TESSERA_ADMIN_SECRET_KEY"],
                 "role": "superadmin", "status": "active"}
    # user name instead of email; email in another case
    assert auth.authorize("admin", stack["TESSERA_ADMIN_PASSWORD"]).status_code == 200
    assert auth.authorize(stack["TESSERA_ADMIN_EMAIL"].upper(), stack["TESSERA_ADMIN_PASSWORD"]).status_code == 200

    u = auth.create_user(admin)
    wrong = problem(auth.authorize(u["email"], "wrong password"), 401, "auth-failed")
    unknown = problem(auth.authorize("nobody-" + uuid.uuid4().hex + "@example.com", PW), 401, "auth-failed")
    assert wrong["msg"] == unknown["msg"], "unknown user and wrong password must look alike"
    problem(auth.authorize(u["email"], PW, domain="no-such-domain"), 401, "auth-failed")
    ok = auth.authorize(u["email"], PW)
    assert ok.status_code == 200 and ok.json()["data"]["role"] == "user"
    # the new user's main keypair is the one answered
    assert ok.json()["data"]["access_key"] == auth.sql(
        f"SELECT access_key FROM auth.keypairs WHERE user_id = '{u['id']}'")

    # bad input
    problem(auth.call("POST", "/v1/authorize", data="{not json"), 400, "invalid-api-params")
    problem(auth.call("POST", "/v1/authorize", json={"username": u["email"]}), 400, "invalid-api-params")
    problem(auth.call("POST", "/v1/authorize", json={"username": 5, "password": PW}), 400, "invalid-api-params")
    problem(auth.call("POST", "/v1/authorize", json={"type": "jwt", "username": u["email"], "password": PW}),
            400, "invalid-api-params")


def test_authorize_inactive_and_deleted_users(auth, admin):
    u = auth.create_user(admin)
    r = auth.call("PATCH", f"/v1/admin/users/{u['id']}", admin, json={"status": "inactive"})
    assert r.status_code == 200 and r.json()["status"] == "inactive"
    body = problem(auth.authorize(u["email"], PW), 401, "auth-failed")
    assert "inactive" in body["msg"]
    # a wrong password for an inactive user says nothing about the status
    assert "inactive" not in problem(auth.authorize(u["email"], "nope-nope"), 401)["msg"]
    assert auth.call("DELETE", f"/v1/admin/users/{u['id']}", admin).status_code == 200
    assert "deleted" in problem(auth.authorize(u["email"], PW), 401, "auth-failed")["msg"]


def test_lockout_with_stack_defaults(auth, admin):
    u = auth.create_user(admin)
    for _ in range(5):
        problem(auth.authorize(u["email"], "bad-password"), 401, "auth-failed")
    r = auth.authorize(u["email"], PW)  # even the right password
    problem(r, 429, "too-many-requests")
    assert 1 <= int(r.headers["Retry-After"]) <= 300


def test_lockout_expires_and_success_resets(stack, tmp_path, fresh_db):
    extra = {"TESSERA_AUTH_LOCKOUT_FAILURES": "3", "TESSERA_AUTH_LOCKOUT_DURATION": "2s",
             "TESSERA_BOOTSTRAP_ADMIN_PASSWORD": "lockout-admin-pw"}
    with auth_instance(stack, tmp_path, fresh_db, extra, "lock") as url:
        a = Auth(url, fresh_db, stack["TESSERA_SERVICE_KEYS_DIR"])
        admin = a.admin_id()
        u = a.create_user(admin)
        # two failures, a success (resets), two failures: still not locked
        for _ in range(2):
            problem(a.authorize(u["email"], "bad-password"), 401)
        assert a.authorize(u["email"], PW).status_code == 200
        for _ in range(2):
            problem(a.authorize(u["username"], "bad-password"), 401)
        assert a.authorize(u["email"], PW).status_code == 200
        for _ in range(3):
            problem(a.authorize(u["email"], "bad-password"), 401)
        r = a.authorize(u["email"], PW)
        problem(r, 429, "too-many-requests")
        assert 1 <= int(r.headers["Retry-After"]) <= 2
        time.sleep(2.2)
        assert a.authorize(u["email"], PW).status_code == 200


# ---- role, password ----------------------------------------------------------

def test_role(auth, admin):
    default_project = auth.sql("SELECT id FROM auth.projects WHERE name = 'default' AND domain_name = 'default'")
    other = str(uuid.uuid4())
    auth.sql(f"INSERT INTO auth.projects (id, name, domain_name) VALUES ('{other}', 'p-{other[:8]}', 'default')")
    r = auth.call("GET", f"/v1/role?group={default_project}", admin)
    assert r.json() == {"global_role": "superadmin", "domain_role": "admin", "group_role": "user"}
    u = auth.create_user(admin, projects=[other])
    assert auth.call("GET", f"/v1/role?group={other}", u["id"]).json() == \
        {"global_role": "user", "domain_role": "user", "group_role": "user"}
    assert auth.call("GET", f"/v1/role?group={default_project}", u["id"]).json()["group_role"] is None
    assert auth.call("GET", "/v1/role", u["id"]).json()["group_role"] is None
    da = auth.create_user(admin, role="admin")
    assert auth.call("GET", "/v1/role", da["id"]).json()["domain_role"] == "admin"
    problem(auth.call("GET", "/v1/role?group=not-a-uuid", u["id"]), 400, "invalid-api-params")
    problem(auth.call("GET", "/v1/role"), 401, "auth-failed")
    problem(auth.call("GET", "/v1/role", str(uuid.uuid4())), 401, "auth-failed")
    problem(auth.call("GET", "/v1/role", "garbage"), 401, "auth-failed")


def test_update_password(stack, auth, admin):
    u = auth.create_user(admin)
    me = u["id"]

    def upd(old, new, new2=None):
        return auth.call("POST", "/v1/update-password", me,
                         json={"old_password": old, "new_password": new, "new_password2": new2 or new})
    problem(upd(PW, "new-password-1", "new-password-2"), 400, "invalid-api-params")
    problem(upd(PW, "short"), 400, "invalid-api-params")
    problem(upd("not-the-old-one", "new-password-1"), 401, "auth-failed")
    problem(auth.call("POST", "/v1/update-password", me, json={"old_password": PW, "new_password": 12345678,
                                                               "new_password2": 12345678}), 400)
    problem(auth.call("POST", "/v1/update-password", json={"old_password": PW, "new_password": "x" * 9,
                                                           "new_password2": "x" * 9}), 401)
    assert auth.authorize(u["email"], PW).status_code == 200, "failed changes changed nothing"
    r = upd(PW, "new-password-1")
    assert r.status_code == 200 and r.json() == {}
    problem(auth.authorize(u["email"], PW), 401)
    assert auth.authorize(u["email"], "new-password-1").status_code == 200
    wait_until(lambda: event_seen(stack, me, "tessera.v1.UserChanged"), 20, message="UserChanged event")


# ---- users -------------------------------------------------------------------

def user_count(auth):
    return auth.sql("SELECT count(*) FROM auth.users")


def test_users_crud(stack, auth, admin):
    tag = uuid.uuid4().hex[:8]
    r = auth.call("POST", "/v1/admin/users", admin, json={
        "email": f"Crud-{tag}@Example.com", "username": f"crud-{tag}", "password": PW,
        "full_name": "Jürgen 李", "description": "test", "role": "user"})
    assert r.status_code == 201, r.text
    u = r.json()
    assert u["full_name"] == "Jürgen 李" and u["domain_name"] == "default" and u["status"] == "active"
    assert u["resource_policy"] == "default" and u["projects"] == [] and "password" not in u
    assert "password_hash" not in u and u["created_at"]
    wait_until(lambda: event_seen(stack, u["id"], "tessera.v1.UserChanged"), 20)

    assert auth.call("GET", f"/v1/admin/users/{u['id']}", admin).json() == u
    problem(auth.call("GET", f"/v1/admin/users/{uuid.uuid4()}", admin), 404, "not-found")
    problem(auth.call("GET", "/v1/admin/users/not-a-uuid", admin), 404, "not-found")

    # 409: same email (any case) or user name
    n = user_count(auth)
    problem(auth.call("POST", "/v1/admin/users", admin, json={
        "email": f"crud-{tag}@example.com", "username": f"other-{tag}", "password": PW}), 409, "already-exists")
    problem(auth.call("POST", "/v1/admin/users", admin, json={
        "email": f"other-{tag}@example.com", "username": f"crud-{tag}", "password": PW}), 409, "already-exists")
    assert user_count(auth) == n

    r = auth.call("PATCH", f"/v1/admin/users/{u['id']}", admin, json={"full_name": "New Name", "role": "admin"})
    assert r.status_code == 200 and r.json()["full_name"] == "New Name" and r.json()["role"] == "admin"
    problem(auth.call("PATCH", f"/v1/admin/users/{u['id']}", admin, json={"username": "admin"}), 409)

    # list: filters and paging
    lst = auth.call("GET", f"/v1/admin/users?q=CRUD-{tag}", admin).json()
    assert lst["total"] == 1 and lst["items"][0]["id"] == u["id"] and lst["limit"] == 50 and lst["offset"] == 0
    assert auth.call("GET", f"/v1/admin/users?q=crud-{tag}&role=user", admin).json()["total"] == 0
    assert auth.call("GET", f"/v1/admin/users?q=crud-{tag}&role=admin&status=active&domain=default",
                     admin).json()["total"] == 1
    total = auth.call("GET", "/v1/admin/users", admin).json()["total"]
    assert total == int(user_count(auth))
    page = auth.call("GET", "/v1/admin/users?limit=1&offset=1", admin).json()
    assert len(page["items"]) == 1 and page["total"] == total and page["limit"] == 1
    problem(auth.call("GET", "/v1/admin/users?limit=0", admin), 400)
    problem(auth.call("GET", "/v1/admin/users?limit=x", admin), 400)
    problem(auth.call("GET", "/v1/admin/users?role=king", admin), 400)

    # delete: status deleted, keypairs deactivated, KeypairRevoked
    ak = auth.sql(f"SELECT access_key FROM auth.keypairs WHERE user_id = '{u['id']}'")
    r = auth.call("DELETE", f"/v1/admin/users/{u['id']}", admin)
    assert r.status_code == 200 and r.json()["status"] == "deleted"
    c = auth.call("GET", f"/v1/credentials/{ak}").json()
    assert c["is_active"] is False and c["user"]["status"] == "deleted"
    wait_until(lambda: event_seen(stack, ak, "tessera.v1.KeypairRevoked", "user-deleted"), 20)
    problem(auth.call("DELETE", f"/v1/admin/users/{admin}", admin), 403, "forbidden")


@pytest.mark.parametrize("body", [
    "{not json",
    "[1, 2]",
    '"a string"',
    b'{"email": "x\xff\xfe@example.com", "username": "bad-utf8", "password": "12345678"}',
    {"email": 5, "username": "typed", "password": PW},
    {"email": "t@example.com", "username": ["x"], "password": PW},
    {"email": "t@example.com", "username": "typed", "password": 12345678},
    {"email": "t@example.com", "username": "x" * 65, "password": PW},
    {"email": "t@example.com", "username": "ok-name", "password": PW, "full_name": "y" * 65},
    {"email": "a" * 250 + "@example.com", "username": "long-email", "password": PW},
    {"email": "no-at-sign", "username": "no-at", "password": PW},
    {"email": "t@example.com", "username": "short-pw", "password": "1234567"},
    {"email": "t@example.com", "username": "bad-role", "password": PW, "role": "king"},
    {"email": "t@example.com", "username": "bad-status", "password": PW, "status": "deleted"},
    {"email": "t@example.com", "username": "unknown-field", "password": PW, "is_god": True},
    {"email": "t@example.com", "username": "no-domain", "password": PW, "domain_name": "nope"},
    {"email": "t@example.com", "username": "no-policy", "password": PW, "resource_policy": "nope"},
    {"email": "t@example.com", "username": "bad-projects", "password": PW, "projects": ["nope"]},
    {"email": "t@example.com", "username": "missing-project", "password": PW, "projects": [str(uuid.uuid4())]},
    {"email": "t@example.com", "username": "ctl\u0001char", "password": PW},
    {"username": "no-email", "password": PW},
])
def test_bad_user_input_is_400_and_changes_nothing(auth, admin, body):
    n = user_count(auth)
    if isinstance(body, (str, bytes)):
        r = auth.call("POST", "/v1/admin/users", admin, data=body)
    else:
        r = auth.call("POST", "/v1/admin/users", admin, json=body)
    problem(r, 400, "invalid-api-params")
    assert user_count(auth) == n


def test_long_and_non_ascii_names_are_fine(auth, admin):
    name = "é" * 64  # 64 characters, 128 bytes
    u = auth.create_user(admin, username=name, full_name="名前" * 32)
    assert u["username"] == name and u["full_name"] == "名前" * 32
    r = auth.call("PATCH", f"/v1/admin/users/{u['id']}", admin, json={"full_name": "x" * 65})
    problem(r, 400, "invalid-api-params")
    assert auth.call("GET", f"/v1/admin/users/{u['id']}", admin).json()["full_name"] == "名前" * 32
    problem(auth.call("PATCH", f"/v1/admin/users/{u['id']}", admin, data="[]"), 400)


def test_user_scoping(auth, admin):
    dom = "dom-" + uuid.uuid4().hex[:8]
    auth.sql(f"INSERT INTO auth.domains (name) VALUES ('{dom}')")
    da = auth.create_user(admin, role="admin", domain_name=dom)
    u_b = auth.create_user(admin, domain_name=dom)
    u_a = auth.create_user(admin)  # in default

    # domain admin: its domain only, never superadmins
    lst = auth.call("GET", "/v1/admin/users", da["id"]).json()
    assert {x["id"] for x in lst["items"]} == {da["id"], u_b["id"]} and lst["total"] == 2
    assert auth.call("GET", f"/v1/admin/users?domain=default", da["id"]).json()["total"] == 0
    problem(auth.call("GET", f"/v1/admin/users/{u_a['id']}", da["id"]), 404)
    problem(auth.call("GET", f"/v1/admin/users/{admin}", da["id"]), 404)
    assert auth.call("GET", f"/v1/admin/users/{u_b['id']}", da["id"]).status_code == 200
    n = user_count(auth)
    tag = uuid.uuid4().hex[:8]
    problem(auth.call("POST", "/v1/admin/users", da["id"], json={
        "email": f"s-{tag}@example.com", "username": f"s-{tag}", "password": PW, "role": "superadmin"}), 403)
    problem(auth.call("POST", "/v1/admin/users", da["id"], json={
        "email": f"d-{tag}@example.com", "username": f"d-{tag}", "password": PW, "domain_name": "default"}), 403)
    assert user_count(auth) == n
    r = auth.call("POST", "/v1/admin/users", da["id"], json={
        "email": f"ok-{tag}@example.com", "username": f"ok-{tag}", "password": PW})
    assert r.status_code == 201 and r.json()["domain_name"] == dom
    problem(auth.call("PATCH", f"/v1/admin/users/{u_b['id']}", da["id"], json={"role": "superadmin"}), 403)
    problem(auth.call("PATCH", f"/v1/admin/users/{u_b['id']}", da["id"], json={"domain_name": "default"}), 403)
    problem(auth.call("PATCH", f"/v1/admin/users/{u_a['id']}", da["id"], json={"full_name": "x"}), 404)
    problem(auth.call("DELETE", f"/v1/admin/users/{u_a['id']}", da["id"]), 404)
    assert auth.call("PATCH", f"/v1/admin/users/{u_b['id']}", da["id"], json={"status": "inactive"}).status_code == 200

    # user: only itself; own full_name and description only
    lst = auth.call("GET", "/v1/admin/users", u_a["id"]).json()
    assert [x["id"] for x in lst["items"]] == [u_a["id"]]
    problem(auth.call("GET", f"/v1/admin/users/{admin}", u_a["id"]), 404)
    r = auth.call("PATCH", f"/v1/admin/users/{u_a['id']}", u_a["id"], json={"full_name": "Me", "description": "d"})
    assert r.status_code == 200 and r.json()["full_name"] == "Me"
    for body in ({"role": "admin"}, {"status": "active"}, {"domain_name": dom}, {"email": "x@y.z"}):
        problem(auth.call("PATCH", f"/v1/admin/users/{u_a['id']}", u_a["id"], json=body), 403)
    problem(auth.call("POST", "/v1/admin/users", u_a["id"], json={
        "email": f"u-{tag}@example.com", "username": f"u-{tag}", "password": PW}), 403)
    problem(auth.call("DELETE", f"/v1/admin/users/{u_a['id']}", u_a["id"]), 403)
    problem(auth.call("GET", "/v1/admin/users"), 401, "auth-failed")
    # an inactive caller is refused
    problem(auth.call("GET", "/v1/admin/users", u_b["id"]), 401, "auth-failed")


# ---- keypairs ----------------------------------------------------------------

def test_keypairs_issue_list_patch_revoke(stack, auth, admin):
    u = auth.create_user(admin)
    r = auth.call("POST", "/v1/admin/keypairs", admin,
                  json={"user_id": u["id"], "rate_limit": 60, "resource_policy": "default"})
    assert r.status_code == 201, r.text
    kp = r.json()
    ak = kp["access_key"]
    assert re.fullmatch(r"[A-Z0-9]{20}", ak) and re.fullmatch(r"[A-Za-z0-9]{40}", kp["secret_key"])
    assert kp["user_id"] == u["id"] and kp["is_active"] and not kp["is_admin"] and kp["rate_limit"] == 60
    g = auth.call("GET", f"/v1/admin/keypairs/{ak}", admin).json()
    assert "secret_key" not in g and g["access_key"] == ak and g["revoked_at"] is None
    lst = auth.call("GET", f"/v1/admin/keypairs?user={u['id']}", admin).json()
    assert lst["total"] == 2 and ak in {x["access_key"] for x in lst["items"]}
    assert all("secret_key" not in x for x in lst["items"])
    problem(auth.call("GET", "/v1/admin/keypairs?user=nope", admin), 400)

    # the user sees its own keypairs, cannot issue, change or revoke
    mine = auth.call("GET", "/v1/admin/keypairs", u["id"]).json()
    assert mine["total"] == 2 and {x["user_id"] for x in mine["items"]} == {u["id"]}
    assert auth.call("GET", f"/v1/admin/keypairs/{ak}", u["id"]).status_code == 200
    problem(auth.call("GET", f"/v1/admin/keypairs/{stack['TESSERA_ADMIN_ACCESS_KEY']}", u["id"]), 404)
    problem(auth.call("POST", "/v1/admin/keypairs", u["id"], json={}), 403)
    problem(auth.call("DELETE", f"/v1/admin/keypairs/{ak}", u["id"]), 403)
    problem(auth.call("PATCH", f"/v1/admin/keypairs/{ak}", u["id"], json={"rate_limit": 5}), 403)

    # bad input changes nothing
    for body in ({"rate_limit": "10"}, {"rate_limit": -1}, {"is_active": "no"}, {"bogus": 1},
                 {"resource_policy": "nope"}, {"is_admin": True}):
        problem(auth.call("PATCH", f"/v1/admin/keypairs/{ak}", admin, json=body), 400)
    assert auth.call("GET", f"/v1/admin/keypairs/{ak}", admin).json() == g
    n = auth.sql("SELECT count(*) FROM auth.keypairs")
    for body in ({"user_id": "nope"}, {"user_id": u["id"], "is_admin": True}, {"user_id": u["id"], "rate_limit": 1.5}):
        problem(auth.call("POST", "/v1/admin/keypairs", admin, json=body), 400)
    problem(auth.call("POST", "/v1/admin/keypairs", admin, json={"user_id": str(uuid.uuid4())}), 404)
    assert auth.sql("SELECT count(*) FROM auth.keypairs") == n

    # a change: KeypairChanged; deactivation: KeypairRevoked
    r = auth.call("PATCH", f"/v1/admin/keypairs/{ak}", admin, json={"rate_limit": 120})
    assert r.status_code == 200 and r.json()["rate_limit"] == 120
    wait_until(lambda: event_seen(stack, ak, "tessera.v1.KeypairChanged"), 20)
    assert auth.call("GET", f"/v1/credentials/{ak}").json()["rate_limit"] == 120

    # revoke
    r = auth.call("DELETE", f"/v1/admin/keypairs/{ak}", admin)
    assert r.status_code == 200 and r.json()["is_active"] is False and r.json()["revoked_at"]
    c = auth.call("GET", f"/v1/credentials/{ak}").json()
    assert c["is_active"] is False
    wait_until(lambda: event_seen(stack, ak, "tessera.v1.KeypairRevoked", "deleted"), 20,
               message="KeypairRevoked on tessera.auth.v1")
    problem(auth.call("PATCH", f"/v1/admin/keypairs/{ak}", admin, json={"is_active": True}), 409)


def test_keypair_deactivate_and_domain_admin_scope(stack, auth, admin):
    dom = "kdom-" + uuid.uuid4().hex[:8]
    auth.sql(f"INSERT INTO auth.domains (name) VALUES ('{dom}')")
    da = auth.create_user(admin, role="admin", domain_name=dom)
    u_b = auth.create_user(admin, domain_name=dom)
    u_a = auth.create_user(admin)
    r = auth.call("POST", "/v1/admin/keypairs", da["id"], json={"user_id": u_b["id"]})
    assert r.status_code == 201
    ak = r.json()["access_key"]
    problem(auth.call("POST", "/v1/admin/keypairs", da["id"], json={"user_id": u_a["id"]}), 404)
    problem(auth.call("POST", "/v1/admin/keypairs", da["id"], json={"user_id": admin}), 404)
    problem(auth.call("GET", f"/v1/admin/keypairs/{stack['TESSERA_ADMIN_ACCESS_KEY']}", da["id"]), 404)
    problem(auth.call("DELETE", f"/v1/admin/keypairs/{stack['TESSERA_ADMIN_ACCESS_KEY']}", da["id"]), 404)
    lst = auth.call("GET", "/v1/admin/keypairs", da["id"]).json()
    assert {x["user_id"] for x in lst["items"]} == {da["id"], u_b["id"]}
    r = auth.call("PATCH", f"/v1/admin/keypairs/{ak}", da["id"], json={"is_active": False})
    assert r.status_code == 200 and r.json()["is_active"] is False and r.json()["revoked_at"] is None
    assert auth.call("GET", f"/v1/credentials/{ak}").json()["is_active"] is False
    wait_until(lambda: event_seen(stack, ak, "tessera.v1.KeypairRevoked", "deactivated"), 20)
    # deactivated (not revoked) comes back
    assert auth.call("PATCH", f"/v1/admin/keypairs/{ak}", da["id"], json={"is_active": True}).json()["is_active"]



def test_domain_project_member_and_rg_access_changes_are_published(stack, auth, admin):
    """Every change that alters a session context is announced on tessera.auth.v1
    (the registry's context cache drops entries on them): DomainChanged,
    ProjectChanged, ProjectMembersChanged, ResourceGroupAccessChanged; a
    request that changes nothing publishes nothing."""
    dom = "edom-" + uuid.uuid4().hex[:8]
    r = auth.call("POST", "/v1/admin/domains", admin, json={"name": dom})
    assert r.status_code == 201, r.text
    assert auth.call("PATCH", f"/v1/admin/domains/{dom}", admin,
                     json={"total_resource_slots": {"cpu": "4"}}).status_code == 200
    r = auth.call("POST", "/v1/admin/projects", admin, json={"name": "eproj", "domain_name": dom})
    assert r.status_code == 201, r.text
    pid = r.json()["id"]
    assert auth.call("PATCH", f"/v1/admin/projects/{pid}", admin,
                     json={"is_active": False}).status_code == 200
    u = auth.create_user(admin, domain_name=dom)
    for method in ("POST", "DELETE"):
        r = auth.call(method, f"/v1/admin/projects/{pid}/members", admin, json={"user_ids": [u["id"]]})
        assert r.status_code == 200, r.text
    # removing a non-member changes nothing: no event
    r = auth.call("DELETE", f"/v1/admin/projects/{pid}/members", admin, json={"user_ids": [u["id"]]})
    assert r.status_code == 200 and r.json()["removed"] == [], r.text
    rg = "erg-" + uuid.uuid4().hex[:8]
    grant = {"resource_group": rg, "scope_type": "project", "scope_id": pid}
    assert auth.call("POST", "/v1/admin/resource-group-access", admin, json=grant).status_code == 201
    assert auth.call("DELETE", "/v1/admin/resource-group-access", admin, json=grant).status_code == 200
    # a second revocation removes nothing: no event
    assert auth.call("DELETE", "/v1/admin/resource-group-access", admin,
                     json=grant).json()["removed"] is False
    assert auth.call("DELETE", f"/v1/admin/domains/{dom}", admin).status_code == 200

    def counts():
        seen = {}
        for k, v in kcat_events(stack):
            for t in ("DomainChanged", "ProjectChanged", "ProjectMembersChanged",
                      "ResourceGroupAccessChanged"):
                if b"tessera.v1." + t.encode() in v and k in (dom, pid, rg):
                    seen[(k, t)] = seen.get((k, t), 0) + 1
        return seen
    want = {(dom, "DomainChanged"): 3, (pid, "ProjectChanged"): 2,
            (pid, "ProjectMembersChanged"): 2, (rg, "ResourceGroupAccessChanged"): 2}
    wait_until(lambda: counts() == want, 20,
               message=f"domain/project/member/rg-access events {want}")
    # the member events name the user
    assert any(k == pid and b"ProjectMembersChanged" in v and u["id"].encode() in v
               for k, v in kcat_events(stack))

# ---- through the gateway -----------------------------------------------------

def test_last_used_from_access_log(stack, auth):
    """A signed request through the gateway produces an ApiAccess with the
    access key; auth stores it and updates keypairs.last_used."""
    c = Client(stack["TESSERA_GATEWAY_URL"], stack["TESSERA_ADMIN_ACCESS_KEY"], stack["TESSERA_ADMIN_SECRET_KEY"])
    r = c.get("/auth/test")
    assert r.status_code == 200, r.text
    ak = stack["TESSERA_ADMIN_ACCESS_KEY"]
    wait_until(lambda: auth.sql(f"SELECT last_used IS NOT NULL FROM auth.keypairs WHERE access_key = '{ak}'") == "t",
               30, message="keypairs.last_used set from the access log")


def test_gateway_authorize_and_admin_users(stack, auth):
    """The same endpoints through the gateway, which proxies them."""
    gw = stack["TESSERA_GATEWAY_URL"]
    r = requests.post(gw + "/auth/authorize", json={"type": "keypair", "domain": "default",
                                                     "username": stack["TESSERA_ADMIN_EMAIL"],
                                                     "password": stack["TESSERA_ADMIN_PASSWORD"]}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["data"]["access_key"] == stack["TESSERA_ADMIN_ACCESS_KEY"]
    c = Client(gw, stack["TESSERA_ADMIN_ACCESS_KEY"], stack["TESSERA_ADMIN_SECRET_KEY"])
    r = c.get("/admin/users", params={"role": "superadmin"})
    assert r.status_code == 200, r.text
    assert r.json()["total"] == 1 and r.json()["items"][0]["email"] == stack["TESSERA_ADMIN_EMAIL"]
    r = c.get("/auth/role")
    assert r.status_code == 200 and r.json()["global_role"] == "superadmin"


# ---- user look-up (tessera-vfolder's) ------------------------------------------------------------

def test_user_lookup_by_email_and_id(stack, auth, admin):
    u = auth.create_user(admin)
    keys = stack["TESSERA_SERVICE_KEYS_DIR"]

    def lookup(params, service="vfolder"):
        return svc_signer.call(keys, service, "GET", auth.url + "/v1/user-lookup", params=params, timeout=10)

    by_email = lookup({"email": u["email"].upper()})
    assert by_email.status_code == 200, by_email.text
    by_id = lookup({"id": u["id"]})
    assert by_id.status_code == 200, by_id.text
    assert by_id.json() == by_email.json()
    assert by_id.json()["id"] == u["id"] and by_id.json()["role"] == "user"
    assert lookup({"id": admin}).json()["role"] == "superadmin"
    problem(lookup({"id": str(uuid.uuid4())}), 404, "not-found")
    problem(lookup({"email": "nobody-" + uuid.uuid4().hex + "@example.com"}), 404, "not-found")
    problem(lookup({"id": "not-a-uuid"}), 400, "invalid-api-params")
    problem(lookup({"id": u["id"], "email": u["email"]}), 400, "invalid-api-params")
    problem(lookup({}), 400, "invalid-api-params")
    # only tessera-vfolder may look users up
    problem(lookup({"id": u["id"]}, service="gateway"), 403, "forbidden")
    problem(lookup({"id": u["id"]}, service="registry"), 403, "forbidden")
