"""An independent Backend.AI request signer for the tests (written from the
API description, not from Tessera's C code), and a small signed client."""
import datetime
import hashlib
import hmac
import json as jsonlib
import urllib.parse

import requests

API_VERSION = "v8.20240915"


def sign(secret_key, method, target, raw_date, date, host, content_type, version=API_VERSION,
         body=b""):
    media = (content_type or "application/json").split(";", 1)[0].strip().lower()
    body_part = body if version < "v4.20181215" else b""
    to_sign = "\n".join([
        method.upper(), target, raw_date, "host:" + host, "content-type:" + media,
        "x-backendai-version:" + version, hashlib.sha256(body_part).hexdigest(),
    ]).encode()
    k1 = hmac.new(secret_key.encode(), date.strftime("%Y%m%d").encode(), hashlib.sha256).digest()
    k2 = hmac.new(k1, host.encode(), hashlib.sha256).digest()
    return hmac.new(k2, to_sign, hashlib.sha256).hexdigest()


def signed_headers(access_key, secret_key, method, url, content_type="application/json",
                   date=None, version=API_VERSION, body=b""):
    """Headers for a signed request to url (host and raw target taken from it)."""
    u = urllib.parse.urlsplit(url)
    target = u.path or "/"
    if u.query:
        target += "?" + u.query
    date = date or datetime.datetime.now(datetime.timezone.utc)
    raw_date = date.isoformat()
    sig = sign(secret_key, method, target, raw_date, date.astimezone(datetime.timezone.utc),
               u.netloc, content_type, version, body)
    h = {
        "X-BackendAI-Version": version,
        "X-BackendAI-Date": raw_date,
        "Authorization": f"BackendAI signMethod=HMAC-SHA256, credential={access_key}:{sig}",
    }
    if content_type:
        h["Content-Type"] = content_type
    return h


class Client:
    """A signed client for one keypair against the gateway."""

    def __init__(self, endpoint, access_key, secret_key):
        self.endpoint = endpoint.rstrip("/")
        self.access_key = access_key
        self.secret_key = secret_key

    def request(self, method, path, json=None, params=None, headers=None, timeout=10):
        url = self.endpoint + path
        if params:
            url += ("&" if "?" in path else "?") + urllib.parse.urlencode(params)
        body = b"" if json is None else jsonlib.dumps(json).encode()
        h = signed_headers(self.access_key, self.secret_key, method, url, body=body)
        h.update(headers or {})
        return self.transport().request(method, url, data=body or None, headers=h,
                                        timeout=timeout)

    def transport(self):
        """What sends a request: requests itself (a new connection each time);
        a subclass may return a requests.Session to keep connections."""
        return requests

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, json=None, **kw):
        return self.request("POST", path, json=json, **kw)

    def patch(self, path, json=None, **kw):
        return self.request("PATCH", path, json=json, **kw)

    def delete(self, path, json=None, **kw):
        return self.request("DELETE", path, json=json, **kw)
