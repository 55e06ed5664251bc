"""tessera-vfolder's files and transfers (docs/vfolders.md, "Files and
transfer"): file operations confined to the folder, tus uploads (resume,
quota, concurrency), downloads (Range, zip of a directory), transfer tokens,
bad input, and the CLI's upload/download/ls/mkdir/mv/rm.

Most calls go to tessera-vfolder's internal API with the headers the gateway
adds (as test_vfolder_core.py does); some go through the gateway, signed, to
check the forwarding; transfers go to the URL the token comes with.
"""
import base64
import hashlib
import hmac
import io
import json
import os
import socket
import subprocess
import threading
import time
import urllib.parse
import uuid
import zipfile

import pytest
import requests

import bai_signer
import svc_signer
from conftest import service_urls

PASSWORD = "vfolder-Passw0rd"
TAG = uuid.uuid4().hex[:8]
TUS = {"Tus-Resumable": "1.0.0"}
_n = [0]


def fresh(prefix):
    _n[0] += 1
    return f"{prefix}-{TAG}-{_n[0]}"


def ok(r, *codes):
    assert r.status_code in (codes or (200, 201)), f"{r.request.method} {r.url}: {r.status_code} {r.text}"
    return r.json() if r.content else None



class User:
    def __init__(self, env, user_id, ak, sk):
        self.env, self.user_id, self.ak, self.sk = env, user_id, ak, sk

    def vf(self, method, path, json=None, params=None):
        h = {"X-Tessera-Caller": self.user_id, "X-Tessera-Caller-Access-Key": self.ak}
        return svc_signer.call(self.env.urls["keys"], "gateway", method, self.env.urls["vfolder"] + "/v1" + urllib.parse.quote(path, safe="/%:@"),
                                json=json, params=params, headers=h, timeout=60)

    def gw(self, method, path, json=None, params=None):
        c = bai_signer.Client(self.env.urls["gateway"], self.ak, self.sk)
        return c.request(method, urllib.parse.quote(path, safe="/%:@"), json=json, params=params)


class Env:
    def __init__(self, stack):
        self.stack = stack
        self.urls = service_urls(stack)
        ak, sk = stack["TESSERA_ADMIN_ACCESS_KEY"], stack["TESSERA_ADMIN_SECRET_KEY"]
        cred = svc_signer.call(self.urls["keys"], "gateway", "GET", f"{self.urls['auth']}/v1/credentials/{ak}", timeout=10).json()
        self.super = User(self, cred["user"]["id"], ak, sk)
        self.volume = os.path.join(stack["TESSERA_STATE_DIR"], "vfolder", "volumes", "local")
        # Something outside every folder that no request may touch.
        self.outside = os.path.join(stack["TESSERA_STATE_DIR"], "vfolder", f"outside-{TAG}")
        os.makedirs(os.path.join(self.outside, "sub"), exist_ok=True)
        with open(os.path.join(self.outside, "secret"), "w") as f:
            f.write("outside")
        with open(os.path.join(self.outside, "sub", "deep"), "w") as f:
            f.write("deep")

    def auth(self, method, path, json=None):
        h = {"X-Tessera-Caller": self.super.user_id, "X-Tessera-Caller-Access-Key": self.super.ak}
        return svc_signer.call(self.urls["keys"], "gateway", method, self.urls["auth"] + "/v1" + path, json=json, headers=h, timeout=10)

    def new_user(self):
        name = fresh("vft")
        u = ok(self.auth("POST", "/admin/users", {"email": f"{name}@example.com", "username": name,
                                                  "password": PASSWORD, "role": "user",
                                                  "domain_name": "default"}))
        k = ok(self.auth("POST", "/admin/keypairs", {"user_id": u["id"]}))
        return User(self, u["id"], k["access_key"], k["secret_key"])

    def disk(self, folder):
        i = folder["id"]
        return os.path.join(self.volume, i[:2], i[2:4], i)

    def outside_intact(self):
        assert open(os.path.join(self.outside, "secret")).read() == "outside"
        assert open(os.path.join(self.outside, "sub", "deep")).read() == "deep"
        assert sorted(os.listdir(self.outside)) == ["secret", "sub"]

    def psql(self, sql):
        r = subprocess.run(["psql", self.stack["TESSERA_PG_DSN"], "-At", "-c", sql], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()


@pytest.fixture(scope="module")
def env(stack):
    if "TESSERA_ADMIN_ACCESS_KEY" not in stack:
        pytest.skip("no bootstrap superadmin")
    return Env(stack)


@pytest.fixture(scope="module")
def user(env):
    return env.new_user()


def new_folder(user, **extra):
    return ok(user.vf("POST", "/folders", {"name": fresh("f"), **extra}), 201)


# ---- tus helpers ------------------------------------------------------------------------

def request_upload(user, folder, path, size, via_gateway=False):
    call = user.gw if via_gateway else user.vf
    return ok(call("POST", f"/folders/{folder['name']}/request-upload", {"path": path, "size": size}))


def tus_head(up):
    r = requests.head(up["url"], params={"token": up["token"]}, headers=TUS, timeout=30)
    assert r.status_code == 200, r.text
    return int(r.headers["Upload-Offset"]), int(r.headers["Upload-Length"])


def tus_patch(up, offset, data, expect=204):
    h = dict(TUS, **{"Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"})
    r = requests.patch(up["url"], params={"token": up["token"]}, headers=h, data=data, timeout=120)
    assert r.status_code == expect, r.text
    return r


def upload(user, folder, path, data, chunk=None):
    up = request_upload(user, folder, path, len(data))
    off = 0
    chunk = chunk or max(len(data), 1)
    while True:
        r = tus_patch(up, off, data[off:off + chunk])
        off = int(r.headers["Upload-Offset"])
        if off >= len(data):
            break
    return up


def download(user, folder, path, headers=None, archive=False):
    d = ok(user.vf("POST", f"/folders/{folder['name']}/request-download", {"file": path, "archive": archive}))
    return requests.get(d["url"], params={"token": d["token"]}, headers=headers or {}, timeout=120)


def raw_patch_cut(up, offset, data, send):
    """A PATCH that announces all of data but sends only `send` bytes, then
    drops the connection (a client killed mid-upload)."""
    u = urllib.parse.urlsplit(up["url"])
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    target = f"{u.path}?token={urllib.parse.quote(up['token'])}"
    head = (f"PATCH {target} HTTP/1.1\r\nHost: {u.netloc}\r\nTus-Resumable: 1.0.0\r\n"
            f"Upload-Offset: {offset}\r\nContent-Type: application/offset+octet-stream\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    s.sendall(head + data[:send])
    time.sleep(0.3)
    s.close()


def used_bytes(user, folder):
    return ok(user.vf("GET", f"/folders/{folder['name']}"))["used_bytes"]


# ---- file operations ----------------------------------------------------------------------

def test_file_operations(env, user):
    f = new_folder(user)
    name = f["name"]
    ok(user.vf("POST", f"/folders/{name}/mkdir", {"path": "a/b/c", "parents": True}), 201)
    assert user.vf("POST", f"/folders/{name}/mkdir", {"path": "a/b/c"}).status_code == 409
    ok(user.vf("POST", f"/folders/{name}/mkdir", {"path": "a/b/c", "exist_ok": True}), 201)
    assert user.vf("POST", f"/folders/{name}/mkdir", {"path": "x/y"}).status_code == 404
    upload(user, f, "a/data.bin", b"0123456789")
    items = ok(user.vf("GET", f"/folders/{name}/files", params={"path": "a"}))["items"]
    assert [(i["name"], i["type"]) for i in items] == [("b", "DIRECTORY"), ("data.bin", "FILE")]
    it = items[1]
    assert it["size"] == 10 and it["mode"] == "600" or it["mode"] in ("644", "600")
    assert it["created"].endswith("+00:00") and it["modified"].endswith("+00:00")
    # Through the gateway, signed: the same listing.
    g = ok(user.gw("GET", f"/folders/{name}/files", params={"path": "a"}))["items"]
    assert [i["name"] for i in g] == ["b", "data.bin"]
    ok(user.gw("POST", f"/folders/{name}/rename_file", {"target_path": "a/data.bin", "new_name": "d.bin"}))
    assert user.vf("POST", f"/folders/{name}/rename_file",
                   {"target_path": "a/d.bin", "new_name": "b"}).status_code == 409
    ok(user.vf("POST", f"/folders/{name}/move_file", {"src": "a/d.bin", "dst": "a/b/c"}))
    assert open(os.path.join(env.disk(f), "a/b/c/d.bin"), "rb").read() == b"0123456789"
    assert user.vf("DELETE", f"/folders/{name}/delete_files", {"files": ["a"]}).status_code == 409
    r = ok(user.gw("DELETE", f"/folders/{name}/delete_files", {"files": ["a"], "recursive": True}))
    assert r["deleted"] == ["a"] and r["freed_bytes"] == 10
    assert os.listdir(env.disk(f)) == []
    assert used_bytes(user, f) == 0


def test_permissions_on_files(env, user):
    f = new_folder(user)
    other = env.new_user()
    for method, path, body in (("GET", "files", None), ("POST", "mkdir", {"path": "x"}),
                               ("POST", "request-upload", {"path": "x", "size": 1}),
                               ("POST", "request-download", {"file": "x"}),
                               ("DELETE", "delete_files", {"files": ["x"]})):
        r = other.vf(method, f"/folders/{f['name']}/{path}", body)
        assert r.status_code == 404, (path, r.text)  # not even visible
    r = requests.get(env.urls["vfolder"] + f"/v1/folders/{f['name']}/files", timeout=10)
    assert r.status_code == 401  # no service credential
    r = svc_signer.call(env.urls["keys"], "gateway", "GET", env.urls["vfolder"] + f"/v1/folders/{f['name']}/files",
                        timeout=10)
    assert r.status_code == 401  # the gateway's, but no caller


# ---- traversal --------------------------------------------------------------------------------

def test_traversal_refused(env, user):
    f = new_folder(user)
    name, root = f["name"], env.disk(f)
    os.makedirs(os.path.join(root, "d"))
    with open(os.path.join(root, "d", "in.txt"), "w") as fh:
        fh.write("inside")
    os.symlink(env.outside, os.path.join(root, "out"))
    os.symlink(os.path.relpath(env.outside, root), os.path.join(root, "rel"))
    os.symlink("/etc", os.path.join(root, "etc"))
    bad = ["../x", "/etc/passwd", "out/secret", "rel/secret", "etc/passwd", "d/../../x", "out/sub/deep",
           "../" * 8 + "etc/passwd", f"{env.outside}/secret"]
    for p in bad:
        for method, path, body, params in (
                ("GET", "files", None, {"path": p}),
                ("POST", "mkdir", {"path": p + "/new", "parents": True}, None),
                ("POST", "rename_file", {"target_path": p, "new_name": "stolen"}, None),
                ("POST", "move_file", {"src": p, "dst": "stolen"}, None),
                ("POST", "move_file", {"src": "d/in.txt", "dst": p}, None),
                ("DELETE", "delete_files", {"files": [p], "recursive": True}, None),
                ("POST", "request-upload", {"path": p + "/up.bin", "size": 1}, None),
                ("POST", "request-download", {"file": p, "archive": True}, None)):
            r = user.vf(method, f"/folders/{name}/{path}", body, params)
            assert r.status_code in (400, 404), (method, path, p, r.status_code, r.text)
            if r.status_code == 400:
                assert r.json()["type"].endswith("/invalid-api-params")
    assert user.vf("POST", f"/folders/{name}/rename_file",
                   {"target_path": "d/in.txt", "new_name": "../../x"}).status_code == 400
    # Deleting the symlinks removes the links, never their targets.
    ok(user.vf("DELETE", f"/folders/{name}/delete_files", {"files": ["out", "rel", "etc"], "recursive": True}))
    env.outside_intact()
    assert os.path.exists("/etc/passwd")
    assert open(os.path.join(root, "d", "in.txt")).read() == "inside"
    # Listing shows a symlink as such, never what it points at.
    os.symlink(env.outside, os.path.join(root, "out2"))
    items = ok(user.vf("GET", f"/folders/{name}/files"))["items"]
    assert {i["name"]: i["type"] for i in items}["out2"] == "SYMLINK"


def test_symlink_swapped_mid_operation(env, user):
    """A session flips a directory and a symlink pointing out, over and over,
    while the API lists, reads, writes and deletes through that name."""
    f = new_folder(user)
    name, root = f["name"], env.disk(f)
    victim, link = os.path.join(root, "victim"), os.path.join(root, "link")
    os.makedirs(os.path.join(victim, "sub"))
    with open(os.path.join(victim, "secret"), "w") as fh:
        fh.write("inside")
    os.symlink(env.outside, link)
    stop = threading.Event()

    def flip():
        tmp = os.path.join(root, "tmp")
        while not stop.is_set():
            try:  # two renames: victim <-> link
                os.rename(victim, tmp)
                os.rename(link, victim)
                os.rename(tmp, link)
                os.rename(victim, tmp)
                os.rename(link, victim)
                os.rename(tmp, link)
            except OSError:
                pass

    t = threading.Thread(target=flip)
    t.start()
    try:
        for _ in range(150):
            r = user.vf("GET", f"/folders/{name}/files", params={"path": "victim"})
            if r.status_code == 200:
                assert "marker" not in [i["name"] for i in r.json()["items"]]
            user.vf("DELETE", f"/folders/{name}/delete_files", {"files": ["victim/secret"]})
            user.vf("DELETE", f"/folders/{name}/delete_files", {"files": ["victim/sub"], "recursive": True})
            user.vf("POST", f"/folders/{name}/mkdir", {"path": "victim/sub/x", "parents": True})
            d = user.vf("POST", f"/folders/{name}/request-download", {"file": "victim/secret"})
            if d.status_code == 200:
                g = requests.get(d.json()["url"], params={"token": d.json()["token"]}, timeout=10)
                assert g.content != b"outside"
    finally:
        stop.set()
        t.join()
    env.outside_intact()


# ---- uploads -----------------------------------------------------------------------------------

def test_tus_upload_and_download_roundtrip(env, user):
    f = new_folder(user)
    data = os.urandom(3 * 1024 * 1024 + 17)
    r = requests.options(env.urls["vfolder"] + "/v1/transfer/upload", timeout=10)
    assert r.status_code == 204 and r.headers["Tus-Version"] == "1.0.0"
    assert "creation" in r.headers["Tus-Extension"]
    up = request_upload(user, f, "dir/sub/file.bin", len(data), via_gateway=True)
    assert set(up) >= {"token", "url"}
    assert tus_head(up) == (0, len(data))
    # tus creation (for clients that start with POST) points at the same upload.
    c = requests.post(env.urls["vfolder"] + "/v1/transfer/upload", params={"token": up["token"]},
                      headers=dict(TUS, **{"Upload-Length": str(len(data))}), timeout=10)
    assert c.status_code == 201 and up["url"] in c.headers["Location"]
    off = 0
    for size in (1, 1024 * 1024, 5, len(data)):
        r = tus_patch(up, off, data[off:off + size])
        off += len(data[off:off + size])
        assert int(r.headers["Upload-Offset"]) == off
    assert tus_head(up) == (len(data), len(data))
    assert open(os.path.join(env.disk(f), "dir/sub/file.bin"), "rb").read() == data
    assert used_bytes(user, f) == len(data)
    # Nothing staged is left behind.
    assert os.listdir(os.path.join(env.volume, ".tessera-uploads")) == [] or \
        up["upload_id"] not in os.listdir(os.path.join(env.volume, ".tessera-uploads"))
    # A finished upload takes no more bytes.
    tus_patch(up, len(data), b"x", expect=409)

    g = download(user, f, "dir/sub/file.bin")
    assert g.status_code == 200 and g.content == data
    assert g.headers["Accept-Ranges"] == "bytes"
    assert "file.bin" in g.headers["Content-Disposition"]
    g = download(user, f, "dir/sub/file.bin", {"Range": "bytes=100-199"})
    assert g.status_code == 206 and g.content == data[100:200]
    assert g.headers["Content-Range"] == f"bytes 100-199/{len(data)}"
    g = download(user, f, "dir/sub/file.bin", {"Range": "bytes=-10"})
    assert g.status_code == 206 and g.content == data[-10:]
    g = download(user, f, "dir/sub/file.bin", {"Range": f"bytes={len(data) - 5}-"})
    assert g.status_code == 206 and g.content == data[-5:]
    g = download(user, f, "dir/sub/file.bin", {"Range": f"bytes={len(data)}-"})
    assert g.status_code == 416 and g.headers["Content-Range"] == f"bytes */{len(data)}"
    g = download(user, f, "dir/sub/file.bin", {"Range": "bytes=0-1,5-6"})  # several: all of it
    assert g.status_code == 200 and g.content == data
    # Replacing a file: the old bytes go back to the quota.
    upload(user, f, "dir/sub/file.bin", b"small")
    assert used_bytes(user, f) == 5


CONSOLE = "http://127.0.0.1:8090"  # the web console's origin (the gateway's)
EXPOSED = {"upload-offset", "upload-length", "location", "tus-resumable", "tus-version",
           "tus-extension", "tus-max-size", "content-disposition", "content-length",
           "content-range", "etag"}


def cors_ok(r):
    """r carries the CORS headers of the default vfolder.cors_origins (any origin)."""
    assert r.headers.get("Access-Control-Allow-Origin") == "*", (r.status_code, dict(r.headers))
    exposed = {h.strip().lower() for h in r.headers["Access-Control-Expose-Headers"].split(",")}
    assert exposed >= EXPOSED, exposed
    assert "Vary" not in r.headers


def test_cors_on_transfer_endpoints(env, user):
    """A browser at another origin (the console: tus-js-client, a download
    link) may use the transfer endpoints: preflights are answered without
    token or Tus-Resumable, and every answer (errors too) carries
    Allow-Origin and Expose-Headers (docs/vfolders.md "CORS"). The list
    (vfolder.cors_origins) is covered by tests/unit/vfolder/test_cors.c."""
    f = new_folder(user)
    data = os.urandom(70000)
    up = request_upload(user, f, "cors/file.bin", len(data))
    origin = {"Origin": CONSOLE}
    for url, method in ((up["url"], "PATCH"), (env.urls["vfolder"] + "/v1/transfer/upload", "POST"),
                        (env.urls["vfolder"] + "/v1/transfer/download", "GET")):
        r = requests.options(url, headers=dict(origin, **{
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "tus-resumable,upload-offset,content-type"}), timeout=10)
        assert r.status_code in (200, 204), (url, r.status_code, r.text)
        cors_ok(r)
        assert {m.strip() for m in r.headers["Access-Control-Allow-Methods"].split(",")} >= \
            {"GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS"}
        allowed = {h.strip().lower() for h in r.headers["Access-Control-Allow-Headers"].split(",")}
        assert allowed >= {"tus-resumable", "upload-offset", "upload-length", "upload-metadata",
                           "content-type", "range", "if-range", "x-requested-with"}, allowed
        assert r.headers["Access-Control-Max-Age"] == "600"
    # The upload: HEAD, PATCH (partial, then the rest), and a PATCH refused.
    h = requests.head(up["url"], params={"token": up["token"]}, headers=dict(TUS, **origin), timeout=10)
    assert h.status_code == 200
    cors_ok(h)
    ph = dict(TUS, **origin, **{"Content-Type": "application/offset+octet-stream"})
    r = requests.patch(up["url"], params={"token": up["token"]}, data=data[:1000],
                       headers=dict(ph, **{"Upload-Offset": "0"}), timeout=30)
    assert r.status_code == 204 and r.headers["Upload-Offset"] == "1000"
    assert r.headers["Tus-Resumable"] == "1.0.0"  # a PATCH's answer had lost it
    cors_ok(r)
    r = requests.patch(up["url"], params={"token": up["token"]}, data=data[1000:],
                       headers=dict(ph, **{"Upload-Offset": "1000"}), timeout=30)
    assert r.status_code == 204 and r.headers["Upload-Offset"] == str(len(data))
    cors_ok(r)
    r = requests.patch(up["url"], params={"token": up["token"]}, data=b"x",
                       headers=dict(ph, **{"Upload-Offset": "0"}), timeout=30)
    assert r.status_code == 409
    cors_ok(r)
    r = requests.patch(up["url"], params={"token": "nope"}, data=b"x",
                       headers=dict(ph, **{"Upload-Offset": "0"}), timeout=30)
    assert r.status_code == 401
    cors_ok(r)
    # The download: whole, a range, and errors.
    g = download(user, f, "cors/file.bin", origin)
    assert g.status_code == 200 and g.content == data
    cors_ok(g)
    g = download(user, f, "cors/file.bin", dict(origin, Range="bytes=10-19"))
    assert g.status_code == 206 and g.content == data[10:20]
    cors_ok(g)
    g = download(user, f, "cors/file.bin", dict(origin, Range=f"bytes={len(data)}-"))
    assert g.status_code == 416
    cors_ok(g)
    g = requests.get(env.urls["vfolder"] + "/v1/transfer/download", headers=origin, timeout=10)
    assert g.status_code == 401
    cors_ok(g)
    # Not on the gateway-facing API.
    r = user.vf("GET", f"/folders/{f['name']}/files", params={"path": "cors"})
    assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers


def test_interrupted_upload_resumes_byte_identical(env, user):
    f = new_folder(user)
    data = os.urandom(8 * 1024 * 1024 + 3)
    up = request_upload(user, f, "big.bin", len(data))
    raw_patch_cut(up, 0, data, 3 * 1024 * 1024 + 5)
    off, total = tus_head(up)
    assert 0 < off <= 3 * 1024 * 1024 + 5 and total == len(data)
    # A stale offset is refused and the right one named.
    r = tus_patch(up, 0, data[:10], expect=409)
    assert int(r.headers["Upload-Offset"]) == off
    raw_patch_cut(up, off, data[off:], 2 * 1024 * 1024)
    off2, _ = tus_head(up)
    assert off2 > off
    assert not os.path.exists(os.path.join(env.disk(f), "big.bin"))
    tus_patch(up, off2, data[off2:])
    got = open(os.path.join(env.disk(f), "big.bin"), "rb").read()
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest()


def test_quota_refuses_and_leaves_nothing(env, user):
    f = new_folder(user, quota=100000)
    staging = os.path.join(env.volume, ".tessera-uploads")
    before = set(os.listdir(staging))
    r = user.vf("POST", f"/folders/{f['name']}/request-upload", {"path": "too-big.bin", "size": 100001})
    assert r.status_code == 412, r.text
    assert r.json()["type"].endswith("/quota-exceeded")
    assert os.listdir(env.disk(f)) == [] and set(os.listdir(staging)) == before
    assert used_bytes(user, f) == 0
    # 60,000 bytes fit; a second 60,000 does not while the first is reserved.
    up = request_upload(user, f, "a.bin", 60000)
    assert user.vf("POST", f"/folders/{f['name']}/request-upload",
                   {"path": "b.bin", "size": 60000}).status_code == 412
    # More bytes than declared: refused, nothing lands in the folder.
    tus_patch(up, 0, b"y" * 60001, expect=413)
    assert os.listdir(env.disk(f)) == []
    tus_patch(up, 0, b"y" * 60000)
    assert used_bytes(user, f) == 60000
    # Termination gives a reservation back.
    up2 = request_upload(user, f, "c.bin", 40000)
    tus_patch(up2, 0, b"z" * 1000)
    r = requests.delete(up2["url"], params={"token": up2["token"]}, headers=TUS, timeout=10)
    assert r.status_code == 204
    assert requests.head(up2["url"], params={"token": up2["token"]}, headers=TUS, timeout=10).status_code == 410
    assert used_bytes(user, f) == 60000
    assert up2["upload_id"] not in os.listdir(staging)
    assert os.listdir(env.disk(f)) == ["a.bin"]
    # Deleting gives bytes back.
    ok(user.vf("DELETE", f"/folders/{f['name']}/delete_files", {"files": ["a.bin"]}))
    assert used_bytes(user, f) == 0


def test_concurrent_uploads_to_one_folder(env, user):
    f = new_folder(user)
    blobs = {f"c{i}.bin": os.urandom(1024 * 1024 + i * 4099) for i in range(8)}
    errors = []

    def one(path, data):
        try:
            upload(user, f, path, data, chunk=300 * 1024)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    ts = [threading.Thread(target=one, args=kv) for kv in blobs.items()]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    for path, data in blobs.items():
        assert open(os.path.join(env.disk(f), path), "rb").read() == data
    assert used_bytes(user, f) == sum(len(d) for d in blobs.values())
    # Two PATCHes of the same upload at once: one waits its turn (409).
    up = request_upload(user, f, "same.bin", 4 * 1024 * 1024)
    u = urllib.parse.urlsplit(up["url"])
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    s.sendall((f"PATCH {u.path}?token={urllib.parse.quote(up['token'])} HTTP/1.1\r\nHost: {u.netloc}\r\n"
               "Tus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\n"
               f"Content-Length: {4 * 1024 * 1024}\r\n\r\n").encode() + b"a" * 1000)
    time.sleep(0.3)
    tus_patch(up, 0, b"b" * 10, expect=409)
    s.close()


def test_zip_download_of_a_directory(env, user):
    f = new_folder(user)
    files = {"top.txt": b"top", "d/one.bin": os.urandom(200000), "d/e/two.txt": b"two" * 1000,
             "d/empty.txt": b""}
    for p, data in files.items():
        upload(user, f, p, data)
    ok(user.vf("POST", f"/folders/{f['name']}/mkdir", {"path": "d/emptydir"}), 201)
    os.symlink(env.outside, os.path.join(env.disk(f), "d", "out"))
    r = user.vf("POST", f"/folders/{f['name']}/request-download", {"file": "d"})
    assert r.status_code == 400 and "archive" in r.json()["msg"]  # a directory needs archive
    g = download(user, f, "d", archive=True)
    assert g.status_code == 200 and g.headers["Content-Type"] == "application/zip"
    assert 'filename="d.zip"' in g.headers["Content-Disposition"]
    z = zipfile.ZipFile(io.BytesIO(g.content))
    assert z.testzip() is None
    assert sorted(z.namelist()) == ["e/", "e/two.txt", "empty.txt", "emptydir/", "one.bin"]
    assert z.read("one.bin") == files["d/one.bin"] and z.read("e/two.txt") == files["d/e/two.txt"]
    # The whole folder.
    g = download(user, f, "", archive=True)
    z = zipfile.ZipFile(io.BytesIO(g.content))
    assert z.read("top.txt") == b"top" and z.read("d/one.bin") == files["d/one.bin"]
    assert not any(n.startswith("d/out") for n in z.namelist())


def test_many_small_files_zip(env, user):
    f = new_folder(user)
    root = env.disk(f)
    os.makedirs(os.path.join(root, "many"))
    for i in range(300):
        with open(os.path.join(root, "many", f"f{i:04d}"), "wb") as fh:
            fh.write(bytes([i % 256]) * (i * 37))
    g = download(user, f, "many", archive=True)
    z = zipfile.ZipFile(io.BytesIO(g.content))
    assert len(z.namelist()) == 300
    assert z.read("f0299") == bytes([299 % 256]) * (299 * 37)


# ---- tokens ----------------------------------------------------------------------------------------

def _forge(env, payload):
    secret = env.psql("SELECT secret FROM vfolder.transfer_secrets WHERE name = 'token'").encode()
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    head = b64(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())
    return head + "." + b64(hmac.new(secret, head.encode(), hashlib.sha256).digest())


def test_bad_tokens(env, user):
    f = new_folder(user)
    upload(user, f, "x.bin", b"hello")
    d = ok(user.vf("POST", f"/folders/{f['name']}/request-download", {"file": "x.bin"}))
    url = d["url"]
    assert requests.get(url, timeout=10).status_code == 401
    assert requests.get(url, params={"token": "garbage"}, timeout=10).status_code == 401
    tampered = d["token"][:-3] + ("AAA" if not d["token"].endswith("AAA") else "BBB")
    assert requests.get(url, params={"token": tampered}, timeout=10).status_code == 401
    # Another payload under the same signature.
    head, sig = d["token"].split(".")
    other = base64.urlsafe_b64encode(b'{"v":1}').rstrip(b"=").decode()
    assert requests.get(url, params={"token": other + "." + sig}, timeout=10).status_code == 401
    # Expired (signed with the real secret, in the past).
    payload = {"v": 1, "op": "download", "fid": f["id"], "host": "local", "uid": user.user_id, "id": str(uuid.uuid4()),
               "path": "x.bin", "size": -1, "exp": int(time.time()) - 5, "archive": False}
    r = requests.get(url, params={"token": _forge(env, payload)}, timeout=10)
    assert r.status_code == 401 and "expired" in r.json()["msg"]
    payload["exp"] = int(time.time()) + 60
    assert requests.get(url, params={"token": _forge(env, payload)}, timeout=10).content == b"hello"
    # A download token is no upload token, and an upload token is for its upload only.
    up = request_upload(user, f, "y.bin", 3)
    h = dict(TUS, **{"Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
    r = requests.patch(up["url"], params={"token": d["token"]}, headers=h, data=b"abc", timeout=10)
    assert r.status_code == 403
    up2 = request_upload(user, f, "z.bin", 3)
    r = requests.patch(up["url"], params={"token": up2["token"]}, headers=h, data=b"abc", timeout=10)
    assert r.status_code == 403
    assert requests.get(url, params={"token": up["token"]}, timeout=10).status_code == 403
    assert not os.path.exists(os.path.join(env.disk(f), "y.bin"))


# ---- bad input ---------------------------------------------------------------------------------------

def test_bad_input(env, user):
    f = new_folder(user)
    n = f["name"]
    for body in ({}, {"path": "a"}, {"size": 1}, {"path": "a", "size": -1}, {"path": "", "size": 1},
                 {"path": "a", "size": "1"}, {"path": "a\x01b", "size": 1}, {"path": "a", "size": 1, "x": 1},
                 {"path": "a", "size": 1.5}):
        r = user.vf("POST", f"/folders/{n}/request-upload", body)
        assert r.status_code == 400, (body, r.text)
    h = {"X-Tessera-Caller": user.user_id, "X-Tessera-Caller-Access-Key": user.ak,
         "Content-Type": "application/json"}
    r = svc_signer.call(env.urls["keys"], "gateway", "POST", env.urls["vfolder"] + f"/v1/folders/{n}/mkdir",
                        data=b"{nope", headers=h, timeout=10)
    assert r.status_code == 400
    for body in ({}, {"path": ""}, {"path": 5}, {"path": "a", "parents": "yes"}):
        assert user.vf("POST", f"/folders/{n}/mkdir", body).status_code == 400, body
    for body in ({}, {"files": []}, {"files": "a"}, {"files": [1]}, {"files": [""]}, {"files": ["."]},
                 {"files": ["a"], "recursive": 1}):
        assert user.vf("DELETE", f"/folders/{n}/delete_files", body).status_code == 400, body
    for body in ({"target_path": "a"}, {"target_path": "a", "new_name": "b/c"},
                 {"target_path": "a", "new_name": ".."}):
        assert user.vf("POST", f"/folders/{n}/rename_file", body).status_code in (400,), body
    assert user.vf("POST", f"/folders/{n}/request-download", {"file": "nope"}).status_code == 404
    assert user.vf("GET", f"/folders/{n}/files", params={"path": "nope"}).status_code == 404
    # tus: version, media type, offset.
    up = request_upload(user, f, "t.bin", 10)
    q = {"token": up["token"]}
    r = requests.patch(up["url"], params=q, data=b"x", timeout=10,
                       headers={"Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"})
    assert r.status_code == 412 and r.headers["Tus-Version"] == "1.0.0"
    r = requests.patch(up["url"], params=q, data=b"x", timeout=10,
                       headers=dict(TUS, **{"Upload-Offset": "0", "Content-Type": "text/plain"}))
    assert r.status_code == 415
    r = requests.patch(up["url"], params=q, data=b"x", timeout=10,
                       headers=dict(TUS, **{"Content-Type": "application/offset+octet-stream"}))
    assert r.status_code == 400
    r = requests.patch(up["url"], params=q, data=b"x", timeout=10,
                       headers=dict(TUS, **{"Upload-Offset": "-1", "Content-Type": "application/offset+octet-stream"}))
    assert r.status_code == 400
    r = requests.patch(up["url"], params=q, data=b"x", timeout=10,
                       headers=dict(TUS, **{"Upload-Offset": "5", "Content-Type": "application/offset+octet-stream"}))
    assert r.status_code == 409 and r.headers["Upload-Offset"] == "0"
    assert requests.head(up["url"], params=q, timeout=10).status_code == 412
    # Uploading onto a directory.
    ok(user.vf("POST", f"/folders/{n}/mkdir", {"path": "dir"}), 201)
    assert user.vf("POST", f"/folders/{n}/request-upload", {"path": "dir", "size": 1}).status_code == 400


# ---- the CLI ------------------------------------------------------------------------------------------

def _cli_env(env, user, tmp):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith(("TESSERA_", "BACKEND_")):
            del e[k]
    e.update({"TESSERA_GATEWAY_URL": env.urls["gateway"], "TESSERA_ACCESS_KEY": user.ak,
              "TESSERA_SECRET_KEY": user.sk, "XDG_CACHE_HOME": str(tmp / "cache"),
              "XDG_CONFIG_HOME": str(tmp / "config"), "HOME": str(tmp)})
    return e


def cli(bin_dir, e, *args, check=True, timeout=120):
    r = subprocess.run([os.path.join(bin_dir, "tessera"), "vfolder", *args], env=e, capture_output=True,
                       text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, f"tessera vfolder {args}: {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def test_cli_files(env, user, bin_dir, tmp_path):
    f = new_folder(user)
    n = f["name"]
    e = _cli_env(env, user, tmp_path)
    data = os.urandom(5 * 1024 * 1024 + 11)
    local = tmp_path / "local.bin"
    local.write_bytes(data)
    cli(bin_dir, e, "mkdir", n, "in/deep", "-p")
    r = cli(bin_dir, e, "upload", n, str(local), "in/deep/remote.bin")
    assert "uploaded" in r.stdout
    assert "upload local.bin" in r.stderr  # progress (not a tty: the last line)
    assert open(os.path.join(env.disk(f), "in/deep/remote.bin"), "rb").read() == data
    r = cli(bin_dir, e, "ls", n, "in/deep")
    assert "remote.bin" in r.stdout and "FILE" in r.stdout
    items = json.loads(cli(bin_dir, e, "ls", n, "in/deep", "--json").stdout)["items"]
    assert items[0]["size"] == len(data)
    cli(bin_dir, e, "mv", n, "in/deep/remote.bin", "in/moved.bin")
    out = tmp_path / "back.bin"
    cli(bin_dir, e, "download", n, "in/moved.bin", str(out))
    assert out.read_bytes() == data
    # Range resume: half a .part from an earlier run is continued, not refetched.
    out2 = tmp_path / "again.bin"
    (tmp_path / "again.bin.part").write_bytes(data[:1234567])
    cli(bin_dir, e, "download", n, "in/moved.bin", str(out2))
    assert out2.read_bytes() == data and not (tmp_path / "again.bin.part").exists()
    # A directory comes as a zip.
    cli(bin_dir, e, "download", n, "in", str(tmp_path / "in.zip"))
    z = zipfile.ZipFile(tmp_path / "in.zip")
    assert z.read("moved.bin") == data
    # Errors: exit 1 with the server's message; usage: exit 2.
    r = cli(bin_dir, e, "rm", n, "in", check=False)
    assert r.returncode == 1 and "not empty" in r.stderr
    cli(bin_dir, e, "rm", n, "in", "-r")
    assert os.listdir(env.disk(f)) == []
    r = cli(bin_dir, e, "ls", n, "../..", check=False)
    assert r.returncode == 1 and "outside the folder" in r.stderr
    assert cli(bin_dir, e, "mv", n, "only-one", check=False).returncode == 2
    assert cli(bin_dir, e, "upload", n, str(tmp_path / "missing"), check=False).returncode == 1


def test_cli_upload_resumes_after_kill(env, user, bin_dir, tmp_path):
    f = new_folder(user)
    e = _cli_env(env, user, tmp_path)
    data = os.urandom(6 * 1024 * 1024)
    local = tmp_path / "slow.bin"
    local.write_bytes(data)
    p = subprocess.Popen([os.path.join(bin_dir, "tessera"), "vfolder", "upload", f["name"], str(local),
                          "--limit-rate", "2m"], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)
    p.kill()
    p.wait()
    assert not os.path.exists(os.path.join(env.disk(f), "slow.bin"))
    r = cli(bin_dir, e, "upload", f["name"], str(local))
    assert "resuming the upload at" in r.stderr, r.stderr
    at = int(r.stderr.split("resuming the upload at ")[1].split()[0])
    assert 0 < at < len(data)
    got = open(os.path.join(env.disk(f), "slow.bin"), "rb").read()
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest()


def test_transfer_tables_come_from_a_migration_that_keeps_existing_ones(env):
    """Issue 7: vfolder.transfer_secrets and vfolder.uploads are created by
    migration 0002 (recorded), and running it again over existing tables (a
    database from before the migration) changes nothing."""
    assert env.psql("SELECT count(*) FROM vfolder.schema_migrations WHERE version = 2") == "1"
    sql_file = os.path.join(os.path.dirname(__file__), "..", "..", "services", "vfolder", "migrations",
                            "0002_transfer_tables.sql")
    with open(sql_file, encoding="utf-8") as f:
        sql = f.read()
    before = env.psql("SELECT count(*) FROM vfolder.transfer_secrets")
    assert before == "1"
    env.psql("BEGIN; SET LOCAL search_path TO vfolder; " + sql + " COMMIT;")
    assert env.psql("SELECT count(*) FROM vfolder.transfer_secrets") == before
    assert env.psql("SELECT indexdef FROM pg_indexes WHERE schemaname = 'vfolder' AND indexname = 'uploads_open'")
