"""Backend.AI's vfolder routes beyond the core (docs/vfolders.md; issue 20):
GET /folders/_/allowed_types, POST /folders/{name}/update-options, invite
with the SDK's `user_ids`, GET/POST /folders/_/shared, the legacy multipart
POST /folders/{name}/upload, and GET /folders/_/download_with_token. Each
through the signed gateway as the SDK calls it, with the permission matrix
of test_vfolder_core.py's callers (another user, another domain's admin:
404, never a hint that the folder exists) and bad input.
"""
import json
import os
import uuid

import pytest
import requests

import bai_signer
from test_vfolder_core import World, _cli, fresh, ok

CALLERS = ["owner", "invitee_ro", "invitee_rw", "member", "other", "dadmin", "eadmin", "super"]


@pytest.fixture(scope="module")
def world(stack):
    if "TESSERA_ADMIN_ACCESS_KEY" not in stack:
        pytest.skip("no bootstrap superadmin")
    return World(stack)


def gw(world, who, method, path, body=None, params=None):
    return world.c[who].gw(method, path, json=body, params=params)


def multipart(parts, boundary=None):
    """(body, content type) of [(field name, filename or None, bytes)]."""
    b = boundary or "----tessera" + uuid.uuid4().hex
    out = b""
    for name, filename, data in parts:
        disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        out += f"--{b}\r\nContent-Disposition: {disp}\r\nContent-Type: application/octet-stream\r\n\r\n".encode()
        out += data + b"\r\n"
    out += f"--{b}--\r\n".encode()
    return out, f"multipart/form-data; boundary={b}"


def upload(world, who, folder, parts=None, body=None, content_type=None):
    """POST /folders/{folder}/upload through the gateway, signed as the SDK
    signs a FormData body (the media type only)."""
    if body is None:
        body, content_type = multipart(parts)
    c = world.c[who]
    url = world.urls["gateway"] + f"/folders/{folder}/upload"
    h = bai_signer.signed_headers(c.ak, c.sk, "POST", url, content_type=content_type)
    return requests.post(url, data=body, headers=h, timeout=30)


def problem(r, code, *words):
    assert r.status_code == code, f"{r.status_code} {r.text}"
    if words:
        text = r.text
        for w in words:
            assert w in text, f"{w!r} not in {text}"


# ---- allowed_types -----------------------------------------------------------------------

@pytest.mark.parametrize("who,want", [("owner", ["user"]), ("member", ["user"]),
                                      ("dadmin", ["user", "group"]), ("super", ["user", "group"])])
def test_allowed_types(world, who, want):
    assert ok(gw(world, who, "GET", "/folders/_/allowed_types")) == want
    assert ok(gw(world, who, "GET", "/folders/_/allowed-types")) == want


# ---- update-options ----------------------------------------------------------------------

UPDATE = {"owner": 200, "invitee_ro": 403, "invitee_rw": 403, "member": 404, "other": 404,
          "dadmin": 200, "eadmin": 404, "super": 200}


@pytest.mark.parametrize("who", CALLERS)
def test_update_options_matrix(world, who):
    # invitees are tried on the folder shared with them; the others on a fresh one
    invitee = who.startswith("invitee")
    f = world.ufolder if invitee else ok(world.c["owner"].vf("POST", "/folders", {"name": fresh("opt")}), 201)
    r = gw(world, who, "POST", f"/folders/{f['id']}/update-options", {"cloneable": not invitee, "permission": "ro"})
    assert r.status_code == UPDATE[who], r.text
    info = ok(world.c["owner"].vf("GET", f"/folders/{f['id']}"))
    assert info["cloneable"] == (invitee or r.status_code == 200)  # the shared one is cloneable
    assert info["permission"] == ("ro" if r.status_code == 200 else "rw")
    if r.status_code == 200:
        assert r.json()["msg"] == "" and r.json()["cloneable"] is True and r.json()["permission"] == "ro"
    elif r.status_code == 404:
        assert r.json()["type"].endswith("/vfolder-not-found")


def test_update_options_by_name_and_bad_input(world):
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("opt")}), 201)
    for body, field in (({"permission": "owner"}, "permission"), ({"permission": 3}, "permission"),
                        ({"cloneable": "yes"}, "cloneable"), ({"cloneable": True, "name": "x"}, "name"),
                        ({"permission": "ro", "cloneable": 1}, "cloneable")):
        problem(gw(world, "owner", "POST", f"/folders/{f['name']}/update-options", body), 400, field)
    info = ok(owner.vf("GET", f"/folders/{f['id']}"))
    assert info["cloneable"] is False and info["permission"] == "rw"  # nothing changed
    problem(gw(world, "owner", "POST", f"/folders/{fresh('nope')}/update-options", {"cloneable": True}), 404)
    # {} changes nothing and says so; one field leaves the other alone.
    assert ok(gw(world, "owner", "POST", f"/folders/{f['name']}/update-options", {}))["cloneable"] is False
    ok(gw(world, "owner", "POST", f"/folders/{f['name']}/update-options", {"cloneable": True}))
    ok(gw(world, "owner", "POST", f"/folders/{f['name']}/update-options", {"permission": "wd"}))
    info = ok(owner.vf("GET", f"/folders/{f['id']}"))
    assert info["cloneable"] is True and info["permission"] == "wd"


def test_update_options_project_folder(world):
    g = world.gfolder
    problem(gw(world, "member", "POST", f"/folders/{g['id']}/update-options", {"permission": "ro"}), 403)
    problem(gw(world, "eadmin", "POST", f"/folders/{g['id']}/update-options", {"permission": "ro"}), 404)
    ok(gw(world, "dadmin", "POST", f"/folders/{g['id']}/update-options", {"permission": "ro"}))
    assert ok(world.c["member"].vf("GET", f"/folders/{g['id']}"))["permission"] == "ro"
    ok(gw(world, "dadmin", "POST", f"/folders/{g['id']}/update-options", {"permission": "rw"}))
    assert ok(world.c["member"].vf("GET", f"/folders/{g['id']}"))["permission"] == "rw"


# ---- invite with the SDK's user_ids --------------------------------------------------------

def test_invite_user_ids(world):
    f = ok(world.c["owner"].vf("POST", "/folders", {"name": fresh("inv")}), 201)
    r = ok(gw(world, "owner", "POST", f"/folders/{f['name']}/invite",
              {"perm": "ro", "user_ids": [world.c["other"].email]}), 201)
    assert len(r["invited_ids"]) == 1
    pending = ok(world.c["other"].vf("GET", "/folders/invitations/list"))["invitations"]
    assert [i["perm"] for i in pending if i["vfolder_id"] == f["id"]] == ["ro"]
    # Backend.AI's other names: userIDs, permission.
    r = ok(gw(world, "owner", "POST", f"/folders/{f['name']}/invite",
              {"permission": "rw", "userIDs": [world.c["member"].email]}), 201)
    assert len(r["invited_ids"]) == 1
    problem(gw(world, "owner", "POST", f"/folders/{f['name']}/invite",
               {"perm": "ro", "user_ids": [world.c["other"].email], "emails": [world.c["other"].email]}), 400, "not both")
    problem(gw(world, "owner", "POST", f"/folders/{f['name']}/invite", {"perm": "ro", "user_ids": ["nobody"]}), 400, "user_ids[0]")
    problem(gw(world, "owner", "POST", f"/folders/{f['name']}/invite", {"perm": "ro", "user_ids": []}), 400, "user_ids")
    problem(gw(world, "owner", "POST", f"/folders/{f['name']}/invite", {"perm": "xx", "user_ids": [world.c["other"].email]}), 400, "perm")
    # Not the owner's: refused as invite is (404 for strangers, another domain's admin).
    for who in ("other", "eadmin"):
        problem(gw(world, who, "POST", f"/folders/{f['id']}/invite", {"user_ids": [world.c["member"].email]}), 404)


# ---- /folders/_/shared ----------------------------------------------------------------------

def test_shared_list(world):
    uf = world.ufolder
    rows = ok(gw(world, "owner", "GET", "/folders/_/shared"))["shared"]
    mine = {r["shared_to"]["uuid"]: r for r in rows if r["vfolder_id"] == uf["id"]}
    for label, perm in (("invitee_ro", "ro"), ("invitee_rw", "rw")):
        r = mine[world.c[label].user_id]
        assert r["perm"] == perm and r["shared_to"]["email"] == world.c[label].email
        assert r["type"] == "user" and r["owner"] == world.c["owner"].user_id and r["status"] == "ready"
        assert r["vfolder_name"] == ok(world.c["owner"].vf("GET", f"/folders/{uf['id']}"))["name"]
    one = ok(gw(world, "owner", "GET", "/folders/_/shared", params={"vfolder_id": uf["id"]}))["shared"]
    assert {r["shared_to"]["uuid"] for r in one} == set(mine)
    # Others' lists do not hold the owner's folder.
    for who in ("other", "invitee_ro", "eadmin"):
        assert all(r["vfolder_id"] != uf["id"] for r in ok(gw(world, who, "GET", "/folders/_/shared"))["shared"])


SHARED_LIST = {"owner": 200, "invitee_ro": 403, "invitee_rw": 403, "member": 404, "other": 404,
               "dadmin": 200, "eadmin": 404, "super": 200}


@pytest.mark.parametrize("who", CALLERS)
def test_shared_list_matrix(world, who):
    r = gw(world, who, "GET", "/folders/_/shared", params={"vfolder_id": world.ufolder["id"]})
    assert r.status_code == SHARED_LIST[who], r.text
    if r.status_code == 404:
        assert r.json()["type"].endswith("/vfolder-not-found")


def test_shared_list_bad_input(world):
    problem(gw(world, "owner", "GET", "/folders/_/shared", params={"vfolder_id": "not-a-uuid"}), 400, "vfolder_id")
    problem(gw(world, "owner", "GET", "/folders/_/shared", params={"vfolder_id": str(uuid.uuid4())}), 404)


def _shared_perm(world, label):
    f = ok(world.c[label].vf("GET", f"/folders/{world.ufolder['id']}"))
    return f["permission"]


SHARED_SET = {"owner": 200, "invitee_ro": 403, "invitee_rw": 403, "member": 404, "other": 404,
              "dadmin": 200, "eadmin": 404, "super": 200}


@pytest.mark.parametrize("who", CALLERS)
def test_shared_update_matrix(world, who):
    target = world.c["invitee_ro"].user_id
    r = gw(world, who, "POST", "/folders/_/shared", {"vfolder": world.ufolder["id"], "user": target, "perm": "wd"})
    assert r.status_code == SHARED_SET[who], r.text
    assert _shared_perm(world, "invitee_ro") == ("wd" if r.status_code == 200 else "ro")
    if r.status_code == 200:
        assert r.json()["msg"]
        ok(gw(world, "owner", "POST", "/folders/_/shared", {"vfolder": world.ufolder["id"], "user": target, "perm": "ro"}))
    elif r.status_code == 404:
        assert r.json()["type"].endswith("/vfolder-not-found")


def test_shared_update_bad_input_and_removal(world):
    uf, ro = world.ufolder["id"], world.c["invitee_ro"].user_id
    for body, field in (({"vfolder": uf, "user": ro, "perm": "owner"}, "perm"),
                        ({"vfolder": uf, "user": ro, "permission": "x"}, "permission"),
                        ({"vfolder": "x", "user": ro, "perm": "ro"}, "vfolder"),
                        ({"vfolder": uf, "perm": "ro"}, "user"),
                        ({"vfolder": uf, "user": "bob", "perm": "ro"}, "user"),
                        ({"vfolder": uf, "user": ro, "perm": "ro", "extra": 1}, "extra")):
        problem(gw(world, "owner", "POST", "/folders/_/shared", body), 400, field)
    assert _shared_perm(world, "invitee_ro") == "ro"
    # Someone the folder is not shared with: 404, nothing made.
    problem(gw(world, "owner", "POST", "/folders/_/shared", {"vfolder": uf, "user": world.c["other"].user_id, "perm": "rw"}), 404)
    assert world.c["other"].vf("GET", f"/folders/{uf}").status_code == 404
    # perm null removes the share: the invitee loses the folder.
    f = ok(world.c["owner"].vf("POST", "/folders", {"name": fresh("shr")}), 201)
    inv = ok(world.c["owner"].vf("POST", f"/folders/{f['id']}/invite", {"perm": "rw", "emails": [world.c["other"].email]}), 201)
    ok(world.c["other"].vf("POST", "/folders/invitations/accept", {"inv_id": inv["invited_ids"][0]}))
    assert world.c["other"].vf("GET", f"/folders/{f['id']}").status_code == 200
    ok(gw(world, "owner", "POST", "/folders/_/shared", {"vfolder": f["id"], "user": world.c["other"].user_id, "perm": None}))
    assert world.c["other"].vf("GET", f"/folders/{f['id']}").status_code == 404
    assert ok(gw(world, "owner", "GET", "/folders/_/shared", params={"vfolder_id": f["id"]}))["shared"] == []
    problem(gw(world, "owner", "POST", "/folders/_/shared", {"vfolder": f["id"], "user": world.c["other"].user_id}), 404)


# ---- legacy upload ---------------------------------------------------------------------------

UPLOAD = {"owner": 201, "invitee_ro": 403, "invitee_rw": 201, "member": 404, "other": 404,
          "dadmin": 201, "eadmin": 404, "super": 201}


def _file_on_disk(world, folder_id, path):
    p = os.path.join(world.folder_on_disk({"id": folder_id}), path)
    return open(p, "rb").read() if os.path.exists(p) else None


@pytest.mark.parametrize("who", CALLERS)
def test_upload_matrix(world, who):
    name = f"up-{who}.txt"
    r = upload(world, who, world.ufolder["id"], [("src", name, b"from " + who.encode())])
    assert r.status_code == UPLOAD[who], r.text
    assert (_file_on_disk(world, world.ufolder["id"], name) == b"from " + who.encode()) == (r.status_code == 201)
    if r.status_code == 201:
        assert r.json() == {"uploaded": [{"path": name, "size": len(b"from " + who.encode())}]}
    elif r.status_code == 404:
        assert r.json()["type"].endswith("/vfolder-not-found")


def test_upload_files_subdirs_replace_and_quota(world):
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("up")}), 201)
    big = os.urandom(200_000)
    r = ok(upload(world, "owner", f["name"], [("src", "a.txt", b"one"), ("src", "d/e/b.bin", big),
                                              ("src", "empty", b"")]), 201)
    assert [u["path"] for u in r["uploaded"]] == ["a.txt", "d/e/b.bin", "empty"]
    assert _file_on_disk(world, f["id"], "d/e/b.bin") == big
    assert _file_on_disk(world, f["id"], "empty") == b""
    st = os.stat(os.path.join(world.folder_on_disk(f), "a.txt"))
    assert st.st_mode & 0o777 == 0o644
    assert ok(owner.vf("GET", f"/folders/{f['id']}"))["used_bytes"] == 3 + len(big)
    # The same path again replaces the file; the old bytes leave the quota.
    ok(upload(world, "owner", f["name"], [("src", "a.txt", b"twelve bytes")]), 201)
    assert _file_on_disk(world, f["id"], "a.txt") == b"twelve bytes"
    assert ok(owner.vf("GET", f"/folders/{f['id']}"))["used_bytes"] == 12 + len(big)
    # Uploaded files are listed and downloadable as any other.
    items = ok(owner.gw("GET", f"/folders/{f['name']}/files", params={"path": "d/e"}))["items"]
    assert [i["name"] for i in items] == ["b.bin"]


def test_upload_bad_input(world):
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("upbad")}), 201)
    b = "----x" + uuid.uuid4().hex
    cases = [
        (f"--{b}--\r\n".encode(), f"multipart/form-data; boundary={b}", 400, "no file"),
        (b"", f"multipart/form-data; boundary={b}", 400, "boundary"),
        (*multipart([("src", "../escape.txt", b"x")]), 400, "path"),
        (*multipart([("src", "a/../../escape.txt", b"x")]), 400, "path"),
        (*multipart([("src", "/etc/passwd", b"x")]), 400, "path"),
        (*multipart([("src", "", b"x")]), 400, "filename"),
        (*multipart([("src", None, b"x")]), 400, "filename"),
        (*multipart([("file", "x.txt", b"x")]), 400, "file"),
        (f"--{b}\r\nContent-Disposition: form-data; name=\"src\"; filename=\"t\"\r\n\r\nno end".encode(),
         f"multipart/form-data; boundary={b}", 400, "not complete"),
        (b'{"a": 1}', "application/json", 415, "multipart/form-data"),
        (b"x", "multipart/form-data", 400, "boundary"),
    ]
    for body, ct, code, word in cases:
        problem(upload(world, "owner", f["name"], body=body, content_type=ct), code, word)
    # a directory in the way
    ok(owner.vf("POST", f"/folders/{f['name']}/mkdir", {"path": "dir"}), 201)
    assert upload(world, "owner", f["name"], [("src", "dir", b"x")]).status_code == 400
    # over the gateway's http.max_body (1 MiB): 413 from the gateway, nothing written
    problem(upload(world, "owner", f["name"], [("src", "huge.bin", b"\0" * (1024 * 1024 + 10))]), 413)
    assert os.listdir(world.folder_on_disk(f)) == ["dir"]
    assert ok(owner.vf("GET", f"/folders/{f['id']}"))["used_bytes"] == 0
    assert not os.path.exists(os.path.join(world.folder_on_disk(f), "..", "escape.txt"))


def test_upload_over_quota(world):
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("upq"), "quota": 1000}), 201)
    r = upload(world, "owner", f["name"], [("src", "a", b"x" * 600), ("src", "b", b"y" * 600)])
    problem(r, 412)
    assert os.listdir(world.folder_on_disk(f)) == []
    assert ok(owner.vf("GET", f"/folders/{f['id']}"))["used_bytes"] == 0


# ---- download_with_token -----------------------------------------------------------------

def test_download_with_token(world):
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("dl")}), 201)
    data = os.urandom(300_000)
    ok(upload(world, "owner", f["name"], [("src", "sub/data.bin", data)]), 201)
    tok = ok(owner.gw("POST", f"/folders/{f['name']}/request-download", {"file": "sub/data.bin"}))["token"]
    # Signed, as the SDK's download_with_token sends it: the same bytes.
    r = owner.gw("GET", "/folders/_/download_with_token", params={"token": tok})
    assert r.status_code == 200 and r.content == data, (r.status_code, r.text[:200])
    assert r.history and r.history[0].status_code == 302
    # Unsigned, as get_download_url_with_token's link in a browser.
    r = requests.get(world.urls["gateway"] + "/folders/_/download_with_token", params={"token": tok}, timeout=30)
    assert r.status_code == 200 and r.content == data
    # Another user with the token gets the bytes too: the token is the authority.
    assert world.c["eadmin"].gw("GET", "/folders/_/download_with_token", params={"token": tok}).content == data


def test_download_with_token_refused(world):
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("dlbad")}), 201)
    ok(upload(world, "owner", f["name"], [("src", "x", b"secret")]), 201)
    tok = ok(owner.gw("POST", f"/folders/{f['name']}/request-download", {"file": "x"}))["token"]
    head, sig = tok.split(".")
    # forged: the payload re-signed with another key, or the signature altered
    payload = json.loads(__import__("base64").urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    payload["exp"] = 1  # expired, and the signature no longer matches
    forged = __import__("base64").urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=") + "." + sig
    for t in (forged, head + "." + sig[::-1], "garbage", ""):
        r = requests.get(world.urls["gateway"] + "/folders/_/download_with_token", params={"token": t},
                         timeout=10, allow_redirects=False)
        problem(r, 401)
        assert b"secret" not in r.content
    problem(requests.get(world.urls["gateway"] + "/folders/_/download_with_token", timeout=10), 401)
    # an upload token is not a download token
    up = ok(owner.gw("POST", f"/folders/{f['name']}/request-upload", {"path": "u", "size": 1}))["token"]
    problem(requests.get(world.urls["gateway"] + "/folders/_/download_with_token", params={"token": up},
                         timeout=10, allow_redirects=False), 403)
    # a folder trashed since: 404 at the download
    ok(owner.vf("DELETE", f"/folders/{f['id']}"), 204)
    r = requests.get(world.urls["gateway"] + "/folders/_/download_with_token", params={"token": tok}, timeout=10)
    problem(r, 404)


# ---- CLI -------------------------------------------------------------------------------------

def test_cli_update_options_and_shares(world, tmp_path):
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("clis")}), 201)
    r = _cli(world, "owner", "update-options", f["name"], "--cloneable", "--permission", "ro", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    info = ok(owner.vf("GET", f"/folders/{f['id']}"))
    assert info["cloneable"] is True and info["permission"] == "ro"
    assert _cli(world, "owner", "update-options", f["name"], "--no-cloneable", tmp=tmp_path).returncode == 0
    assert ok(owner.vf("GET", f"/folders/{f['id']}"))["cloneable"] is False
    assert _cli(world, "owner", "update-options", f["name"], tmp=tmp_path).returncode == 2
    inv = ok(owner.vf("POST", f"/folders/{f['id']}/invite", {"perm": "ro", "emails": [world.c["other"].email]}), 201)
    ok(world.c["other"].vf("POST", "/folders/invitations/accept", {"inv_id": inv["invited_ids"][0]}))
    r = _cli(world, "owner", "shares", f["name"], tmp=tmp_path)
    assert r.returncode == 0 and world.c["other"].email in r.stdout and "ro" in r.stdout, r.stdout + r.stderr
    r = _cli(world, "owner", "set-share", f["name"], world.c["other"].email, "rw", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    assert ok(world.c["other"].vf("GET", f"/folders/{f['id']}"))["permission"] == "rw"
    r = _cli(world, "owner", "set-share", f["name"], world.c["other"].user_id, "none", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    assert world.c["other"].vf("GET", f"/folders/{f['id']}").status_code == 404
    assert _cli(world, "owner", "set-share", f["name"], world.c["other"].email, "owner", tmp=tmp_path).returncode == 2
    assert _cli(world, "other", "shares", f["name"], tmp=tmp_path).returncode == 1
