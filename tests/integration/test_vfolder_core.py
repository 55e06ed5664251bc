"""tessera-vfolder's folder core (docs/vfolders.md): permissions of every
caller kind on every metadata operation, limits, name rules, trash and purge,
sharing, mount resolution, volumes, and the events on tessera.vfolder.v1.

Callers (domain D unless noted): owner, invitee_ro, invitee_rw (accepted
invitations to the owner's folder), member (of project P, which owns a
project folder), other (no relation), dadmin (admin of D), eadmin (admin of
another domain E), super (the bootstrap superadmin). Most cells speak to
tessera-vfolder's internal API with the headers the gateway adds; a few go
through the gateway, signed, to check the forwarding.
"""
import os
import subprocess
import urllib.parse
import uuid

import pytest
import requests

import bai_signer
import svc_signer
from conftest import service_urls

PASSWORD = "vfolder-Passw0rd"
TAG = uuid.uuid4().hex[:8]
_n = [0]


def fresh(prefix):
    _n[0] += 1
    return f"{prefix}-{TAG}-{_n[0]}"



def ok(r, *codes):
    assert r.status_code in (codes or (200, 201)), f"{r.request.method} {r.url}: {r.status_code} {r.text}"
    return r.json() if r.content else None


def kcat_events(stack, topic="tessera.vfolder.v1"):
    c = subprocess.run(["kcat", "-b", stack["KAFKA_BOOTSTRAP"], "-C", "-t", topic, "-o", "beginning",
                        "-e", "-q", "-f", "%k\x1f%s\x1e"], capture_output=True, timeout=60)
    assert c.returncode == 0, c.stderr
    out = []
    for rec in c.stdout.split(b"\x1e"):
        if b"\x1f" in rec:
            k, v = rec.split(b"\x1f", 1)
            out.append((k.decode(errors="replace"), v))
    return out


class Caller:
    def __init__(self, world, label, user_id, ak, sk, email):
        self.w, self.label, self.user_id, self.ak, self.sk, self.email = world, label, user_id, ak, sk, email

    def vf(self, method, path, json=None, params=None, data=None):
        """tessera-vfolder internal: /folders/... -> /v1/folders/..."""
        h = {"X-Tessera-Caller": self.user_id, "X-Tessera-Caller-Access-Key": self.ak}
        if data is not None:
            h["Content-Type"] = "application/json"
        return svc_signer.call(self.w.urls["keys"], "gateway", method, self.w.urls["vfolder"] + "/v1" + urllib.parse.quote(path, safe="/%:@"),
                                json=json, params=params, data=data, headers=h, timeout=30)

    def gw(self, method, path, json=None, params=None):
        c = bai_signer.Client(self.w.urls["gateway"], self.ak, self.sk)
        return c.request(method, urllib.parse.quote(path, safe="/%:@"), json=json, params=params)

    def auth(self, method, path, json=None):
        h = {"X-Tessera-Caller": self.user_id, "X-Tessera-Caller-Access-Key": self.ak}
        return svc_signer.call(self.w.urls["keys"], "gateway", method, self.w.urls["auth"] + "/v1" + path, json=json, headers=h, timeout=10)


class World:
    def __init__(self, stack):
        self.stack = stack
        self.urls = service_urls(stack)
        ak, sk = stack["TESSERA_ADMIN_ACCESS_KEY"], stack["TESSERA_ADMIN_SECRET_KEY"]
        cred = svc_signer.call(self.urls["keys"], "gateway", "GET", f"{self.urls['auth']}/v1/credentials/{ak}", timeout=10).json()
        self.super = Caller(self, "super", cred["user"]["id"], ak, sk, cred["user"]["email"])
        su = self.super
        self.dom = ok(su.auth("POST", "/admin/domains", {"name": fresh("vf-d")}))["name"]
        self.edom = ok(su.auth("POST", "/admin/domains", {"name": fresh("vf-e")}))["name"]
        self.c = {}
        for label, role, dom in (("owner", "user", self.dom), ("invitee_ro", "user", self.dom),
                                 ("invitee_rw", "user", self.dom), ("member", "user", self.dom),
                                 ("other", "user", self.dom), ("dadmin", "admin", self.dom),
                                 ("eadmin", "admin", self.edom), ("euser", "user", self.edom)):
            self.c[label] = self.new_user(label, role, dom)
        self.c["super"] = su
        self.project = ok(su.auth("POST", "/admin/projects", {"name": fresh("vf-p"), "domain_name": self.dom}))["id"]
        ok(su.auth("POST", f"/admin/projects/{self.project}/members", {"user_ids": [self.c["member"].user_id]}))
        # The owner's folder, shared by invitation with invitee_ro / invitee_rw.
        owner = self.c["owner"]
        self.ufolder = ok(owner.vf("POST", "/folders", {"name": fresh("uf"), "cloneable": True}), 201)
        for label, perm in (("invitee_ro", "ro"), ("invitee_rw", "rw")):
            inv = ok(owner.vf("POST", f"/folders/{self.ufolder['name']}/invite",
                              {"perm": perm, "emails": [self.c[label].email]}), 201)
            assert len(inv["invited_ids"]) == 1
            ok(self.c[label].vf("POST", "/folders/invitations/accept", {"inv_id": inv["invited_ids"][0]}))
        # The project folder (created by the domain admin), permission rw.
        self.gfolder = ok(self.c["dadmin"].vf("POST", "/folders", {"name": fresh("gf"), "group": self.project}), 201)

    def new_user(self, label, role, dom, policy=None):
        name = fresh(f"vf-{label}")
        body = {"email": f"{name}@example.com", "username": name, "password": PASSWORD, "role": role,
                "domain_name": dom}
        if policy:
            body["resource_policy"] = policy
        u = ok(self.super.auth("POST", "/admin/users", body))
        k = ok(self.super.auth("POST", "/admin/keypairs", {"user_id": u["id"]}))
        return Caller(self, label, u["id"], k["access_key"], k["secret_key"], body["email"])

    def folder_on_disk(self, f):
        vol = os.path.join(self.stack["TESSERA_STATE_DIR"], "vfolder", "volumes", "local")
        i = f["id"]
        return os.path.join(vol, i[:2], i[2:4], i)

    def trash_on_disk(self, f):
        return os.path.join(self.stack["TESSERA_STATE_DIR"], "vfolder", "volumes", "local", ".trash", f["id"])


@pytest.fixture(scope="module")
def world(stack):
    if "TESSERA_ADMIN_ACCESS_KEY" not in stack:
        pytest.skip("no bootstrap superadmin")
    return World(stack)


CALLERS = ["owner", "invitee_ro", "invitee_rw", "member", "other", "dadmin", "eadmin", "super"]


# ---- the permission matrix: user folder ------------------------------------------------

INFO = {"owner": 200, "invitee_ro": 200, "invitee_rw": 200, "member": 404, "other": 404,
        "dadmin": 200, "eadmin": 404, "super": 200}


@pytest.mark.parametrize("who", CALLERS)
def test_info(world, who):
    r = world.c[who].vf("GET", f"/folders/{world.ufolder['id']}")
    assert r.status_code == INFO[who], r.text
    if r.status_code == 200:
        body = r.json()
        assert body["id"] == world.ufolder["id"]
        assert body["is_owner"] == (who == "owner")
        assert body["ownership_type"] == "user"
        want = {"invitee_ro": "ro", "invitee_rw": "rw"}.get(who, "rw")
        assert body["permission"] == want
    else:
        assert r.json()["type"].endswith("/vfolder-not-found")


def test_info_by_name_for_owner_and_invitee(world):
    for who in ("owner", "invitee_ro"):
        r = world.c[who].vf("GET", f"/folders/{world.ufolder['name']}")
        assert r.status_code == 200 and r.json()["id"] == world.ufolder["id"]
    # Admins reach other users' folders only by id.
    assert world.c["dadmin"].vf("GET", f"/folders/{world.ufolder['name']}").status_code == 404


RENAME = {"owner": 201, "invitee_ro": 403, "invitee_rw": 403, "member": 404, "other": 404,
          "dadmin": 201, "eadmin": 404, "super": 201}


@pytest.mark.parametrize("who", CALLERS)
def test_rename(world, who):
    new = fresh("renamed")
    r = world.c[who].vf("POST", f"/folders/{world.ufolder['id']}/rename", {"new_name": new})
    assert r.status_code == RENAME[who], r.text
    now = ok(world.c["owner"].vf("GET", f"/folders/{world.ufolder['id']}"))["name"]
    assert (now == new) == (r.status_code == 201)
    world.ufolder["name"] = now


INVITE = {"owner": 201, "invitee_ro": 403, "invitee_rw": 403, "member": 404, "other": 404,
          "dadmin": 201, "eadmin": 404, "super": 201}


@pytest.mark.parametrize("who", CALLERS)
def test_invite(world, who):
    r = world.c[who].vf("POST", f"/folders/{world.ufolder['id']}/invite",
                        {"perm": "ro", "emails": [world.c["other"].email]})
    assert r.status_code == INVITE[who], r.text
    pending = ok(world.c["other"].vf("GET", "/folders/invitations/list"))["invitations"]
    mine = [i for i in pending if i["vfolder_id"] == world.ufolder["id"]]
    assert (len(mine) == 1) == (r.status_code == 201)
    for i in mine:  # cancel (as the owner) for the next cell
        ok(world.c["owner"].vf("DELETE", "/folders/invitations/delete", {"inv_id": i["id"]}))


DELETE = {"owner": 204, "invitee_ro": 403, "invitee_rw": 403, "member": 404, "other": 404,
          "dadmin": 204, "eadmin": 404, "super": 204}


@pytest.mark.parametrize("who", CALLERS)
def test_delete(world, who):
    owner = world.c["owner"]
    target = world.ufolder
    if DELETE[who] == 204:  # allowed cells delete a folder of their own making
        target = ok(owner.vf("POST", "/folders", {"name": fresh("del")}), 201)
    r = world.c[who].vf("DELETE", f"/folders/{target['id']}")
    assert r.status_code == DELETE[who], r.text
    still = owner.vf("GET", f"/folders/{target['id']}").status_code
    assert still == (404 if r.status_code == 204 else 200)


LIST = {"owner": True, "invitee_ro": True, "invitee_rw": True, "member": False, "other": False,
        "dadmin": False, "eadmin": False, "super": False}


@pytest.mark.parametrize("who", CALLERS)
def test_list_visibility(world, who):
    items = ok(world.c[who].vf("GET", "/folders"))
    assert isinstance(items, list)
    assert (world.ufolder["id"] in [f["id"] for f in items]) == LIST[who]
    for f in items:
        for k in ("id", "name", "host", "usage_mode", "permission", "ownership_type", "is_owner",
                  "user", "group", "created_at", "status"):
            assert k in f
    # The project folder: its members (and nobody else without all=true).
    assert (world.gfolder["id"] in [f["id"] for f in items]) == (who == "member")
    # all=true: administrators, within their domain.
    r = world.c[who].vf("GET", "/folders", params={"all": "true"})
    if who in ("dadmin", "super", "eadmin"):
        ids = [f["id"] for f in ok(r)]
        assert (world.ufolder["id"] in ids) == (who != "eadmin")
    else:
        assert r.status_code == 403


MOUNT = {"owner": (200, "rw"), "invitee_ro": (200, "ro"), "invitee_rw": (200, "rw"),
         "member": (404, None), "other": (404, None), "dadmin": (403, None), "eadmin": (404, None),
         "super": (403, None)}


@pytest.mark.parametrize("who", CALLERS)
def test_mount_resolve(world, who):
    c = world.c[who]
    r = svc_signer.call(world.urls["keys"], "registry", "POST", world.urls["vfolder"] + "/v1/mounts/resolve",
                      json={"access_key": c.ak, "names": [world.ufolder["id"]]}, timeout=10)
    code, perm = MOUNT[who]
    assert r.status_code == code, r.text
    if code == 200:
        (m,) = r.json()
        assert m["vfolder_id"] == world.ufolder["id"] and m["permission"] == perm
        assert m["mount_path"] == "/home/work/" + world.ufolder["name"]
        assert m["host_path"] == world.folder_on_disk(world.ufolder)
        assert os.path.isdir(m["host_path"])
    else:
        assert r.json()["vfolder"] == world.ufolder["id"]


# ---- the permission matrix: project folder --------------------------------------------

GINFO = {"owner": 404, "invitee_ro": 404, "invitee_rw": 404, "member": 200, "other": 404,
         "dadmin": 200, "eadmin": 404, "super": 200}


@pytest.mark.parametrize("who", CALLERS)
def test_project_folder_info_and_mount(world, who):
    g = world.gfolder
    r = world.c[who].vf("GET", f"/folders/{g['id']}")
    assert r.status_code == GINFO[who], r.text
    if who == "member":
        assert r.json()["permission"] == "rw" and r.json()["ownership_type"] == "group"
        (m,) = ok(svc_signer.call(world.urls["keys"], "registry", "POST", world.urls["vfolder"] + "/v1/mounts/resolve",
                                json={"access_key": world.c[who].ak, "names": [g["name"]]}, timeout=10))
        assert m["permission"] == "rw"


SHARE = {"owner": 404, "invitee_ro": 404, "invitee_rw": 404, "member": 403, "other": 404,
         "dadmin": 201, "eadmin": 404, "super": 201}


@pytest.mark.parametrize("who", CALLERS)
def test_share(world, who):
    g = world.gfolder
    member = world.c["member"]
    r = world.c[who].vf("POST", f"/folders/{g['id']}/share", {"permission": "ro", "emails": [member.email]})
    assert r.status_code == SHARE[who], r.text
    m = ok(svc_signer.call(world.urls["keys"], "registry", "POST", world.urls["vfolder"] + "/v1/mounts/resolve",
                         json={"access_key": member.ak, "names": [g["id"]]}, timeout=10))[0]
    assert m["permission"] == ("ro" if r.status_code == 201 else "rw")
    if r.status_code == 201:
        assert r.json()["shared_emails"] == [member.email]
        u = world.c[who].vf("DELETE", f"/folders/{g['id']}/unshare", {"emails": [member.email]})
        assert ok(u)["unshared_emails"] == [member.email]


def test_share_rules(world):
    dadmin, owner = world.c["dadmin"], world.c["owner"]
    # Only project members can get a share; user folders use invitations.
    r = dadmin.vf("POST", f"/folders/{world.gfolder['id']}/share", {"permission": "rw", "emails": [owner.email]})
    assert r.status_code == 400
    r = owner.vf("POST", f"/folders/{world.ufolder['id']}/share", {"permission": "rw", "emails": [owner.email]})
    assert r.status_code == 400
    # Project folders are created by administrators only.
    r = world.c["member"].vf("POST", "/folders", {"name": fresh("g"), "group": world.project})
    assert r.status_code == 403


# ---- sharing life cycle ------------------------------------------------------------------

def test_invitation_reject_and_leave(world):
    owner, other = world.c["owner"], world.c["other"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("inv")}), 201)
    (inv,) = ok(owner.vf("POST", f"/folders/{f['name']}/invite", {"perm": "wd", "emails": [other.email]}), 201)["invited_ids"]
    # Inviting again while pending: nothing new.
    assert ok(owner.vf("POST", f"/folders/{f['name']}/invite", {"perm": "wd", "emails": [other.email]}), 201)["invited_ids"] == []
    # A stranger cannot accept or reject it.
    assert world.c["member"].vf("POST", "/folders/invitations/accept", {"inv_id": inv}).status_code == 404
    assert world.c["member"].vf("DELETE", "/folders/invitations/delete", {"inv_id": inv}).status_code == 404
    assert ok(other.vf("DELETE", "/folders/invitations/delete", {"inv_id": inv}))["state"] == "rejected"
    assert other.vf("POST", "/folders/invitations/accept", {"inv_id": inv}).status_code == 404
    assert other.vf("GET", f"/folders/{f['id']}").status_code == 404
    (inv2,) = ok(owner.vf("POST", f"/folders/{f['name']}/invite", {"perm": "wd", "emails": [other.email]}), 201)["invited_ids"]
    ok(other.vf("POST", "/folders/invitations/accept", {"inv_id": inv2}))
    assert ok(other.vf("GET", f"/folders/{f['name']}"))["permission"] == "wd"
    ok(other.vf("POST", f"/folders/{f['name']}/leave"))
    assert other.vf("GET", f"/folders/{f['id']}").status_code == 404
    assert owner.vf("POST", f"/folders/{f['name']}/leave").status_code == 400
    # Invitees must exist and be in the folder's domain.
    assert owner.vf("POST", f"/folders/{f['name']}/invite", {"emails": [f"nobody-{TAG}@example.com"]}).status_code == 404
    assert owner.vf("POST", f"/folders/{f['name']}/invite", {"emails": [world.c["euser"].email]}).status_code == 400
    assert owner.vf("POST", f"/folders/{f['name']}/invite", {"emails": [owner.email]}).status_code == 400


# ---- limits, names, bad input -------------------------------------------------------------

def test_max_vfolder_count(world):
    su = world.super
    pol = ok(su.auth("POST", "/admin/user-resource-policies", {"name": fresh("vf-pol"), "max_vfolder_count": 2}))["name"]
    u = world.new_user("limited", "user", world.dom, policy=pol)
    a = ok(u.vf("POST", "/folders", {"name": "a"}), 201)
    ok(u.vf("POST", "/folders", {"name": "b"}), 201)
    r = u.vf("POST", "/folders", {"name": "c"})
    assert r.status_code == 412, r.text
    assert r.json()["type"].endswith("/quota-exceeded")
    # Trash counts no more.
    assert u.vf("DELETE", "/folders/a").status_code == 204
    ok(u.vf("POST", "/folders", {"name": "c"}), 201)
    assert a["id"]


def test_quota_scope_size_and_clone_charge(world, stack):
    su = world.super
    pol = ok(su.auth("POST", "/admin/user-resource-policies",
                     {"name": fresh("vf-q"), "max_quota_scope_size": 1000}))["name"]
    u = world.new_user("quota", "user", world.dom, policy=pol)
    assert u.vf("POST", "/folders", {"name": "big", "quota": 2000}).status_code == 412
    f = ok(u.vf("POST", "/folders", {"name": "src", "quota": 1000}), 201)
    with open(os.path.join(world.folder_on_disk(f), "data.bin"), "wb") as fh:
        fh.write(b"x" * 600)
    # The first copy of 600 bytes fits the 1000-byte scope; the second does not.
    c1 = ok(u.vf("POST", "/folders/src/clone", {"target_name": "copy1"}), 201)
    assert ok(u.vf("GET", "/folders/copy1"))["used_bytes"] == 600
    assert open(os.path.join(world.folder_on_disk(c1), "data.bin"), "rb").read() == b"x" * 600
    r = u.vf("POST", "/folders/src/clone", {"target_name": "copy2"})
    assert r.status_code == 412, r.text
    assert u.vf("GET", "/folders/copy2").status_code == 404
    assert any(k == c1["id"] or b"VfolderQuotaExceeded" in v for k, v in kcat_events(stack)
               if b"VfolderQuotaExceeded" in v)



def test_project_resource_policy_limits_project_folders(world):
    """Issue 7: a project's resource policy (max_quota_scope_size,
    max_vfolder_count) limits its folders as the user policy limits a user's."""
    su, dadmin = world.super, world.c["dadmin"]
    pol = ok(su.auth("POST", "/admin/project-resource-policies",
                     {"name": fresh("vf-pp"), "max_quota_scope_size": 1000, "max_vfolder_count": 1}))
    assert (pol["max_quota_scope_size"], pol["max_vfolder_count"]) == (1000, 1)
    # bad input on the policy and on the project's reference to it
    for body in ({"name": fresh("vf-pp"), "max_quota_scope_size": -1}, {"name": fresh("vf-pp"), "bogus": 1},
                 {"name": "", "max_vfolder_count": 1}):
        r = su.auth("POST", "/admin/project-resource-policies", body)
        assert r.status_code == 400, (body, r.text)
    r = su.auth("POST", "/admin/projects", {"name": fresh("vf-pq"), "domain_name": world.dom,
                                            "resource_policy": f"nope-{TAG}"})
    assert r.status_code == 400 and "unknown project resource policy" in r.json()["msg"], r.text
    proj = ok(su.auth("POST", "/admin/projects", {"name": fresh("vf-pq"), "domain_name": world.dom,
                                                   "resource_policy": pol["name"]}))
    assert proj["resource_policy"] == pol["name"]
    ok(su.auth("POST", f"/admin/projects/{proj['id']}/members", {"user_ids": [world.c["member"].user_id]}))
    # quota above the project's scope size
    r = dadmin.vf("POST", "/folders", {"name": fresh("pf"), "group": proj["id"], "quota": 2000})
    assert r.status_code == 412 and "project's quota scope size 1000" in r.json()["msg"], r.text
    f = ok(dadmin.vf("POST", "/folders", {"name": fresh("pf"), "group": proj["id"]}), 201)
    # the count
    r = dadmin.vf("POST", "/folders", {"name": fresh("pf"), "group": proj["id"]})
    assert r.status_code == 412 and "the project has 1 vfolders" in r.json()["msg"], r.text
    # uploads by a member are held to the scope size, and follow a policy change
    member = world.c["member"]
    info = ok(member.vf("GET", f"/folders/{f['id']}"))
    assert info["quota_scope"]["limit_bytes"] == 1000, info
    r = member.vf("POST", f"/folders/{f['id']}/request-upload", {"path": "big.bin", "size": 1500})
    assert r.status_code == 412, r.text
    ok(su.auth("PATCH", f"/admin/project-resource-policies/{pol['name']}", {"max_quota_scope_size": 5000}))
    ok(member.vf("POST", f"/folders/{f['id']}/request-upload", {"path": "big.bin", "size": 1500}))
    assert ok(member.vf("GET", f"/folders/{f['id']}"))["quota_scope"]["limit_bytes"] == 5000
    # in use: not deleted; the default policy never
    r = su.auth("DELETE", f"/admin/project-resource-policies/{pol['name']}")
    assert r.status_code == 409 and "used by 1 projects" in r.json()["msg"], r.text
    assert su.auth("DELETE", "/admin/project-resource-policies/default").status_code == 409
    # users may not read or write project policies
    assert member.auth("GET", "/admin/project-resource-policies").status_code == 403

def test_clone_rules(world):
    owner, ro = world.c["owner"], world.c["invitee_ro"]
    # The owner's cloneable folder: an ro invitee may clone it into its own.
    c = ok(ro.vf("POST", f"/folders/{world.ufolder['id']}/clone", {"target_name": fresh("cl")}), 201)
    assert c["is_owner"] and c["user"] == ro.user_id
    nc = ok(owner.vf("POST", "/folders", {"name": fresh("nc"), "cloneable": False}), 201)
    ok(owner.vf("POST", f"/folders/{nc['id']}/invite", {"perm": "ro", "emails": [ro.email]}), 201)
    inv = [i for i in ok(ro.vf("GET", "/folders/invitations/list"))["invitations"] if i["vfolder_id"] == nc["id"]]
    ok(ro.vf("POST", "/folders/invitations/accept", {"inv_id": inv[0]["id"]}))
    assert ro.vf("POST", f"/folders/{nc['id']}/clone", {"target_name": fresh("cl")}).status_code == 403
    assert world.c["other"].vf("POST", f"/folders/{nc['id']}/clone", {"target_name": fresh("cl")}).status_code == 404


def test_name_uniqueness(world):
    owner, other = world.c["owner"], world.c["other"]
    name = fresh("same")
    f = ok(owner.vf("POST", "/folders", {"name": name}), 201)
    r = owner.vf("POST", "/folders", {"name": name})
    assert r.status_code == 409 and r.json()["type"].endswith("/already-exists")
    ok(other.vf("POST", "/folders", {"name": name}), 201)  # per owner
    g = ok(owner.vf("POST", "/folders", {"name": fresh("two")}), 201)
    assert owner.vf("POST", f"/folders/{g['id']}/rename", {"new_name": name}).status_code == 409
    assert owner.vf("DELETE", f"/folders/{name}").status_code == 204
    ok(owner.vf("POST", "/folders", {"name": name}), 201)  # trashed names are free again
    # ... and restoring the trashed one now clashes.
    r = owner.vf("POST", "/folders/restore-from-trash", {"vfolder_id": f["id"]})
    assert r.status_code == 409, r.text


@pytest.mark.parametrize("name,code", [
    ("", 400), ("x" * 65, 400), ("a/b", 400), ("..", 400), (".", 400), ("_", 400), ("a\u0000b", 400),
    ("tab\there", 400), (" edge", 400), ("데이터-ü", 201), ("x" * 64, 201), (".local", 201), (".ssh", 400),
])
def test_create_names(world, name, code):
    u = world.new_user("names", "user", world.dom)
    r = u.vf("POST", "/folders", {"name": name})
    assert r.status_code == code, r.text
    if code == 201:
        assert ok(u.vf("GET", f"/folders/{name}"))["name"] == name


@pytest.mark.parametrize("body", [
    {"name": "ok", "host": "nope"}, {"name": "ok", "permission": "rx"}, {"name": "ok", "usage_mode": "x"},
    {"name": "ok", "cloneable": "yes"}, {"name": "ok", "extra": 1}, {"name": 5}, {},
    {"name": "ok", "quota": -1}, {"name": "ok", "unmanaged_path": "/etc"},
])
def test_create_bad_input(world, body):
    r = world.c["other"].vf("POST", "/folders", body)
    assert r.status_code == 400, r.text
    assert r.json()["type"].endswith("/invalid-api-params")


def test_malformed_and_unauthenticated(world):
    c = world.c["other"]
    assert c.vf("POST", "/folders", data="{not json").status_code == 400
    assert c.vf("POST", "/folders", data="[1]").status_code == 400
    # no service credential; then the gateway's, without a caller, and with a
    # caller whose key is another user's
    assert requests.get(world.urls["vfolder"] + "/v1/folders", timeout=10).status_code == 401
    keys = world.urls["keys"]
    assert svc_signer.call(keys, "gateway", "GET", world.urls["vfolder"] + "/v1/folders",
                           timeout=10).status_code == 401
    h = {"X-Tessera-Caller": c.user_id, "X-Tessera-Caller-Access-Key": world.c["owner"].ak}
    assert svc_signer.call(keys, "gateway", "GET", world.urls["vfolder"] + "/v1/folders", headers=h,
                           timeout=10).status_code == 401
    o = world.c["owner"]
    name = world.ufolder["id"]
    assert o.vf("POST", f"/folders/{name}/invite", {"perm": "xx", "emails": [c.email]}).status_code == 400
    assert o.vf("POST", f"/folders/{name}/invite", {"emails": "a@b"}).status_code == 400
    assert o.vf("POST", f"/folders/{name}/rename", {"new_name": "a/b"}).status_code == 400
    assert o.vf("POST", "/folders/invitations/accept", {"inv_id": "nope"}).status_code == 400
    assert o.vf("GET", "/folders/does-not-exist").status_code == 404
    r = svc_signer.call(world.urls["keys"], "registry", "POST", world.urls["vfolder"] + "/v1/mounts/resolve",
                      json={"access_key": o.ak, "names": ["x", "x"]}, timeout=10)
    assert r.status_code == 400
    r = svc_signer.call(world.urls["keys"], "registry", "POST", world.urls["vfolder"] + "/v1/mounts/resolve", json={"access_key": o.ak, "names": "x"}, timeout=10)
    assert r.status_code == 400
    r = svc_signer.call(world.urls["keys"], "registry", "POST", world.urls["vfolder"] + "/v1/mounts/resolve",
                      json={"access_key": o.ak, "names": [name], "mount_map": {name: "/etc/x"}}, timeout=10)
    assert r.status_code == 400
    r = svc_signer.call(world.urls["keys"], "registry", "POST", world.urls["vfolder"] + "/v1/mounts/resolve",
                      json={"access_key": o.ak, "names": [name], "mount_map": {name: "data/in"}}, timeout=10)
    assert ok(r)[0]["mount_path"] == "/home/work/data/in"


# ---- trash, purge, restore ---------------------------------------------------------------

def test_trash_restore_purge(world, stack):
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("tr")}), 201)
    path = world.folder_on_disk(f)
    with open(os.path.join(path, "keep.txt"), "w") as fh:
        fh.write("hello")
    assert owner.vf("DELETE", f"/folders/{f['name']}").status_code == 204
    assert not os.path.exists(path) and os.path.exists(os.path.join(world.trash_on_disk(f), "keep.txt"))
    assert owner.vf("GET", f"/folders/{f['id']}").status_code == 404
    assert owner.vf("POST", "/folders/restore-from-trash", {"vfolder_id": f["id"]}).status_code == 204
    assert open(os.path.join(path, "keep.txt")).read() == "hello"
    assert owner.vf("DELETE", f"/folders/{f['id']}").status_code == 204
    # Someone else cannot purge it; the owner can.
    assert world.c["other"].vf("POST", "/folders/purge", {"vfolder_id": f["id"]}).status_code == 404
    assert owner.vf("POST", "/folders/purge", {"vfolder_id": f["id"]}).status_code == 204
    assert not os.path.exists(world.trash_on_disk(f)) and not os.path.exists(path)
    assert owner.vf("POST", "/folders/purge", {"vfolder_id": f["id"]}).status_code == 404
    ev = [v for k, v in kcat_events(stack) if k == f["id"]]
    assert any(b"VfolderCreated" in v for v in ev)
    assert sum(b"VfolderDeleted" in v for v in ev) >= 3  # trash, trash, purge


def test_empty_answers_through_the_gateway_have_no_content_type(world):
    """A 204 (delete, restore, purge) reaches the client without a JSON
    Content-Type: Backend.AI's SDK parses every JSON-typed answer."""
    owner = world.c["owner"]
    f = ok(owner.gw("POST", "/folders", {"name": fresh("ct")}), 201)
    for method, path, body in (("DELETE", f"/folders/{f['name']}", None),
                               ("POST", "/folders/restore-from-trash", {"vfolder_id": f["id"]}),
                               ("DELETE", f"/folders/{f['id']}", None),
                               ("POST", "/folders/purge", {"vfolder_id": f["id"]})):
        r = owner.gw(method, path, body)
        assert r.status_code == 204, (method, path, r.status_code, r.text)
        assert "Content-Type" not in r.headers, (method, path, r.headers)
        assert r.content == b""


def test_trash_list(world):
    """GET /folders?status=trash: the caller's own trashed folders (not those
    shared with it, not other users'), for the console's Trash tab."""
    owner = world.c["owner"]
    f = ok(owner.vf("POST", "/folders", {"name": fresh("tl")}), 201)
    inv = ok(owner.vf("POST", f"/folders/{f['name']}/invite",
                      {"perm": "ro", "emails": [world.c["invitee_ro"].email]}), 201)
    ok(world.c["invitee_ro"].vf("POST", "/folders/invitations/accept", {"inv_id": inv["invited_ids"][0]}))
    assert f["id"] in {x["id"] for x in ok(world.c["invitee_ro"].vf("GET", "/folders"))}
    assert f["name"] not in {x["name"] for x in ok(owner.vf("GET", "/folders", params={"status": "trash"}))}
    assert owner.vf("DELETE", f"/folders/{f['name']}").status_code == 204
    trashed = ok(owner.vf("GET", "/folders", params={"status": "trash"}))
    assert f["id"] in {x["id"] for x in trashed}
    assert all(x["status"] == "trash" for x in trashed)
    assert f["id"] not in {x["id"] for x in ok(owner.vf("GET", "/folders"))}
    assert f["id"] not in {x["id"] for x in ok(owner.vf("GET", "/folders", params={"status": "ready"}))}
    for who in ("other", "invitee_ro", "member"):
        assert f["id"] not in {x["id"] for x in ok(world.c[who].vf("GET", "/folders", params={"status": "trash"}))}
    assert owner.vf("POST", "/folders/restore-from-trash", {"vfolder_id": f["id"]}).status_code == 204
    assert f["id"] not in {x["id"] for x in ok(owner.vf("GET", "/folders", params={"status": "trash"}))}
    r = owner.vf("GET", "/folders", params={"status": "purged"})
    assert r.status_code == 400 and "status" in r.json()["msg"]


def test_admin_purges(world):
    f = ok(world.c["owner"].vf("POST", "/folders", {"name": fresh("ap")}), 201)
    assert world.c["owner"].vf("DELETE", f"/folders/{f['id']}").status_code == 204
    assert world.c["eadmin"].vf("POST", "/folders/purge", {"vfolder_id": f["id"]}).status_code == 404
    assert world.c["dadmin"].vf("POST", "/folders/purge", {"vfolder_id": f["id"]}).status_code == 204


# ---- hosts, volumes, policies -----------------------------------------------------------

def test_hosts_and_volumes(world):
    h = ok(world.c["other"].vf("GET", "/folders/_/hosts"))
    assert h["default"] == "local" and h["allowed"] == ["local"]
    assert world.c["other"].vf("GET", "/folders/_/volumes").status_code == 403
    v = ok(world.super.vf("GET", "/folders/_/volumes"))["volumes"]
    (local,) = [x for x in v if x["name"] == "local"]
    assert local["capacity_bytes"] > 0 and local["available_bytes"] >= 0
    assert local["folders"] >= 1 and local["accounted_bytes"] >= 600
    assert local["default"] is True and "path" in local
    assert "path" not in ok(world.c["dadmin"].vf("GET", "/folders/_/volumes"))["volumes"][0]


def test_allowed_hosts_policy(world):
    su = world.super
    dom = ok(su.auth("POST", "/admin/domains", {"name": fresh("vf-h")}))["name"]
    ok(su.auth("PATCH", f"/admin/domains/{dom}", {"allowed_vfolder_hosts": {"local": ["create-vfolder"]}}))
    u = world.new_user("hosts", "user", dom)
    f = ok(u.vf("POST", "/folders", {"name": "mine"}), 201)
    r = svc_signer.call(world.urls["keys"], "registry", "POST", world.urls["vfolder"] + "/v1/mounts/resolve", json={"access_key": u.ak, "names": ["mine"]}, timeout=10)
    assert r.status_code == 403 and "mount" in r.json()["msg"]
    ok(su.auth("PATCH", f"/admin/domains/{dom}", {"allowed_vfolder_hosts": {"elsewhere": ["create-vfolder"]}}))
    assert u.vf("POST", "/folders", {"name": "again"}).status_code == 403
    assert ok(u.vf("GET", "/folders/_/hosts"))["allowed"] == []
    assert f["host"] == "local"


# ---- through the gateway ----------------------------------------------------------------

def test_gateway_forwards(world, stack):
    owner = world.c["owner"]
    name = fresh("gw")
    r = owner.gw("POST", "/folders", {"name": name})
    assert r.status_code == 201, r.text
    fid = r.json()["id"]
    assert any(f["id"] == fid for f in owner.gw("GET", "/folders").json())
    assert owner.gw("GET", "/folders/_/hosts").json()["default"] == "local"
    assert owner.gw("GET", f"/folders/{name}").json()["id"] == fid
    assert world.c["other"].gw("GET", f"/folders/{fid}").status_code == 404
    assert owner.gw("GET", "/folders/invitations/list").status_code == 200
    assert owner.gw("POST", f"/folders/{name}/rename", {"new_name": name + "x"}).status_code == 201
    assert owner.gw("DELETE", f"/folders/{name}x").status_code == 204
    unsigned = requests.get(world.urls["gateway"] + "/folders", timeout=10)
    assert unsigned.status_code in (400, 401)


def test_events_seen(world, stack):
    ev = kcat_events(stack)
    uf = [v for k, v in ev if k == world.ufolder["id"]]
    assert any(b"VfolderCreated" in v for v in uf)
    assert any(b"VfolderShared" in v and world.c["invitee_ro"].user_id.encode() in v for v in uf)
    assert any(b"VfolderShared" in v for k, v in ev if k == world.gfolder["id"])


# ---- the CLI ------------------------------------------------------------------------------

def _cli(world, who, *args, tmp):
    c = world.c[who]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TESSERA_", "BACKEND_")) and k != "XDG_CONFIG_HOME"}
    env.update(BACKEND_ENDPOINT=world.urls["gateway"], BACKEND_ACCESS_KEY=c.ak, BACKEND_SECRET_KEY=c.sk,
               XDG_CONFIG_HOME=str(tmp), HOME=str(tmp))
    exe = os.path.join(os.environ.get("TESSERA_BIN_DIR", "build/bin"), "tessera")
    return subprocess.run([exe, "vfolder", *args], capture_output=True, text=True, env=env, timeout=60)


def test_cli(world, tmp_path):
    import json
    name = fresh("cli")
    r = _cli(world, "owner", "create", name, "--cloneable", "-u", "data", "--json", tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    f = json.loads(r.stdout)
    assert f["usage_mode"] == "data" and f["cloneable"] is True
    r = _cli(world, "owner", "list", tmp=tmp_path)
    assert r.returncode == 0 and name in r.stdout and "NAME" in r.stdout
    assert _cli(world, "owner", "create", name, tmp=tmp_path).returncode == 1  # 409
    r = _cli(world, "owner", "invite", name, world.c["other"].email, "--perm", "ro", tmp=tmp_path)
    assert r.returncode == 0 and "invited:" in r.stdout, r.stdout + r.stderr
    inv = r.stdout.split("invited:")[1].split()[0]
    r = _cli(world, "other", "invitations", tmp=tmp_path)
    assert inv in r.stdout
    assert _cli(world, "other", "accept", inv, tmp=tmp_path).returncode == 0
    assert name in _cli(world, "other", "list", tmp=tmp_path).stdout
    assert _cli(world, "other", "clone", name, name + "-copy", tmp=tmp_path).returncode == 0
    assert _cli(world, "other", "leave", name, tmp=tmp_path).returncode == 0
    assert _cli(world, "owner", "rename", name, name + "-r", tmp=tmp_path).returncode == 0
    r = _cli(world, "owner", "info", name + "-r", tmp=tmp_path)
    assert r.returncode == 0 and f["id"] in r.stdout
    assert _cli(world, "owner", "hosts", tmp=tmp_path).returncode == 0
    assert _cli(world, "owner", "volumes", tmp=tmp_path).returncode == 1  # admins only
    assert _cli(world, "owner", "delete", name + "-r", tmp=tmp_path).returncode == 0
    assert _cli(world, "owner", "purge", f["id"], tmp=tmp_path).returncode == 0
    assert _cli(world, "owner", "create", tmp=tmp_path).returncode == 2
    assert _cli(world, "owner", "frobnicate", tmp=tmp_path).returncode == 2
