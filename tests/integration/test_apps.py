"""Apps inside sessions through tessera-wsproxy (docs/wsproxy.md, "Opening an
app"; docs/internal-api.md, tessera-wsproxy): POST /session/{name}/start-service
on the signed gateway makes a route on wsproxy and answers {token,
wsproxy_addr, url}; the URL reaches the app's HTTP server inside the session;
another user cannot open it; the registry removes the routes when the session
ends, so the URL is refused afterwards. Also the refusals: unknown app (404),
a session that is not RUNNING (409), an unknown session (404), and
`tessera app`."""
import json
import os
import subprocess
import uuid

import pytest
import requests

from conftest import BIN_DIR, wait_until
from test_sessions_api import admin, gw, image, image_registered, other, problem, user  # noqa: F401

TAG = uuid.uuid4().hex[:6]
PAGE = f"hello-app-{TAG}"
# The demo image declares echo:http:8080; busybox httpd serves a page there.
BOOTSTRAP = (f"mkdir -p /tmp/www && echo {PAGE} > /tmp/www/index.html && "
             "busybox httpd -p 8080 -h /tmp/www")


def _running(client, image, sname, **extra):
    body = {"image": image, "name": sname, "maxWaitSeconds": 30,
            "config": {"resources": {"cpu": "1", "mem": "256m"}}}
    body.update(extra)
    r = client.post("/session", body, timeout=45)
    assert r.status_code == 201, r.text
    if r.json()["status"] != "RUNNING":
        info = client.get(f"/session/{sname}").json()
        client.delete(f"/session/{sname}")
        pytest.fail(f"not RUNNING in 30 s: {info.get('status')} ({info.get('statusInfo')})")
    return r.json()


@pytest.fixture(scope="module")
def app_session(user, image_registered):  # noqa: F811
    sname = f"app-{TAG}"
    _running(user, image_registered, sname, bootstrap_script=BOOTSTRAP)
    yield sname
    user.delete(f"/session/{sname}")


def start_when_listening(client, sname, app="echo", timeout=30):
    """start-service once the app listens: until its server (started by the
    bootstrap script, after RUNNING) is up, start-service answers 409."""
    r = wait_until(lambda: (lambda a: a if a.status_code != 409 else None)(
        client.post(f"/session/{sname}/start-service", {"app": app})), timeout=timeout,
        message="the app to listen")
    assert r.status_code == 200, r.text
    return r.json()


def _open(url, **kw):
    return requests.get(url, timeout=5, allow_redirects=False, **kw)


def test_start_service_opens_the_app_and_destroy_revokes_it(user, app_session):  # noqa: F811
    body = start_when_listening(user, app_session, timeout=20)
    assert body["token"] and body["url"].endswith("?token=" + body["token"]), body
    assert body["url"].startswith(body["wsproxy_addr"] + "/"), body
    # the app's server starts with the bootstrap script, after RUNNING
    got = wait_until(lambda: (lambda a: a if a.status_code == 200 and PAGE in a.text else None)(
        _open(body["url"])), timeout=20, message="the app through wsproxy")
    cookie = [c for c in got.cookies if c.name.startswith("tessera_app_")]
    assert cookie, got.headers
    # the same app by its container port
    by_port = user.post(f"/session/{app_session}/start-service", {"port": 8080})
    assert by_port.status_code == 200, by_port.text
    assert _open(by_port.json()["url"]).status_code == 200

    # destroy: the registry removes the session's routes on wsproxy
    assert user.delete(f"/session/{app_session}").status_code == 200
    wait_until(lambda: _open(body["url"]).status_code == 401, timeout=10,
               message="the token to be refused after destroy")
    assert _open(by_port.json()["url"]).status_code == 401
    assert _open(body["wsproxy_addr"] + "/", cookies={cookie[0].name: cookie[0].value}).status_code == 401


def test_another_user_cannot_open_the_app(user, other, image_registered):  # noqa: F811
    sname = f"app2-{TAG}"
    _running(user, image_registered, sname)
    try:
        problem(other.post(f"/session/{sname}/start-service", {"app": "echo"}), 404, 403)
    finally:
        user.delete(f"/session/{sname}")


def test_unknown_app_is_404(user, image_registered):  # noqa: F811
    sname = f"app3-{TAG}"
    _running(user, image_registered, sname)
    try:
        p = problem(user.post(f"/session/{sname}/start-service", {"app": "nope"}), 404)
        assert "nope" in p["msg"]
        problem(user.post(f"/session/{sname}/start-service", {"port": 9999}), 404)
        problem(user.post(f"/session/{sname}/start-service", {}), 400)
        problem(user.post(f"/session/{sname}/start-service", {"app": "echo", "port": "x"}), 400)
        # the CLI prints the URL; --json gives the answer
        env = dict(os.environ, TESSERA_ACCESS_KEY=user.access_key,
                   TESSERA_SECRET_KEY=user.secret_key, TESSERA_GATEWAY_URL=user.endpoint)
        cli = os.path.join(BIN_DIR, "tessera")
        out = subprocess.run([cli, "app", sname, "ttyd"], env=env, capture_output=True,
                             text=True, timeout=40)
        assert out.returncode == 0, out.stderr
        assert "?token=" in out.stdout.strip()
        out = subprocess.run([cli, "--json", "app", sname, "ttyd"], env=env,
                             capture_output=True, text=True, timeout=20)
        assert out.returncode == 0, out.stderr
        assert set(json.loads(out.stdout)) >= {"token", "wsproxy_addr", "url"}
        out = subprocess.run([cli, "app", sname, "nope"], env=env, capture_output=True,
                             text=True, timeout=20)
        assert out.returncode == 1 and "404" in out.stderr, out
    finally:
        user.delete(f"/session/{sname}")


def test_pending_session_is_409(user, image_registered):  # noqa: F811
    sname = f"app4-{TAG}"
    r = user.post("/session", {"image": image_registered, "name": sname, "type": "batch",
                               "startupCommand": "sleep 60", "starts_at": "1h",
                               "enqueueOnly": True})
    assert r.status_code == 201, r.text
    try:
        p = problem(user.post(f"/session/{sname}/start-service", {"app": "echo"}), 409)
        assert "RUNNING" in p["msg"]
    finally:
        user.delete(f"/session/{sname}")


def test_unknown_session_is_404(user):  # noqa: F811
    problem(user.post(f"/session/none-{TAG}/start-service", {"app": "echo"}), 404)
