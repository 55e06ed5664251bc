"""svc_signer.py: the tests' own signer of internal (service-to-service) calls,
written from docs/internal-api.md "Service credentials" and independent of the
C code in libcommon/svcauth.c: a test that signs with it checks the services
against the documented format, not against themselves.

A service's key file (0600) holds one line:
    tessera-service-key v1 <service> <base64 of the 32-byte Ed25519 seed>
The trust file holds "<service> <base64 of the 32-byte public key>" lines.

Every internal request carries
    X-Tessera-Service-Auth: v1 <service> <unix-ms> <nonce> <base64 signature>
where the nonce is 8 to 64 characters of base64url (random per request) and
the signature is Ed25519 over the lines (joined with "\\n", no final one)
    tessera-service-auth-v1
    <service>
    <unix-ms>
    <nonce>
    <METHOD>
    <request target as sent: path and query>
    <X-Tessera-Caller value, or empty>
    <X-Tessera-Caller-Access-Key value, or empty>
    <hex SHA-256 of the body>

Only the standard library and python3-cryptography (Debian's).
"""

import base64
import hashlib
import os
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

HEADER = "X-Tessera-Service-Auth"


def load_key(path):
    """(service, Ed25519PrivateKey) from a key file."""
    with open(path, encoding="ascii") as f:
        words = f.read().split()
    if len(words) != 4 or words[0] != "tessera-service-key" or words[1] != "v1":
        raise ValueError(f"{path}: not a tessera service key file")
    seed = base64.b64decode(words[3])
    return words[2], Ed25519PrivateKey.from_private_bytes(seed)


def key_path(stack, service):
    """The key file of a service: <keys dir>/<service>.key, the keys dir being
    the stack's TESSERA_SERVICE_KEYS_DIR (stack: its env dict, or the dir)."""
    d = stack if isinstance(stack, str) else stack["TESSERA_SERVICE_KEYS_DIR"]
    return os.path.join(d, f"{service}.key")


def auth_value(key, service, method, target, body=b"", caller=None, access_key=None, ts_ms=None,
               nonce=None):
    """The X-Tessera-Service-Auth value for one request."""
    if isinstance(body, str):
        body = body.encode()
    ts = int(time.time() * 1000) if ts_ms is None else int(ts_ms)
    if nonce is None:
        nonce = base64.urlsafe_b64encode(os.urandom(12)).decode()
    msg = "\n".join([
        "tessera-service-auth-v1",
        service,
        str(ts),
        nonce,
        method.upper(),
        target,
        caller or "",
        access_key or "",
        hashlib.sha256(body or b"").hexdigest(),
    ]).encode()
    sig = base64.b64encode(key.sign(msg)).decode()
    return f"v1 {service} {ts} {nonce} {sig}"


def signed_headers(stack_or_keyfile, service, method, target, body=b"", caller=None, access_key=None,
                   ts_ms=None, headers=None):
    """Headers for an internal call signed as `service` with the stack's key
    of that service (or a key file path): the auth header plus
    X-Tessera-Caller / -Access-Key when given, merged into `headers`."""
    path = stack_or_keyfile if isinstance(stack_or_keyfile, str) else key_path(stack_or_keyfile, service)
    name, key = load_key(path)
    h = dict(headers or {})
    if caller:
        h["X-Tessera-Caller"] = caller
    if access_key:
        h["X-Tessera-Caller-Access-Key"] = access_key
    h[HEADER] = auth_value(key, name if service is None else service, method, target, body, caller,
                           access_key, ts_ms)
    return h


def call(stack, service, method, url, timeout=30, session=None, **kw):
    """requests.request(method, url, **kw) signed as `service` with the
    stack's key (stack: the env dict or the keys dir). The signature covers the
    request exactly as requests prepares it (path and query, body,
    X-Tessera-Caller headers given in headers=). session: a requests.Session
    to send it on (kept-alive connections), else a new one."""
    import requests  # noqa: PLC0415 - only where used
    prepared = requests.Request(method, url, **kw).prepare()
    body = prepared.body or b""
    if isinstance(body, str):
        body = body.encode()
    name, key = _cached_key(key_path(stack, service))
    prepared.headers[HEADER] = auth_value(key, name, prepared.method, prepared.path_url, body,
                                          prepared.headers.get("X-Tessera-Caller"),
                                          prepared.headers.get("X-Tessera-Caller-Access-Key"))
    if session is not None:
        return session.send(prepared, timeout=timeout)
    with requests.Session() as s:
        return s.send(prepared, timeout=timeout)


_keys = {}


def _cached_key(path):
    if path not in _keys:
        _keys[path] = load_key(path)
    return _keys[path]


class ServiceClient:
    """requests-like calls to an internal service, signed as `service`.

    c = ServiceClient(stack, "gateway", stack["TESSERA_AUTH_URL"])
    r = c.get("/v1/credentials/AKIA...")"""

    def __init__(self, stack, service, base_url, caller=None, access_key=None):
        import requests  # noqa: PLC0415 - only where used
        self._requests = requests
        self.stack, self.service, self.base = stack, service, base_url.rstrip("/")
        self.caller, self.access_key = caller, access_key

    def request(self, method, target, json=None, data=None, headers=None, caller=None, access_key=None,
                timeout=15):
        import json as _json  # noqa: PLC0415
        body = b""
        h = dict(headers or {})
        if json is not None:
            body = _json.dumps(json).encode()
            h.setdefault("Content-Type", "application/json")
        elif data is not None:
            body = data.encode() if isinstance(data, str) else data
        h = signed_headers(self.stack, self.service, method, target, body,
                           caller or self.caller, access_key or self.access_key, headers=h)
        return self._requests.request(method, self.base + target, data=body, headers=h, timeout=timeout)

    def get(self, target, **kw):
        return self.request("GET", target, **kw)

    def post(self, target, **kw):
        return self.request("POST", target, **kw)

    def patch(self, target, **kw):
        return self.request("PATCH", target, **kw)

    def delete(self, target, **kw):
        return self.request("DELETE", target, **kw)
