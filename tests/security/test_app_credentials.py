"""A tenant's app and the platform's credentials (security suite;
docs/security.md, "Apps and the console").

The story checked (issue 30): a superadmin, logged in to the console, opens
a tenant's app; the app is a CGI script that prints every header it gets
(busybox httpd in a session of tenant b, on the image's echo:http:8080).
Before, the app was served on the console's host name (another port; cookies
ignore ports), so the superadmin's browser sent it the console's login
cookie, and that cookie alone got the CSRF token from /server/login-check.

- the app's link is on another origin (and host name) than the console's,
  so a browser's cookie jar does not send the console's login to it;
- sent on purpose, no platform credential reaches the app through
  tessera-wsproxy (by token, then by cookie): not tessera_sid, sToken or any
  tessera_* cookie, not Authorization (the superadmin's own signature),
  Proxy-Authorization, X-BackendAI-* or X-Tessera-*; the app's own cookie
  and headers do;
- the gateway's streams into the session (httpproxy, tcpproxy; signed and
  through the console's session mode) pass none of their upgrade's
  credentials: the app sees only the bytes the client put in the tunnel;
- a link's redirect (the token taken out) never leaves the app's origin;
- the console's cookie alone (no Origin, no Sec-Fetch-Site: a script
  replaying it) gets no CSRF token from /server/login-check.

Run: sh tools/run-security.sh tests/security/test_app_credentials.py
"""
import socket
import urllib.parse

import pytest
import requests

import bai_signer
import seclib
import wsclient
from conftest import note, parse_env_file, wait_until

CGI = "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nenv\n"
BOOTSTRAP = ("mkdir -p /tmp/www/cgi-bin && printf '%s' " + seclib.sh_quote(CGI)
             + " > /tmp/www/cgi-bin/env && chmod 755 /tmp/www/cgi-bin/env"
             " && busybox httpd -p 8080 -h /tmp/www")
PLATFORM_ENV = ("HTTP_AUTHORIZATION", "HTTP_PROXY_AUTHORIZATION", "HTTP_X_BACKENDAI_",
                "HTTP_X_TESSERA_")


class App:
    """Tenant b's session with the recording app; the superadmin's console
    login (a browser's cookie jar); tenant b's console login."""


def _console_login(gw, email, password, domain=None):
    jar = requests.Session()
    body = {"username": email, "password": password}
    if domain:
        body["domain"] = domain
    r = jar.post(f"{gw}/server/login", json=body, headers={"Origin": gw}, timeout=15)
    assert r.status_code == 200, f"console login of {email}: {r.status_code} {r.text[:300]}"
    jar.csrf = r.json()["csrf_token"]
    return jar


@pytest.fixture(scope="module")
def app(stack, admin, tenants, probe_image):
    a = App()
    a.gw = stack["TESSERA_GATEWAY_URL"]
    a.admin = admin
    env = dict(stack)
    creds = f"{stack['TESSERA_STATE_DIR']}/auth/admin-credentials"
    if "TESSERA_ADMIN_PASSWORD" not in env:
        env.update(parse_env_file(creds))
    a.tenant = tenants.b
    name = f"sec-cgi-{seclib.TAG}"
    got = seclib.create_sessions(probe_image, [(a.tenant, name, {"bootstrap_script": BOOTSTRAP})])
    if isinstance(got[name], Exception):
        pytest.fail(f"the app's session: {got[name]}", pytrace=False)
    a.session = got[name]
    c = a.tenant.client
    r = wait_until(lambda: (lambda x: x if x.status_code != 409 else None)(
        c.post(f"/session/{name}/start-service", {"app": "echo"}, timeout=40)),
        timeout=30, message="the CGI app to listen")
    assert r.status_code == 200, r.text
    a.link = r.json()
    a.token = a.link["token"]
    a.su_browser = _console_login(a.gw, env["TESSERA_ADMIN_EMAIL"], env["TESSERA_ADMIN_PASSWORD"])
    a.tenant_browser = _console_login(a.gw, a.tenant.user["email"], seclib.PASSWORD,
                                      a.tenant.user["domain_name"])
    yield a
    c.delete(f"/session/{name}")


def cgi_env(text):
    """The HTTP_* variables of the CGI's env output."""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep and k.startswith("HTTP_"):
            out[k] = v
    return out


def assert_clean(seen, want_cookie="myapp=1"):
    leaked = [k for k in seen if k.startswith(PLATFORM_ENV)]
    assert not leaked, f"the app received {leaked}: {seen}"
    cookie = seen.get("HTTP_COOKIE", "")
    for name in ("tessera_sid", "sToken", "tessera_app_", "tessera_"):
        assert name not in cookie, f"the app received the cookie {name}: {cookie!r}"
    if want_cookie is not None:
        assert cookie == want_cookie, seen
        assert seen.get("HTTP_X_APP_OWN") == "kept", seen


def _app_url(a, path, token=True):
    return a.link["wsproxy_addr"] + path + (f"?token={a.token}" if token else "")


def test_the_app_is_not_on_the_consoles_origin(request, app):
    gw, url = urllib.parse.urlsplit(app.gw), urllib.parse.urlsplit(app.link["url"])
    assert url.hostname != gw.hostname, (app.link["url"], app.gw)
    # a cookie jar (a browser's rules: host, not port) holds the console's
    # login for the gateway's host name only
    for c in app.su_browser.cookies:
        assert not url.hostname.endswith(c.domain.lstrip(".")) or c.domain == "", c
    note(request, f"app at {url.hostname}, console at {gw.hostname}")


def test_the_admins_browser_gives_the_app_no_console_login(request, app):
    # the browser opens the link: 302 without the token, the app cookie, then the app
    r = wait_until(lambda: (lambda x: x if x.status_code == 200 and "HTTP_HOST" in x.text else None)(
        app.su_browser.get(_app_url(app, "/cgi-bin/env"), headers={"Accept": "text/html"}, timeout=15)),
        timeout=20, message="the CGI app through wsproxy")
    assert r.history and r.history[0].status_code == 302, r.history
    seen = cgi_env(r.text)
    assert_clean(seen, want_cookie=None)
    assert "tessera_sid" not in r.text, r.text
    note(request, f"the app got cookies {seen.get('HTTP_COOKIE', '')!r}")


@pytest.mark.parametrize("phase", ["token", "cookie"])
def test_wsproxy_passes_no_platform_credential(request, app, phase):
    sid = app.su_browser.cookies["tessera_sid"]
    url = _app_url(app, "/cgi-bin/env")
    h = bai_signer.signed_headers(app.admin.access_key, app.admin.secret_key, "GET", url)
    h.update({"Proxy-Authorization": "Basic cGxhdGZvcm06c2VjcmV0",
              "X-Tessera-Caller": app.admin.access_key, "X-Tessera-Service-Auth": "v1 gateway x",
              "X-App-Own": "kept",
              "Cookie": f"tessera_sid={sid}; sToken=sso-token; tessera_other=1; myapp=1"})
    r = requests.get(url, headers=h, timeout=15)
    assert r.status_code == 200, r.text[:300]
    if phase == "cookie":
        name = [c for c in r.cookies if c.name.startswith("tessera_app_")][0]
        h["Cookie"] += f"; {name.name}={name.value}"
        r = requests.get(_app_url(app, "/cgi-bin/env", token=False), headers=h, timeout=15)
        assert r.status_code == 200, r.text[:300]
    assert_clean(cgi_env(r.text))
    assert sid not in r.text and app.admin.access_key not in r.text
    note(request, "tessera_sid, sToken, Authorization, X-BackendAI-*, X-Tessera-* taken out")


@pytest.mark.parametrize("route", ["httpproxy", "tcpproxy"])
@pytest.mark.parametrize("mode", ["signed", "console"])
def test_gateway_streams_pass_no_platform_credential(request, app, route, mode):
    # by id: the console's login may run as another keypair of the tenant
    # (names are per keypair)
    path = f"/stream/session/{app.session.id}/{route}?app=echo"
    sid = app.tenant_browser.cookies["tessera_sid"]
    cookie = f"tessera_sid={sid}; sToken=sso-token; myapp=1"
    if mode == "signed":
        s, st, head, rest = wsclient.open_signed(app.tenant.client, path, {
            "Cookie": cookie, "X-Tessera-Caller": "00000000-0000-0000-0000-000000000001"})
    else:
        s, st, head, rest = wsclient.open_ws(app.gw + "/func" + path, {
            "Cookie": cookie, "Origin": app.gw})
    assert st == 101, head
    try:
        wsclient.send_binary(s, b"GET /cgi-bin/env HTTP/1.0\r\nHost: app\r\nCookie: myapp=1\r\n"
                                b"X-App-Own: kept\r\n\r\n")
        got = b""
        s.settimeout(15)
        for op, payload in wsclient.frames(s, rest):
            if op is None or op == wsclient.CLOSE:
                break
            got += payload
    finally:
        s.close()
    assert got.startswith(b"HTTP/1.0 200") or got.startswith(b"HTTP/1.1 200"), got[:300]
    text = got.decode(errors="replace")
    assert_clean(cgi_env(text))
    assert sid not in text
    note(request, "the app saw only the tunnel's own request")


@pytest.mark.parametrize("target", ["//evil.example/", "/\\evil.example/", "/%2F%2Fevil.example/",
                                    "///evil.example/", "/\\/evil.example/"])
def test_the_links_redirect_stays_on_the_apps_origin(request, app, target):
    """A link with one's own token, crafted to send whoever opens it
    elsewhere once wsproxy took the token out (was: Location //evil.example/)."""
    base = urllib.parse.urlsplit(app.link["url"])
    # as sent (a client library would encode the backslash)
    with socket.create_connection((base.hostname, base.port), timeout=15) as s:
        s.sendall(f"GET {target}?token={app.token} HTTP/1.1\r\nHost: {base.netloc}\r\n"
                  "Accept: text/html\r\nConnection: close\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(65536)
            if not chunk:
                break
            head += chunk
    lines = head.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 302"), lines
    loc = [v.strip() for k, _, v in (x.partition(":") for x in lines[1:]) if k.lower() == "location"][0]
    url = f"{base.scheme}://{base.netloc}/x"
    where = urllib.parse.urlsplit(urllib.parse.urljoin(url, loc.replace("\\", "/")))
    assert loc.startswith("/") and not loc.startswith(("//", "/\\")), loc
    assert where.netloc == base.netloc and "token=" not in loc, loc
    note(request, f"Location: {loc}")


def test_a_stolen_console_cookie_alone_gets_no_csrf_token(request, app):
    sid = app.su_browser.cookies["tessera_sid"]
    thief = requests.Session()
    thief.cookies.set("tessera_sid", sid)
    for method in ("GET", "POST"):
        r = thief.request(method, f"{app.gw}/server/login-check", timeout=15)
        assert r.status_code == 200 and r.json()["authenticated"] is True, r.text
        assert "csrf_token" not in r.json() and app.su_browser.csrf not in r.text, r.text
    # without the token the console's API refuses the cookie
    r = thief.post(f"{app.gw}/func/folders", json={"name": f"stolen-{seclib.TAG}"}, timeout=15)
    assert r.status_code == 403, r.text
    # the superadmin's own page still gets it
    r = app.su_browser.post(f"{app.gw}/server/login-check", headers={"Origin": app.gw}, timeout=15)
    assert r.json()["csrf_token"] == app.su_browser.csrf
    note(request, "login-check without the console's Origin: no csrf_token")
