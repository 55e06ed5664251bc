"""The Jupyter image (deploy/images/jupyter.sh, docs/images.md) in a real
session: pushed to the stack's registry, a session of it created through the
gateway, start-service of its `jupyter` app (the agent runs the
tessera.app.jupyter.start label's command), then, through tessera-wsproxy
with the URL start-service answers: the notebook's tree page, a kernel
started with the REST API (POST /api/kernels, with Jupyter's XSRF cookie as a
browser sends it), code run in it over the kernel's WebSocket, and a
WebSocket from a foreign Origin refused (Jupyter's own check: wsproxy keeps
the Host).

The image takes a minute or two of mmdebstrap from the Debian mirror, so it
is not built here: without build/images/jupyter (`make images`) the tests
skip."""
import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import uuid

import pytest
import requests

import wsclient
from conftest import REPO
from test_sessions_api import admin, gw, user  # noqa: F401

IMAGE_DIR = os.path.join(REPO, "build", "images", "jupyter")
TAG = uuid.uuid4().hex[:6]


@pytest.fixture(scope="session")  # session: set up before the stack, so a skip costs none
def built():
    """IMAGE_DIR, or a skip (before any stack is started)."""
    if not os.path.isfile(os.path.join(IMAGE_DIR, "index.json")):
        pytest.skip(f"{IMAGE_DIR} does not exist: build it with `make images` or "
                    "`sh deploy/images/jupyter.sh build/images/jupyter` (mmdebstrap, a minute or two)")
    return IMAGE_DIR


def _config():
    """The image config of the layout at IMAGE_DIR."""
    def blob(digest):
        with open(os.path.join(IMAGE_DIR, "blobs", "sha256", digest[7:]), encoding="utf-8") as f:
            return json.load(f)
    with open(os.path.join(IMAGE_DIR, "index.json"), encoding="utf-8") as f:
        manifest = blob(json.load(f)["manifests"][0]["digest"])
    return blob(manifest["config"]["digest"])["config"]


def test_jupyter_image_labels(built):
    """Backend.AI's labels, the app's port and its start command (the agent
    takes at most 511 bytes) as docs/images.md describes them."""
    cfg = _config()
    labels = cfg["Labels"]
    assert labels["ai.backend.service-ports"] == "jupyter:http:8888"
    assert labels["ai.backend.runtime-type"] == "python"
    assert labels["ai.backend.runtime-path"] == "/usr/bin/python3"
    assert labels["org.opencontainers.image.title"] == "tessera/jupyter"
    start = labels["tessera.app.jupyter.start"]
    assert len(start.encode()) <= 511, len(start)
    for opt in ("--ip=0.0.0.0", "--port=8888", "--no-browser", "--notebook-dir=/home/work",
                "--NotebookApp.token= ", "--NotebookApp.password= ", "--NotebookApp.base_url=/ "):
        assert opt in start + " ", (opt, start)
    assert cfg["WorkingDir"] == "/home/work"


@pytest.fixture(scope="module")
def jupyter_image(built, stack, admin):  # noqa: F811
    ref = f"{stack['TESSERA_OCI_REGISTRY']}/tessera/jupyter:it-{TAG}"
    r = subprocess.run([sys.executable, os.path.join(REPO, "tools", "oci-image.py"), "push", IMAGE_DIR,
                        ref, "--insecure"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = admin.post("/admin/images", {"reference": ref})
    assert r.status_code in (200, 201), r.text
    return ref


@pytest.fixture(scope="module")
def session(user, jupyter_image):  # noqa: F811
    sname = f"jupyter-{TAG}"
    r = user.post("/session", {"image": jupyter_image, "name": sname, "maxWaitSeconds": 60,
                               "config": {"resources": {"cpu": "1", "mem": "512m"}}}, timeout=90)
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + 120  # the first pull of ~130 MB, unpacked
    info = r.json()
    while info.get("status") != "RUNNING" and time.monotonic() < deadline:
        assert info.get("status") not in ("ERROR", "TERMINATED", "CANCELLED"), info
        time.sleep(1)
        info = user.get(f"/session/{sname}").json()
    if info.get("status") != "RUNNING":
        user.delete(f"/session/{sname}")
        pytest.fail(f"not RUNNING in 120 s: {info.get('status')} ({info.get('statusInfo')})")
    yield sname
    user.delete(f"/session/{sname}")


def _start(user, sname):  # noqa: F811
    """start-service jupyter: its answer. The agent waits 10 s for the port; a
    notebook server on a loaded machine may need longer, then it is asked again
    (a running app is not started twice)."""
    for _ in range(4):
        r = user.post(f"/session/{sname}/start-service", {"app": "jupyter"}, timeout=40)
        if r.status_code != 504:
            break
    assert r.status_code == 200, r.text
    return r.json()


def _ws(url, path, origin, cookies):
    """A WebSocket handshake through wsproxy to path, with origin and cookies:
    (socket, status line, bytes after the head)."""
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=20)
    cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\nOrigin: {origin}\r\n"
               f"Upgrade: websocket\r\nConnection: Upgrade\r\nCookie: {cookie}\r\n"
               f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    status, _, _ = head.partition(b"\r\n")
    return s, status.decode(errors="replace"), head.partition(b"\r\n\r\n")[2]


def test_jupyter_through_wsproxy(built, user, session):  # noqa: F811
    info = user.get(f"/session/{session}").json()
    ports = {p["name"]: p for p in info["servicePorts"]}
    assert ports["jupyter"]["protocol"] == "http" and ports["jupyter"]["container_ports"] == [8888]

    started = _start(user, session)
    assert started["app"] == "jupyter" and "?token=" in started["url"], started
    url = started["url"]
    base = url.split("?", 1)[0].rstrip("/")
    origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url))

    # A browser: the link (wsproxy: cookie, 302 without the token), then
    # Jupyter's own redirect to /tree.
    b = requests.Session()
    r = b.get(url, headers={"Accept": "text/html"}, timeout=30)
    assert r.status_code == 200, (r.status_code, r.text[:500])
    assert r.url.endswith("/tree"), r.url
    assert "Jupyter" in r.text and "<title>Home Page" in r.text, r.text[:500]
    xsrf = b.cookies.get("_xsrf")
    assert xsrf, dict(b.cookies)

    # Without the XSRF header the API refuses (Jupyter's check, kept).
    r = b.post(base + "/api/kernels", json={"name": "python3"}, timeout=30)
    assert r.status_code == 403, r.text
    # As the notebook page does: the cookie's value in X-XSRFToken.
    r = b.post(base + "/api/kernels", json={"name": "python3"},
               headers={"X-XSRFToken": xsrf, "Origin": origin}, timeout=60)
    assert r.status_code == 201, r.text
    kid = r.json()["id"]
    assert kid in [k["id"] for k in b.get(base + "/api/kernels", timeout=30).json()]

    # A foreign origin's WebSocket: refused by Jupyter (403).
    s, status, _ = _ws(url, f"/api/kernels/{kid}/channels", "http://evil.example.com", dict(b.cookies))
    s.close()
    assert " 403 " in status, status

    # The kernel runs code over its WebSocket (Jupyter's JSON protocol).
    s, status, rest = _ws(url, f"/api/kernels/{kid}/channels", origin, dict(b.cookies))
    try:
        assert " 101 " in status, status
        n = int.from_bytes(os.urandom(2), "big")
        msg_id = uuid.uuid4().hex
        wsclient.send_text(s, json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                       "session": uuid.uuid4().hex, "version": "5.3",
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": f"import os\nprint({n} + 1, os.getcwd())", "silent": False,
                        "store_history": False, "user_expressions": {}, "allow_stdin": False,
                        "stop_on_error": True}}))
        out = ""
        deadline = time.monotonic() + 60
        s.settimeout(60)
        for op, payload in wsclient.frames(s, rest):
            if op is None or op == 8:
                break
            if op != 1:
                continue
            m = json.loads(payload.decode())
            if m.get("parent_header", {}).get("msg_id") == msg_id and m.get("msg_type") == "stream":
                out += m["content"]["text"]
            if f"{n + 1} /home/work" in out or time.monotonic() > deadline:
                break
        assert f"{n + 1} /home/work" in out, out
    finally:
        s.close()
    r = b.delete(f"{base}/api/kernels/{kid}", headers={"X-XSRFToken": xsrf, "Origin": origin}, timeout=30)
    assert r.status_code == 204, r.text
