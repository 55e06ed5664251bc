"""Backend.AI's event streams through the gateway (docs/events.md "Event
streams"): GET /events/session (server-sent events of the session lifecycle,
scoped like GET /session?all=true) and GET /events/background-task (a
registry background task, e.g. GraphQL rescan_images).

Streams are read by a thread per stream (requests, stream=True) that parses
the text/event-stream lines into (event, data) pairs."""
import json
import socket
import threading
import time
import urllib.parse
import uuid

import pytest
import requests

import bai_signer
from conftest import wait_until
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401

TAG = uuid.uuid4().hex[:6]


class Stream:
    """An open event stream on a socket of its own (so that close() cuts it at
    once, whatever the reader thread is doing): .status, .headers, .text (a
    refusal's body) and .events, the (event, data) pairs seen so far."""

    def __init__(self, client, path, params=None):
        target = path + ("?" + urllib.parse.urlencode(params) if params else "")
        url = client.endpoint + target
        h = bai_signer.signed_headers(client.access_key, client.secret_key, "GET", url,
                                      content_type=None)
        u = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=10)
        head = f"GET {target} HTTP/1.1\r\nHost: {u.netloc}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
        self.sock.sendall(head.encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = self.sock.recv(4096)
            if not d:
                break
            buf += d
        raw_head, _, self.rest = buf.partition(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip()
                        for k, _, v in (ln.partition(":") for ln in lines[1:])}
        self.events = []
        self.ended = threading.Event()
        self.text = ""
        if self.status == 200:
            self.sock.settimeout(None)
            threading.Thread(target=self._read, daemon=True).start()
        else:
            n = int(self.headers.get("content-length", "0"))
            while len(self.rest) < n:
                d = self.sock.recv(4096)
                if not d:
                    break
                self.rest += d
            self.text = self.rest.decode()
            self.sock.close()

    def _chunks(self):
        """The body's bytes as they come (chunked transfer encoding)."""
        buf = self.rest
        while True:
            while b"\r\n" not in buf:
                d = self.sock.recv(4096)
                if not d:
                    return
                buf += d
            size_line, _, buf = buf.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            while len(buf) < size + 2:
                d = self.sock.recv(4096)
                if not d:
                    return
                buf += d
            if size == 0:
                return
            yield buf[:size]
            buf = buf[size + 2:]

    def _read(self):
        ev, data, pending = None, [], b""
        try:
            for chunk in self._chunks():
                pending += chunk
                while b"\n" in pending:
                    raw, _, pending = pending.partition(b"\n")
                    line = raw.decode()
                    if line == "":
                        if data:
                            self.events.append((ev or "message", json.loads("\n".join(data))))
                        ev, data = None, []
                    elif line.startswith("event:"):
                        ev = line[6:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].strip())
        except OSError:
            pass
        self.ended.set()

    def names(self, sid=None):
        return [e for e, d in self.events if sid is None or d.get("sessionId") == sid]

    def wait_for(self, name, sid=None, timeout=30):
        return wait_until(lambda: name in self.names(sid), timeout=timeout,
                          message=f"event {name} (seen: {self.names(sid)})")

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


@pytest.fixture(scope="module")
def user(admin, gw):  # noqa: F811
    return _new_user(admin, gw, "ev-user")


@pytest.fixture(scope="module")
def other(admin, gw):  # noqa: F811
    return _new_user(admin, gw, "ev-other")


def _metric(gw, name):  # noqa: F811
    text = requests.get(gw + "/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return None


def _run_session(client, image, sname):
    r = client.post("/session", {"image": image, "name": sname, "maxWaitSeconds": 30,
                                 "config": {"resources": {"cpu": "1", "mem": "256m"}}}, timeout=45)
    body = okj(r, 201)
    return body.get("sessionUuid") or okj(client.get(f"/session/{sname}"))["sessionUuid"]


LIFECYCLE = ["session_enqueued", "session_scheduled", "session_started", "session_terminated"]


def test_session_lifecycle_scoped_and_filtered(admin, user, other, image_registered):  # noqa: F811
    uc, u = user
    oc, _ = other
    mine = Stream(uc, "/events/session")
    theirs = Stream(oc, "/events/session")
    su = Stream(admin, "/events/session")
    named = Stream(uc, "/events/session", {"sessionName": f"nomatch-{TAG}"})
    kernels = Stream(uc, "/events/session", {"scope": "kernel"})
    for s in (mine, theirs, su, named, kernels):
        assert s.status == 200, s.text
        assert s.headers["content-type"].startswith("text/event-stream")
    try:
        time.sleep(0.5)
        sname = f"ev-{TAG}"
        sid = _run_session(uc, image_registered, sname)
        oname = f"ev-o-{TAG}"
        osid = _run_session(oc, image_registered, oname)
        mine.wait_for("session_started", sid)
        okj(uc.delete(f"/session/{sname}"))
        okj(oc.delete(f"/session/{oname}"))
        mine.wait_for("session_terminated", sid)
        seen = mine.names(sid)
        # in order, each once at least
        idx = [seen.index(n) for n in LIFECYCLE]
        assert idx == sorted(idx), seen
        for e, d in mine.events:
            if d.get("sessionId") == sid:
                assert d["sessionName"] == sname and d["ownerAccessKey"] == uc.access_key, d
                assert set(d) >= {"sessionId", "sessionName", "ownerAccessKey", "reason", "exitCode"}
        # cross-tenant: the other user's session never reaches this stream, and back
        assert osid not in {d.get("sessionId") for _, d in mine.events}
        su.wait_for("session_terminated", sid)
        su.wait_for("session_terminated", osid)
        theirs.wait_for("session_terminated", osid)
        assert sid not in {d.get("sessionId") for _, d in theirs.events}
        # filters: a name that matches nothing sees nothing; scope=kernel sees only kernel_*
        assert named.events == []
        kernels.wait_for("kernel_started", sid, timeout=10)
        assert all(e.startswith("kernel_") for e in kernels.names()), kernels.names()
    finally:
        for s in (mine, theirs, su, named, kernels):
            s.close()


def test_session_stream_filter_by_id_and_owner(admin, user, image_registered):  # noqa: F811
    uc, _ = user
    sname = f"evf-{TAG}"
    r = uc.post("/session", {"image": image_registered, "name": sname, "enqueueOnly": True})
    sid = okj(r, 201)["sessionUuid"]
    by_id = Stream(uc, "/events/session", {"sessionId": sid})
    by_owner = Stream(admin, "/events/session", {"ownerAccessKey": uc.access_key,
                                                 "sessionName": sname})
    try:
        time.sleep(0.5)
        okj(uc.delete(f"/session/{sname}"))
        by_id.wait_for("session_terminated", sid)
        by_owner.wait_for("session_terminated", sid)
        assert {d["sessionId"] for _, d in by_id.events} == {sid}
        assert {d["ownerAccessKey"] for _, d in by_owner.events} == {uc.access_key}
    finally:
        by_id.close()
        by_owner.close()


@pytest.mark.parametrize("params", [{"sessionId": "not-a-uuid"}, {"scope": "bogus"},
                                    {"ownerAccessKey": "short"}, {"sessionName": "x" * 300}])
def test_session_stream_bad_input_is_400(user, params):
    r = user[0].get("/events/session", params=params)
    problem(r, 400)


def test_session_stream_other_owner_is_forbidden_to_users(user, other):
    r = user[0].get("/events/session", params={"ownerAccessKey": other[0].access_key})
    problem(r, 403)


def test_event_streams_need_a_signature(gw):  # noqa: F811
    assert requests.get(gw + "/events/session", timeout=5).status_code == 401
    assert requests.get(gw + "/events/background-task",
                        params={"taskId": str(uuid.uuid4())}, timeout=5).status_code == 401


def test_disconnected_clients_free_their_streams(gw, user):  # noqa: F811
    # the streams of the tests before are freed within a second or two
    wait_until(lambda: _metric(gw, "tessera_gateway_event_streams") == 0, timeout=15,
               message="no event stream open before")
    base = 0
    for _ in range(50):
        s = Stream(user[0], "/events/session")
        assert s.status == 200
        s.close()
    wait_until(lambda: _metric(gw, "tessera_gateway_event_streams") == base, timeout=15,
               message="the event streams' gauge back to where it was")


def test_open_streams_hold_no_worker(gw, user):  # noqa: F811
    streams = [Stream(user[0], "/events/session") for _ in range(20)]
    try:
        assert all(s.status == 200 for s in streams)
        t0 = time.monotonic()
        for _ in range(10):
            okj(user[0].get("/session"))
        assert time.monotonic() - t0 < 5, "ordinary calls slowed down by open streams"
    finally:
        for s in streams:
            s.close()


# ---- background tasks ------------------------------------------------------------------------

RESCAN = "mutation { rescan_images { ok msg task_id } }"


def test_rescan_images_is_a_background_task(admin, user):  # noqa: F811
    r = okj(admin.post("/admin/gql", {"query": RESCAN}))
    res = r["data"]["rescan_images"]
    assert res["ok"] is True and res["task_id"], r
    tid = res["task_id"]
    s = Stream(admin, "/events/background-task", {"taskId": tid})
    assert s.status == 200, s.text
    assert s.ended.wait(60), f"the stream did not end: {s.events}"
    names = [e for e, _ in s.events]
    # the last: Backend.AI's server_close (its clients reconnect without it)
    assert names[-2:] == ["bgtask_done", "server_close"], s.events
    assert s.events[-1][1] == {}
    for e, d in s.events[:-1]:
        assert d["task_id"] == tid and {"current_progress", "total_progress", "message"} <= set(d)
    done = s.events[-2][1]
    assert done["current_progress"] == done["total_progress"]
    # another user cannot follow it
    problem(user[0].get("/events/background-task", params={"taskId": tid}), 404)
    # a finished task still answers (its end at once)
    again = Stream(admin, "/events/background-task", {"task_id": tid})
    assert again.status == 200 and again.ended.wait(10)
    assert [e for e, _ in again.events][-2:] == ["bgtask_done", "server_close"]


def test_background_task_bad_input(user):
    problem(user[0].get("/events/background-task", params={"taskId": str(uuid.uuid4())}), 404)
    problem(user[0].get("/events/background-task", params={"taskId": "nope"}), 400)
    problem(user[0].get("/events/background-task"), 400)


# ---- the CLI ---------------------------------------------------------------------------------


def test_cli_events_prints_as_they_come_and_stops_on_ctrl_c(user, image_registered, tmp_path):  # noqa: F811
    import os
    import signal
    import subprocess
    from conftest import BIN_DIR
    uc, _ = user
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TESSERA_", "BACKEND_"))}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"),
               TESSERA_GATEWAY_URL=uc.endpoint, TESSERA_ACCESS_KEY=uc.access_key,
               TESSERA_SECRET_KEY=uc.secret_key)
    sname = f"evcli-{TAG}"
    p = subprocess.Popen([os.path.join(BIN_DIR, "tessera"), "events", "--json", "--session", sname],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        time.sleep(1.0)
        okj(uc.post("/session", {"image": image_registered, "name": sname, "enqueueOnly": True}), 201)
        okj(uc.delete(f"/session/{sname}"))
        wait_until(lambda: any('"session_terminated"' in ln or '"session_cancelled"' in ln
                               for ln in lines), timeout=30, message=f"the end in {lines}")
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=10)
    assert rc == 0, p.stderr.read()
    events = [json.loads(ln) for ln in lines]
    assert events[0]["event"] == "session_enqueued" and events[0]["sessionName"] == sname, events
    assert all(e["sessionName"] == sname for e in events), events


def test_cli_events_refusal_is_an_error(user, tmp_path):
    import os
    import subprocess
    from conftest import BIN_DIR
    uc, _ = user
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TESSERA_", "BACKEND_"))}
    env.update(HOME=str(tmp_path), TESSERA_GATEWAY_URL=uc.endpoint,
               TESSERA_ACCESS_KEY=uc.access_key, TESSERA_SECRET_KEY=uc.secret_key)
    r = subprocess.run([os.path.join(BIN_DIR, "tessera"), "events", "--task", str(uuid.uuid4())],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "HTTP 404" in r.stderr, (r.returncode, r.stderr)
