"""Backend.AI's streams through the gateway (docs/sessions.md, "Streams"):
WebSockets the gateway upgrades itself and relays to the session's built-in
terminal app (tessera-term) or to one of its apps, with a real busybox
kernel. pty: a terminal with JSON messages (stdin, resize, restart, errors);
execute: code runs with its output streamed (query, batch with a build,
input, interrupt through POST /session/{name}/interrupt, a client that
leaves early); apps: the session's apps; tcpproxy/httpproxy: one TCP
connection to an app in binary frames. Who may: another user's session is
404 before any upgrade; bad input: not a WebSocket (400), a session not
RUNNING (409), a message over the limit (1009)."""
import base64
import json
import re
import time
import uuid

import pytest

import wsclient
from test_apps import _running
from test_sessions_api import admin, gw, image, image_registered, other, problem, user  # noqa: F401

TAG = uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def sess(user, image_registered):  # noqa: F811
    sname = f"strm-{TAG}"
    _running(user, image_registered, sname)
    yield sname
    user.delete(f"/session/{sname}")


def _open(client, path, status=101):
    s, st, head, rest = wsclient.open_signed(client, path)
    assert st == status, head
    return s, rest


def _body(s, head_rest):
    """The problem body after a refused upgrade (Content-Length framed)."""
    data = head_rest
    s.settimeout(5)
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            try:
                return json.loads(data)
            except ValueError:
                continue
    except OSError:
        pass
    return json.loads(data)


class Pty:
    def __init__(self, client, sname):
        self.s, rest = _open(client, f"/stream/session/{sname}/pty")
        self.frames = wsclient.frames(self.s, rest)
        self.errors = []
        self.closed = None

    def send(self, obj):
        wsclient.send_text(self.s, json.dumps(obj))

    def stdin(self, text):
        self.send({"type": "stdin", "chars": base64.b64encode(text.encode()).decode()})

    def read_until(self, pattern, timeout=15):
        out = b""
        self.s.settimeout(timeout)
        deadline = time.monotonic() + timeout
        for op, payload in self.frames:
            if op is None or op == 8:
                self.closed = wsclient.close_code(payload) if op == 8 else None
                break
            msg = json.loads(payload)
            if msg["type"] == "out":
                out += base64.b64decode(msg["data"])
            elif msg["type"] == "error":
                self.errors.append(msg["data"])
            if (pattern is None and self.errors) or (pattern is not None and re.search(pattern, out)):
                break
            if time.monotonic() > deadline:
                break
        return out


def test_pty_resize_echo_restart(user, sess):  # noqa: F811
    p = Pty(user, sess)
    try:
        p.send({"type": "resize", "rows": 30, "cols": 100})
        p.stdin("stty size\n")
        assert b"30 100" in p.read_until(rb"\n30 100"), "stty size after resize"
        p.send({"type": "resize", "rows": 40, "cols": 120})
        p.stdin("stty size\n")
        assert b"40 120" in p.read_until(rb"\n40 120")
        n = int.from_bytes(uuid.uuid4().bytes[:2], "big")
        p.stdin(f"echo rt-$(({n}+1))-{TAG}\n")
        assert f"rt-{n + 1}-{TAG}".encode() in p.read_until(f"rt-{n + 1}-{TAG}".encode())
        p.send({"type": "ping"})
        # restart: a fresh shell (a variable set before is gone)
        p.stdin(f"X{TAG}=set-before; echo has-$X{TAG}-$((1+1))\n")
        assert b"has-set-before-2" in p.read_until(rb"has-set-before-2")
        p.send({"type": "restart"})
        time.sleep(1)
        p.stdin(f"echo after-[$X{TAG}]-$((2+2))\n")
        assert b"after-[]-4" in p.read_until(rb"after-\[\]-4")
        # bad input: an error message, and the stream stays usable
        wsclient.send_text(p.s, "{not json")
        p.read_until(None, timeout=5)
        assert p.errors and "JSON" in p.errors[-1], p.errors
        p.send({"type": "stdin", "chars": "***"})
        p.send({"type": "nope"})
        p.stdin(f"echo still-$((3+3))\n")
        assert b"still-6" in p.read_until(rb"still-6")
        assert len(p.errors) >= 3, p.errors
    finally:
        p.s.close()


def test_pty_frame_over_the_limit_is_1009(user, sess):  # noqa: F811
    p = Pty(user, sess)
    try:
        wsclient.send_frame(p.s, 1, b"x" * (1024 * 1024 + 1))
        p.read_until(b"never", timeout=15)
        assert p.closed == 1009
    finally:
        p.s.close()


def test_apps_list(user, sess):  # noqa: F811
    r = user.get(f"/stream/session/{sess}/apps")
    assert r.status_code == 200, r.text
    apps = {a["name"]: a for a in r.json()}
    assert apps["ttyd"]["protocol"] == "http" and apps["ttyd"]["ports"] == [7681], apps
    assert apps["tcpecho"]["protocol"] == "tcp"


@pytest.mark.parametrize("route", ["tcpproxy", "httpproxy"])
def test_tunnel_speaks_http_to_the_terminal_app(user, sess, route):  # noqa: F811
    s, rest = _open(user, f"/stream/session/{sess}/{route}?app=ttyd")
    try:
        wsclient.send_frame(s, 2, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = b""
        s.settimeout(15)
        for op, payload in wsclient.frames(s, rest):
            if op is None or op == 8:
                break
            assert op == 2
            got += payload
            if b"</html>" in got:
                break
        assert got.startswith(b"HTTP/1.1 200") and b"<title>Terminal</title>" in got, got[:200]
    finally:
        s.close()


def test_tunnel_to_the_tcp_app(user, sess):  # noqa: F811
    s, rest = _open(user, f"/stream/session/{sess}/tcpproxy?app=tcpecho")
    try:
        msg = f"ping-{TAG}\n".encode()
        wsclient.send_frame(s, 2, msg)
        got = b""
        s.settimeout(15)
        for op, payload in wsclient.frames(s, rest):
            if op is None or op == 8:
                break
            got += payload
            if len(got) >= len(msg):
                break
        assert got == msg
    finally:
        s.close()


def test_refusals_before_the_upgrade(gw, user, other, sess):  # noqa: F811
    # another user's session: 404, no upgrade
    for path in ("pty", "execute", "tcpproxy?app=ttyd"):
        s, st, head, rest = wsclient.open_signed(other, f"/stream/session/{sess}/{path}")
        assert st == 404, head
        assert b"upgrade" not in head.lower().split(b"\r\n", 1)[1].replace(b"x-", b""), head
        s.close()
    problem(other.get(f"/stream/session/{sess}/apps"), 404)
    problem(other.post(f"/session/{sess}/interrupt"), 404)
    # not a WebSocket request: 400, signed or not
    p = problem(user.get(f"/stream/session/{sess}/pty"), 400)
    assert "Upgrade" in p["msg"], p
    s, st, head, rest = wsclient.open_signed(user, f"/stream/session/{sess}/pty",
                                             {"Sec-WebSocket-Version": "8"})
    assert st == 400, head
    s.close()
    # unsigned
    s, st, head, rest = wsclient.open_ws(gw + f"/stream/session/{sess}/pty")
    assert st == 401, head
    s.close()
    # tunnels need an app; unknown apps are 404
    problem(user.get(f"/stream/session/{sess}/tcpproxy"), 400)
    s, st, head, rest = wsclient.open_signed(user, f"/stream/session/{sess}/tcpproxy?app=nope")
    assert st == 404, head
    s.close()
    s, st, head, rest = wsclient.open_signed(user, f"/stream/session/{sess}/tcpproxy?port=x")
    assert st == 400, head
    s.close()
    # an unknown session
    s, st, head, rest = wsclient.open_signed(user, f"/stream/session/nope-{TAG}/pty")
    assert st == 404, head
    s.close()


def test_a_session_not_running_is_409(user, image_registered):  # noqa: F811
    sname = f"strm-p-{TAG}"
    # a batch session that starts in an hour: PENDING
    r = user.post("/session", {"image": image_registered, "name": sname, "type": "batch",
                               "startupCommand": "sleep 60", "starts_at": "1h",
                               "enqueueOnly": True,
                               "config": {"resources": {"cpu": "1", "mem": "256m"}}})
    assert r.status_code in (200, 201), r.text
    try:
        assert user.get(f"/session/{sname}").json()["status"] == "PENDING"
        for path in ("pty", "execute", "tcpproxy?app=ttyd"):
            s, st, head, rest = wsclient.open_signed(user, f"/stream/session/{sname}/{path}")
            assert st == 409, head
            p = json.loads(rest) if rest.endswith(b"}") else _body(s, rest)
            assert p["type"].endswith("invalid-session-state") and "RUNNING" in p["msg"], p
            s.close()
        problem(user.get(f"/stream/session/{sname}/apps"), 409)
        problem(user.post(f"/session/{sname}/interrupt"), 409)
    finally:
        user.delete(f"/session/{sname}")


# ---- execute --------------------------------------------------------------------------------

class Exec:
    def __init__(self, client, sname, first):
        self.s, rest = _open(client, f"/stream/session/{sname}/execute")
        self.frames = wsclient.frames(self.s, rest)
        self.close = None
        if first is not None:
            wsclient.send_text(self.s, json.dumps(first) if isinstance(first, dict) else first)

    def results(self, until=("finished", "error", "waiting-input"), timeout=30):
        out = []
        self.s.settimeout(timeout)
        for op, payload in self.frames:
            if op is None or op == 8:
                self.close = wsclient.close_code(payload) if op == 8 else None
                break
            msg = json.loads(payload)
            out.append(msg)
            if msg["status"] in until:
                break
        return out


def _text(results, kind="stdout"):
    return "".join(t for r in results for k, t in (r.get("console") or []) if k == kind)


def test_execute_query_and_stderr(user, sess):  # noqa: F811
    e = Exec(user, sess, {"mode": "query", "code": "echo hi"})
    res = e.results()
    assert res[-1]["status"] == "finished" and res[-1]["exitCode"] == 0, res
    assert _text(res) == "hi\n"
    assert res[-1]["options"] is None and res[-1]["files"] == []
    assert e.results() == [] and e.close == 1000
    e.s.close()
    e = Exec(user, sess, {"mode": "query", "code": "echo out; echo err >&2; exit 3"})
    res = e.results()
    assert res[-1]["exitCode"] == 3, res
    assert _text(res) == "out\n" and _text(res, "stderr") == "err\n", res
    e.s.close()


def test_execute_batch_with_build(user, sess):  # noqa: F811
    e = Exec(user, sess, {"mode": "batch", "code": "",
                          "options": {"build": f"echo built > /tmp/b-{TAG}",
                                      "exec": f"cat /tmp/b-{TAG}"}})
    res = e.results()
    statuses = [r["status"] for r in res]
    assert "build-finished" in statuses and statuses[-1] == "finished", res
    assert res[-1]["exitCode"] == 0 and _text(res) == "built\n", res
    e.s.close()
    # a failing build: exec does not run
    e = Exec(user, sess, {"mode": "batch", "code": "",
                          "options": {"build": "exit 2", "exec": f"echo ran-{TAG}"}})
    res = e.results()
    assert res[-1]["status"] == "finished" and res[-1]["exitCode"] == 2, res
    assert f"ran-{TAG}" not in _text(res)
    assert "build-finished" not in [r["status"] for r in res]
    e.s.close()


def test_execute_input(user, sess):  # noqa: F811
    # head waits in read(2); the shell's own `read` polls its stdin first
    for code in ("head -n 1 | sed 's/^/got-/'", "read x; echo got-$x; read y; echo got2-$y"):
        e = Exec(user, sess, {"mode": "query", "code": code})
        res = e.results()
        assert res[-1]["status"] == "waiting-input", (code, res)
        wsclient.send_text(e.s, f"line-{TAG}")
        if "got2" in code:
            res = e.results()
            assert res[-1]["status"] == "waiting-input", (code, res)
            assert f"got-line-{TAG}" in _text(res)
            wsclient.send_text(e.s, f"two-{TAG}")
        res = e.results()
        assert res[-1]["status"] == "finished" and res[-1]["exitCode"] == 0, (code, res)
        assert f"-line-{TAG}" in _text(res) or "got2" in code, res
        if "got2" in code:
            assert f"got2-two-{TAG}" in _text(res), res
        e.s.close()


def test_execute_output_is_batched(user, sess):  # noqa: F811
    e = Exec(user, sess, {"mode": "query",
                          "code": "i=0; while [ $i -lt 20 ]; do echo n$i; i=$((i+1)); "
                                  "sleep 0.05; done"})
    res = e.results()
    assert res[-1]["status"] == "finished", res
    cont = [r for r in res if r["status"] == "continued"]
    assert 1 <= len(cont) <= 8, res  # ~1 s of output in messages >= 200 ms apart
    assert _text(res) == "".join(f"n{i}\n" for i in range(20))
    e.s.close()


def _count(user, sess, pattern):  # noqa: F811
    r = user.post(f"/session/{sess}", {"mode": "query", "code": "ps -o args"}, timeout=80)
    assert r.status_code == 200, r.text
    out = "".join(t for k, t in r.json()["result"]["console"] if k == "stdout")
    return sum(1 for line in out.splitlines() if pattern in line)


def test_execute_interrupt(user, other, sess):  # noqa: F811
    e = Exec(user, sess, {"mode": "query", "code": f"sleep 60 # intr-{TAG}"})
    time.sleep(1.5)
    problem(other.post(f"/session/{sess}/interrupt"), 404)
    t0 = time.monotonic()
    r = user.post(f"/session/{sess}/interrupt")
    assert r.status_code == 204, r.text
    res = e.results(timeout=10)
    assert res and res[-1]["status"] == "finished" and res[-1]["exitCode"] == 130, res
    assert time.monotonic() - t0 < 5
    e.s.close()


def test_execute_closed_early_leaves_no_process(user, sess):  # noqa: F811
    mark = f"sleep {1000 + int(TAG, 16) % 9000}"
    e = Exec(user, sess, {"mode": "query", "code": mark})
    time.sleep(1.5)
    assert _count(user, sess, mark) == 1
    e.s.close()
    deadline = time.monotonic() + 10
    while _count(user, sess, mark) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _count(user, sess, mark) == 0


def test_execute_bad_first_message(user, sess):  # noqa: F811
    for first in ({"mode": "nope", "code": "x"}, "not json", {"mode": "query"}):
        e = Exec(user, sess, first)
        res = e.results()
        assert res and res[-1]["status"] == "error" and res[-1]["msg"], res
        assert e.results() == [] and e.close is not None
        e.s.close()


def test_cli_session_interrupt(user, other, sess):  # noqa: F811
    import os
    import subprocess
    from conftest import BIN_DIR
    cli = os.path.join(BIN_DIR, "tessera")

    def run(client, *args):
        env = dict(os.environ, TESSERA_ACCESS_KEY=client.access_key,
                   TESSERA_SECRET_KEY=client.secret_key, TESSERA_GATEWAY_URL=client.endpoint)
        return subprocess.run([cli, "session", "interrupt", *args], env=env, capture_output=True,
                              text=True, timeout=30)

    e = Exec(user, sess, {"mode": "query", "code": "sleep 50"})
    time.sleep(1.5)
    out = run(other, sess)
    assert out.returncode == 1 and "404" in out.stderr, out
    out = run(user, sess)
    assert out.returncode == 0 and f"session {sess} interrupted" in out.stdout, out
    res = e.results(timeout=10)
    assert res and res[-1]["status"] == "finished" and res[-1]["exitCode"] == 130, res
    e.s.close()
    out = run(user)
    assert out.returncode == 2, out


def test_console_login_websocket_needs_its_origin(gw, admin, sess, image_registered):  # noqa: F811
    """Session mode (/func/...): a browser's WebSocket carries the cookie and
    Origin but no CSRF token: the console's own Origin opens it, another
    origin or none is 403; another user's session is 404 as with a signature."""
    import requests
    from test_sessions_api import PASSWORD, _new_user
    _client, u = _new_user(admin, gw, "strm-web")
    web = requests.Session()
    r = web.post(f"{gw}/server/login", json={"username": u["email"], "password": PASSWORD})
    assert r.status_code == 200, r.text
    cookie = "; ".join(f"{k}={v}" for k, v in web.cookies.items())
    own = gw.rstrip("/")
    csrf = r.json()["csrf_token"]
    mine = f"strm-w-{TAG}"
    # the login runs as its own keypair: the session is made through it
    r = web.post(f"{gw}/func/session", headers={"X-CSRF-Token": csrf}, timeout=45,
                 json={"image": image_registered, "name": mine, "maxWaitSeconds": 30,
                       "config": {"resources": {"cpu": "1", "mem": "256m"}}})
    assert r.status_code == 201 and r.json()["status"] == "RUNNING", r.text
    try:
        cases = [({"Origin": own}, mine, 101), ({"Origin": "http://evil.example"}, mine, 403),
                 ({}, mine, 403), ({"Origin": own}, sess, 404)]
        for extra, target, want in cases:
            h = {"Cookie": cookie}
            h.update(extra)
            s, st, head, rest = wsclient.open_ws(f"{gw}/func/stream/session/{target}/pty", h)
            assert st == want, (extra, target, head, rest)
            if st == 101:
                frames = wsclient.frames(s, rest)
                wsclient.send_text(s, json.dumps({"type": "stdin", "chars": base64.b64encode(
                    b"echo web-$((20+1))\n").decode()}))
                out = b""
                s.settimeout(15)
                for op, payload in frames:
                    if op != 1:
                        break
                    m = json.loads(payload)
                    out += base64.b64decode(m.get("data", "")) if m["type"] == "out" else b""
                    if b"web-21" in out:
                        break
                assert b"web-21" in out
            s.close()
    finally:
        web.delete(f"{gw}/func/session/{mine}", headers={"X-CSRF-Token": csrf})


def test_max_streams_and_interrupt_per_instance(stack, bin_dir, tmp_path, user, sess):  # noqa: F811
    """A second gateway with gateway.max_streams=1: a second stream gets 503
    before the upgrade and the slot comes back when the first ends; an
    interrupt reaches only the streams of the instance that answers it; a
    gateway that stops closes its streams (1001)."""
    import signal
    import bai_signer
    from conftest import second_gateway
    with second_gateway(stack, bin_dir, tmp_path / "gw-streams.log", "it-streams",
                        TESSERA_GATEWAY_MAX_STREAMS="1") as (url, proc):
        u2 = bai_signer.Client(url, user.access_key, user.secret_key)
        e = Exec(u2, sess, {"mode": "query", "code": "sleep 40"})
        time.sleep(1.5)
        s, st, head, rest = wsclient.open_signed(u2, f"/stream/session/{sess}/pty")
        assert st == 503, head
        s.close()
        # the stack's own gateway does not hold it: nothing is interrupted
        assert user.post(f"/session/{sess}/interrupt").status_code == 204
        e.s.settimeout(2)
        with pytest.raises(OSError):
            e.s.recv(1)
        assert u2.post(f"/session/{sess}/interrupt").status_code == 204
        res = e.results(timeout=10)
        assert res[-1]["status"] == "finished" and res[-1]["exitCode"] == 130, res
        e.s.close()
        # the slot is free again (once the stream's thread let go of it)
        deadline = time.monotonic() + 10
        while True:
            s, st, head, rest = wsclient.open_signed(u2, f"/stream/session/{sess}/pty")
            if st == 101 or time.monotonic() > deadline:
                break
            s.close()
            time.sleep(0.2)
        assert st == 101, head
        # stopping: the open stream is closed with 1001
        proc.send_signal(signal.SIGTERM)
        s.settimeout(15)
        code = None
        t0 = time.monotonic()
        for op, payload in wsclient.frames(s, rest):
            if op is None or op == 8:
                code = wsclient.close_code(payload) if op == 8 else None
                break
        assert code == 1001 and time.monotonic() - t0 < 10
        s.close()
        assert proc.wait(timeout=20) == 0
