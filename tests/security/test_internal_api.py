"""The internal APIs check the calling service (docs/internal-api.md): every
route below refuses a request without the service credential (401), with a
malformed one or one signed by a key nobody trusts (401), one signed by a
service the route does not allow (403), an expired one (signed 5 minutes ago),
a tampered one (body or path changed after signing) and a replayed one (the
same header a second time) with 401; the allowed services' signatures get
through (neither 401 nor 403). /healthz, /readyz and /metrics stay open.

Signatures come from the tests' own signer (tests/integration/svc_signer.py)
with the keys the dev stack writes to <state>/keys/<service>.key
(TESSERA_SERVICE_KEYS_DIR in <state>/env).
"""
import json as jsonlib
import os
import time

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import svc_signer
from conftest import note

SERVICES = ["gateway", "auth", "registry", "scheduler", "agent", "vfolder", "wsproxy"]
OPEN_SERVICES = SERVICES + ["devbus"]

# route id -> (service, method, target template, body template, allowed callers, caller headers)
ROUTES = {
    "auth-credentials": ("auth", "GET", "/v1/credentials/{admin_ak}", None, ["gateway"], False),
    "auth-session-context": ("auth", "GET", "/v1/session-context?access_key={a_ak}&group={a_group}", None,
                             ["registry", "vfolder"], False),
    "agent-kernels": ("agent", "GET", "/v1/kernels", None, ["registry"], False),
    "agent-execute": ("agent", "POST", "/v1/kernels/{kernel_id}/execute",
                      {"mode": "query", "code": "true"}, ["registry"], False),
    "wsproxy-routes": ("wsproxy", "POST", "/v1/routes",
                       {"user_id": "{admin_id}", "session_id": "{session_id}", "app": "ttyd",
                        "protocol": "http", "target": "127.0.0.1:{ttyd_port}"}, ["gateway"], False),
    "registry-sessions": ("registry", "GET", "/v1/sessions", None, ["gateway"], True),
    "vfolder-mounts-resolve": ("vfolder", "POST", "/v1/mounts/resolve",
                               {"access_key": "{a_ak}", "names": []}, ["registry"], False),
}


def _cases():
    out = []
    for rid, (_svc, _m, _t, _b, allowed, _c) in ROUTES.items():
        out += [(rid, "no-credential"), (rid, "malformed"), (rid, "unknown-key")]
        out += [(rid, f"allowed-{s}") for s in allowed]
        out += [(rid, f"wrong-{s}") for s in SERVICES if s not in allowed]
        out += [(rid, "expired"), (rid, "tampered"), (rid, "replayed")]
    return out


class Ctx:
    pass


@pytest.fixture(scope="module")
def ctx(stack, admin, tenants):
    c = Ctx()
    c.stack = stack
    c.urls = {s: stack.get(f"TESSERA_{s.upper()}_URL") for s in OPEN_SERVICES}
    c.keys_dir = stack.get("TESSERA_SERVICE_KEYS_DIR")
    r = admin.get(f"/admin/keypairs/{admin.access_key}")
    assert r.status_code == 200, r.text
    c.values = {"admin_ak": admin.access_key, "admin_id": r.json()["user_id"],
                "a_ak": tenants.a.access_key, "a_group": tenants.a.group}
    return c


def _values(ctx, request, rid):
    """The template values; a running session's only for the routes that name
    one (so that the other checks do not depend on sessions)."""
    svc, _m, target, body, _a, _c = ROUTES[rid]
    if "{kernel_id}" in target or "{session_id}" in str(body):
        sessions = request.getfixturevalue("sessions")
        ttyd = [sp for sp in sessions.a.info.get("servicePorts") or [] if sp["name"] == "ttyd"]
        return dict(ctx.values, kernel_id=sessions.a.main_kernel, session_id=sessions.a.id,
                    ttyd_port=str(ttyd[0]["host_ports"][0] if ttyd else 7681))
    return ctx.values


def _fill(tmpl, values):
    if tmpl is None:
        return None
    if isinstance(tmpl, dict):
        return {k: _fill(v, values) for k, v in tmpl.items()}
    if isinstance(tmpl, list):
        return [_fill(v, values) for v in tmpl]
    return tmpl.format(**values) if isinstance(tmpl, str) else tmpl


def _key(ctx, service):
    if not ctx.keys_dir:
        pytest.fail("the stack's env names no TESSERA_SERVICE_KEYS_DIR (the dev stack writes no service keys yet)",
                    pytrace=False)
    path = svc_signer.key_path(ctx.keys_dir, service)
    if not os.path.exists(path):
        pytest.fail(f"{path} does not exist", pytrace=False)
    return svc_signer.load_key(path)[1]


def _prepare(ctx, request, rid):
    svc, method, target, body, _allowed, with_caller = ROUTES[rid]
    base = ctx.urls[svc]
    assert base, f"no TESSERA_{svc.upper()}_URL in the stack's env"
    values = _values(ctx, request, rid)
    target = _fill(target, values)
    data = b"" if body is None else jsonlib.dumps(_fill(body, values)).encode()
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if with_caller:
        headers["X-Tessera-Caller"] = ctx.values["admin_id"]
        headers["X-Tessera-Caller-Access-Key"] = ctx.values["admin_ak"]
    return base, method, target, data, headers


def _sign(key, service, method, target, data, headers, ts_ms=None):
    return svc_signer.auth_value(key, service, method, target, data, headers.get("X-Tessera-Caller"),
                                 headers.get("X-Tessera-Caller-Access-Key"), ts_ms)


def _send(base, method, target, data, headers, auth=None):
    h = dict(headers)
    if auth is not None:
        h[svc_signer.HEADER] = auth
    return requests.request(method, base + target, data=data or None, headers=h, timeout=30)


def _status(r):
    """The status and what the answer says (a problem's msg, else the body's start)."""
    try:
        body = r.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "msg" in body:
        return f"{r.status_code} {body['msg'][:160]!r}"
    return f"{r.status_code} {r.text[:100]!r}"


@pytest.mark.parametrize("rid,case", _cases(), ids=[f"{r}:{c}" for r, c in _cases()])
def test_internal_route(ctx, rid, case, request):
    base, method, target, data, headers = _prepare(ctx, request, rid)
    allowed = ROUTES[rid][4]
    signer = allowed[0]
    if case == "no-credential":
        r = _send(base, method, target, data, headers)
        note(request, _status(r))
        assert r.status_code == 401, f"{method} {target} without a credential: {_status(r)}"
    elif case == "malformed":
        r = _send(base, method, target, data, headers, auth=f"v1 {signer} {int(time.time() * 1000)} not-base64!")
        note(request, _status(r))
        assert r.status_code == 401, f"malformed credential: {_status(r)}"
    elif case == "unknown-key":
        stranger = Ed25519PrivateKey.generate()
        r = _send(base, method, target, data, headers,
                  auth=_sign(stranger, signer, method, target, data, headers))
        note(request, _status(r))
        assert r.status_code == 401, f"signed by a key nobody trusts, as {signer}: {_status(r)}"
    elif case.startswith("allowed-"):
        svc = case[len("allowed-"):]
        r = _send(base, method, target, data, headers,
                  auth=_sign(_key(ctx, svc), svc, method, target, data, headers))
        note(request, _status(r))
        assert r.status_code not in (401, 403), f"{svc}, which the route allows, is refused: {_status(r)}"
    elif case.startswith("wrong-"):
        svc = case[len("wrong-"):]
        r = _send(base, method, target, data, headers,
                  auth=_sign(_key(ctx, svc), svc, method, target, data, headers))
        note(request, _status(r))
        assert r.status_code == 403, f"signed by {svc}, which the route does not allow: {_status(r)}"
    elif case == "expired":
        old = int((time.time() - 300) * 1000)
        r = _send(base, method, target, data, headers,
                  auth=_sign(_key(ctx, signer), signer, method, target, data, headers, ts_ms=old))
        note(request, _status(r))
        assert r.status_code == 401, f"signed 5 minutes ago: {_status(r)}"
    elif case == "tampered":
        key = _key(ctx, signer)
        if data:
            other = jsonlib.loads(data)
            other["tampered"] = True
            other = jsonlib.dumps(other).encode()
            r = _send(base, method, target, other, headers,
                      auth=_sign(key, signer, method, target, data, headers))
            what = "body"
        else:
            sent = target + ("&" if "?" in target else "?") + "tampered=1"
            r = _send(base, method, sent, data, headers, auth=_sign(key, signer, method, target, data, headers))
            what = "path"
        note(request, f"{what} changed: {_status(r)}")
        assert r.status_code == 401, f"{what} changed after signing: {_status(r)}"
    elif case == "replayed":
        auth = _sign(_key(ctx, signer), signer, method, target, data, headers)
        first = _send(base, method, target, data, headers, auth=auth)
        second = _send(base, method, target, data, headers, auth=auth)
        note(request, f"first {first.status_code}, second {_status(second)}")
        assert first.status_code not in (401, 403), f"the first request was refused: {_status(first)}"
        assert second.status_code == 401, f"the same credential a second time: {_status(second)}"
    else:
        raise AssertionError(case)


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
@pytest.mark.parametrize("service", OPEN_SERVICES)
def test_open_endpoint(stack, service, path, request):
    base = stack.get(f"TESSERA_{service.upper()}_URL")
    assert base, f"no TESSERA_{service.upper()}_URL in the stack's env"
    r = requests.get(base + path, timeout=10)
    note(request, f"{r.status_code}")
    assert r.status_code == 200, f"GET {path} without a credential: {_status(r)}"
