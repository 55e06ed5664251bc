"""The gateway's request verification, black-box, with the tests' own signer
(bai_signer.py, written from the API description, not from the C code):
valid and tampered requests, dates, headers, key states, body types, the
access log of refusals, the per-keypair rate limit, revocation within one
second, and the unsigned public endpoints."""
import datetime
import json
import os
import subprocess
import time
import urllib.parse
import uuid

import pytest
import requests

import bai_signer
from conftest import parse_env_file, wait_until

UTC = datetime.timezone.utc


def psql(stack, sql):
    out = subprocess.run(["psql", stack["TESSERA_PG_DSN"], "-X", "-At", "-v", "ON_ERROR_STOP=1",
                          "-c", sql], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def new_key():
    ak = uuid.uuid4().hex.upper()[:20]
    sk = (uuid.uuid4().hex + uuid.uuid4().hex)[:40]
    return ak, sk


@pytest.fixture(scope="module")
def gw(stack):
    return stack["TESSERA_GATEWAY_URL"]


@pytest.fixture(scope="module")
def admin(stack):
    """The bootstrap superadmin's keys (dev-up puts them in <state>/env)."""
    env = dict(stack)
    if "TESSERA_ADMIN_ACCESS_KEY" not in env:
        creds = os.path.join(stack["TESSERA_STATE_DIR"], "auth", "admin-credentials")
        if os.path.exists(creds):
            env.update(parse_env_file(creds))
    if "TESSERA_ADMIN_ACCESS_KEY" not in env:
        pytest.skip("no superadmin keys in the stack's env")
    return env


@pytest.fixture(scope="module")
def make_keypair(stack):
    """Insert a user and a keypair straight into auth's tables (independent of
    the admin API): make_keypair(rate_limit=0, key_active=True,
    user_status="active") -> (access_key, secret_key, user_id)."""
    psql(stack, "INSERT INTO auth.domains (name) VALUES ('gwtest') ON CONFLICT DO NOTHING;"
                "INSERT INTO auth.user_resource_policies (name) VALUES ('gwtest') ON CONFLICT DO NOTHING;"
                "INSERT INTO auth.keypair_resource_policies (name) VALUES ('gwtest') ON CONFLICT DO NOTHING;")

    def make(rate_limit=0, key_active=True, user_status="active"):
        ak, sk = new_key()
        uid = str(uuid.uuid4())
        name = "gw-" + uid[:8]
        psql(stack, f"""
            INSERT INTO auth.users (id, email, username, password_hash, role, status, domain_name, resource_policy)
            VALUES ('{uid}', '{name}@example.test', '{name}', 'not-a-hash', 'user', '{user_status}', 'gwtest', 'gwtest');
            INSERT INTO auth.keypairs (access_key, secret_key, user_id, is_active, resource_policy, rate_limit)
            VALUES ('{ak}', '{sk}', '{uid}', {str(key_active).lower()}, 'gwtest', {rate_limit});""")
        return ak, sk, uid
    return make


@pytest.fixture(scope="module")
def user(make_keypair):
    return make_keypair()


def send(gw, method, path, ak, sk, *, body=b"", content_type="application/json", date=None,
         version=bai_signer.API_VERSION, sign_path=None, sign_host=None, headers=None,
         drop=(), date_header="X-BackendAI-Date"):
    """A signed request with knobs to break it: sign_path/sign_host sign
    something other than what is sent; drop removes headers; date_header
    chooses where the signed date goes."""
    url = gw + path
    signed_url = gw + (sign_path or path)
    if sign_host:
        u = urllib.parse.urlsplit(signed_url)
        signed_url = urllib.parse.urlunsplit((u.scheme, sign_host, u.path, u.query, u.fragment))
    h = bai_signer.signed_headers(ak, sk, method, signed_url, content_type=content_type, date=date,
                                  version=version, body=body)
    if date_header != "X-BackendAI-Date":
        h[date_header] = h.pop("X-BackendAI-Date")
    for name in drop:
        h.pop(name, None)
    h.update(headers or {})
    return requests.request(method, url, data=body or None, headers=h, timeout=10)


def assert_refused(r, status=401, kind="auth-failed", msg=None):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["Content-Type"].startswith("application/problem+json")
    body = r.json()
    assert body["type"].endswith("/" + kind), body
    assert body["title"] and body["msg"]
    if msg:
        assert msg in body["msg"], body
    return body


def access_log(stack, request_id):
    rows = psql(stack, "SELECT status, access_key, user_id FROM auth.access_log "
                       f"WHERE request_id = '{request_id}'")
    return rows.split("|") if rows else None


# ---- valid requests -----------------------------------------------------------------

def test_valid_signed_request(gw, user):
    ak, sk, _ = user
    r = send(gw, "GET", "/auth/test?echo=hello%20world", ak, sk)
    assert r.status_code == 200, r.text
    assert r.json() == {"authorized": "yes", "echo": "hello world"}
    r = send(gw, "GET", "/auth", ak, sk)
    assert r.status_code == 200 and r.json()["authorized"] == "yes"


def test_json_body_verifies(gw, user):
    ak, sk, _ = user
    body = json.dumps({"echo": {"nested": [1, 2, "three"]}}).encode()
    r = send(gw, "POST", "/auth/test", ak, sk, body=body,
             content_type="application/json; charset=utf-8")
    assert r.status_code == 200, r.text
    assert r.json() == {"authorized": "yes", "echo": {"nested": [1, 2, "three"]}}


def test_multipart_body_with_boundary_verifies(gw, user):
    """The boundary parameter is not signed: the media type alone is."""
    ak, sk, _ = user
    boundary = "tessera" + uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"src\"; filename=\"a.txt\"\r\n"
            f"Content-Type: text/plain\r\n\r\nhello\r\n--{boundary}--\r\n").encode()
    r = send(gw, "POST", "/auth/test", ak, sk, body=body,
             content_type=f"multipart/form-data; boundary={boundary}")
    assert r.status_code == 200, r.text
    assert r.json()["authorized"] == "yes"


def test_missing_content_type_means_application_json(gw, user):
    ak, sk, _ = user
    r = send(gw, "GET", "/auth/test", ak, sk, content_type=None)
    assert r.status_code == 200, r.text


def test_no_content_type_signed_as_octet_stream(gw, user):
    """Backend.AI's manager signs a request without Content-Type as aiohttp
    reads it, application/octet-stream: the Python client's WebSocket and
    event-stream requests are signed so and send no Content-Type."""
    ak, sk, _ = user
    r = send(gw, "GET", "/auth/test", ak, sk, content_type="application/octet-stream",
             drop=("Content-Type",))
    assert r.status_code == 200, r.text
    # an event stream signed so opens
    r = requests.get(gw + "/events/session", stream=True, timeout=10,
                     headers={k: v for k, v in bai_signer.signed_headers(
                         ak, sk, "GET", gw + "/events/session",
                         content_type="application/octet-stream").items()
                         if k != "Content-Type"})
    try:
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"].startswith("text/event-stream")
    finally:
        r.close()


def test_websocket_handshake_signed_without_content_type(gw, user):
    """The client's WebSocket handshakes (stream_pty, stream_execute, app):
    the signature passes (the session then is not found: 404), a wrong one
    does not (401)."""
    ak, sk, _ = user
    ws = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
          "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    r = send(gw, "GET", "/stream/session/no-such-session/pty", ak, sk,
             content_type="application/octet-stream", drop=("Content-Type",), headers=ws)
    assert r.status_code == 404, r.text
    assert_refused(send(gw, "GET", "/stream/session/no-such-session/pty", ak, new_key()[1],
                        content_type="application/octet-stream", drop=("Content-Type",),
                        headers=ws), msg="signature mismatch")


def test_no_content_type_other_media_types_refused(gw, user):
    """Only those two stand for a missing Content-Type; a sent one is signed
    as sent; a wrong secret still fails."""
    ak, sk, _ = user
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, content_type="text/plain",
                        drop=("Content-Type",)), msg="signature mismatch")
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, content_type="application/octet-stream",
                        headers={"Content-Type": "application/json"}), msg="signature mismatch")
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, content_type="application/json",
                        headers={"Content-Type": "application/octet-stream"}),
                   msg="signature mismatch")
    assert_refused(send(gw, "GET", "/auth/test", ak, new_key()[1],
                        content_type="application/octet-stream", drop=("Content-Type",)),
                   msg="signature mismatch")


def test_old_v4_version_signs_the_body(gw, user):
    """Before v4.20181215 the body's hash is part of the signature."""
    ak, sk, _ = user
    body = json.dumps({"echo": "old"}).encode()
    r = send(gw, "POST", "/auth/test", ak, sk, body=body, version="v4.20180101")
    assert r.status_code == 200, r.text
    # and a changed body no longer matches
    h = bai_signer.signed_headers(ak, sk, "POST", gw + "/auth/test", version="v4.20180101",
                                  body=body)
    r = requests.post(gw + "/auth/test", data=b'{"echo": "new"}', headers=h, timeout=10)
    assert_refused(r, msg="signature mismatch")


# ---- tampering ---------------------------------------------------------------------------

def test_wrong_secret(gw, user):
    ak, _, _ = user
    assert_refused(send(gw, "GET", "/auth/test", ak, "x" * 40), msg="signature mismatch")


def test_tampered_path(gw, user):
    ak, sk, _ = user
    assert_refused(send(gw, "GET", "/auth", ak, sk, sign_path="/auth/test"),
                   msg="signature mismatch")


def test_tampered_query(gw, user):
    ak, sk, _ = user
    assert_refused(send(gw, "GET", "/auth/test?echo=b", ak, sk, sign_path="/auth/test?echo=a"),
                   msg="signature mismatch")


def test_raw_target_is_signed_not_the_decoded_one(gw, user):
    ak, sk, _ = user
    r = send(gw, "GET", "/auth/test?echo=a%20b", ak, sk, sign_path="/auth/test?echo=a b")
    assert_refused(r, msg="signature mismatch")


def test_other_host_header(gw, user):
    ak, sk, _ = user
    port = urllib.parse.urlsplit(gw).port
    # signed for another host, sent to ours
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, sign_host="gateway.example"),
                   msg="signature mismatch")
    # the host is signed with its port
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, sign_host="127.0.0.1"),
                   msg="signature mismatch")
    # signed for the Host header actually sent: fine
    r = send(gw, "GET", "/auth/test", ak, sk, sign_host=f"localhost:{port}",
             headers={"Host": f"localhost:{port}"})
    assert r.status_code == 200, r.text


# ---- dates -------------------------------------------------------------------------------

def test_stale_and_future_dates(gw, user):
    ak, sk, _ = user
    now = datetime.datetime.now(UTC)
    for delta in (-16, 16):
        r = send(gw, "GET", "/auth/test", ak, sk, date=now + datetime.timedelta(minutes=delta))
        assert_refused(r, msg="15-minute window")
    for delta in (-14, 14):
        r = send(gw, "GET", "/auth/test", ak, sk, date=now + datetime.timedelta(minutes=delta))
        assert r.status_code == 200, (delta, r.text)


def test_date_header_with_timezone_offset(gw, user):
    ak, sk, _ = user
    tz = datetime.timezone(datetime.timedelta(hours=9))
    r = send(gw, "GET", "/auth/test", ak, sk, date=datetime.datetime.now(tz))
    assert r.status_code == 200, r.text


def test_date_header_instead_of_x_backendai_date(gw, user):
    ak, sk, _ = user
    r = send(gw, "GET", "/auth/test", ak, sk, date_header="Date")
    assert r.status_code == 200, r.text


def test_date_is_read_before_x_backendai_date(gw, user):
    ak, sk, _ = user
    # Date carries the signed value; X-BackendAI-Date is ignored then.
    r = send(gw, "GET", "/auth/test", ak, sk, date_header="Date",
             headers={"X-BackendAI-Date": "garbage"})
    assert r.status_code == 200, r.text
    # X-BackendAI-Date carries the signed value, but a Date is present: Date wins.
    other = (datetime.datetime.now(UTC) - datetime.timedelta(minutes=1)).isoformat()
    r = send(gw, "GET", "/auth/test", ak, sk, headers={"Date": other})
    assert_refused(r, msg="signature mismatch")


# ---- missing and malformed headers ---------------------------------------------------

def test_missing_or_malformed_authorization(gw, user):
    ak, sk, _ = user
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, drop=["Authorization"]),
                   msg="missing Authorization")
    for bad in ["Bearer abc", "BackendAI", "BackendAI signMethod=HMAC-SHA256",
                f"BackendAI signMethod=HMAC-MD5, credential={ak}:{'0' * 64}",
                f"BackendAI signMethod=HMAC-SHA256, credential={ak}",
                f"BackendAI signMethod=HMAC-SHA256, credential={ak}:zz",
                f"BackendAI signMethod=HMAC-SHA256, credential=short:{'0' * 64}"]:
        r = send(gw, "GET", "/auth/test", ak, sk, headers={"Authorization": bad})
        assert_refused(r, msg="malformed Authorization")


def test_missing_or_malformed_version(gw, user):
    """Version problems are 400 invalid-api-params, as Backend.AI answers."""
    ak, sk, _ = user
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, drop=["X-BackendAI-Version"]), 400,
                   "invalid-api-params", "missing X-BackendAI-Version")
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, headers={"X-BackendAI-Version": "8"}),
                   400, "invalid-api-params", "malformed X-BackendAI-Version")
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, version="v3.20170615"), 400,
                   "invalid-api-params", "not supported")


def test_missing_or_malformed_date(gw, user):
    ak, sk, _ = user
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, drop=["X-BackendAI-Date"]),
                   msg="missing Date")
    assert_refused(send(gw, "GET", "/auth/test", ak, sk, headers={"X-BackendAI-Date": "yesterday"}),
                   msg="malformed X-BackendAI-Date")


# ---- key and user states ---------------------------------------------------------------

def test_unknown_key(gw):
    ak, sk = new_key()
    assert_refused(send(gw, "GET", "/auth/test", ak, sk), msg="unknown access key")
    # again: answered from the negative cache, same answer
    assert_refused(send(gw, "GET", "/auth/test", ak, sk), msg="unknown access key")


def metric(gw, name):
    for line in requests.get(gw + "/metrics", timeout=5).text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_concurrent_misses_ask_auth_once(gw, make_keypair):
    """A burst of requests with a key the gateway has not seen yet, and a
    burst with an unknown key: auth is asked once for each (the rest wait for
    that answer or find it cached)."""
    from concurrent.futures import ThreadPoolExecutor
    ak, sk, _ = make_keypair()
    bad_ak, bad_sk = new_key()
    before = metric(gw, "tessera_gateway_cred_cache_misses_total")
    with ThreadPoolExecutor(16) as pool:
        good = list(pool.map(lambda _: send(gw, "GET", "/auth/test", ak, sk).status_code, range(32)))
        bad = list(pool.map(lambda _: send(gw, "GET", "/auth/test", bad_ak, bad_sk).status_code,
                            range(32)))
    assert good == [200] * 32 and bad == [401] * 32
    misses = metric(gw, "tessera_gateway_cred_cache_misses_total") - before
    # one per key; an unknown key is only remembered for 1 s, so a slow burst may ask twice
    assert 2 <= misses <= 3, misses


def test_inactive_keypair(gw, make_keypair):
    ak, sk, _ = make_keypair(key_active=False)
    assert_refused(send(gw, "GET", "/auth/test", ak, sk), msg="keypair is inactive")


def test_inactive_and_deleted_user(gw, make_keypair):
    for status in ("inactive", "deleted"):
        ak, sk, _ = make_keypair(user_status=status)
        assert_refused(send(gw, "GET", "/auth/test", ak, sk), msg=f"user is {status}")


def revoked_within(check, limit=1.0, interval=0.05):
    """Seconds until check() is true, polling every interval; fails past 3 s."""
    t0 = time.monotonic()
    while True:
        if check():
            return time.monotonic() - t0
        elapsed = time.monotonic() - t0
        if elapsed > max(3 * limit, 3.0):
            pytest.fail(f"still accepted {elapsed:.2f} s after the change")
        time.sleep(interval)


def test_revoked_keypair_refused_within_one_second(gw, admin, make_keypair):
    ak, sk, _ = make_keypair()
    assert send(gw, "GET", "/auth/test", ak, sk).status_code == 200  # now cached
    a = bai_signer.Client(gw, admin["TESSERA_ADMIN_ACCESS_KEY"], admin["TESSERA_ADMIN_SECRET_KEY"])
    r = a.delete(f"/admin/keypairs/{ak}")
    assert r.status_code in (200, 204), r.text
    took = revoked_within(lambda: send(gw, "GET", "/auth/test", ak, sk).status_code == 401)
    print(f"revoked keypair refused after {took * 1000:.0f} ms")
    assert took <= 1.0, f"revoked keypair still accepted {took:.2f} s after the revoke"
    assert_refused(send(gw, "GET", "/auth/test", ak, sk), msg="inactive")


def test_deactivated_user_refused_within_one_second(gw, admin, make_keypair):
    ak, sk, uid = make_keypair()
    assert send(gw, "GET", "/auth/test", ak, sk).status_code == 200  # now cached
    a = bai_signer.Client(gw, admin["TESSERA_ADMIN_ACCESS_KEY"], admin["TESSERA_ADMIN_SECRET_KEY"])
    r = a.patch(f"/admin/users/{uid}", json={"status": "inactive"})
    assert r.status_code == 200, r.text
    took = revoked_within(lambda: send(gw, "GET", "/auth/test", ak, sk).status_code == 401)
    print(f"deactivated user refused after {took * 1000:.0f} ms")
    assert took <= 1.0, f"deactivated user still accepted {took:.2f} s after the change"


# ---- the access log ------------------------------------------------------------------

def test_refusals_and_successes_are_audited(stack, gw, user):
    ak, sk, uid = user
    unknown_ak, unknown_sk = new_key()
    cases = {
        "ok": (send, ("GET", "/auth/test", ak, sk), 200),
        "bad-signature": (send, ("GET", "/auth/test", ak, "y" * 40), 401),
        "unknown": (send, ("GET", "/auth/test", unknown_ak, unknown_sk), 401),
        "stale": (send, ("GET", "/auth/test", ak, sk), 401),
        "no-auth": (send, ("GET", "/auth/test", ak, sk), 401),
    }
    rids = {}
    for name, (fn, args, status) in cases.items():
        rid = f"gw-audit-{name}-{uuid.uuid4().hex[:12]}"
        kw = {"headers": {"X-Request-ID": rid}}
        if name == "stale":
            kw["date"] = datetime.datetime.now(UTC) - datetime.timedelta(minutes=20)
        if name == "no-auth":
            kw["drop"] = ["Authorization"]
        r = fn(gw, *args, **kw)
        assert r.status_code == status, (name, r.text)
        if status == 401:
            assert_refused(r)
        rids[name] = rid
    for name, rid in rids.items():
        row = wait_until(lambda: access_log(stack, rid), 30, message=f"access log row for {name}")
        status, row_ak, row_uid = row
        if name == "ok":
            assert (status, row_ak, row_uid) == ("200", ak, uid)
        else:
            # refused: status 401, no identity claimed
            assert (status, row_ak, row_uid) == ("401", "", ""), (name, row)


# ---- rate limit --------------------------------------------------------------------------

def test_rate_limit_429_with_retry_after(stack, gw, make_keypair):
    ak, sk, uid = make_keypair(rate_limit=5)
    statuses, limited = [], None
    # Fixed one-minute windows: at most 5 per window, so 11 requests see a
    # 429 even when a window boundary falls in between.
    for _ in range(11):
        r = send(gw, "GET", "/auth/test", ak, sk)
        statuses.append(r.status_code)
        if r.status_code == 429:
            limited = r
            break
    assert limited is not None, statuses
    assert statuses.count(200) >= 5, statuses
    body = assert_refused(limited, 429, "too-many-requests", "rate limit")
    retry = int(limited.headers["Retry-After"])
    assert 1 <= retry <= 60, retry
    # Audited with the (verified) caller.
    rid = "gw-ratelimit-" + uuid.uuid4().hex[:12]
    r = send(gw, "GET", "/auth/test", ak, sk, headers={"X-Request-ID": rid})
    if r.status_code == 429:
        row = wait_until(lambda: access_log(stack, rid), 30)
        assert row == ["429", ak, uid], (row, body)


def test_unlimited_keypair_is_not_limited(gw, make_keypair):
    ak, sk, _ = make_keypair(rate_limit=0)
    for _ in range(30):
        assert send(gw, "GET", "/auth/test", ak, sk).status_code == 200


# ---- routes --------------------------------------------------------------------------

def test_public_endpoints_need_no_signature(gw):
    r = requests.get(gw + "/config/resource-slots", timeout=5)
    assert r.status_code == 200
    assert r.json() == {"cpu": "count", "mem": "bytes", "cuda.device": "count",
                        "cuda.shares": "count"}
    r = requests.get(gw + "/", timeout=5)
    assert r.status_code == 200 and r.json()["version"].startswith("v8.")


def test_signed_routes_refuse_unsigned_requests(gw):
    for method, path in [("GET", "/auth/test"), ("POST", "/auth"), ("GET", "/auth/role"),
                         ("POST", "/auth/update-password"), ("GET", "/admin/users"),
                         ("DELETE", "/admin/keypairs/AAAAAAAAAAAAAAAAAAAA"),
                         ("GET", "/admin/projects/x/members")]:
        assert_refused(requests.request(method, gw + path, timeout=5))


def test_admin_requests_are_forwarded_with_status_and_body(gw, admin):
    a = bai_signer.Client(gw, admin["TESSERA_ADMIN_ACCESS_KEY"], admin["TESSERA_ADMIN_SECRET_KEY"])
    r = a.get("/admin/keypairs", params={"limit": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["limit"] == 1 and len(body["items"]) <= 1
    r = a.get("/admin/users/" + str(uuid.uuid4()))
    assert r.status_code == 404 and r.headers["Content-Type"].startswith("application/problem+json")
    r = a.get("/auth/role")
    assert r.status_code == 200 and r.json()["global_role"] == "superadmin"


def test_admin_scoping_comes_from_auth(gw, user):
    """A plain user reaching /admin gets auth's own answer (own data only)."""
    ak, sk, uid = user
    c = bai_signer.Client(gw, ak, sk)
    r = c.get(f"/admin/users/{uid}")
    assert r.status_code == 200, r.text
    assert r.json()["id"] == uid
    r = c.get("/admin/keypairs")
    assert r.status_code == 200, r.text
    assert {k["access_key"] for k in r.json()["items"]} == {ak}


def test_authorize_is_unsigned_and_forwarded(gw, admin):
    if "TESSERA_ADMIN_PASSWORD" not in admin:
        pytest.skip("no superadmin password in the stack's env")
    r = requests.post(gw + "/auth/authorize", timeout=30, json={
        "type": "keypair", "domain": "default", "username": admin["TESSERA_ADMIN_EMAIL"],
        "password": admin["TESSERA_ADMIN_PASSWORD"]})
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["access_key"] and data["secret_key"] and data["role"] == "superadmin"
    r = requests.post(gw + "/auth/authorize", timeout=30, json={
        "type": "keypair", "domain": "default", "username": admin["TESSERA_ADMIN_EMAIL"],
        "password": "wrong-" + uuid.uuid4().hex})
    assert r.status_code == 401, r.text
    r = requests.post(gw + "/auth/authorize", timeout=30, data=b"{not json")
    assert_refused(r, 400, "invalid-api-params")


def test_auth_metrics(stack, gw):
    text = requests.get(gw + "/metrics", timeout=5).text
    for result in ("ok", "bad_signature", "unknown_key", "inactive", "stale_date", "malformed",
                   "rate_limited"):
        assert f'tessera_gateway_auth_total{{result="{result}"}}' in text, result
    for name in ("tessera_gateway_cred_cache_hits_total", "tessera_gateway_cred_cache_misses_total",
                 "tessera_gateway_cred_cache_invalidations_total"):
        assert name in text
    r = requests.get(gw + "/readyz", timeout=5).json()
    assert r["checks"]["auth-events"] == "ok"


def labelled(gw, name, labels):
    want = f"{name}{{{labels}}} "
    for line in requests.get(gw + "/metrics", timeout=5).text.splitlines():
        if line.startswith(want):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_project_events_leave_the_credential_cache_alone(gw, admin, user):
    """ProjectChanged (and members, resource-group access) say what a session
    may use, not who a key is: the gateway counts them and keeps its cache;
    a key it knew is still answered without asking tessera-auth."""
    ak, sk, _ = user
    assert send(gw, "GET", "/auth/test", ak, sk).status_code == 200  # cached
    a = bai_signer.Client(gw, admin["TESSERA_ADMIN_ACCESS_KEY"], admin["TESSERA_ADMIN_SECRET_KEY"])
    events = metric(gw, "tessera_gateway_auth_events_total")
    dropped_all = labelled(gw, "tessera_gateway_cred_cache_invalidations_total", 'scope="all"')
    misses = metric(gw, "tessera_gateway_cred_cache_misses_total")
    r = a.post("/admin/projects", json={"name": "gw-ev-" + uuid.uuid4().hex[:8]})
    assert r.status_code in (200, 201), r.text
    pid = r.json()["id"]
    r = a.patch(f"/admin/projects/{pid}", json={"description": "changed"})
    assert r.status_code == 200, r.text
    deadline = time.time() + 10
    while metric(gw, "tessera_gateway_auth_events_total") < events + 2 and time.time() < deadline:
        time.sleep(0.05)
    assert metric(gw, "tessera_gateway_auth_events_total") >= events + 2, "the events never came"
    assert labelled(gw, "tessera_gateway_cred_cache_invalidations_total", 'scope="all"') == dropped_all
    assert send(gw, "GET", "/auth/test", ak, sk).status_code == 200
    assert metric(gw, "tessera_gateway_cred_cache_misses_total") == misses
