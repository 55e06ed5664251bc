"""CORS for browser clients of the API (docs/api.md "CORS";
services/gateway/cors.h): the stack's own gateway has none configured, so a
page of another origin cannot read its answers; a second gateway with
gateway.cors_origins answers a listed origin's preflight at once (before any
signature is checked) and marks every answer for it, also errors; an origin
not listed gets no CORS header; "*" allows any origin without credentials."""
import requests

import bai_signer
from conftest import second_gateway
from test_sessions_api import admin, gw, okj, problem  # noqa: F401

WEBUI = "https://webui.example.com"
PREFLIGHT = {"Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type, x-backendai-version, "
                                               "x-backendai-date"}


def test_none_by_default(gw):
    r = requests.options(gw + "/admin/gql", headers=dict(PREFLIGHT, Origin=WEBUI), timeout=10)
    assert "Access-Control-Allow-Origin" not in r.headers
    assert 400 <= r.status_code < 500, r.status_code
    r = requests.get(gw + "/", headers={"Origin": WEBUI}, timeout=10)
    assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers


def test_listed_origins(stack, bin_dir, tmp_path, admin):
    with second_gateway(stack, bin_dir, tmp_path / "gw-cors.log", "it-cors",
                        TESSERA_GATEWAY_CORS_ORIGINS=f"{WEBUI}, http://other.example:8080/") as (url, _):
        # the preflight: answered before the signature, with what a signed request needs
        r = requests.options(url + "/admin/gql", headers=dict(PREFLIGHT, Origin=WEBUI), timeout=10)
        assert r.status_code == 204, r.text
        h = r.headers
        assert h["Access-Control-Allow-Origin"] == WEBUI
        assert h["Access-Control-Allow-Credentials"] == "true"
        assert "POST" in h["Access-Control-Allow-Methods"]
        allowed = {x.strip().lower() for x in h["Access-Control-Allow-Headers"].split(",")}
        assert {"authorization", "content-type", "x-backendai-version", "x-backendai-date",
                "x-csrf-token", "x-backendai-encoded"} <= allowed
        # what Backend.AI 24.09's Web-UI adds to every request in session mode
        assert {"x-backendai-sessionid", "x-backendai-domain"} <= allowed
        assert "Origin" in h["Vary"]
        # an actual signed request from there: its answer is readable by the page
        client = bai_signer.Client(url, admin.access_key, admin.secret_key)
        r = client.request("POST", "/admin/gql", json={"query": "{ keypair { access_key } }"},
                           headers={"Origin": "http://OTHER.example:8080"})
        assert okj(r)["data"]["keypair"]["access_key"] == admin.access_key
        assert r.headers["Access-Control-Allow-Origin"] == "http://OTHER.example:8080"
        assert "X-Request-ID" in r.headers["Access-Control-Expose-Headers"]
        # errors carry the headers too (a page must read the problem)
        r = requests.get(url + "/session", headers={"Origin": WEBUI}, timeout=10)
        problem(r, 401)
        assert r.headers["Access-Control-Allow-Origin"] == WEBUI
        # an origin not listed: no CORS header, and its preflight is not answered
        evil = "https://evil.example"
        r = requests.options(url + "/admin/gql", headers=dict(PREFLIGHT, Origin=evil), timeout=10)
        assert 400 <= r.status_code < 500 and "Access-Control-Allow-Origin" not in r.headers
        r = requests.get(url + "/", headers={"Origin": evil}, timeout=10)
        assert "Access-Control-Allow-Origin" not in r.headers and "Origin" in r.headers["Vary"]
        # a listed origin still cannot use another user's console login: the
        # login's own origin rules apply (gateway.web_allowed_origins)
        r = requests.post(url + "/server/login", json={"username": "x", "password": "y"},
                          headers={"Origin": WEBUI}, timeout=10)
        problem(r, 403)


def test_any_origin_never_with_credentials(stack, bin_dir, tmp_path):
    with second_gateway(stack, bin_dir, tmp_path / "gw-cors-any.log", "it-cors-any",
                        TESSERA_GATEWAY_CORS_ORIGINS="*") as (url, _):
        r = requests.options(url + "/folders", headers=dict(PREFLIGHT, Origin="https://a.example"),
                             timeout=10)
        assert r.status_code == 204
        assert r.headers["Access-Control-Allow-Origin"] == "*"
        assert "Access-Control-Allow-Credentials" not in r.headers
        # a preflight without an Origin is no preflight: routed as any OPTIONS
        r = requests.options(url + "/folders", headers=PREFLIGHT, timeout=10)
        assert 400 <= r.status_code < 500 and "Access-Control-Allow-Origin" not in r.headers
