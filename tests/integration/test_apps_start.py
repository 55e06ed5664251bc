"""Apps started on demand (docs/agent.md, "Apps"; docs/wsproxy.md, "The terminal
app"): every kernel gets tessera-term mounted read-only and, when its image has
no terminal app, a `ttyd` service port. start-service has the agent start the
app (once: a second start is a no-op), then answers the URL. Through the
gateway and tessera-wsproxy with a real busybox container: a shell over the
WebSocket, closed when the session is destroyed; the image's tcp app
`tcpecho` (label tessera.app.tcpecho.start) reached through
`tessera app --bind`. Bad input: unknown app, another user's session, an app
that cannot be started, --bind on an http app or a port in use."""
import base64
import os
import re
import socket
import subprocess
import time
import urllib.parse
import uuid

import pytest

import wsclient
from conftest import BIN_DIR, wait_until
from test_apps import _running
from test_sessions_api import admin, gw, image, image_registered, other, problem, user  # noqa: F401

TAG = uuid.uuid4().hex[:6]
# sessions of this module whose ports a failure's message shows: name -> client
_SHOWN = {}


@pytest.fixture(scope="module")
def term_session(user, image_registered):  # noqa: F811
    sname = f"term-{TAG}"
    _running(user, image_registered, sname)
    _SHOWN[sname] = user
    yield sname
    user.delete(f"/session/{sname}")


def _cli_env(client):
    return dict(os.environ, TESSERA_ACCESS_KEY=client.access_key,
                TESSERA_SECRET_KEY=client.secret_key, TESSERA_GATEWAY_URL=client.endpoint)


def _ws_open(url, path="/ws"):
    """A WebSocket to tessera-term's /ws (or /exec) through wsproxy, with the link's token."""
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path}?{u.query} HTTP/1.1\r\nHost: {u.netloc}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        assert chunk, head
        head += chunk
    status = head.split(b"\r\n", 1)[0]
    assert b" 101 " in status, (head, _host_view())
    return s, head.split(b"\r\n\r\n", 1)[1]


def _host_view():
    """What the host holds for the apps' ports (for a failure's message): the
    DNAT rules to container ports 7681 and 9000, and the bridges' neighbours."""
    def run(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError) as e:
            return f"{argv[0]}: {e}"
    nat = [line for line in run("iptables-save", "-t", "nat").splitlines()
           if "DNAT --to-destination" in line and re.search(r":(7681|9000)$", line)]
    neigh = [line for line in run("ip", "-4", "neigh", "show").splitlines() if "tsdev" in line]
    ports = []
    for sname, client in _SHOWN.items():
        try:
            info = client.get(f"/session/{sname}").json()
            ports.append(f"{sname}: {info.get('status')} {info.get('servicePorts')}")
        except Exception as e:  # noqa: BLE001 - a message, not a check
            ports.append(f"{sname}: {e!r}")
    return "\n".join(["host DNAT to 7681/9000:"] + nat + ["neighbours:"] + neigh +
                     ["sessions' ports:"] + ports)


def _read_until(frames, pattern, timeout=15):
    out = b""
    deadline = time.monotonic() + timeout
    for op, payload in frames:
        if op is None or op == 8:
            break
        out += payload
        if re.search(pattern, out) or time.monotonic() > deadline:
            break
    return out


def _terms(user, sname):
    """The command lines of the tessera-terms running in the session."""
    r = user.post(f"/session/{sname}", {"mode": "query", "code": "ps -o args"}, timeout=80)
    assert r.status_code == 200, r.text
    out = "".join(t for k, t in r.json()["result"]["console"] if k == "stdout")
    return [line for line in out.splitlines() if line.startswith("/opt/tessera/bin/tessera-term")]


def _count_terms(user, sname):
    return len(_terms(user, sname))


def _exec(url, first, then=()):
    """One /exec run through wsproxy: send the first message, then each of
    then after the term's `w`; (stdout, kinds seen, exit status)."""
    s, rest = _ws_open(url, "/exec")
    try:
        frames = wsclient.frames(s, rest)
        wsclient.send_text(s, first)
        todo, out, kinds = list(then), b"", []
        deadline = time.monotonic() + 20
        for op, pl in frames:
            assert op == 2 and time.monotonic() < deadline, (op, pl, out)
            kinds.append(pl[:1])
            if pl[:1] == b"o":
                out += pl[1:]
            elif pl == b"w" and todo:
                wsclient.send_binary(s, todo.pop(0))
            elif pl[:1] == b"x":
                op, close = next(frames)
                assert op == 8 and close[:2] == b"\x03\xe8", (op, close)
                return out, kinds, int(pl[1:])
    finally:
        s.close()


def test_ttyd_is_listed_and_opens_a_shell(user, term_session):  # noqa: F811
    info = user.get(f"/session/{term_session}").json()
    ports = {p["name"]: p for p in info["servicePorts"]}
    assert ports["ttyd"]["protocol"] == "http" and ports["ttyd"]["container_ports"] == [7681]
    assert ports["ttyd"]["host_ports"][0] > 0, ports
    assert ports["tcpecho"]["protocol"] == "tcp"
    # not running before it is opened
    assert _count_terms(user, term_session) == 0
    r = user.post(f"/session/{term_session}/start-service", {"app": "ttyd"}, timeout=40)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["app"] == "ttyd" and body["protocol"] == "http" and "?token=" in body["url"]
    # a second start while it runs is a no-op: one tessera-term
    r2 = user.post(f"/session/{term_session}/start-service", {"app": "ttyd"}, timeout=40)
    assert r2.status_code == 200, r2.text
    terms = _terms(user, term_session)
    assert len(terms) == 1, terms
    # the image's runtime path (busybox: /bin/sh) is /exec's query runtime
    assert terms[0].endswith("--runtime /bin/sh"), terms

    s, rest = _ws_open(body["url"])
    try:
        frames = wsclient.frames(s, rest)
        n = int.from_bytes(os.urandom(2), "big")
        # the shell computes the number: the echo of the typed line shows $((...)) instead
        wsclient.send_text(s, f"echo hello-$(({n}+1))-{TAG}\n")
        out = _read_until(frames, f"hello-{n + 1}-{TAG}".encode())
        assert f"hello-{n + 1}-{TAG}".encode() in out, out
        # the read-only mount
        wsclient.send_text(s, f"touch /opt/tessera/bin/tessera-term || echo ro-{TAG}\n")
        out = _read_until(frames, f"\nro-{TAG}".encode())
        assert f"ro-{TAG}".encode() in out and b"Read-only" in out, out
    finally:
        s.close()


def test_exec_through_the_app_url(user, term_session):  # noqa: F811
    """/exec (the gateway's streamed execution uses it) through wsproxy, in the
    container: query mode runs the runtime, input after `w`, the exit status."""
    r = user.post(f"/session/{term_session}/start-service", {"app": "ttyd"}, timeout=40)
    assert r.status_code == 200, r.text
    url = r.json()["url"]
    out, kinds, status = _exec(url, 'qecho "$0" $((6*7)); exit 3')
    assert (out, status) == (b"/bin/sh 42\n", 3)
    out, kinds, status = _exec(url, f'bread x; echo "got $x-{TAG}"', ["iabc\n"])
    assert (out, status) == (f"got abc-{TAG}\n".encode(), 0)
    assert kinds.count(b"w") == 1, kinds


def test_destroy_closes_the_terminal(user, image_registered):  # noqa: F811
    sname = f"term2-{TAG}"
    _running(user, image_registered, sname)
    _SHOWN[sname] = user
    try:
        r = user.post(f"/session/{sname}/start-service", {"app": "ttyd"}, timeout=40)
        assert r.status_code == 200, r.text
        s, rest = _ws_open(r.json()["url"])
        frames = wsclient.frames(s, rest)
        wsclient.send_text(s, f"echo up-$((2+3))-{TAG}\n")
        assert f"up-5-{TAG}".encode() in _read_until(frames, f"up-5-{TAG}".encode())
        assert user.delete(f"/session/{sname}").status_code == 200
        s.settimeout(15)
        t0 = time.monotonic()
        for op, _ in frames:  # ends at EOF or a close frame
            if op is None or op == 8:
                break
        assert time.monotonic() - t0 < 15
        s.close()
    finally:
        user.delete(f"/session/{sname}")


def test_apps_that_cannot_be_opened(user, other, term_session):  # noqa: F811
    p = problem(user.post(f"/session/{term_session}/start-service", {"app": "nope"}), 404)
    assert "nope" in p["msg"]
    problem(user.post(f"/session/{term_session}/start-service", {"app": "../x"}), 404)
    problem(other.post(f"/session/{term_session}/start-service", {"app": "ttyd"}), 404, 403)
    # echo is declared by the image, but nothing listens and nothing starts it
    p = problem(user.post(f"/session/{term_session}/start-service", {"app": "echo"}), 409)
    assert "tessera.app.echo.start" in p["msg"], p


def test_tcp_app_through_a_local_port(user, term_session):  # noqa: F811
    cli = os.path.join(BIN_DIR, "tessera")
    env = _cli_env(user)
    # an http app is refused
    out = subprocess.run([cli, "app", term_session, "ttyd", "--bind", "127.0.0.1:0"], env=env,
                         capture_output=True, text=True, timeout=40)
    assert out.returncode == 1 and "tcp apps only" in out.stderr, out
    # a port in use is refused before anything else
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    out = subprocess.run([cli, "app", term_session, "tcpecho", "--bind",
                          str(busy.getsockname()[1])], env=env, capture_output=True, text=True,
                         timeout=40)
    busy.close()
    assert out.returncode == 1 and "Address already in use" in out.stderr, out
    out = subprocess.run([cli, "app", term_session, "tcpecho", "--bind", "x:y"], env=env,
                         capture_output=True, text=True, timeout=40)
    assert out.returncode == 1 and "--bind" in out.stderr, out

    p = subprocess.Popen([cli, "app", term_session, "tcpecho", "--bind", "127.0.0.1:0"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        m = re.match(r"listening on 127\.0\.0\.1:(\d+)", line)
        assert m, (line, p.poll())
        port = int(m.group(1))
        for i in range(2):  # each connection gets its own tunnel
            c = socket.create_connection(("127.0.0.1", port), timeout=10)
            msg = f"ping-{i}-{TAG}\n".encode()
            c.sendall(msg)
            got = b""
            while len(got) < len(msg):
                chunk = c.recv(4096)
                assert chunk, got
                got += chunk
            assert got == msg
            c.close()
    finally:
        p.terminate()
        p.wait(timeout=10)


def test_shutdown_service_stops_the_app(user, other, image_registered):  # noqa: F811
    """Backend.AI's shutdown-service: the app's listening process ends (SIGTERM),
    an open terminal closes, and a later start-service starts it again."""
    sname = f"term3-{TAG}"
    _running(user, image_registered, sname)
    try:
        r = user.post(f"/session/{sname}/start-service", {"app": "ttyd"}, timeout=40)
        assert r.status_code == 200, r.text
        assert _count_terms(user, sname) == 1
        s, rest = _ws_open(r.json()["url"])
        frames = wsclient.frames(s, rest)
        wsclient.send_text(s, f"echo up-$((4+5))-{TAG}\n")
        assert f"up-9-{TAG}".encode() in _read_until(frames, f"up-9-{TAG}".encode())
        # another user cannot stop it; bad input is refused; nothing stopped so far
        problem(other.post(f"/session/{sname}/shutdown-service", {"service_name": "ttyd"}),
                404, 403)
        problem(user.post(f"/session/{sname}/shutdown-service", {}), 400)
        problem(user.post(f"/session/{sname}/shutdown-service", {"service_name": 7}), 400)
        problem(user.post(f"/session/{sname}/shutdown-service", {"service_name": "../x"}), 400)
        problem(user.post(f"/session/{sname}/shutdown-service", {"service_name": "nope"}), 404)
        assert _count_terms(user, sname) >= 1  # (one more per open terminal)
        t0 = time.monotonic()
        r = user.post(f"/session/{sname}/shutdown-service", {"service_name": "ttyd"}, timeout=20)
        assert r.status_code == 204, r.text
        assert time.monotonic() - t0 < 8
        assert _count_terms(user, sname) == 0
        # the open terminal sees its end
        s.settimeout(10)
        for op, _ in frames:
            if op is None or op == 8:
                break
        s.close()
        # stopping what does not run is no error; the query form (Backend.AI's SDK 21)
        r = user.post(f"/session/{sname}/shutdown-service", {"service_name": "ttyd"}, timeout=20)
        assert r.status_code == 204, r.text
        r = user.post(f"/session/{sname}/shutdown-service", params={"service_name": "ttyd"},
                      timeout=20)
        assert r.status_code == 204, r.text
        problem(user.post(f"/session/{sname}/shutdown-service", params={"service_name": "no/pe"}),
                400)
        # and it starts again on demand
        r = user.post(f"/session/{sname}/start-service", {"app": "ttyd"}, timeout=40)
        assert r.status_code == 200, r.text
        assert _count_terms(user, sname) == 1
        # the CLI stops it too
        cli = os.path.join(BIN_DIR, "tessera")
        p = subprocess.run([cli, "app", sname, "ttyd", "--stop"], env=_cli_env(user),
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0 and "stopped" in p.stdout, (p.stdout, p.stderr)
        assert _count_terms(user, sname) == 0
        p = subprocess.run([cli, "app", sname, "--stop"], env=_cli_env(user),
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "APP" in p.stderr, (p.stdout, p.stderr)
    finally:
        user.delete(f"/session/{sname}")
