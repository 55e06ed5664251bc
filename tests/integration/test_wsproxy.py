"""tessera-wsproxy end to end (docs/wsproxy.md): routes created through its
internal API, apps started by the test (an HTTP server with streamed bodies, a
WebSocket echo server written by hand, a TCP echo server, tessera-term), and
clients that behave well and badly.

Self-contained: a redis-server of its own on a free port and two wsproxy
instances sharing it, one serving apps on a shared address
(wsproxy.shared_origin), one on per-app subdomains (Host
<hash>.apps.localhost), so revocation is also
checked across instances. Python standard library, pytest and requests only.
"""

import base64
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import socketserver
import struct
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

import svc_signer

from conftest import BIN_DIR, wait_until

STREAM_MB = 200
CHUNK = 1 << 20


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pattern(i):
    """Deterministic 1 MiB block i of the streamed bodies."""
    return hashlib.sha256(str(i).encode()).digest() * (CHUNK // 32)


def pattern_digest(blocks):
    h = hashlib.sha256()
    for i in range(blocks):
        h.update(pattern(i))
    return h.hexdigest()


# ---- the apps ------------------------------------------------------------------


class App(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/big"):
            blocks = int(self.path.split("=")[1])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(blocks):
                b = pattern(i)
                self.wfile.write(b"%x\r\n" % len(b) + b + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif self.path.startswith("/slow"):
            time.sleep(float(self.path.split("=")[1]))
            self._send(200, b"slow")
        else:
            info = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}
            self._send(200, json.dumps(info).encode())

    def do_POST(self):
        h = hashlib.sha256()
        n = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                line = self.rfile.readline()
                if not line:  # the proxy aborted a malformed body
                    return
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    break
                left = size
                while left:
                    b = self.rfile.read(min(left, CHUNK))
                    h.update(b)
                    n += len(b)
                    left -= len(b)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                b = self.rfile.read(min(left, CHUNK))
                if not b:
                    break
                h.update(b)
                n += len(b)
                left -= len(b)
        self._send(200, json.dumps({"size": n, "sha256": h.hexdigest()}).encode())


def ws_accept(key):
    return base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        b = sock.recv(n - len(data))
        if not b:
            raise EOFError("closed")
        data += b
    return data


def read_frame(sock):
    """(fin, opcode, payload) of one frame, unmasking if masked."""
    b0, b1 = recv_exact(sock, 2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", recv_exact(sock, 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", recv_exact(sock, 8))[0]
    mask = recv_exact(sock, 4) if b1 & 0x80 else None
    payload = recv_exact(sock, n)
    if mask:
        payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
    return bool(b0 & 0x80), b0 & 0x0F, payload


def frame(opcode, payload, masked):
    head = bytes([0x80 | opcode])
    n = len(payload)
    m = 0x80 if masked else 0
    if n < 126:
        head += bytes([m | n])
    elif n < 65536:
        head += bytes([m | 126]) + struct.pack("!H", n)
    else:
        head += bytes([m | 127]) + struct.pack("!Q", n)
    if masked:
        mask = os.urandom(4)
        head += mask
        payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
    return head + payload


class WsEcho(socketserver.BaseRequestHandler):
    """A WebSocket echo server: handshake and framing by hand."""

    def handle(self):
        s = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            b = s.recv(4096)
            if not b:
                return
            head += b
        lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
        hdrs = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
        if hdrs.get("upgrade", "").lower() != "websocket":
            s.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        s.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Accept: %s\r\n\r\n" % ws_accept(hdrs["sec-websocket-key"])).encode())
        try:
            while True:
                fin, op, payload = read_frame(s)
                if op == 0x8:
                    s.sendall(frame(0x8, payload[:2], False))
                    return
                if op == 0x9:
                    s.sendall(frame(0xA, payload, False))
                    continue
                s.sendall(frame(op, payload, False))
        except (EOFError, OSError):
            return


class TcpEcho(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            b = self.request.recv(65536)
            if not b:
                return
            self.request.sendall(b)


class ThreadingTCP(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


# ---- the proxy --------------------------------------------------------------------


class Proxy:
    """One tessera-wsproxy; its route API is called as the platform does:
    routes made by the gateway, revoked by the registry (signed with the
    keys in `keys`)."""

    def __init__(self, proc, api, port, log, keys):
        self.proc, self.api, self.port, self.log, self.keys = proc, api, port, log, keys

    def call(self, service, method, path, **kw):
        return svc_signer.call(self.keys, service, method, self.api + path, timeout=5, **kw)

    def route(self, session, app="web", user="u1", target=None, protocol="http", ttl=None, expect=201):
        body = {"user_id": user, "session_id": session, "app": app, "protocol": protocol, "target": target}
        if ttl:
            body["ttl"] = ttl
        r = self.call("gateway", "POST", "/v1/routes", json=body)
        assert r.status_code == expect, r.text
        return r.json()

    def revoke(self, session):
        r = self.call("registry", "DELETE", f"/v1/sessions/{session}/routes")
        assert r.status_code == 200, r.text
        return r.json()

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)


@pytest.fixture(scope="module")
def env():
    wsproxy = os.path.join(BIN_DIR, "tessera-wsproxy")
    if not os.path.exists(wsproxy):
        pytest.skip(f"{wsproxy} not built")
    if not shutil.which("redis-server"):
        pytest.skip("redis-server not installed")
    tmp = tempfile.mkdtemp(prefix="tessera-wsproxy-it-")
    procs = []
    servers = []
    try:
        rport = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", tmp],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(redis)
        redis_url = f"redis://127.0.0.1:{rport}/0"
        # the service keys of the two callers and the trust file the proxies read
        keys = os.path.join(tmp, "keys")
        os.mkdir(keys, 0o700)
        lines = ""
        for svc in ("gateway", "registry"):
            mk = subprocess.run([os.path.join(BIN_DIR, f"tessera-{svc}"), "--new-service-key",
                                 os.path.join(keys, f"{svc}.key")], capture_output=True, text=True, timeout=30)
            assert mk.returncode == 0, mk.stderr
            lines += mk.stdout
        with open(os.path.join(keys, "trusted"), "w") as f:
            f.write(lines)
        wait_until(lambda: socket.create_connection(("127.0.0.1", rport), timeout=1).close() or True,
                   timeout=10, message="redis")

        def start_proxy(name, public_url_fmt, **extra):
            api_port, proxy_port = free_port(), free_port()
            log = open(os.path.join(tmp, name + ".log"), "w")
            env_ = dict(os.environ, TESSERA_REDIS_URL=redis_url, TESSERA_HTTP_LISTEN=f"127.0.0.1:{api_port}",
                        TESSERA_WSPROXY_LISTEN=f"127.0.0.1:{proxy_port}", TESSERA_WSPROXY_WORKERS="2",
                        TESSERA_WSPROXY_HEADER_TIMEOUT="2s", TESSERA_LOG_LEVEL="info",
                        TESSERA_SERVICE_AUTH_TRUST_FILE=os.path.join(keys, "trusted"),
                        TESSERA_WSPROXY_PUBLIC_URL=public_url_fmt.format(port=proxy_port), **extra)
            p = subprocess.Popen([wsproxy], env=env_, stdout=log, stderr=subprocess.STDOUT)
            procs.append(p)
            api = f"http://127.0.0.1:{api_port}"
            wait_until(lambda: requests.get(api + "/readyz", timeout=1).status_code == 200, timeout=20,
                       message=f"{name} ready")
            return Proxy(p, api, proxy_port, os.path.join(tmp, name + ".log"), keys)

        # shared mode (one origin for every app) only where turned on
        shared = start_proxy("shared", "", TESSERA_WSPROXY_SHARED_ORIGIN="true")
        sub = start_proxy("subdomain", "http://*.apps.localhost:{port}")

        http_app = ThreadingHTTPServer(("127.0.0.1", 0), App)
        http_app.daemon_threads = True
        ws_app = ThreadingTCP(("127.0.0.1", 0), WsEcho)
        tcp_app = ThreadingTCP(("127.0.0.1", 0), TcpEcho)
        for srv in (http_app, ws_app, tcp_app):
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            servers.append(srv)
        yield {
            "shared": shared, "sub": sub, "redis_port": rport, "tmp": tmp,
            "http": f"127.0.0.1:{http_app.server_address[1]}",
            "ws": f"127.0.0.1:{ws_app.server_address[1]}",
            "tcp": f"127.0.0.1:{tcp_app.server_address[1]}",
        }
    finally:
        for srv in servers:
            srv.shutdown()
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def redis_cli(env, *args):
    return subprocess.run(["redis-cli", "-p", str(env["redis_port"]), *args], capture_output=True,
                          text=True, check=True).stdout.strip()


_n = [0]


def new_session():
    _n[0] += 1
    return f"sess-{os.getpid()}-{_n[0]}"


def ws_open(sock, path, host="x", extra=b""):
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode() + extra)
    head = b""
    while b"\r\n\r\n" not in head:
        b = sock.recv(1)
        if not b:
            raise EOFError("closed during the handshake: " + head.decode(errors="replace"))
        head += b
    status = int(head.split(b" ")[1])
    if status == 101:
        assert ws_accept(key).encode() in head
    return status, head


def read_response(sock):
    """Status and body of one HTTP/1.1 response with Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        b = sock.recv(65536)
        if not b:
            break
        data += b
    head, _, body = data.partition(b"\r\n\r\n")
    if not head:
        return None, b""
    status = int(head.split(b" ")[1])
    cl = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    n = int(cl[0].split(b":")[1]) if cl else 0
    while len(body) < n:
        b = sock.recv(65536)
        if not b:
            break
        body += b
    return status, body


# ---- tests -------------------------------------------------------------------------


def test_http_keepalive_token_and_cookie(env):
    px = env["shared"]
    sid = new_session()
    r = px.route(sid, target=env["http"])
    assert r["url"].startswith(f"http://127.0.0.1:{px.port}/?token=")
    assert r["cookie_name"] == "tessera_app_" + r["app_hash"]
    s = requests.Session()
    first = s.get(r["url"].replace("/?", "/echo?a=1&"), timeout=10)
    assert first.status_code == 200
    info = first.json()
    assert info["path"] == "/echo?a=1", "the token must not reach the app"
    assert info["headers"]["x-forwarded-for"] == "127.0.0.1"
    sc = first.headers["Set-Cookie"]
    for attr in ("Path=/", "HttpOnly", "SameSite=Lax", r["cookie_name"] + "="):
        assert attr in sc
    s.cookies.set("other", "kept")
    for i in range(20):  # keep-alive, cookie only
        again = s.get(f"http://127.0.0.1:{px.port}/echo/{i}", timeout=10)
        assert again.status_code == 200 and again.json()["path"] == f"/echo/{i}"
        cookie = again.json()["headers"].get("cookie", "")
        assert "tessera_app_" not in cookie and "other=kept" in cookie, "our cookie must not reach the app"
        assert "Set-Cookie" not in again.headers
    # a browser opening the link: 302 to the same place without the token
    b = requests.get(r["url"].replace("/?", "/lab?x=1&"), headers={"Accept": "text/html"},
                     allow_redirects=False, timeout=10)
    assert b.status_code == 302 and b.headers["Location"] == "/lab?x=1"
    assert r["cookie_name"] + "=" in b.headers["Set-Cookie"]


def test_streaming_download_and_upload(env):
    px = env["shared"]
    r = px.route(new_session(), target=env["http"])
    s = requests.Session()
    assert s.get(r["url"], timeout=10).status_code == 200  # cookie
    base = f"http://127.0.0.1:{px.port}"
    t0 = time.monotonic()
    h = hashlib.sha256()
    n = 0
    rss_max = 0
    with s.get(f"{base}/big?n={STREAM_MB}", stream=True, timeout=60) as resp:
        assert resp.status_code == 200
        assert resp.headers.get("Transfer-Encoding") == "chunked"
        for i, block in enumerate(resp.iter_content(CHUNK)):
            h.update(block)
            n += len(block)
            if i % 20 == 0:
                rss_max = max(rss_max, vm_rss_kb(px.proc.pid))
    down_s = time.monotonic() - t0
    assert n == STREAM_MB * CHUNK
    assert h.hexdigest() == pattern_digest(STREAM_MB)

    def gen():
        for i in range(STREAM_MB):
            yield pattern(i)

    t0 = time.monotonic()
    up = s.post(f"{base}/upload", data=gen(), timeout=120)  # chunked
    up_s = time.monotonic() - t0
    assert up.status_code == 200, up.text
    assert up.json() == {"size": STREAM_MB * CHUNK, "sha256": pattern_digest(STREAM_MB)}
    rss_max = max(rss_max, vm_rss_kb(px.proc.pid))
    # Content-Length upload, through http.client to control the framing
    c = http.client.HTTPConnection("127.0.0.1", px.port, timeout=60)
    c.putrequest("POST", "/upload")
    c.putheader("Cookie", "; ".join(f"{k}={v}" for k, v in s.cookies.items()))
    c.putheader("Content-Length", str(50 * CHUNK))
    c.endheaders()
    for i in range(50):
        c.send(pattern(i))
    resp = c.getresponse()
    assert json.loads(resp.read()) == {"size": 50 * CHUNK, "sha256": pattern_digest(50)}
    c.close()
    # Streamed, not buffered: the proxy never held more than a few MB more.
    assert rss_max < 64 * 1024, f"wsproxy RSS reached {rss_max} kB"
    print(f"\n{STREAM_MB} MB down {STREAM_MB / down_s:.0f} MB/s, up {STREAM_MB / up_s:.0f} MB/s, "
          f"proxy RSS max {rss_max // 1024} MB")


def vm_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_websocket_echo_ping_close(env):
    px = env["shared"]
    r = px.route(new_session(), app="ws", target=env["ws"])
    token = r["url"].split("token=")[1]
    with px.connect() as sock:
        status, _ = ws_open(sock, f"/socket?token={token}")
        assert status == 101
        for payload in (b"hello", b"x" * 200, os.urandom(70000)):
            sock.sendall(frame(0x2, payload, True))
            fin, op, got = read_frame(sock)
            assert (fin, op, got) == (True, 0x2, payload)
        sock.sendall(frame(0x9, b"are you there", True))
        assert read_frame(sock) == (True, 0xA, b"are you there")
        sock.sendall(frame(0x8, struct.pack("!H", 1000), True))
        assert read_frame(sock) == (True, 0x8, struct.pack("!H", 1000))
        sock.settimeout(5)
        assert sock.recv(1) == b"", "the tunnel closes after the close handshake"


def refused(resp, status):
    """Problem JSON, as the platform's other services answer (docs/api.md)."""
    assert resp.status_code == status, (resp.status_code, resp.text[:200])
    assert resp.headers["Content-Type"] == "application/problem+json", resp.headers
    p = resp.json()
    assert p["type"].startswith("https://api.backend.ai/probs/") and p["title"] and p["msg"]


def refused_page(resp, status):
    """A browser (Accept: text/html) gets a page instead."""
    assert resp.status_code == status, (resp.status_code, resp.text[:200])
    assert resp.headers["Content-Type"].startswith("text/html")
    assert "<h1>" in resp.text


def test_refusals(env):
    shared, sub = env["shared"], env["sub"]
    base = f"http://127.0.0.1:{shared.port}"
    refused(requests.get(base + "/", timeout=5), 401)
    assert requests.get(base + "/", timeout=5).json()["type"].endswith("/auth-failed")
    refused_page(requests.get(base + "/", headers={"Accept": "text/html,*/*;q=0.8"}, timeout=5), 401)
    refused(requests.get(base + "/?token=" + "A" * 43, timeout=5), 401)
    refused(requests.get(base + "/?token=short", timeout=5), 401)
    refused(requests.get(base + "/", cookies={"tessera_app_0123456789abcdef": "B" * 43}, timeout=5), 401)
    # expired token
    r = shared.route(new_session(), target=env["http"], ttl=1)
    time.sleep(1.3)
    refused(requests.get(r["url"], timeout=5), 401)
    # a cookie value is not a link token
    r = shared.route(new_session(), target=env["http"])
    ok = requests.get(r["url"], timeout=5)
    cookie_value = ok.cookies[r["cookie_name"]]
    refused(requests.get(f"{base}/?token={cookie_value}", timeout=5), 401)
    # two apps' cookies on one shared address: ambiguous
    r2 = shared.route(new_session(), target=env["http"])
    ok2 = requests.get(r2["url"], timeout=5)
    both = {r["cookie_name"]: cookie_value, r2["cookie_name"]: ok2.cookies[r2["cookie_name"]]}
    refused(requests.get(base + "/", cookies=both, timeout=5), 409)

    # Subdomain mode: the Host names the app; tokens and cookies of others are foreign.
    sid_a, sid_b = new_session(), new_session()
    a = sub.route(sid_a, user="alice", target=env["http"])
    b = sub.route(sid_b, user="alice", target=env["http"])
    mallory = sub.route(sid_a, user="mallory", target=env["http"])
    assert a["url"].startswith(f"http://{a['app_hash']}.apps.localhost:{sub.port}/?token=")
    sbase = f"http://127.0.0.1:{sub.port}"
    host_a = {"Host": f"{a['app_hash']}.apps.localhost:{sub.port}"}
    tok = lambda x: x["url"].split("token=")[1]
    good = requests.get(f"{sbase}/?token={tok(a)}", headers=host_a, timeout=5)
    assert good.status_code == 200
    # a token for another session of the same user, at app A's host
    refused(requests.get(f"{sbase}/?token={tok(b)}", headers=host_a, timeout=5), 403)
    # another user's token for the same session and app
    refused(requests.get(f"{sbase}/?token={tok(mallory)}", headers=host_a, timeout=5), 403)
    # B's cookie presented under A's cookie name
    good_b = requests.get(f"{sbase}/?token={tok(b)}",
                          headers={"Host": f"{b['app_hash']}.apps.localhost:{sub.port}"}, timeout=5)
    refused(requests.get(sbase + "/", headers=host_a,
                         cookies={a["cookie_name"]: good_b.cookies[b["cookie_name"]]}, timeout=5), 403)
    # A's own cookie works at A's host; no app host name: 401
    assert requests.get(sbase + "/", headers=host_a, cookies={a["cookie_name"]: good.cookies[a["cookie_name"]]},
                        timeout=5).status_code == 200
    refused(requests.get(sbase + "/", cookies={a["cookie_name"]: good.cookies[a["cookie_name"]]}, timeout=5), 401)
    # tokens are per instance-independent: the shared instance accepts A's token too (same Redis)
    assert requests.get(f"{base}/?token={tok(a)}", timeout=5).status_code == 200


def test_route_removal_closes_live_websockets_within_a_second(env):
    sid = new_session()
    socks = []
    for px in (env["shared"], env["sub"]):
        r = px.route(sid, app="ws", target=env["ws"])
        sock = px.connect()
        host = f"{r['app_hash']}.apps.localhost" if px is env["sub"] else "x"
        status, _ = ws_open(sock, "/?token=" + r["url"].split("token=")[1], host=host)
        assert status == 101
        sock.sendall(frame(0x1, b"before", True))
        assert read_frame(sock)[2] == b"before"
        socks.append(sock)
    # an HTTP keep-alive connection of the same session, idle
    r = env["shared"].route(sid, app="web", target=env["http"])
    s = requests.Session()
    assert s.get(r["url"], timeout=5).status_code == 200
    removed = env["shared"].revoke(sid)
    assert removed["removed"] >= 4
    t0 = time.monotonic()
    for sock in socks:
        sock.settimeout(3)
        try:
            data = sock.recv(10)
        except ConnectionResetError:
            data = b""
        assert data == b""
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0, f"connections closed after {elapsed:.2f} s"
    for sock in socks:
        sock.close()
    refused(s.get(f"http://127.0.0.1:{env['shared'].port}/", timeout=5), 401)
    refused(requests.get(r["url"], timeout=5), 401)
    assert redis_cli(env, "EXISTS", f"session:{sid}:routes") == "0"


def test_slow_and_malformed_clients_do_not_affect_others(env):
    px = env["shared"]
    r = px.route(new_session(), target=env["http"])
    s = requests.Session()
    assert s.get(r["url"], timeout=5).status_code == 200
    base = f"http://127.0.0.1:{px.port}"
    bad = []
    # partial headers, then nothing (several)
    for _ in range(20):
        c = px.connect()
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        bad.append(c)
    # connections that send nothing at all
    for _ in range(20):
        bad.append(px.connect())
    # 64 KB of headers: 431
    big = px.connect()
    big.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"y" * 1000) for i in range(64)))
    # a WebSocket upgrade to a plain HTTP app followed by garbage
    wsr = px.route(new_session(), app="ws", target=env["ws"])
    garbage = px.connect()
    ws_open_nowait(garbage, "/?token=" + wsr["url"].split("token=")[1], os.urandom(4096))
    # garbage instead of a request
    junk = px.connect()
    junk.sendall(os.urandom(2000))
    # a good request meanwhile, quick
    for _ in range(10):
        t0 = time.monotonic()
        ok = s.get(base + "/echo", timeout=5)
        assert ok.status_code == 200
        assert time.monotonic() - t0 < 0.5
    big.settimeout(5)
    status, _ = read_response(big)
    assert status == 431
    junk.settimeout(5)
    assert read_response(junk)[0] == 400
    # header timeout (2 s here): the partial heads get 408 and are closed
    bad[0].settimeout(5)
    status, _ = read_response(bad[0])
    assert status == 408
    for c in bad[1:]:
        c.settimeout(5)
        try:
            while c.recv(65536):
                pass
        except ConnectionResetError:
            pass
        c.close()
    for c in (big, garbage, junk, bad[0]):
        c.close()
    assert s.get(base + "/echo", timeout=5).status_code == 200
    assert px.proc.poll() is None


def ws_open_nowait(sock, path, extra):
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode() + extra)


@pytest.mark.parametrize("raw,status", [
    (b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    (b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd", 400),
    (b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 501),
    (b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 400),
    (b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 400),
])
def test_smuggling_attempts_refused(env, raw, status):
    px = env["shared"]
    r = px.route(new_session(), target=env["http"])
    tok = r["url"].split("token=")[1]
    raw = raw.replace(b" HTTP/1.1", f"?token={tok} HTTP/1.1".encode(), 1)
    with px.connect() as c:
        c.sendall(raw)
        c.settimeout(5)
        got, _ = read_response(c)
        assert got == status
        assert c.recv(65536) == b"", "the connection is closed after a framing error"


@pytest.mark.parametrize("raw,status", [
    (b"GARBAGE\r\n\r\n", 400),
    (b"\x16\x03\x01\x00\xa5\x01\x00", 400),
    (b"GET /" + b"a" * 17000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"y" * 1000) for i in range(40))
     + b"\r\n", 431),
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 401),
])
def test_malformed_and_refused_get_problem_json(env, raw, status):
    """The proxy's own answers are problem JSON, at once (issue 17)."""
    px = env["shared"]
    with px.connect() as c:
        t0 = time.monotonic()
        c.sendall(raw)
        c.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data:
            b = c.recv(65536)
            if not b:
                break
            data += b
        assert time.monotonic() - t0 < 2
    head, _, body = data.partition(b"\r\n\r\n")
    assert int(head.split(b" ")[1]) == status, head
    assert b"\r\nContent-Type: application/problem+json\r\n" in head + b"\r\n", head
    n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    p = json.loads(body[:n])
    assert p["type"].startswith("https://api.backend.ai/probs/") and p["title"] and p["msg"], p


def test_tcp_app_tunnel(env):
    px = env["shared"]
    r = px.route(new_session(), app="ssh", protocol="tcp", target=env["tcp"])
    assert "/v1/tcp?token=" in r["url"]
    tok = r["url"].split("token=")[1]
    with px.connect() as c:
        c.sendall(f"GET /v1/tcp?token={tok} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                  f"Upgrade: tessera-tcp\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += c.recv(1)
        assert head.startswith(b"HTTP/1.1 101")
        for payload in (b"ping\n", os.urandom(100000)):
            c.sendall(payload)
            assert recv_exact(c, len(payload)) == payload
    # a tcp route without the upgrade: 400
    refused(requests.get(r["url"], timeout=5), 400)


def test_last_access_and_metrics(env):
    px = env["shared"]
    sid = new_session()
    r = px.route(sid, target=env["http"])
    before = int(time.time() * 1000)
    assert requests.get(r["url"], timeout=5).status_code == 200
    v = wait_until(lambda: redis_cli(env, "GET", f"session:{sid}:last_access"), timeout=5,
                   message="last_access")
    assert int(v) >= before - 1000
    m = requests.get(px.api + "/metrics", timeout=5).text
    for fam in ("tessera_wsproxy_requests_total", "tessera_wsproxy_connections_active",
                "tessera_wsproxy_auth_refused_total", "tessera_wsproxy_tunnels_active"):
        assert fam in m
    info = px.call("gateway", "GET", "/v1/info").json()
    assert info["proxy_addr"] == f"127.0.0.1:{px.port}" and info["mode"] == "shared"
    bad = px.call("gateway", "POST", "/v1/routes", json={"user_id": "u", "session_id": "s/1", "app": "a",
                                                         "target": "h:1"})
    assert bad.status_code == 400 and "session_id" in bad.json()["msg"]
    bad = px.call("gateway", "POST", "/v1/routes", json={"user_id": "u", "session_id": "s", "app": "a",
                                                         "target": "h:99999"})
    assert bad.status_code == 400


def test_tunnel_bytes_are_use_a_silent_tunnel_is_not(env):
    """The idle checker's input: the client's bytes on an upgraded connection
    mark session:<id>:last_access; an open tunnel that moves nothing does not."""
    px = env["shared"]
    sid = new_session()
    r = px.route(sid, app="ssh", protocol="tcp", target=env["tcp"])
    tok = r["url"].split("token=")[1]
    key = f"session:{sid}:last_access"
    with px.connect() as c:
        c.sendall(f"GET /v1/tcp?token={tok} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                  f"Upgrade: tessera-tcp\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += c.recv(1)
        assert head.startswith(b"HTTP/1.1 101")
        opened = int(wait_until(lambda: redis_cli(env, "GET", key), timeout=5, message="last_access"))
        time.sleep(2.5)  # silent: the mark stays where the request put it
        assert int(redis_cli(env, "GET", key)) == opened
        c.sendall(b"ping\n")
        assert recv_exact(c, 5) == b"ping\n"
        wait_until(lambda: int(redis_cli(env, "GET", key)) >= opened + 2000, timeout=5,
                   message="last_access to follow the tunnel's bytes")


def test_websocket_pings_are_not_use_data_frames_are(env):
    """On a WebSocket, only data frames mark session:<id>:last_access: a client
    that only pings and answers pings (a forgotten browser tab of an app that
    pings its clients) does not keep the session; a text frame does."""
    px = env["shared"]
    sid = new_session()
    r = px.route(sid, app="ws", target=env["ws"])
    token = r["url"].split("token=")[1]
    key = f"session:{sid}:last_access"
    with px.connect() as sock:
        status, _ = ws_open(sock, f"/socket?token={token}")
        assert status == 101
        opened = int(wait_until(lambda: redis_cli(env, "GET", key), timeout=5, message="last_access"))
        for i in range(6):  # 3 s of control frames only
            time.sleep(0.5)
            sock.sendall(frame(0xA, b"pong %d" % i, True))
            assert read_frame(sock) == (True, 0xA, b"pong %d" % i)  # the echo server's
            sock.sendall(frame(0x9, b"ping %d" % i, True))
            assert read_frame(sock) == (True, 0xA, b"ping %d" % i)
        assert int(redis_cli(env, "GET", key)) == opened
        sock.sendall(frame(0x1, b"typing", True))
        assert read_frame(sock) == (True, 0x1, b"typing")
        wait_until(lambda: int(redis_cli(env, "GET", key)) >= opened + 3000, timeout=5,
                   message="last_access to follow the data frame")


def test_route_api_needs_the_right_service(env):
    """Whoever reaches the route API without the gateway's credential opens
    nothing: no credential 401, the registry's credential 403 (it only revokes),
    a forged one 401; revoking is the registry's and the gateway's only."""
    px = env["shared"]
    body = {"user_id": "u", "session_id": new_session(), "app": "web", "target": env["http"]}
    assert requests.post(px.api + "/v1/routes", json=body, timeout=5).status_code == 401
    assert px.call("registry", "POST", "/v1/routes", json=body).status_code == 403
    h = {"X-Tessera-Service-Auth": f"v1 gateway {int(time.time() * 1000)} bm9uY2Utbm9uY2Ut " + "A" * 86 + "=="}
    assert requests.post(px.api + "/v1/routes", json=body, headers=h, timeout=5).status_code == 401
    assert requests.delete(px.api + f"/v1/sessions/{body['session_id']}/routes", timeout=5).status_code == 401
    assert requests.get(px.api + "/v1/info", timeout=5).status_code == 401
    assert requests.get(px.api + "/readyz", timeout=5).status_code == 200  # health stays open


def test_terminal_app_through_the_proxy(env):
    term = os.path.join(BIN_DIR, "tessera-term")
    if not os.path.exists(term):
        pytest.skip("tessera-term not built")
    port = free_port()
    p = subprocess.Popen([term, "--listen", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL,
                         env=dict(os.environ, HOME=env["tmp"]))
    try:
        wait_until(lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close() or True,
                   timeout=10, message="tessera-term")
        px = env["shared"]
        r = px.route(new_session(), app="ttyd", target=f"127.0.0.1:{port}")
        page = requests.get(r["url"], timeout=5)
        assert page.status_code == 200 and "WebSocket" in page.text
        with px.connect() as c:
            status, _ = ws_open(c, "/ws?token=" + r["url"].split("token=")[1])
            assert status == 101
            c.sendall(frame(0x1, b"\x01100,30", True))  # resize
            c.sendall(frame(0x1, b"echo tessera-$((6*7))\n", True))
            out = b""
            deadline = time.monotonic() + 10
            c.settimeout(10)
            while b"tessera-42" not in out and time.monotonic() < deadline:
                fin, op, payload = read_frame(c)
                out += payload
            assert b"tessera-42" in out
            c.sendall(frame(0x1, b"exit\n", True))
            while True:
                fin, op, payload = read_frame(c)
                if op == 0x8:
                    break
    finally:
        p.kill()
        p.wait()
