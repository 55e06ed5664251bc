"""The console's session mode (docs/console.md "Logging in"), black-box: the
password login and its cookie, /func/<API path> run as the login's keypair,
and every way a request without a good login is refused with nothing done
(no cookie, a forged one, one after logout or after the keypair was revoked,
no or another user's CSRF token, another origin, another site), logout
everywhere, the lockout kept, bad input, and the console's static files."""
import os
import uuid

import pytest
import requests

import bai_signer
from conftest import wait_until

PASSWORD = "console-pass-1234"


def fresh(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def gw(stack):
    return stack["TESSERA_GATEWAY_URL"]


@pytest.fixture(scope="module")
def su(stack, gw):
    return bai_signer.Client(gw, stack["TESSERA_ADMIN_ACCESS_KEY"], stack["TESSERA_ADMIN_SECRET_KEY"])


def new_user(su, gw):
    """A user with a password and a keypair: (email, signed client, user id)."""
    name = fresh("console")
    r = su.post("/admin/users", {"email": f"{name}@example.com", "username": name,
                                 "password": PASSWORD, "role": "user"})
    assert r.status_code in (200, 201), r.text
    uid = r.json()["id"]
    # The user's first keypair (made with it) is swapped for one whose secret
    # the test knows: the login then names that one.
    for old in su.get("/admin/keypairs", params={"user": uid}).json()["items"]:
        assert su.delete(f"/admin/keypairs/{old['access_key']}").status_code in (200, 204)
    k = su.post("/admin/keypairs", {"user_id": uid})
    assert k.status_code in (200, 201), k.text
    return f"{name}@example.com", bai_signer.Client(gw, k.json()["access_key"], k.json()["secret_key"]), uid


class Browser:
    """A logged-in browser: its cookie jar and CSRF token."""

    def __init__(self, gw, username, password=PASSWORD, headers=None):
        self.gw = gw
        self.s = requests.Session()
        self.login = self.s.post(f"{gw}/server/login", json={"username": username, "password": password},
                                 headers=headers or {}, timeout=10)
        self.csrf = self.login.json().get("csrf_token") if self.login.status_code == 200 else None

    def func(self, method, path, csrf=True, headers=None, **kw):
        h = {"X-CSRF-Token": self.csrf} if csrf and self.csrf else {}
        h.update(headers or {})
        return self.s.request(method, f"{self.gw}/func{path}", headers=h, timeout=15, **kw)


@pytest.fixture(scope="module")
def alice(su, gw):
    return new_user(su, gw)


@pytest.fixture(scope="module")
def bob(su, gw):
    return new_user(su, gw)


def folder_names(client):
    r = client.get("/folders")
    assert r.status_code == 200, r.text
    return {f["name"] for f in r.json()}


def test_login_sets_a_strict_httponly_cookie_and_no_secret(gw, alice):
    b = Browser(gw, alice[0])
    assert b.login.status_code == 200, b.login.text
    body = b.login.json()
    assert body["authenticated"] is True
    assert body["data"]["access_key"] == alice[1].access_key
    assert body["data"]["user_id"] == alice[2]
    assert body["data"]["username"] == alice[0]
    assert "secret_key" not in b.login.text and alice[1].secret_key not in b.login.text
    cookie = b.login.headers["Set-Cookie"]
    assert cookie.startswith("tessera_sid=")
    for flag in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert flag in cookie
    assert "Secure" not in cookie  # plain HTTP
    assert len(body["csrf_token"]) == 43
    # Behind a TLS-terminating proxy the cookie is Secure.
    tls = Browser(gw, alice[0], headers={"X-Forwarded-Proto": "https"})
    assert "; Secure" in tls.login.headers["Set-Cookie"]


def test_wrong_password_is_401_without_a_cookie(gw, alice):
    b = Browser(gw, alice[0], password="not-the-password")
    assert b.login.status_code == 401
    assert b.login.headers["Content-Type"] == "application/problem+json"
    assert "Set-Cookie" not in b.login.headers
    assert "password" in b.login.json()["msg"]


def test_func_runs_as_the_logins_keypair(gw, alice):
    b = Browser(gw, alice[0])
    name = fresh("cf")
    r = b.func("POST", "/folders", json={"name": name})
    assert r.status_code == 201, r.text
    assert name in folder_names(alice[1])  # the same user's signed view
    r = b.func("GET", "/folders")
    assert r.status_code == 200 and name in {f["name"] for f in r.json()}
    r = b.func("GET", "/auth/role")
    assert r.status_code == 200 and r.json()["global_role"] == "user"
    check = b.s.post(f"{gw}/server/login-check", headers={"Origin": gw}, timeout=10).json()
    assert check["authenticated"] is True and check["csrf_token"] == b.csrf
    assert check["data"]["user_id"] == alice[2]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_login_check_hands_the_csrf_token_only_to_the_consoles_page(gw, alice, method):
    """The cookie alone (a script that got hold of it: no Origin, no
    Sec-Fetch-Site) learns that the login is live but not its CSRF token;
    the console's page (its own Origin, or Sec-Fetch-Site: same-origin as
    browsers send on same-origin requests) gets it."""
    b = Browser(gw, alice[0])
    assert b.csrf
    for headers in ({}, {"Sec-Fetch-Site": "none"}, {"X-BackendAI-Version": "v8.20240915"},
                    {"Referer": gw + "/console/"}):
        check = b.s.request(method, f"{gw}/server/login-check", headers=headers, timeout=10)
        assert check.status_code == 200, check.text
        assert check.json()["authenticated"] is True, check.text
        assert "csrf_token" not in check.json() and b.csrf not in check.text, (headers, check.text)
    for headers in ({"Origin": gw}, {"Sec-Fetch-Site": "same-origin"},
                    {"Origin": gw, "Sec-Fetch-Site": "same-origin"}):
        check = b.s.request(method, f"{gw}/server/login-check", headers=headers, timeout=10)
        assert check.json()["csrf_token"] == b.csrf, (headers, check.text)
    # another site's page: refused outright, as before
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "same-site"},
                    {"Sec-Fetch-Site": "cross-site"}):
        check = b.s.request(method, f"{gw}/server/login-check", headers=headers, timeout=10)
        assert check.status_code == 403 and b.csrf not in check.text, (headers, check.text)


@pytest.mark.parametrize("how", ["no-cookie", "forged-cookie", "no-csrf", "wrong-csrf",
                                 "other-users-csrf", "other-origin", "null-origin", "cross-site",
                                 "after-logout"])
def test_refused_and_nothing_changed(gw, alice, bob, how):
    b = Browser(gw, alice[0])
    name = fresh("refused")
    kw = {}
    if how == "no-cookie":
        b.s.cookies.clear()
    elif how == "forged-cookie":
        b.s.cookies.clear()
        b.s.cookies.set("tessera_sid", "A" * 43)
    elif how == "no-csrf":
        kw["csrf"] = False
    elif how == "wrong-csrf":
        b.csrf = "B" * 43
    elif how == "other-users-csrf":
        b.csrf = Browser(gw, bob[0]).csrf
    elif how == "other-origin":
        kw["headers"] = {"Origin": "http://evil.example:8080"}
    elif how == "null-origin":
        kw["headers"] = {"Origin": "null"}
    elif how == "cross-site":
        kw["headers"] = {"Sec-Fetch-Site": "cross-site"}
    elif how == "after-logout":
        out = b.s.post(f"{gw}/server/logout", headers={"X-CSRF-Token": b.csrf}, timeout=10)
        assert out.status_code == 200 and out.json() == {"authenticated": False}
        assert "Max-Age=0" in out.headers["Set-Cookie"]
        b.s.cookies.set("tessera_sid", b.login.cookies["tessera_sid"])  # a browser that kept it
    r = b.func("POST", "/folders", json={"name": name}, **kw)
    want = 401 if how in ("no-cookie", "forged-cookie", "after-logout") else 403
    assert r.status_code == want, r.text
    assert r.headers["Content-Type"] == "application/problem+json"
    assert name not in folder_names(alice[1])
    assert name not in folder_names(bob[1])


BAI = {"X-BackendAI-Version": "v8.20240915"}


def test_backendai_clients_in_session_mode(gw, alice):
    """Backend.AI's SDK in session mode posts /server/login-check and sends no
    CSRF token, but always X-BackendAI-Version: that custom header stands in
    for the token (a page of another site cannot send it)."""
    b = Browser(gw, alice[0])
    check = b.s.post(f"{gw}/server/login-check", headers=BAI, timeout=10)
    assert check.status_code == 200 and check.json()["authenticated"] is True, check.text
    name = fresh("sdk")
    r = b.func("POST", "/folders", csrf=False, headers=BAI, json={"name": name})
    assert r.status_code == 201, r.text
    assert name in folder_names(alice[1])


@pytest.mark.parametrize("how", ["wrong-csrf", "other-origin", "cross-site", "no-cookie"])
def test_the_backendai_header_is_no_way_around_the_other_checks(gw, alice, how):
    b = Browser(gw, alice[0])
    headers = dict(BAI)
    csrf = False
    if how == "wrong-csrf":
        b.csrf, csrf = "B" * 43, True
    elif how == "other-origin":
        headers["Origin"] = "http://evil.example:8080"
    elif how == "cross-site":
        headers["Sec-Fetch-Site"] = "cross-site"
    elif how == "no-cookie":
        b.s.cookies.clear()
    name = fresh("sdk-refused")
    r = b.func("POST", "/folders", csrf=csrf, headers=headers, json={"name": name})
    assert r.status_code == (401 if how == "no-cookie" else 403), r.text
    assert name not in folder_names(alice[1])


def test_the_session_is_the_users_own(gw, alice, bob):
    """Alice's login sees Alice's folders only, whatever path she names."""
    bobs = fresh("bobs")
    assert bob[1].post("/folders", {"name": bobs}).status_code == 201
    b = Browser(gw, alice[0])
    r = b.func("GET", "/folders")
    assert bobs not in {f["name"] for f in r.json()}
    r = b.func("DELETE", f"/folders/{bobs}")
    assert r.status_code in (403, 404), r.text
    assert bobs in folder_names(bob[1])
    r = b.func("GET", "/admin/users")  # a user sees only their own record
    assert r.status_code == 200 and [u["id"] for u in r.json()["items"]] == [alice[2]], r.text
    r = b.func("GET", f"/admin/users/{bob[2]}")
    assert r.status_code in (403, 404), r.text


def test_revoking_the_keypair_ends_the_browser_session(su, gw):
    email, client, _uid = new_user(su, gw)
    b = Browser(gw, email)
    assert b.func("GET", "/folders").status_code == 200
    r = su.delete(f"/admin/keypairs/{client.access_key}")
    assert r.status_code in (200, 204), r.text
    # The revocation reaches the gateway's cache within a second (tessera.auth.v1).
    wait_until(lambda: b.func("GET", "/folders").status_code == 401
               and not b.s.get(f"{gw}/server/login-check", timeout=10).json()["authenticated"],
               timeout=10, message="the browser session to end")
    r = b.func("GET", "/folders")
    assert r.status_code == 401 and "log in" in r.json()["msg"], r.text


def test_logout_everywhere_ends_every_login_of_the_user(su, gw, alice):
    email, _client, _uid = new_user(su, gw)
    one, two, other = Browser(gw, email), Browser(gw, email), Browser(gw, alice[0])
    assert two.func("GET", "/folders").status_code == 200
    r = one.s.post(f"{gw}/server/logout", json={"everywhere": True},
                   headers={"X-CSRF-Token": one.csrf}, timeout=10)
    assert r.status_code == 200, r.text
    assert one.func("GET", "/folders").status_code == 401
    assert two.func("GET", "/folders").status_code == 401
    assert other.func("GET", "/folders").status_code == 200  # another user's login lives on


def test_logout_needs_the_csrf_token(gw, alice):
    b = Browser(gw, alice[0])
    r = b.s.post(f"{gw}/server/logout", timeout=10)
    assert r.status_code == 403
    assert b.func("GET", "/folders").status_code == 200  # still logged in
    assert requests.post(f"{gw}/server/logout", timeout=10).status_code == 401


def test_lockout_is_kept(su, gw):
    email, _client, _uid = new_user(su, gw)
    codes = [Browser(gw, email, password="wrong-one").login.status_code for _ in range(6)]
    assert codes[0] == 401 and codes[-1] == 429, codes
    locked = Browser(gw, email)  # the right password, while locked
    assert locked.login.status_code == 429
    assert "Retry-After" in locked.login.headers


def test_login_check_without_a_login(gw):
    r = requests.get(f"{gw}/server/login-check", timeout=10)
    assert r.status_code == 200 and r.json() == {"authenticated": False}
    r = requests.get(f"{gw}/server/login-check", cookies={"tessera_sid": "x" * 43}, timeout=10)
    assert r.json() == {"authenticated": False}


@pytest.mark.parametrize("body,ctype", [
    (b"username=a&password=b", "application/x-www-form-urlencoded"),  # a cross-site form post
    (b"{not json", "application/json"),
    (b'{"username": "a"}', "application/json"),
    (b'{"username": 5, "password": "x"}', "application/json"),
    (b'{"username": "", "password": "x"}', "application/json"),
    (('{"username": "%s", "password": "x"}' % ("u" * 300)).encode(), "application/json"),
    (b'[1, 2]', "application/json"),
])
def test_login_bad_input_is_a_prompt_400(gw, body, ctype):
    r = requests.post(f"{gw}/server/login", data=body, headers={"Content-Type": ctype}, timeout=10)
    assert r.status_code == 400, r.text
    assert r.headers["Content-Type"] == "application/problem+json"
    assert "Set-Cookie" not in r.headers


def test_login_from_another_origin_is_refused(gw, alice):
    b = Browser(gw, alice[0], headers={"Origin": "http://evil.example"})
    assert b.login.status_code == 403
    assert "Set-Cookie" not in b.login.headers


def test_logout_bad_body(gw, alice):
    b = Browser(gw, alice[0])
    r = b.s.post(f"{gw}/server/logout", data=b'{"everywhere": "yes"}',
                 headers={"X-CSRF-Token": b.csrf, "Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 400
    assert b.func("GET", "/folders").status_code == 200


def test_signed_clients_are_unaffected_by_func(gw, alice):
    """/func needs a login: a signature alone does not pass there."""
    r = alice[1].get("/func/folders")
    assert r.status_code == 401
    assert alice[1].get("/folders").status_code == 200


def test_root_redirects_browsers_and_answers_api_clients(gw):
    r = requests.get(f"{gw}/", headers={"Accept": "text/html,application/xhtml+xml"},
                     allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"] == "/console/"
    r = requests.get(f"{gw}/", timeout=10)
    assert r.status_code == 200 and r.json()["version"].startswith("v")
    r = requests.get(f"{gw}/", headers={"Accept": "application/json"}, timeout=10)
    assert r.status_code == 200


def test_console_files_are_served_confined(gw):
    built = os.path.exists(os.path.join(os.path.dirname(__file__), "..", "..", "build", "console",
                                        "index.html"))
    r = requests.get(f"{gw}/console", allow_redirects=False, timeout=10)
    assert r.status_code == 302 and r.headers["Location"] == "/console/"
    r = requests.get(f"{gw}/console/", timeout=10)
    assert "default-src 'self'" in r.headers["Content-Security-Policy"]
    assert r.headers["X-Frame-Options"] == "DENY"
    if built:
        assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
        assert "<html" in r.text.lower()
    else:
        assert r.status_code == 404 and "console" in r.json()["msg"]
    for bad in ("/console/../bin/tessera-gateway", "/console/%2e%2e/bin/tessera-gateway",
                "/console/.hidden", "/console/nope.js", "/console/a/b/c/d/e/f"):
        r = requests.get(gw + bad, timeout=10)
        assert r.status_code == 404, (bad, r.status_code)
