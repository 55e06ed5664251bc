"""The resource API the launcher and the summary read (docs/api.md
"Resources"), through the signed gateway to tessera-registry:
GET /scaling-groups, GET /resource/presets, POST /resource/check-presets in
Backend.AI's shapes, and the presets' admin REST (/admin/resource-presets).

Shapes; a user sees only the resource groups it may use; check-presets
numbers follow a session's reservation and release; one user's numbers do not
move with another's session, and users see neither the project's nor the
domain's usage; users cannot write presets (403, nothing changed); bad input
is a 400 / 404 problem that changes nothing."""
import re
import uuid

import pytest
import requests

import bai_signer
from conftest import wait_until
from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401

TAG = uuid.uuid4().hex[:6]
KNOWN = {"cpu", "mem", "cuda.device", "cuda.shares"}
SEEDED = {"cpu1-mem1g", "cpu2-mem4g", "cpu4-mem8g", "gpu1", "gpu-half"}
DECIMAL = re.compile(r"^(Infinity|\d+(\.\d+)?)$")


@pytest.fixture(scope="module")
def alice(admin, gw):
    return _new_user(admin, gw, "res-alice")


@pytest.fixture(scope="module")
def bob(admin, gw):
    return _new_user(admin, gw, "res-bob")


def slots_ok(obj, allow_nan=False):
    """{slot: decimal text} over at least the known slots."""
    assert KNOWN <= set(obj), obj
    for k, v in obj.items():
        assert isinstance(v, str), (k, v)
        assert DECIMAL.match(v) or (allow_nan and v == "NaN"), (k, v)


def check(client, body=None):
    return okj(client.post("/resource/check-presets", body))


def raw_post(client, path, data, content_type="application/json"):
    url = client.endpoint + path
    h = bai_signer.signed_headers(client.access_key, client.secret_key, "POST", url,
                                  content_type=content_type, body=data)
    return requests.post(url, data=data, headers=h, timeout=10)


# ---- presets ------------------------------------------------------------------------------------


def test_presets_list_shape(alice):
    client, _ = alice
    body = okj(client.get("/resource/presets"))
    assert body["presets"] == body["resource_presets"]
    names = {p["name"] for p in body["presets"]}
    assert SEEDED <= names, names
    for p in body["presets"]:
        assert set(p) == {"name", "resource_slots", "shared_memory"}, p
        assert p["resource_slots"] and all(isinstance(v, str) for v in p["resource_slots"].values())
        assert p["shared_memory"] is None or p["shared_memory"].isdigit()
    gpu1 = next(p for p in body["presets"] if p["name"] == "gpu1")
    assert gpu1["resource_slots"] == {"cpu": "4", "mem": str(16 << 30), "cuda.device": "1"}


def test_presets_need_a_signature(gw):
    r = requests.get(gw + "/resource/presets", timeout=10)
    problem(r, 401)
    r = requests.post(gw + "/resource/check-presets", json={}, timeout=10)
    problem(r, 401)


def test_admin_preset_crud(admin):
    name = f"p-{TAG}"
    r = admin.post("/admin/resource-presets",
                   {"name": name, "resource_slots": {"cpu": 2, "mem": "2g"}, "shared_memory": "64m"})
    p = okj(r, 201)
    assert p["name"] == name and p["resource_slots"] == {"cpu": "2", "mem": str(2 << 30)}
    assert p["shared_memory"] == str(64 << 20) and p["created_at"]
    problem(admin.post("/admin/resource-presets", {"name": name, "resource_slots": {"cpu": 1}}),
            409)
    p = okj(admin.patch(f"/admin/resource-presets/{name}",
                        {"resource_slots": {"cpu": "0.5", "mem": "1g", "cuda.shares": "0.25"}}))
    assert p["resource_slots"] == {"cpu": "0.5", "mem": str(1 << 30), "cuda.shares": "0.25"}
    assert p["shared_memory"] == str(64 << 20)
    p = okj(admin.patch(f"/admin/resource-presets/{name}", {"shared_memory": None}))
    assert p["shared_memory"] is None
    listed = okj(admin.get("/admin/resource-presets", params={"limit": 1000}))
    assert name in {i["name"] for i in listed["items"]} and listed["total"] >= 6
    assert name in {p["name"] for p in okj(admin.get("/resource/presets"))["presets"]}
    assert okj(admin.delete(f"/admin/resource-presets/{name}")) == {"deleted": True}
    problem(admin.get(f"/admin/resource-presets/{name}"), 404)
    problem(admin.delete(f"/admin/resource-presets/{name}"), 404)
    problem(admin.patch(f"/admin/resource-presets/{name}", {"shared_memory": None}), 404)


BAD_PRESETS = [
    {"resource_slots": {"cpu": 1}},                                  # no name
    {"name": "x-{t}", "resource_slots": {}},                         # empty
    {"name": "x-{t}"},                                               # no slots
    {"name": "x-{t}", "resource_slots": "cpu=1"},                    # not an object
    {"name": "x-{t}", "resource_slots": {"cpu": -1}},                # negative
    {"name": "x-{t}", "resource_slots": {"nope": 1}},                # unknown slot
    {"name": "x-{t}", "resource_slots": {"cpu": True}},              # wrong type
    {"name": "x-{t}", "resource_slots": {"mem": "1g"}, "shared_memory": "2g"},  # shm > mem
    {"name": "x-{t}", "resource_slots": {"cpu": 1}, "shared_memory": -5},
    {"name": "x-{t}", "resource_slots": {"cpu": 1}, "shared_memory": [1]},
    {"name": "-x{t}", "resource_slots": {"cpu": 1}},                 # bad name
    {"name": "a/b{t}", "resource_slots": {"cpu": 1}},
    {"name": 5, "resource_slots": {"cpu": 1}},
    {"name": "x-{t}", "resource_slots": {"cpu": 1}, "extra": 1},      # unknown key
]


def _presets(admin):
    return okj(admin.get("/admin/resource-presets", params={"limit": 1000}))["items"]


@pytest.mark.parametrize("i", range(len(BAD_PRESETS)))
def test_bad_preset_is_400_and_changes_nothing(admin, i):
    before = _presets(admin)
    body = {k: (v.replace("{t}", TAG) if isinstance(v, str) else v)
            for k, v in BAD_PRESETS[i].items()}
    problem(admin.post("/admin/resource-presets", body), 400)
    assert _presets(admin) == before


BAD_PATCHES = [
    {"name": "renamed"}, {"resource_slots": {}}, {"resource_slots": None}, {"resource_slots": 1},
    {"resource_slots": {"cpu": "-1"}}, {"resource_slots": {"gpu": 1}},
    {"resource_slots": {"cpu": "1x"}}, {"shared_memory": "2g"},  # > the preset's 1 GiB
    {"shared_memory": True}, {"color": "red"},
]


@pytest.mark.parametrize("i", range(len(BAD_PATCHES)))
def test_bad_patch_is_400_and_changes_nothing(admin, i):
    before = _presets(admin)
    problem(admin.patch("/admin/resource-presets/cpu1-mem1g", BAD_PATCHES[i]), 400)
    assert _presets(admin) == before


def test_bad_preset_json_is_400(admin):
    before = _presets(admin)
    problem(raw_post(admin, "/admin/resource-presets", b'{"name": "x",'), 400)
    problem(admin.patch("/admin/resource-presets/cpu1-mem1g", {"name": "other"}), 400)
    assert _presets(admin) == before


def test_users_cannot_write_presets(alice):
    client, _ = alice
    before = okj(client.get("/admin/resource-presets", params={"limit": 1000}))["items"]
    assert {p["name"] for p in before} >= SEEDED  # users read
    okj(client.get("/admin/resource-presets/gpu1"))
    problem(client.post("/admin/resource-presets",
                        {"name": f"mine-{TAG}", "resource_slots": {"cpu": 1}}), 403)
    problem(client.patch("/admin/resource-presets/gpu1", {"resource_slots": {"cpu": 64}}), 403)
    problem(client.delete("/admin/resource-presets/gpu1"), 403)
    assert okj(client.get("/admin/resource-presets", params={"limit": 1000}))["items"] == before


# ---- scaling groups -----------------------------------------------------------------------------


def _sg_names(client, **params):
    body = okj(client.get("/scaling-groups", params=params))
    assert set(body) == {"scaling_groups"}
    for g in body["scaling_groups"]:
        assert set(g) == {"name"}
    return [g["name"] for g in body["scaling_groups"]]


@pytest.fixture(scope="module")
def private_group(admin, alice):
    """A resource group only alice's keypair may use."""
    client, _ = alice
    name = f"rg-{TAG}"
    okj(admin.post("/admin/resource-groups", {"name": name}), 201)
    okj(admin.post("/admin/resource-group-access",
                   {"resource_group": name, "scope_type": "keypair", "scope_id": client.access_key}),
        200, 201)
    return name


def test_scaling_groups_only_allowed(alice, bob, private_group):
    a, b = alice[0], bob[0]
    # The grant reaches the registry's context cache by tessera.auth.v1 (the
    # cache's TTL is the backstop): each cached context may see it a moment apart.
    wait_until(lambda: private_group in _sg_names(a, group="default"), timeout=10)
    wait_until(lambda: private_group in _sg_names(a), timeout=10)  # keypair and domain only
    assert private_group not in _sg_names(b, group="default")
    assert _sg_names(a) == sorted(_sg_names(a))


def test_inactive_group_is_not_listed(admin, alice):
    client = alice[0]
    name = f"rg-off-{TAG}"
    okj(admin.post("/admin/resource-groups", {"name": name}), 201)
    okj(admin.post("/admin/resource-group-access",
                   {"resource_group": name, "scope_type": "keypair", "scope_id": client.access_key}),
        200, 201)
    wait_until(lambda: name in _sg_names(client), timeout=5)
    okj(admin.patch(f"/admin/resource-groups/{name}", {"is_active": False}))
    assert name not in _sg_names(client)
    problem(client.post("/resource/check-presets", {"scaling_group": name}), 404)


def test_scaling_groups_project_errors(admin, alice):
    client, u = alice
    problem(client.get("/scaling-groups", params={"group": f"no-such-{TAG}"}), 404)
    p = okj(admin.post("/admin/projects", {"name": f"res-proj-{TAG}"}), 200, 201)
    problem(client.get("/scaling-groups", params={"group": p["name"]}), 403)
    problem(client.get("/scaling-groups", params={"group_id": p["id"]}), 403)
    # the superadmin may name any project of its domain
    assert isinstance(_sg_names(admin, group=p["name"]), list)


# ---- check-presets ------------------------------------------------------------------------------


def test_check_presets_shape(alice):
    client = alice[0]
    for body in (None, {}, {"group": "default"}):
        c = check(client, body)
        for k in ("keypair_limits", "keypair_using", "keypair_remaining", "scaling_group_remaining"):
            slots_ok(c[k])
        assert isinstance(c["scaling_groups"], dict) and c["scaling_groups"]
        for g in c["scaling_groups"].values():
            assert set(g) == {"using", "remaining"}
            slots_ok(g["using"])
            slots_ok(g["remaining"])
        assert {p["name"] for p in c["presets"]} >= SEEDED
        for p in c["presets"]:
            assert set(p) == {"name", "resource_slots", "shared_memory", "allocatable"}
            assert isinstance(p["allocatable"], bool)
        assert c["tessera_usage_source"] in ("redis", "database")
        # users see their keypair and user scopes, not the project's or the domain's usage
        assert set(c["tessera_scopes"]) == {"keypair", "user"}
        assert set(c["tessera_scopes"]["user"]["limits"].values()) == {"Infinity"}
    assert c["group_using"] == {k: "NaN" for k in KNOWN}
    assert check(client)["group_using"] is None  # no project named
    assert set(check(client, {"group": "default"})["scaling_groups"]) == set(
        _sg_names(client, group="default"))


def test_check_presets_one_group(alice, private_group):
    client = alice[0]
    c = check(client, {"scaling_group": private_group, "group": "default"})
    assert list(c["scaling_groups"]) == [private_group]
    # no agent in that group: nothing remains there, nothing is allocatable
    assert c["scaling_groups"][private_group]["remaining"]["cpu"] == "0"
    assert not any(p["allocatable"] for p in c["presets"])


def test_admin_sees_project_and_domain(admin):
    c = check(admin, {"group": "default"})
    assert set(c["tessera_scopes"]) == {"keypair", "user", "project", "domain"}
    slots_ok(c["group_using"])
    slots_ok(c["tessera_scopes"]["domain"]["using"])


def test_limits_from_the_keypair_policy(admin, gw):
    pol = f"res-pol-{TAG}"
    okj(admin.post("/admin/keypair-resource-policies",
                   {"name": pol, "total_resource_slots": {"cpu": "1", "mem": "2g"}}), 200, 201)
    client, u = _new_user(admin, gw, "res-lim")
    k = okj(admin.post("/admin/keypairs", {"user_id": u["id"], "resource_policy": pol}), 200, 201)
    limited = bai_signer.Client(gw, k["access_key"], k["secret_key"])
    c = check(limited, {"group": "default"})
    assert c["keypair_limits"] == {"cpu": "1", "mem": str(2 << 30), "cuda.device": "Infinity",
                                   "cuda.shares": "Infinity"}
    assert c["keypair_using"]["cpu"] == "0"
    assert c["keypair_remaining"]["cpu"] == "1" and c["keypair_remaining"]["mem"] == str(2 << 30)
    for g in c["scaling_groups"].values():
        assert float(g["remaining"]["cpu"]) <= 1
    fits = {p["name"]: p["allocatable"] for p in c["presets"]}
    assert fits["cpu2-mem4g"] is False and fits["cpu4-mem8g"] is False and fits["gpu1"] is False


def test_check_presets_bad_input(alice):
    client = alice[0]
    problem(raw_post(client, "/resource/check-presets", b'{"group":'), 400)
    problem(raw_post(client, "/resource/check-presets", b'[1, 2]'), 400)
    problem(client.post("/resource/check-presets", {"group": 5}), 400)
    problem(client.post("/resource/check-presets", {"scaling_group": ["default"]}), 400)
    problem(client.post("/resource/check-presets", {"owner_access_key": "AKIAIOSFODNN7EXAMPLE"}),
            400)
    problem(client.post("/resource/check-presets", {"group": f"no-such-{TAG}"}), 404)
    problem(client.post("/resource/check-presets", {"scaling_group": f"no-such-{TAG}"}), 404)


def test_check_presets_follow_a_session(alice, bob, image_registered):
    """alice's numbers rise with her session's reservation and fall with its
    end; bob's stay where they were."""
    a, b = alice[0], bob[0]
    cpu = lambda c, k="keypair_using": float(c[k]["cpu"])  # noqa: E731
    before, bob_before = check(a, {"group": "default"}), check(b, {"group": "default"})
    sname = f"res-{TAG}"
    r = a.post("/session", {"image": image_registered, "name": sname, "enqueueOnly": True,
                            "group_name": "default",
                            "config": {"resources": {"cpu": "1", "mem": "256m"}}})
    okj(r, 201)
    try:
        group_use = lambda c: sum(float(g["using"]["cpu"]) for g in c["scaling_groups"].values())  # noqa: E731
        # the keypair counts the session from its creation, the resource group
        # once the scheduler has placed it (the agents' occupancy): both
        during = wait_until(
            lambda: (lambda c: c if cpu(c) >= cpu(before) + 1 and group_use(c) >= 1 else None)(
                check(a, {"group": "default"})),
            timeout=30, message="alice's keypair_using and the group's use to count the session")
        assert float(during["keypair_using"]["mem"]) >= float(before["keypair_using"]["mem"]) + (256 << 20)
        assert cpu(during["tessera_scopes"]["user"], "using") >= cpu(before) + 1
        assert check(b, {"group": "default"})["keypair_using"] == bob_before["keypair_using"]
    finally:
        a.delete(f"/session/{sname}")
    wait_until(lambda: cpu(check(a, {"group": "default"})) == cpu(before), timeout=30,
               message="alice's keypair_using to drop after the session ended")
