"""What a tenant's app may not get from tessera-wsproxy (docs/wsproxy.md,
"What reaches the app"; docs/security.md, "Apps and the console"), on the
two wsproxy instances of test_wsproxy.py (one in shared mode, turned on with
wsproxy.shared_origin, one in subdomain mode) and its recording HTTP app
(it answers each GET with the headers it received):

- no platform credential reaches the app: the console's cookie
  (tessera_sid), the single sign-on cookie (sToken), any tessera_* cookie,
  Authorization, Proxy-Authorization, X-BackendAI-* and X-Tessera-*
  headers are taken out, by token and by cookie, while the app's own
  cookie (myapp=1) and headers arrive;
- a browser's redirect after the token never leaves wsproxy's own origin
  (//evil.example/, /\\evil.example/, encoded slashes, ...);
- in subdomain mode an HTTP app is served only at its own host name;
- an app's response cannot set the platform's cookies (tessera_*, sToken);
- without wsproxy.shared_origin a public URL without '*' is refused at
  start, and an empty one means per-app hosts under apps.localhost."""

import os
import socket
import subprocess
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from conftest import BIN_DIR
from test_wsproxy import env, new_session  # noqa: F401 - the module's fixture

PLATFORM_HEADERS = {
    "Authorization": "BackendAI signMethod=HMAC-SHA256, credential=AKIAPLATFORMKEY00000:c2ln",
    "Proxy-Authorization": "Basic cGxhdGZvcm06c2VjcmV0",
    "X-BackendAI-Version": "v8.20240915",
    "X-BackendAI-Date": "2026-01-01T00:00:00+00:00",
    "X-BackendAI-Session": "x",
    "X-Tessera-Caller": "00000000-0000-0000-0000-000000000001",
    "X-Tessera-Caller-Access-Key": "AKIAPLATFORMKEY00000",
    "X-Tessera-Service-Auth": "v1 gateway 1700000000000 nonce sig",
}
PLATFORM_COOKIES = "tessera_sid=" + "S" * 43 + "; sToken=sso-secret; tessera_future=x"


def seen_by_app(resp):
    """The headers the recording app received (lower-case names)."""
    assert resp.status_code == 200, (resp.status_code, resp.text[:300])
    return resp.json()["headers"]


def assert_no_platform_credential(seen):
    leaked = [h for h in seen if h in {k.lower() for k in PLATFORM_HEADERS}
              or h.startswith("x-backendai-") or h.startswith("x-tessera-")]
    assert not leaked, f"the app received {leaked}: {seen}"
    cookie = seen.get("cookie", "")
    for name in ("tessera_sid", "sToken", "tessera_future", "tessera_app_"):
        assert name not in cookie, f"the app received the cookie {name}: {cookie!r}"
    assert cookie == "myapp=1", seen
    assert seen.get("x-app-own") == "kept", seen


def _host_of(px, r, mode):
    return f"{r['app_hash']}.apps.localhost:{px.port}" if mode == "sub" else f"127.0.0.1:{px.port}"


@pytest.mark.parametrize("mode", ["shared", "sub"])
def test_platform_credentials_never_reach_the_app(env, mode):  # noqa: F811
    px = env[mode]
    r = px.route(new_session(), target=env["http"])
    base = f"http://127.0.0.1:{px.port}"
    host = _host_of(px, r, mode)
    token = r["url"].split("token=")[1]
    headers = dict(PLATFORM_HEADERS, Host=host, Cookie=PLATFORM_COOKIES + "; myapp=1")
    headers["X-App-Own"] = "kept"
    # the token phase: an API client (no text/html) is proxied at once
    first = requests.get(f"{base}/echo?token={token}", headers=headers, timeout=5)
    assert_no_platform_credential(seen_by_app(first))
    app_cookie = first.cookies[r["cookie_name"]]
    # the cookie phase: the app cookie among the platform's
    headers["Cookie"] = f"{PLATFORM_COOKIES}; {r['cookie_name']}={app_cookie}; myapp=1"
    later = requests.get(f"{base}/echo", headers=headers, timeout=5)
    assert_no_platform_credential(seen_by_app(later))
    # several Cookie fields (as an HTTP/2 front may send them) are each cleaned
    raw = (f"GET /echo HTTP/1.1\r\nHost: {host}\r\nCookie: {PLATFORM_COOKIES}\r\n"
           f"Cookie: {r['cookie_name']}={app_cookie}\r\nCookie: myapp=1\r\n"
           "authorization: Bearer whatever\r\nX-App-Own: kept\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", px.port), timeout=5) as s:
        s.sendall(raw.encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    import json
    assert_no_platform_credential(json.loads(body)["headers"])


OFFSITE_TARGETS = [
    "//evil.example/",
    "//evil.example/a?b=c",
    "/\\evil.example/",
    "/\\/evil.example/",
    "\\\\evil.example/",
    "///evil.example/",
    "/%2F%2Fevil.example/",
    "/%5C%5Cevil.example/",
    "/%2f/evil.example/",
    "/./\\evil.example/",
    "/https://evil.example/",
    "/http:evil.example",
]


def _offsite(location, host):
    """Whether a browser at http://host/ would leave host for location
    (browsers read a backslash as a slash in http URLs)."""
    loc = location.replace("\\", "/")
    u = urllib.parse.urlsplit(urllib.parse.urljoin(f"http://{host}/x/y", loc))
    return u.netloc != host or u.scheme != "http"


@pytest.mark.parametrize("mode", ["shared", "sub"])
@pytest.mark.parametrize("target", OFFSITE_TARGETS)
def test_the_redirect_after_a_token_stays_on_wsproxy(env, mode, target):  # noqa: F811
    px = env[mode]
    r = px.route(new_session(), target=env["http"])
    host = _host_of(px, r, mode)
    token = r["url"].split("token=")[1]
    sep = "&" if "?" in target else "?"
    req = (f"GET {target}{sep}token={token} HTTP/1.1\r\nHost: {host}\r\n"
           "Accept: text/html,application/xhtml+xml\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", px.port), timeout=5) as s:
        s.sendall(req.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            b = s.recv(65536)
            if not b:
                break
            data += b
    head = data.partition(b"\r\n\r\n")[0].decode("latin-1")
    status = int(head.split(" ")[1]) if head.startswith("HTTP/1.1 ") else 0
    loc = [line.split(":", 1)[1].strip() for line in head.split("\r\n")[1:]
           if line.lower().startswith("location:")]
    if status == 302:
        assert loc and loc[0].startswith("/") and not _offsite(loc[0], host), head
        assert "token=" not in loc[0], head
    else:
        assert not loc and status in (400, 404), head


def test_absolute_form_targets_get_no_location(env):  # noqa: F811
    px = env["shared"]
    r = px.route(new_session(), target=env["http"])
    token = r["url"].split("token=")[1]
    req = (f"GET http://evil.example/?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{px.port}\r\n"
           "Accept: text/html\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", px.port), timeout=5) as s:
        s.sendall(req.encode())
        data = s.recv(65536)
    head = data.partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 400") and b"location:" not in head, head


def test_subdomain_mode_serves_an_http_app_only_at_its_host(env):  # noqa: F811
    sub = env["sub"]
    r = sub.route(new_session(), target=env["http"])
    token = r["url"].split("token=")[1]
    # the token at wsproxy's bare address (the console's host name): refused
    for host in (f"127.0.0.1:{sub.port}", f"apps.localhost:{sub.port}"):
        got = requests.get(f"http://127.0.0.1:{sub.port}/?token={token}", headers={"Host": host},
                           timeout=5, allow_redirects=False)
        assert got.status_code == 403 and "Set-Cookie" not in got.headers, (host, got.text)
    # at its own host it works
    got = requests.get(f"http://127.0.0.1:{sub.port}/?token={token}",
                       headers={"Host": f"{r['app_hash']}.apps.localhost:{sub.port}"}, timeout=5)
    assert got.status_code == 200


class CookieSetter(BaseHTTPRequestHandler):
    """An app that tries to plant the platform's cookies in its visitors'
    browsers (for a parent domain: the console would get them)."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        for c in ("tessera_sid=planted; Domain=localhost; Path=/",
                  "tessera_app_0123456789abcdef=planted; Path=/", "sToken=planted",
                  "TESSERA_SID=planted", "myapp=1; Path=/", "_xsrf=2|abc; Path=/"):
            self.send_header("Set-Cookie", c)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


@pytest.mark.parametrize("mode", ["shared", "sub"])
def test_an_app_cannot_set_the_platforms_cookies(env, mode):  # noqa: F811
    srv = ThreadingHTTPServer(("127.0.0.1", 0), CookieSetter)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        px = env[mode]
        r = px.route(new_session(), target=f"127.0.0.1:{srv.server_address[1]}")
        token = r["url"].split("token=")[1]
        got = requests.get(f"http://127.0.0.1:{px.port}/?token={token}",
                           headers={"Host": _host_of(px, r, mode)}, timeout=5)
        assert got.status_code == 200 and got.text == "ok"
        set_cookies = [v for k, v in got.raw.headers.items() if k.lower() == "set-cookie"]
        names = [c.split("=", 1)[0] for c in set_cookies]
        # wsproxy's own app cookie (minted for the token) and the app's own ones only
        assert sorted(names) == sorted([r["cookie_name"], "myapp", "_xsrf"]), set_cookies
        assert not any("planted" in c for c in set_cookies), set_cookies
    finally:
        srv.shutdown()


def _start(extra_env, tmp_path, redis_port=1):
    """Start a wsproxy with extra environment; (returncode or None: it ran
    3 s and was stopped, log)."""
    log = tmp_path / "wsproxy.log"
    trusted = tmp_path / "trusted"
    if not trusted.exists():
        mk = subprocess.run([os.path.join(BIN_DIR, "tessera-gateway"), "--new-service-key",
                             str(tmp_path / "gateway.key")], capture_output=True, text=True, timeout=30)
        assert mk.returncode == 0, mk.stderr
        trusted.write_text(mk.stdout)
    e = dict(os.environ, TESSERA_HTTP_LISTEN="127.0.0.1:0", TESSERA_WSPROXY_LISTEN="127.0.0.1:0",
             TESSERA_REDIS_URL=f"redis://127.0.0.1:{redis_port}/0", TESSERA_LOG_LEVEL="info",
             TESSERA_SERVICE_AUTH_TRUST_FILE=str(trusted), **extra_env)
    with open(log, "w") as f:
        p = subprocess.Popen([os.path.join(BIN_DIR, "tessera-wsproxy")], env=e, stdout=f,
                             stderr=subprocess.STDOUT)
        try:
            rc = p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            rc = None
            p.terminate()
            p.wait(timeout=10)
    return rc, log.read_text()


def test_shared_mode_is_an_operators_choice(env, tmp_path):  # noqa: F811
    rport = env["redis_port"]
    rc, log = _start({"TESSERA_WSPROXY_PUBLIC_URL": "http://127.0.0.1:8097"}, tmp_path, rport)
    assert rc not in (None, 0) and "wsproxy.shared_origin" in log, log
    rc, log = _start({"TESSERA_WSPROXY_PUBLIC_URL": "http://127.0.0.1:8097",
                      "TESSERA_WSPROXY_SHARED_ORIGIN": "true"}, tmp_path, rport)
    assert rc is None and "mode=shared" in log and "one origin" in log, log
    rc, log = _start({}, tmp_path, rport)
    assert rc is None and "mode=subdomain" in log and ".apps.localhost:" in log, log
    rc, log = _start({"TESSERA_WSPROXY_STRIP_COOKIES": "bad name"}, tmp_path)
    assert rc not in (None, 0) and "wsproxy.strip_cookies" in log, log
