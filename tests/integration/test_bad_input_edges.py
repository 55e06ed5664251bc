"""Bad input at the edges (issue 17, docs/api.md "Bad input"), on a real stack.

Every service's HTTP listener (libcommon's server: gateway, auth, registry,
scheduler, agent, vfolder, wsproxy's internal API, devbus) is sent malformed
requests over raw sockets: a garbage request line, bytes that never make a
line, a request line or a head too long, a missing Host, an unsupported
Transfer-Encoding, a chunked body over http.max_body that never ends, a
Content-Length over it. Each must be answered within a couple of seconds, with
the right status and problem JSON, and the service must still answer
/healthz afterwards.

Then the semantic checks at the first service that sees the input: execute
bodies (wrong types, an unknown mode, code over 128 KiB) through the gateway
and directly at the agent (which must log the refusal), image references
('../../etc') at registration and session create, before any fetch.

Clients sign with the tests' own signers (bai_signer.py, svc_signer.py)."""
import json
import os
import socket
import time

import pytest

import svc_signer
from conftest import parse_services_file, second_gateway
from test_sessions_api import admin, gw, image, problem, user  # noqa: F401 - fixtures

QUICK = 2.0  # seconds: "at once", not at a timeout (http.header_timeout is 10 s)
MAX_BODY = 1024 * 1024  # http.max_body's default
LISTENERS = ("gateway", "auth", "registry", "scheduler", "agent", "vfolder", "wsproxy", "devbus")


@pytest.fixture(scope="module")
def listeners(stack):
    services = parse_services_file(os.path.join(stack["TESSERA_STATE_DIR"], "services"))
    found = {}
    for name in LISTENERS:
        if name in services:
            url = services[name][1]
            host, port = url.split("//", 1)[1].rstrip("/").rsplit(":", 1)
            found[name] = (host, int(port))
    if not found:
        pytest.skip("no listeners in the stack's services file")
    return found


def exchange(addr, data, pause_after=None, read_timeout=5.0):
    """Send data (bytes, or a list of pieces), read until the server closes;
    (bytes received, seconds from the last piece sent to the answer's end)."""
    with socket.create_connection(addr, timeout=read_timeout) as s:
        pieces = data if isinstance(data, list) else [data]
        for p in pieces:
            try:
                s.sendall(p)
            except (BrokenPipeError, ConnectionResetError):
                break  # the server may refuse before all of it: fine
        t0 = time.monotonic()
        got = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += b
        except (ConnectionResetError, socket.timeout):
            pass
        return got, time.monotonic() - t0


def parse_answer(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


def assert_problem_answer(raw, took, status):
    assert raw, "no answer at all"
    got, headers, body = parse_answer(raw)
    assert got == status, raw[:300]
    assert headers.get("content-type") == "application/problem+json", raw[:300]
    p = json.loads(body[: int(headers["content-length"])])
    assert p["type"].startswith("https://api.backend.ai/probs/") and p["title"] and p["msg"], p
    assert took < QUICK, f"answered after {took:.1f} s"
    return p


def healthy(addr):
    raw, _ = exchange(addr, b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    return parse_answer(raw)[0] == 200


CHUNK = b"%x\r\n%s\r\n" % (MAX_BODY + 4096, b"x" * (MAX_BODY + 4096))
CASES = {
    "garbage-line": (b"GARBAGE\r\n\r\n", 400),
    "no-line-end": (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 400),
    "bare-lf": (b"GET /healthz HTTP/1.1\nHost: t\n\n", 400),
    "no-host": (b"GET /healthz HTTP/1.1\r\n\r\n", 400),
    "bad-version": (b"GET /healthz HTTP/1.7\r\nHost: t\r\n\r\n", 505),
    "bad-te": (b"POST /healthz HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    "cl-and-te": (b"POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n", 400),
    "long-line": (b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", 414),
    "big-head": (b"GET /healthz HTTP/1.1\r\nHost: t\r\n"
                 + b"".join(b"X-%d: %s\r\n" % (i, b"y" * 1000) for i in range(40)) + b"\r\n", 431),
    "cl-over": (b"POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1), 413),
    # a chunked body over the limit that never ends: refused as it arrives
    "chunked-over": ([b"POST /healthz HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
                      CHUNK], 413),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("service", LISTENERS)
def test_malformed_requests_get_problem_json_at_once(listeners, service, case):
    if service not in listeners:
        pytest.skip(f"{service} is not in this stack")
    addr = listeners[service]
    data, status = CASES[case]
    raw, took = exchange(addr, data)
    assert_problem_answer(raw, took, status)
    assert healthy(addr), f"{service} does not answer /healthz after {case}"


def test_header_timeout_answers_408(listeners):
    """A head that stops coming: 408 after http.header_timeout (10 s here), not
    the idle timeout (60 s)."""
    addr = listeners.get("gateway") or next(iter(listeners.values()))
    with socket.create_connection(addr, timeout=20) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        t0 = time.monotonic()
        got = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
        took = time.monotonic() - t0
    status, headers, _ = parse_answer(got)
    assert status == 408 and headers["content-type"] == "application/problem+json"
    assert 8 < took < 15, took


def test_stalled_body_answers_408(stack, bin_dir, tmp_path):
    """A body that stops coming (Content-Length 1000, 4 bytes sent, then
    nothing): 408 problem JSON after http.body_timeout (2 s on a gateway of
    its own), not a silent close at the idle timeout; the gateway still
    answers afterwards, and a whole body sent slowly within the time is
    served."""
    with second_gateway(stack, bin_dir, tmp_path / "gw-body.log", "it-body",
                        TESSERA_HTTP_BODY_TIMEOUT="2s") as (url, _):
        host, port = url.rsplit("/", 1)[1].split(":")
        addr = (host, int(port))
        head = (b"POST /folders HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000\r\n\r\n{\"na")
        raw, took = exchange(addr, head, read_timeout=10)
        status, headers, body = parse_answer(raw)
        assert status == 408 and headers["content-type"] == "application/problem+json", raw[:300]
        assert "body_timeout" in json.loads(body)["msg"], body
        assert 1.5 < took < 5, took
        assert healthy(addr)
        # in time, in pieces: the body is read and the request answered (401: unsigned)
        raw, took = exchange(addr, [b"POST /folders HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
                                    b"Connection: close\r\n\r\n{", b"}"], read_timeout=10)
        assert parse_answer(raw)[0] == 401, raw[:300]


# ---- execute ---------------------------------------------------------------------------------

BAD_EXEC = [
    ({}, 400, "mode"),  # no mode: was run as an empty query and answered 200
    ({"code": "echo hi"}, 400, "mode"),
    ({"mode": None, "code": "echo hi"}, 400, "mode"),
    ({"mode": ["query"], "code": "echo hi"}, 400, "mode"),
    ({"mode": "", "code": "echo hi"}, 400, "mode"),
    ({"mode": "interrupt"}, 400, "mode"),
    ({"mode": 12345, "code": "echo hi"}, 400, "mode"),
    ({"mode": "continue", "code": "x"}, 400, "mode"),
    ({"mode": "query", "code": 7}, 400, "code"),
    ({"mode": "query", "code": "echo", "runId": 5}, 400, "runId"),
    ({"mode": "batch", "options": "make"}, 400, "options"),
    ({"mode": "batch", "options": {"exec": ["make"]}}, 400, "options.exec"),
    ({"mode": "query", "code": "echo", "timeout_ms": "10"}, 400, "timeout_ms"),
    ({"mode": "query", "code": "#" * (128 * 1024)}, 413, "code"),
]


@pytest.mark.parametrize("body,status,field", BAD_EXEC, ids=[f"{i}-{c[2]}-{c[1]}" for i, c in enumerate(BAD_EXEC)])
def test_execute_bad_arguments_through_the_gateway(user, body, status, field):
    t0 = time.monotonic()
    r = user.post("/session/no-such-session-edges", body)
    assert time.monotonic() - t0 < QUICK
    p = problem(r, status)
    assert field in p["msg"], p


@pytest.mark.parametrize("body,status,field", BAD_EXEC, ids=[f"{i}-{c[2]}-{c[1]}" for i, c in enumerate(BAD_EXEC)])
def test_execute_bad_arguments_at_the_agent(stack, listeners, body, status, field):
    if "agent" not in listeners:
        pytest.skip("no agent in this stack")
    host, port = listeners["agent"]
    r = svc_signer.call(stack, "registry", "POST", f"http://{host}:{port}/v1/kernels/nokernel/execute",
                        json=body, timeout=10)
    p = problem(r, status)
    assert field in p["msg"], p


def test_agent_logs_execute_refusals(stack, listeners):
    if "agent" not in listeners:
        pytest.skip("no agent in this stack")
    host, port = listeners["agent"]
    kid = "edges-log-check"
    r = svc_signer.call(stack, "registry", "POST", f"http://{host}:{port}/v1/kernels/{kid}/execute",
                        json={"mode": 12345}, timeout=10)
    problem(r, 400)
    log = os.path.join(stack.get("TESSERA_LOG_DIR") or os.path.join(stack["TESSERA_STATE_DIR"], "logs"),
                       "agent.log")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with open(log, encoding="utf-8", errors="replace") as f:
            if any("execute refused" in line and kid in line for line in f):
                return
        time.sleep(0.2)
    pytest.fail("the agent did not log the refused execute")


def test_start_service_app_must_be_a_string(user):
    problem(user.post("/session/no-such-session-edges/start-service", {"app": 5}), 400)


# ---- image references ------------------------------------------------------------------------

BAD_REFS = ["../../etc", "..", "a/../b", "UPPER/x", "x:-tag", "x@md5:1234", "x y", "http://h/x"]


@pytest.mark.parametrize("ref", BAD_REFS)
def test_image_registration_refuses_bad_references(admin, ref):
    t0 = time.monotonic()
    p = problem(admin.post("/admin/images", {"reference": ref}), 400)
    assert time.monotonic() - t0 < QUICK
    assert "image reference" in p["msg"], p


def test_image_scan_refuses_a_bad_registry(admin):
    problem(admin.post("/admin/images/scan", {"registry": "../x"}), 400)


@pytest.mark.parametrize("ref", BAD_REFS)
def test_session_create_refuses_bad_image_references(user, ref):
    p = problem(user.post("/session", {"image": ref, "name": "edges-img", "enqueueOnly": True}), 400)
    assert "image" in p["msg"], p


def test_session_create_refuses_wrong_typed_resource_opts(user, image):
    p = problem(user.post("/session", {"image": image, "name": "edges-opts", "enqueueOnly": True,
                                       "config": {"resource_opts": "1g"}}), 400)
    assert "resource_opts" in p["msg"], p
