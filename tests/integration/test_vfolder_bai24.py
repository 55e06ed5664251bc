"""Backend.AI 24.09's folder routes as its Python client calls them (issue
32): GET /folders/_/id (a GET with a JSON body) before every operation by
name, then the folder addressed by its id without dashes (uuid.hex); the
hyphenated file routes (rename-file, move-file, delete-files), mkdir of a
list, request-download's `path`, the listing's legacy `files`, DELETE
/folders {id}, restore-from-trash-bin and delete-from-trash-bin. Each
through the signed gateway, with the callers of test_vfolder_core.py: who
may (the permission matrix; another tenant gets 404, never a hint) and bad
input (400 problem JSON)."""
import json
import uuid

import pytest

from test_vfolder_core import World, fresh, ok

CALLERS = ["owner", "invitee_ro", "invitee_rw", "member", "other", "dadmin", "eadmin", "super"]


@pytest.fixture(scope="module")
def world(stack):
    if "TESSERA_ADMIN_ACCESS_KEY" not in stack:
        pytest.skip("no bootstrap superadmin")
    return World(stack)


def gw(world, who, method, path, body=None, params=None):
    return world.c[who].gw(method, path, json=body, params=params)


def problem(r, code, *words):
    assert r.status_code == code, f"{r.status_code} {r.text}"
    assert r.headers["Content-Type"].startswith("application/problem+json"), r.headers
    for w in words:
        assert w in r.text, f"{w!r} not in {r.text}"
    return r.json()


def hexid(f):
    return uuid.UUID(f["id"]).hex


# ---- GET /folders/_/id ---------------------------------------------------------------------

# as GET /folders/{name}: administrators reach other users' folders by id only
ID_BY_NAME = {"owner": 200, "invitee_ro": 200, "invitee_rw": 200, "member": 404, "other": 404,
              "dadmin": 404, "eadmin": 404, "super": 404}


@pytest.mark.parametrize("who", CALLERS)
def test_id_by_name_matrix(world, who):
    """The lookup sees what GET /folders/{name} sees: another domain's admin
    and users without a share get 404."""
    name = world.ufolder["name"]
    r = gw(world, who, "GET", "/folders/_/id", {"name": name})
    if ID_BY_NAME[who] == 200:
        assert ok(r) == {"id": world.ufolder["id"], "name": name}
    else:
        problem(r, 404, "vfolder-not-found")


def test_id_by_name_forms_and_bad_input(world):
    name = world.ufolder["name"]
    want = {"id": world.ufolder["id"], "name": name}
    assert ok(gw(world, "owner", "GET", "/folders/_/id", params={"name": name})) == want
    assert ok(gw(world, "owner", "GET", "/folders/_/id", {"vfolder_name": name})) == want
    assert ok(gw(world, "owner", "GET", "/folders/_/id", {"vfolderName": name})) == want
    problem(gw(world, "owner", "GET", "/folders/_/id"), 400, "name")
    problem(gw(world, "owner", "GET", "/folders/_/id", {"name": 3}), 400, "name")
    problem(gw(world, "owner", "GET", "/folders/_/id", {"name": name, "x": 1}), 400, "x")
    problem(gw(world, "owner", "GET", "/folders/_/id", {"name": fresh("nope")}), 404)


def test_id_finds_a_trashed_folder(world):
    """The client restores and purges by name: a folder in the trash is found
    (by its owner), a purged one no more."""
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("tr")}), 201)
    assert gw(world, "owner", "DELETE", f"/folders/{hexid(f)}").status_code == 204
    assert ok(gw(world, "owner", "GET", "/folders/_/id", {"name": f["name"]}))["id"] == f["id"]
    problem(gw(world, "other", "GET", "/folders/_/id", {"name": f["name"]}), 404)
    assert gw(world, "owner", "POST", "/folders/delete-from-trash-bin", {"id": hexid(f)}).status_code == 204
    problem(gw(world, "owner", "GET", "/folders/_/id", {"name": f["name"]}), 404)


# ---- ids without dashes ----------------------------------------------------------------------

INFO = {"owner": 200, "invitee_ro": 200, "invitee_rw": 200, "member": 404, "other": 404,
        "dadmin": 200, "eadmin": 404, "super": 200}


@pytest.mark.parametrize("who", CALLERS)
def test_undashed_id_matrix(world, who):
    r = gw(world, who, "GET", f"/folders/{hexid(world.ufolder)}")
    assert r.status_code == INFO[who], r.text
    if r.status_code == 200:
        assert r.json()["id"] == world.ufolder["id"]
    else:
        assert r.json()["type"].endswith("/vfolder-not-found")


def test_undashed_and_upper_case_ids(world):
    f = world.ufolder
    for key in (f["id"], hexid(f), hexid(f).upper(), f["id"].upper()):
        assert ok(gw(world, "owner", "GET", f"/folders/{key}"))["id"] == f["id"], key
    # not an id, not a name: 404 (a 31-digit or non-hex key is looked up as a name)
    for key in (hexid(f)[:31], hexid(f)[:31] + "g", hexid(f) + "0"):
        problem(gw(world, "owner", "GET", f"/folders/{key}"), 404)


def test_delete_by_id_body(world):
    """DELETE /folders {id}: to the trash, by its owner only."""
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("del")}), 201)
    for who in ("other", "eadmin", "invitee_ro"):
        problem(gw(world, who, "DELETE", "/folders", {"id": hexid(f)}), 404)
    problem(gw(world, "owner", "DELETE", "/folders", {"id": "not-an-id"}), 400, "id")
    problem(gw(world, "owner", "DELETE", "/folders", {"id": 7}), 400, "id")
    problem(gw(world, "owner", "DELETE", "/folders", {}), 400, "vfolder_id")
    assert gw(world, "owner", "DELETE", "/folders", {"id": hexid(f)}).status_code == 204
    assert ok(owner.vf("GET", "/folders", params={"status": "trash"})) and \
        any(x["id"] == f["id"] for x in ok(owner.vf("GET", "/folders", params={"status": "trash"})))
    # restore-from-trash-bin brings it back; delete-from-trash-bin removes it
    problem(gw(world, "other", "POST", "/folders/restore-from-trash-bin", {"id": hexid(f)}), 404)
    assert gw(world, "owner", "POST", "/folders/restore-from-trash-bin", {"id": hexid(f)}).status_code == 204
    assert ok(gw(world, "owner", "GET", f"/folders/{f['name']}"))["status"] == "ready"
    assert gw(world, "owner", "DELETE", f"/folders/{hexid(f)}").status_code == 204
    problem(gw(world, "other", "POST", "/folders/delete-from-trash-bin", {"id": hexid(f)}), 404)
    problem(gw(world, "owner", "POST", "/folders/delete-from-trash-bin", {"vfolderId": "x"}), 400)
    assert gw(world, "owner", "POST", "/folders/delete-from-trash-bin", {"vfolderId": f["id"]}).status_code == 204
    problem(gw(world, "owner", "GET", f"/folders/{hexid(f)}"), 404)


# ---- the file routes with hyphens, mkdir of a list, legacy listing -----------------------------

def test_hyphenated_file_routes(world):
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("fr")}), 201)
    key = hexid(f)
    r = ok(gw(world, "owner", "POST", f"/folders/{key}/mkdir",
              {"path": ["a", "b", "c/d"], "parents": False, "exist_ok": False}), 207)
    assert [x["item"] for x in r["results"]["success"]] == ["a", "b"]
    assert [x["item"] for x in r["results"]["failed"]] == ["c/d"]
    assert gw(world, "owner", "POST", f"/folders/{key}/mkdir", {"path": ["a"]}).status_code == 409
    problem(gw(world, "owner", "POST", f"/folders/{key}/mkdir", {"path": []}), 400, "path")
    problem(gw(world, "owner", "POST", f"/folders/{key}/mkdir", {"path": [1]}), 400, "path[0]")
    problem(gw(world, "owner", "POST", f"/folders/{key}/mkdir", {"path": ["x"] * 51}), 400)
    one = gw(world, "owner", "POST", f"/folders/{key}/mkdir", {"path": "e", "parents": True})
    assert one.status_code == 201 and one.json()["results"]["success"][0]["item"] == "e"
    ok(gw(world, "owner", "POST", f"/folders/{key}/rename-file", {"target_path": "b", "new_name": "b2"}))
    ok(gw(world, "owner", "POST", f"/folders/{key}/move-file", {"src": "b2", "dst": "a/b2"}))
    listing = ok(gw(world, "owner", "GET", f"/folders/{key}/files", params={"path": "a"}))
    assert [i["name"] for i in listing["items"]] == ["b2"]
    legacy = json.loads(listing["files"])
    assert legacy[0]["filename"] == "b2" and legacy[0]["mode"].startswith("d")
    assert isinstance(legacy[0]["mtime"], int) and legacy[0]["mtime"] > 1600000000
    r = gw(world, "owner", "DELETE", f"/folders/{key}/delete-files", {"files": ["a"], "recursive": True})
    assert r.status_code == 200, r.text
    assert ok(gw(world, "owner", "POST", f"/folders/{key}/delete-files", {"files": ["e"]}))["deleted"] == ["e"]
    # who may: an invitee with ro may list, not change; another user gets 404
    g = world.ufolder
    problem(gw(world, "invitee_ro", "POST", f"/folders/{hexid(g)}/rename-file",
               {"target_path": "x", "new_name": "y"}), 403)
    problem(gw(world, "other", "POST", f"/folders/{hexid(g)}/move-file", {"src": "x", "dst": "y"}), 404)
    problem(gw(world, "eadmin", "DELETE", f"/folders/{hexid(g)}/delete-files", {"files": ["x"]}), 404)
    problem(gw(world, "owner", "POST", f"/folders/{key}/move-file", {"src": "../x", "dst": "y"}), 400)


def test_request_download_path(world):
    """request-download takes Backend.AI 24.09's `path` as well as `file`."""
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("dl")}), 201)
    ok(gw(world, "owner", "POST", f"/folders/{hexid(f)}/mkdir", {"path": "d"}), 201)
    r = ok(gw(world, "owner", "POST", f"/folders/{hexid(f)}/request-download", {"path": "d", "archive": True}))
    assert r["token"] and r["url"]
    problem(gw(world, "owner", "POST", f"/folders/{hexid(f)}/request-download", {"path": 5}), 400, "path")
    problem(gw(world, "owner", "POST", f"/folders/{hexid(f)}/request-download", {}), 400, "file")
    problem(gw(world, "other", "POST", f"/folders/{hexid(f)}/request-download", {"path": "d"}), 404)


def test_all_hosts_superadmin_only(world):
    for path in ("/folders/_/all-hosts", "/folders/_/all_hosts"):
        assert "local" in ok(gw(world, "super", "GET", path))["allowed"]
        problem(gw(world, "dadmin", "GET", path), 403)
        problem(gw(world, "owner", "GET", path), 403)


def test_quota_as_size_text(world):
    """Backend.AI's clients may send a folder's quota as text ("0", "10m"):
    read as a byte count; anything else is a 400 that makes nothing."""
    owner = world.c["owner"]
    f = ok(gw(world, "owner", "POST", "/folders", {"name": fresh("q"), "quota": "10m",
                                                   "usage_mode": "model"}), 201)
    assert ok(owner.vf("GET", f"/folders/{f['id']}"))["max_size"] == 10 << 20
    ok(gw(world, "owner", "POST", "/folders", {"name": fresh("q0"), "quota": "0"}), 201)
    ok(gw(world, "owner", "POST", "/folders", {"name": fresh("qn"), "quota": None}), 201)
    for bad in ("ten", "-1", "", "1x"):
        name = fresh("qbad")
        problem(gw(world, "owner", "POST", "/folders", {"name": name, "quota": bad}), 400, "quota")
        problem(gw(world, "owner", "GET", f"/folders/{name}"), 404)
