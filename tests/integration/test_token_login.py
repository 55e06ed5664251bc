"""Single sign-on (docs/console.md "Single sign-on"): POST /server/token-login
with a token an identity provider minted (HS256 JWT with the secret the stack
shares with tessera-auth, TESSERA_SSO_SECRET_FILE) logs the user in as a
password login does: the cookie, login-check, /func calls as the user's
keypair. Every bad token is refused with the reason and no login (a forged,
expired, early, long-lived, replayed token, one naming an unknown or inactive
user, no jti, another algorithm), and bad input gets a 400."""
import base64
import hashlib
import hmac
import json
import time
import uuid

import pytest
import requests

from test_console_login import PASSWORD, gw, new_user, su  # noqa: F401


def _b(x):
    return base64.urlsafe_b64encode(x).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def secret(stack):
    with open(stack["TESSERA_SSO_SECRET_FILE"], "rb") as f:
        return f.read().strip()


def mint(secret, claims=None, header=None, **extra):
    now = int(time.time())
    c = {"jti": str(uuid.uuid4()), "iat": now, "exp": now + 120}
    c.update(claims or {})
    c.update(extra)
    h = _b(json.dumps(header or {"alg": "HS256", "typ": "JWT"}).encode())
    p = _b(json.dumps(c).encode())
    s = _b(hmac.new(secret, f"{h}.{p}".encode(), hashlib.sha256).digest())
    return f"{h}.{p}.{s}"


@pytest.fixture(scope="module")
def carol(su, gw):  # noqa: F811
    return new_user(su, gw)


def token_login(gw, body=None, cookies=None, session=None, headers=None):  # noqa: F811
    s = session or requests.Session()
    r = s.post(f"{gw}/server/token-login", json=body if body is not None else {},
               cookies=cookies or {}, headers=headers or {}, timeout=15)
    return s, r


def refused(r, why):
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["authenticated"] is False, body
    assert why in body["data"]["details"], body
    assert "tessera_sid" not in r.headers.get("Set-Cookie", "")


def test_a_token_logs_the_user_in(gw, secret, carol):  # noqa: F811
    email, client, uid = carol
    s, r = token_login(gw, {"sToken": mint(secret, email=email)})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["authenticated"] is True
    assert body["data"]["access_key"] == client.access_key
    assert body["data"]["user_id"] == uid and body["data"]["username"] == email
    assert "secret_key" not in r.text and client.secret_key not in r.text
    assert "tessera_sid=" in r.headers["Set-Cookie"] and "HttpOnly" in r.headers["Set-Cookie"]
    # the login works as a password login's
    assert s.get(f"{gw}/server/login-check", timeout=10).json()["authenticated"] is True
    f = s.get(f"{gw}/func/folders", headers={"X-CSRF-Token": body["csrf_token"]}, timeout=10)
    assert f.status_code == 200, f.text
    # logged in already: refused
    _, again = token_login(gw, {"sToken": mint(secret, email=email)}, session=s)
    assert again.status_code == 400 and "already" in again.json()["title"], again.text
    # the cookie form (as a browser brings it), and sub instead of email
    s2, r2 = token_login(gw, cookies={"sToken": mint(secret, sub=email)})
    assert r2.status_code == 200 and r2.json()["authenticated"] is True, r2.text


def test_a_token_logs_in_once(gw, secret, carol):  # noqa: F811
    t = mint(secret, email=carol[0])
    _, r = token_login(gw, {"sToken": t})
    assert r.json()["authenticated"] is True, r.text
    _, r = token_login(gw, {"sToken": t})
    refused(r, "used already")


def test_bad_tokens_are_refused(gw, secret, carol, su):  # noqa: F811
    email = carol[0]
    now = int(time.time())
    cases = [
        (mint(b"x" * 64, email=email), "signature"),
        (mint(secret, email=email, exp=now - 120), "expired"),
        (mint(secret, email=email, iat=now + 600, exp=now + 700), "not valid yet"),
        (mint(secret, email=email, exp=now + 3600), "longer than"),
        (mint(secret, email="nobody-" + uuid.uuid4().hex + "@example.com"), "names no user"),
        (mint(secret, {"jti": ""}, email=email), "jti"),
        (mint(secret, header={"alg": "HS512"}, email=email), "HS256"),
        (mint(secret, {"exp": "soon"}, email=email), "numbers"),
        (mint(secret), "names no user"),
        ("not.a.token", "signature"),
        ("garbage", "not a token"),
    ]
    for token, why in cases:
        _, r = token_login(gw, {"sToken": token})
        refused(r, why)
    # a changed claim breaks the signature
    t = mint(secret, email=email)
    h, p, s = t.split(".")
    claims = json.loads(base64.urlsafe_b64decode(p + "=="))
    claims["email"] = "admin@tessera.local"
    _, r = token_login(gw, {"sToken": f"{h}.{_b(json.dumps(claims).encode())}.{s}"})
    refused(r, "signature")
    # an inactive user
    other = new_user(su, gw)
    assert su.patch(f"/admin/users/{other[2]}", {"status": "inactive"}).status_code in (200, 204)
    _, r = token_login(gw, {"sToken": mint(secret, email=other[0])})
    refused(r, "inactive")


def test_bad_input(gw, secret, carol):  # noqa: F811
    _, r = token_login(gw, {})
    assert r.status_code == 400 and "token" in r.json()["title"], r.text
    _, r = token_login(gw, {"sToken": 7})
    assert r.status_code == 400, r.text
    _, r = token_login(gw, {"sToken": "x" * 9000})
    assert r.status_code in (200, 400), r.text
    if r.status_code == 200:
        assert r.json()["authenticated"] is False
    r = requests.post(f"{gw}/server/token-login", data=b"{not json", timeout=10,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    # another site's page cannot use it
    _, r = token_login(gw, {"sToken": mint(secret, email=carol[0])},
                       headers={"Origin": "https://evil.example.com"})
    assert r.status_code == 403, r.text
