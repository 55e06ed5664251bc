"""Backend.AI's clients' session-mode login (issue 32; docs/api.md "Session
mode"): the encoded body (X-BackendAI-Encoded) the Python client sends as
application/octet-stream over plain HTTP and the Web-UI's SDK as
application/json, decoded with the endpoint's key; the refused login
answered as Backend.AI's web server does to them (200, not authenticated)
while the console keeps its 401; update-password's encoded body under
/func. And the refusals: another origin or site, a body that does not
decode with this endpoint's key, a malformed one, a form without the
header, no cookie, a wrong password. The encoding is written here from
the clients' description (an AES-256-CBC of the JSON with a key made of
the endpoint's base64 and the iv), with python3-cryptography."""
import base64
import json
import secrets
import string

import pytest
import requests
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from test_console_login import BAI, PASSWORD, fresh, folder_names, new_user


@pytest.fixture(scope="module")
def gw(stack):
    return stack["TESSERA_GATEWAY_URL"]


@pytest.fixture(scope="module")
def su(stack, gw):
    import bai_signer
    return bai_signer.Client(gw, stack["TESSERA_ADMIN_ACCESS_KEY"], stack["TESSERA_ADMIN_SECRET_KEY"])


@pytest.fixture(scope="module")
def carol(su, gw):
    return new_user(su, gw)


def encode(endpoint, obj):
    """What Backend.AI's clients send: <iv>:<base64(AES-256-CBC(PKCS#7(json)))>."""
    iv = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(16)).encode()
    key = (base64.b64encode(endpoint.encode()) + iv + iv)[:32]
    p = padding.PKCS7(128).padder()
    raw = p.update(json.dumps(obj).encode()) + p.finalize()
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return iv + b":" + base64.b64encode(enc.update(raw) + enc.finalize())


def login(gw, body, ctype="application/octet-stream", headers=None, session=None):
    h = {"Content-Type": ctype, "X-BackendAI-Encoded": "true", **BAI}
    h.update(headers or {})
    return (session or requests).post(f"{gw}/server/login", data=body, headers=h, timeout=10)


@pytest.mark.parametrize("ctype", ["application/octet-stream", "application/json"])
def test_encoded_login_then_func(gw, carol, ctype):
    """The Python client's form (octet-stream) and the Web-UI's (JSON type):
    a login, a cookie, then /func as the user with X-BackendAI-Version."""
    s = requests.Session()
    r = login(gw, encode(gw, {"username": carol[0], "password": PASSWORD}), ctype, session=s)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["authenticated"] is True
    assert body["data"]["access_key"] == carol[1].access_key and body["data"]["status"] == "active"
    assert "secret_key" not in json.dumps(body)
    name = fresh("enc")
    r = s.post(f"{gw}/func/folders", json={"name": name}, headers=BAI, timeout=10)
    assert r.status_code == 201, r.text
    assert name in folder_names(carol[1])
    check = s.post(f"{gw}/server/login-check", headers=BAI, timeout=10).json()
    assert check["authenticated"] is True and check["data"]["role"] == "user"


def test_the_endpoints_forms(gw, carol):
    """The key is made of the endpoint the client was given: https:// (behind
    a TLS proxy) and a trailing slash decode too."""
    for endpoint in (gw.replace("http://", "https://"), gw + "/"):
        r = login(gw, encode(endpoint, {"username": carol[0], "password": PASSWORD}))
        assert r.status_code == 200 and r.json()["authenticated"] is True, (endpoint, r.text)


def test_wrong_password_as_the_webserver_answers(gw, carol):
    """Backend.AI's clients read a refused login from a 200; the console (no
    X-BackendAI-Version) keeps its 401. No cookie either way."""
    r = login(gw, encode(gw, {"username": carol[0], "password": "wrong-" + PASSWORD}))
    assert r.status_code == 200, r.text
    assert r.json()["authenticated"] is False and r.json()["data"]["details"]
    assert "Set-Cookie" not in r.headers
    r = requests.post(f"{gw}/server/login", json={"username": carol[0], "password": "nope-x"}, timeout=10)
    assert r.status_code == 401 and "Set-Cookie" not in r.headers


@pytest.mark.parametrize("how", ["other-host-key", "not-iv-colon", "bad-base64", "not-json",
                                 "json-array", "no-header-octet", "form-no-header"])
def test_bad_encoded_bodies_are_400_without_a_cookie(gw, carol, how):
    creds = {"username": carol[0], "password": PASSWORD}
    headers = None
    if how == "other-host-key":
        body = encode("http://evil.example:8080", creds)
    elif how == "not-iv-colon":
        body = b"short:" + base64.b64encode(b"x" * 16)
    elif how == "bad-base64":
        body = b"abcdefghijklmnop:!!!not-base64!!!"
    elif how == "not-json":
        iv = b"abcdefghijklmnop"
        key = (base64.b64encode(gw.encode()) + iv + iv)[:32]
        p = padding.PKCS7(128).padder()
        enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        body = iv + b":" + base64.b64encode(enc.update(p.update(b"username=x") + p.finalize()) + enc.finalize())
    elif how == "json-array":
        body = encode(gw, [1, 2])
    elif how == "no-header-octet":  # an encoded body without its header: not JSON, refused
        body, headers = encode(gw, creds), {"X-BackendAI-Encoded": "false"}
    else:  # what a cross-site HTML form can send
        body, headers = b"username=a&password=b", {"X-BackendAI-Encoded": "",
                                                    "Content-Type": "application/x-www-form-urlencoded"}
    r = login(gw, body, headers=headers)
    assert r.status_code == 400, r.text
    assert r.headers["Content-Type"] == "application/problem+json"
    assert "Set-Cookie" not in r.headers


@pytest.mark.parametrize("how", ["other-origin", "cross-site"])
def test_encoded_login_from_another_site_is_refused(gw, carol, how):
    headers = {"Origin": "http://evil.example"} if how == "other-origin" else {"Sec-Fetch-Site": "cross-site"}
    r = login(gw, encode(gw, {"username": carol[0], "password": PASSWORD}), headers=headers)
    assert r.status_code == 403, r.text
    assert "Set-Cookie" not in r.headers


def test_encoded_update_password_under_func(su, gw):
    """Backend.AI's CLI changes a password in session mode with an encoded body."""
    email, client, _ = new_user(su, gw)
    s = requests.Session()
    assert login(gw, encode(gw, {"username": email, "password": PASSWORD}), session=s).json()["authenticated"]
    new = PASSWORD + "-2"
    body = encode(gw, {"old_password": PASSWORD, "new_password": new, "new_password2": new})
    # without the token or X-BackendAI-Version: the CSRF rule refuses it
    r = s.post(f"{gw}/func/auth/update-password", data=body, timeout=10,
               headers={"Content-Type": "application/octet-stream", "X-BackendAI-Encoded": "true"})
    assert r.status_code == 403, r.text
    # a body encoded for another endpoint: 400, nothing changed
    r = s.post(f"{gw}/func/auth/update-password", data=encode("http://evil.example", {}), timeout=10,
               headers={"Content-Type": "application/octet-stream", "X-BackendAI-Encoded": "true", **BAI})
    assert r.status_code == 400, r.text
    r = s.post(f"{gw}/func/auth/update-password", data=body, timeout=10,
               headers={"Content-Type": "application/octet-stream", "X-BackendAI-Encoded": "true", **BAI})
    assert r.status_code == 200, r.text
    assert login(gw, encode(gw, {"username": email, "password": new})).json()["authenticated"] is True
    assert login(gw, encode(gw, {"username": email, "password": PASSWORD})).json()["authenticated"] is False
