"""Files in and out of a RUNNING session's /home/work (docs/sessions.md,
"Files"): POST /session/{name}/upload (multipart/form-data, parts named src
whose filename is the path), GET|POST /session/{name}/download (a tar of the
named files), GET|POST /session/{name}/download_single (one file's bytes),
GET /session/{name}/files (a directory's entries). What an upload writes is
read back with execute inside the container; another user's session is not
found; paths never leave /home/work, symlinks the user made included."""
import io
import json
import os
import tarfile
import uuid

import pytest

from bai_signer import signed_headers
from test_sessions_api import admin, gw, image, image_registered, other, problem, user  # noqa: F401
from test_apps import _running

TAG = uuid.uuid4().hex[:6]


def upload(client, sname, parts, content_type=None, body=None):
    """POST /session/{sname}/upload signed as the SDK signs a FormData body."""
    boundary = "----tessera" + uuid.uuid4().hex
    if body is None:
        out = io.BytesIO()
        for field, filename, data in parts:
            out.write(f"--{boundary}\r\n".encode())
            disp = f'form-data; name="{field}"'
            if filename is not None:
                disp += f'; filename="{filename}"'
            out.write(f"Content-Disposition: {disp}\r\n".encode())
            out.write(b"Content-Type: application/octet-stream\r\n\r\n")
            out.write(data + b"\r\n")
        out.write(f"--{boundary}--\r\n".encode())
        body = out.getvalue()
    ct = content_type or f"multipart/form-data; boundary={boundary}"
    url = client.endpoint + f"/session/{sname}/upload"
    h = signed_headers(client.access_key, client.secret_key, "POST", url, content_type=ct)
    return client.transport().request("POST", url, data=body, headers=h, timeout=30)


def sh(client, sname, cmd):
    r = client.post(f"/session/{sname}", {"mode": "query", "code": cmd}, timeout=80)
    assert r.status_code == 200, r.text
    res = r.json()["result"]
    out = "".join(t for k, t in res["console"] if k == "stdout")
    return res["exitCode"], out


@pytest.fixture(scope="module")
def sess(user, image_registered):  # noqa: F811
    sname = f"files-{TAG}"
    _running(user, image_registered, sname)
    yield sname
    user.delete(f"/session/{sname}")


def test_upload_then_cat_and_owner(user, sess):  # noqa: F811
    r = upload(user, sess, [("src", "hello.txt", b"hello files\n"),
                            ("src", "sub/dir/bin.dat", bytes(range(256)) * 4)])
    assert r.status_code == 204, r.text
    code, out = sh(user, sess, "cat /home/work/hello.txt")
    assert (code, out) == (0, "hello files\n")
    code, out = sh(user, sess, "wc -c < /home/work/sub/dir/bin.dat")
    assert out.strip() == "1024"
    # owned by the user the container runs as, ordinary modes
    code, out = sh(user, sess, "id -u; stat -c '%u %a' /home/work/hello.txt /home/work/sub/dir")
    uid, f, d = out.split("\n")[:3]
    assert f == f"{uid} 644" and d == f"{uid} 755", out
    # replace, and an absolute path under /home/work
    assert upload(user, sess, [("src", "/home/work/hello.txt", b"again")]).status_code == 204
    assert sh(user, sess, "cat /home/work/hello.txt")[1] == "again"


def test_download_tar_and_single(user, sess):  # noqa: F811
    sh(user, sess, "mkdir -p /home/work/dl/in && printf one > /home/work/dl/a.txt && "
       "printf two > /home/work/dl/in/b.txt && ln -sf a.txt /home/work/dl/link")
    r = user.get(f"/session/{sess}/download", params=[("files", "dl"), ("files", "dl/a.txt")])
    assert r.status_code == 200, r.text
    tf = tarfile.open(fileobj=io.BytesIO(r.content))
    names = set(tf.getnames())
    assert {"dl", "dl/a.txt", "dl/in", "dl/in/b.txt", "dl/link"} <= names, names
    assert tf.extractfile("dl/in/b.txt").read() == b"two"
    assert tf.getmember("dl/link").issym() and tf.getmember("dl/link").linkname == "a.txt"
    # POST with a JSON body, as Backend.AI 24.09 answers it (its Python client
    # reads that): multipart/mixed, one part per file, each a tar of it
    r = user.post(f"/session/{sess}/download", {"files": ["dl/in/b.txt", "dl/a.txt"]})
    assert r.status_code == 200
    ctype = r.headers["Content-Type"]
    assert ctype.startswith("multipart/mixed; boundary="), ctype
    boundary = ctype.split("boundary=", 1)[1].encode()
    parts = [p for p in r.content.split(b"--" + boundary) if p not in (b"", b"--\r\n")]
    assert len(parts) == 2, parts
    tars = [tarfile.open(fileobj=io.BytesIO(p.split(b"\r\n\r\n", 1)[1][:-2])) for p in parts]
    assert tars[0].getnames() == ["dl/in/b.txt"] and tars[0].extractfile("dl/in/b.txt").read() == b"two"
    assert tars[1].extractfile("dl/a.txt").read() == b"one"
    problem(user.post(f"/session/{sess}/download", {"files": ["dl/nope"]}), 404)

    r = user.get(f"/session/{sess}/download_single", params={"file": "dl/a.txt"})
    assert r.status_code == 200 and r.content == b"one", r.text
    assert "a.txt" in r.headers.get("Content-Disposition", "")
    problem(user.get(f"/session/{sess}/download_single", params={"file": "dl"}), 400)
    problem(user.get(f"/session/{sess}/download_single", params={"file": "nope"}), 404)
    problem(user.get(f"/session/{sess}/download"), 400)


def test_files_listing(user, sess):  # noqa: F811
    sh(user, sess, "mkdir -p /home/work/ls/d && printf 12345 > /home/work/ls/f")
    r = user.get(f"/session/{sess}/files", params={"path": "ls"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["abspath"] == "/home/work/ls"
    entries = {e["filename"]: e for e in json.loads(body["files"])}
    assert set(entries) == {"d", "f"}
    assert entries["f"]["size"] == 5 and entries["f"]["type"] == "file"
    assert entries["f"]["mode"].startswith("-rw") and entries["d"]["mode"].startswith("d")
    assert entries["f"]["mtime"] > 0
    root = user.get(f"/session/{sess}/files").json()
    assert root["abspath"] == "/home/work"
    assert "ls" in {e["filename"] for e in json.loads(root["files"])}
    problem(user.get(f"/session/{sess}/files", params={"path": "ls/f"}), 400)
    problem(user.get(f"/session/{sess}/files", params={"path": "missing"}), 404)


def test_another_users_session_is_not_found(user, other, sess):  # noqa: F811
    assert problem(upload(other, sess, [("src", "x-other.txt", b"x")]), 404)
    problem(other.get(f"/session/{sess}/download", params={"files": "hello.txt"}), 404)
    problem(other.post(f"/session/{sess}/download", {"files": ["hello.txt"]}), 404)
    problem(other.get(f"/session/{sess}/download_single", params={"file": "hello.txt"}), 404)
    problem(other.get(f"/session/{sess}/files"), 404)
    assert sh(user, sess, "test -e /home/work/x-other.txt; echo $?")[1].strip() == "1"


@pytest.mark.parametrize("path", ["../escape.txt", "a/../../escape.txt", "/etc/escape.txt",
                                  "/home/workx/escape.txt"])
def test_paths_outside_home_are_refused(user, sess, path):  # noqa: F811
    p = problem(upload(user, sess, [("src", path, b"nope")]), 400)
    assert p
    problem(user.get(f"/session/{sess}/download_single", params={"file": path}), 400)
    problem(user.get(f"/session/{sess}/download", params={"files": path}), 400)
    problem(user.get(f"/session/{sess}/files", params={"path": path}), 400)


def test_symlinks_out_of_home_are_not_followed(user, sess):  # noqa: F811
    with open("/etc/passwd", "rb") as f:
        host_passwd = f.read()
    marker = f"escape-{TAG}"
    sh(user, sess, "ln -sf /etc/passwd /home/work/evil && ln -sfn /etc /home/work/etcdir && "
       "ln -sfn / /home/work/rootdir")
    # not written through
    problem(upload(user, sess, [("src", "evil", b"pwned\n")]), 400)
    problem(upload(user, sess, [("src", f"etcdir/{marker}", b"pwned\n")]), 400)
    problem(upload(user, sess, [("src", f"rootdir/tmp/{marker}", b"pwned\n")]), 400)
    with open("/etc/passwd", "rb") as f:
        assert f.read() == host_passwd
    assert not os.path.exists(f"/etc/{marker}") and not os.path.exists(f"/tmp/{marker}")
    assert sh(user, sess, f"ls /etc/{marker} /tmp/{marker} 2>/dev/null; echo $?")[1].strip() != "0"
    # not read through
    problem(user.get(f"/session/{sess}/download_single", params={"file": "evil"}), 400)
    problem(user.get(f"/session/{sess}/download_single", params={"file": "etcdir/passwd"}), 400)
    problem(user.get(f"/session/{sess}/download", params={"files": "etcdir/passwd"}), 400)
    problem(user.get(f"/session/{sess}/files", params={"path": "etcdir"}), 400)
    # a tar holds the link itself, not what it points to
    r = user.get(f"/session/{sess}/download", params={"files": "evil"})
    assert r.status_code == 200
    m = tarfile.open(fileobj=io.BytesIO(r.content)).getmember("evil")
    assert m.issym() and m.linkname == "/etc/passwd" and b"root:" not in r.content


def test_bad_uploads(user, sess):  # noqa: F811
    problem(upload(user, sess, [], body=b"--b--\r\n",
                   content_type="multipart/form-data; boundary=b"), 400)
    problem(upload(user, sess, [("src", None, b"a field without a filename")]), 400)
    problem(upload(user, sess, [], body=b"plain", content_type="text/plain"), 415)
    problem(upload(user, sess, [("src", "big.bin", b"x" * (1024 * 1024 + 1))]), 413)
    problem(upload(user, sess, [("src", "", b"no name")]), 400)
    assert sh(user, sess, "test -e /home/work/big.bin; echo $?")[1].strip() == "1"


def test_unknown_session_is_404(user):  # noqa: F811
    problem(upload(user, f"nothing-{TAG}", [("src", "a", b"a")]), 404)
    problem(user.get(f"/session/nothing-{TAG}/files"), 404)


def test_cli_upload_files_download(user, sess, bin_dir, tmp_path, stack):  # noqa: F811
    from test_cli import base_env, fails, ok
    env = base_env(tmp_path, TESSERA_GATEWAY_URL=stack["TESSERA_GATEWAY_URL"],
                   TESSERA_ACCESS_KEY=user.access_key, TESSERA_SECRET_KEY=user.secret_key)
    local = tmp_path / "cli-one.txt"
    local.write_bytes(b"from the cli\n")
    (tmp_path / "cli-two.bin").write_bytes(bytes(range(200)))
    assert "uploaded 2" in ok(bin_dir, env, "session", "upload", sess, str(local),
                              str(tmp_path / "cli-two.bin"))
    assert sh(user, sess, "cat /home/work/cli-one.txt")[1] == "from the cli\n"
    listing = ok(bin_dir, env, "session", "files", sess)
    assert "cli-one.txt" in listing and "MODE" in listing
    names = {e["filename"] for e in json.loads(ok(bin_dir, env, "--json", "session", "files", sess))}
    assert {"cli-one.txt", "cli-two.bin"} <= names
    out = tmp_path / "out"
    out.mkdir()
    ok(bin_dir, env, "session", "download", sess, "cli-one.txt", "cli-two.bin", "-o", str(out))
    assert (out / "cli-one.txt").read_bytes() == b"from the cli\n"
    assert (out / "cli-two.bin").read_bytes() == bytes(range(200))
    fails(bin_dir, env, "session", "download", sess, "../x", "-o", str(out), status=400)
    for sub in ("upload", "download", "files"):
        assert ok(bin_dir, env, "session", sub, "--help").startswith(f"Usage: tessera session {sub}")
