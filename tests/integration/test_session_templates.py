"""Session templates (docs/sessions.md "Templates"; Backend.AI's
/template/session and POST /session/_/create-from-template) through the signed
gateway: the CRUD answers in Backend.AI's shapes, a launch that merges the
template with the request and creates as POST /session does, who may reach a
template (its owner, admins of its domain, superadmins; everyone else gets
404), and bad input refused with 400 and nothing stored."""
import json
import uuid

import pytest

from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401

TAG = uuid.uuid4().hex[:6]
LIST_KEYS = {"name", "id", "created_at", "is_owner", "user", "group", "user_email", "group_name",
             "domain_name", "type", "template"}
LIVE = {"PENDING", "SCHEDULED", "PREPARING", "PULLING", "RUNNING"}
_n = [0]


def fresh(prefix):
    _n[0] += 1
    return f"{prefix}-{TAG}-{_n[0]}"


def tpl(image, **spec):
    t = {"api_version": "6", "kind": "taskTemplate", "metadata": {"name": fresh("tpl"), "tag": None},
         "spec": {"session_type": "interactive", "kernel": {"image": image, "environ": {}},
                  "mounts": {}, "resources": {"cpu": "1", "mem": "256m"}}}
    t["spec"].update(spec)
    return t


def create_tpl(client, template, **extra):
    body = {"payload": json.dumps(template)}
    body.update(extra)
    return client.post("/template/session", body)


def put(client, path, body):
    return client.request("PUT", path, json=body)


@pytest.fixture(scope="module")
def alice(admin, gw):
    return _new_user(admin, gw, "tpl-a")


@pytest.fixture(scope="module")
def bob(admin, gw):
    return _new_user(admin, gw, "tpl-b")[0]


@pytest.fixture(scope="module")
def foreign_admin(admin, gw):
    """A domain admin of another domain."""
    dom = okj(admin.post("/admin/domains", {"name": fresh("tpl-d")}), 200, 201)["name"]
    uname = fresh("tpl-dadmin")
    u = okj(admin.post("/admin/users", {"email": f"{uname}@example.com", "username": uname,
                                        "password": "tpl-Passw0rd-1", "role": "admin",
                                        "domain_name": dom}), 200, 201)
    k = okj(admin.post("/admin/keypairs", {"user_id": u["id"]}), 200, 201)
    import bai_signer
    return bai_signer.Client(gw, k["access_key"], k["secret_key"])


@pytest.fixture(scope="module")
def alice_tpl(alice, image):
    client, _ = alice
    created = okj(create_tpl(client, tpl(image)))
    return created[0]["id"]


def ids(client, **params):
    return {t["id"] for t in okj(client.get("/template/session", params=params))}


# ---- CRUD ---------------------------------------------------------------------------------------


def test_crud_shapes(alice, image):
    client, u = alice
    t = tpl(image)
    created = okj(create_tpl(client, t, group="default"))
    assert isinstance(created, list) and len(created) == 1
    tid = created[0]["id"]
    assert len(tid) == 32 and int(tid, 16) >= 0 and created[0]["user"] == u["id"]
    rows = [r for r in okj(client.get("/template/session")) if r["id"] == tid]
    assert len(rows) == 1 and set(rows[0]) >= LIST_KEYS, rows
    row = rows[0]
    assert row["is_owner"] is True and row["type"] == "task" and row["user"] == u["id"]
    assert row["name"] == t["metadata"]["name"] and row["group_name"] == "default"
    assert row["template"]["kind"] == "taskTemplate"
    assert row["template"]["spec"]["kernel"]["image"] == image
    assert row["template"]["spec"]["kernel"]["architecture"] == "x86_64"  # the default, filled in
    one = okj(client.get(f"/template/session/{tid}"))
    assert {"template", "name", "user_uuid", "group_id", "domain_name"} <= set(one)
    assert one["user_uuid"] == u["id"] and one["group_id"] == row["group"]
    # the dashed form of the id reaches it too
    assert okj(client.get(f"/template/session/{uuid.UUID(tid)}"))["name"] == one["name"]
    t2 = tpl(image, resources={"cpu": "2", "mem": "512m"})
    assert okj(put(client, f"/template/session/{tid}", {"payload": json.dumps(t2)})) == {"success": True}
    got = okj(client.get(f"/template/session/{tid}"))
    assert got["template"]["spec"]["resources"] == {"cpu": "2", "mem": "512m"}
    assert got["name"] == t2["metadata"]["name"]
    assert okj(client.delete(f"/template/session/{tid}")) == {"success": True}
    problem(client.get(f"/template/session/{tid}"), 404)
    assert tid not in ids(client)


def test_create_several_with_names(alice, image):
    client, _ = alice
    payload = [{"template": tpl(image), "name": fresh("first")},
               {"template": tpl(image), "name": fresh("second")}]
    created = okj(client.post("/template/session", {"payload": json.dumps(payload)}))
    assert len(created) == 2
    names = {r["id"]: r["name"] for r in okj(client.get("/template/session"))}
    assert [names[c["id"]] for c in created] == [payload[0]["name"], payload[1]["name"]]
    # the payload may also be JSON itself rather than text
    created = okj(client.post("/template/session", {"payload": tpl(image)}))
    assert created[0]["id"] in names or created[0]["id"] in ids(client)


# ---- launching ----------------------------------------------------------------------------------


def test_launch_with_overrides_stays_pending(alice, image_registered):
    client, _ = alice
    t = tpl(image_registered, session_type="batch", resources={"cpu": "1", "mem": "256m"})
    t["spec"]["kernel"]["run"] = {"startup_command": "echo from-template"}
    t["spec"]["kernel"]["environ"] = {"FROM_TEMPLATE": "1"}
    tid = okj(create_tpl(client, t))[0]["id"]
    sname = fresh("tpl-s")
    r = client.post("/session/_/create-from-template",
                    {"template_id": tid, "name": sname, "starts_at": "1h", "enqueueOnly": True,
                     "config": {"resources": {"cpu": "2", "mem": "512m"}}})
    body = okj(r, 201)
    assert body["sessionName"] == sname and body["sessionId"] == body["sessionUuid"] and body["created"] is True and body["status"] == "PENDING"
    info = okj(client.get(f"/session/{sname}"))
    assert info["image"] == image_registered and info["type"] == "batch"
    slots = info["requestedSlots"]
    assert float(slots["cpu"]) == 2, slots  # the request's resources beat the template's
    client.delete(f"/session/{sname}")


def test_launch_interactive_like_the_sdk(alice, image_registered):
    """What Backend.AI's JS SDK sends: config.resources {} does not wipe the template's."""
    client, _ = alice
    tid = okj(create_tpl(client, tpl(image_registered)))[0]["id"]
    sname = fresh("tpl-i")
    r = client.post("/session/_/create-from-template",
                    {"template_id": tid, "name": sname, "enqueueOnly": True,
                     "config": {"resources": {}}})
    body = okj(r, 201)
    assert body["status"] in LIVE
    info = okj(client.get(f"/session/{sname}"))
    assert info["type"] == "interactive" and float(info["requestedSlots"]["cpu"]) == 1
    # the same name again: the create's own answer (409)
    problem(client.post("/session/_/create-from-template",
                        {"template_id": tid, "name": sname, "enqueueOnly": True}), 409)
    client.delete(f"/session/{sname}")


def test_launch_errors_are_the_creates(alice, image_registered, alice_tpl):
    client, _ = alice
    problem(client.post("/session/_/create-from-template", {"name": fresh("x")}), 400)
    problem(client.post("/session/_/create-from-template",
                        {"template_id": uuid.uuid4().hex, "name": fresh("x")}), 404)
    p = problem(client.post("/session/_/create-from-template",
                            {"template_id": alice_tpl, "name": "bad name!"}), 400)
    assert "name" in p["msg"]
    p = problem(client.post("/session/_/create-from-template",
                            {"template_id": alice_tpl, "name": fresh("x"), "enqueueOnly": True,
                             "config": {"resources": {"cpu": "-1"}}}), 400)
    assert "resources" in p["msg"]


# ---- who reaches what ---------------------------------------------------------------------------


def test_other_users_never_reach_it(alice, bob, foreign_admin, alice_tpl, image):
    for other in (bob, foreign_admin):
        problem(other.get(f"/template/session/{alice_tpl}"), 404)
        problem(put(other, f"/template/session/{alice_tpl}", {"payload": json.dumps(tpl(image))}), 404)
        problem(other.delete(f"/template/session/{alice_tpl}"), 404)
        problem(other.post("/session/_/create-from-template",
                           {"template_id": alice_tpl, "name": fresh("steal"), "enqueueOnly": True}), 404)
        assert alice_tpl not in ids(other)
        assert alice_tpl not in ids(other, all="true")
    client, _ = alice
    assert okj(client.get(f"/template/session/{alice_tpl}"))["template"]["spec"]["kernel"]["image"] == image


def test_superadmin_sees_all(admin, alice_tpl):
    assert alice_tpl not in ids(admin)
    assert alice_tpl in ids(admin, all="true")
    okj(admin.get(f"/template/session/{alice_tpl}"))


# ---- bad input ----------------------------------------------------------------------------------


def _bad_templates(image):
    wrong_kind = tpl(image)
    wrong_kind["kind"] = "clusterTemplate"
    bad_image = tpl(image)
    bad_image["spec"]["kernel"]["image"] = "Not An Image!!"
    negative = tpl(image, resources={"cpu": "-2"})
    no_image = tpl(image)
    del no_image["spec"]["kernel"]["image"]
    large = tpl(image)
    large["spec"]["kernel"]["environ"] = {"BIG": "x" * 70000}
    bad_env = tpl(image)
    bad_env["spec"]["kernel"]["environ"] = {"1BAD": "x"}
    git = tpl(image)
    git["spec"]["kernel"]["git"] = {"repository": "https://example.com/x.git"}
    return [("kind", wrong_kind), ("spec.kernel.image", bad_image), ("spec.resources", negative),
            ("spec.kernel.image", no_image), ("too large", large), ("environ", bad_env),
            ("spec.kernel.git", git)]


def test_bad_input_is_400_and_nothing_stored(alice, image):
    client, _ = alice
    before = ids(client)
    p = problem(client.post("/template/session", {"payload": "kind: taskTemplate\nspec: {}\n"}), 400)
    assert "JSON" in p["msg"]
    problem(client.post("/template/session", {}), 400)
    problem(client.post("/template/session", {"payload": "[]"}), 400)
    problem(client.post("/template/session", {"payload": json.dumps([tpl(image)] * 17)}), 400)
    for field, t in _bad_templates(image):
        p = problem(create_tpl(client, t), 400)
        assert field in p["msg"], (field, p)
    # one bad item among good ones: none stored
    problem(client.post("/template/session",
                        {"payload": json.dumps([tpl(image), _bad_templates(image)[0][1]])}), 400)
    problem(client.get("/template/session/not-an-id"), 400)
    problem(client.get("/template/session", params={"group_id": "nope"}), 400)
    assert ids(client) == before


def test_bad_update_changes_nothing(alice, image, alice_tpl):
    client, _ = alice
    before = okj(client.get(f"/template/session/{alice_tpl}"))
    problem(put(client, f"/template/session/{alice_tpl}", {"payload": "{not json"}), 400)
    problem(put(client, f"/template/session/{alice_tpl}",
                {"payload": json.dumps(tpl(image, resources={"mem": "-1"}))}), 400)
    problem(put(client, f"/template/session/{alice_tpl}",
                {"payload": json.dumps([tpl(image), tpl(image)])}), 400)
    assert okj(client.get(f"/template/session/{alice_tpl}")) == before


# ---- the CLI ------------------------------------------------------------------------------------


def test_cli_round_trip(bin_dir, alice, gw, image_registered, tmp_path):
    from test_cli import base_env, fails, js, ok, run
    client, _ = alice
    env = base_env(tmp_path, TESSERA_ACCESS_KEY=client.access_key,
                   TESSERA_SECRET_KEY=client.secret_key, TESSERA_GATEWAY_URL=gw)
    f = tmp_path / "t.json"
    f.write_text(json.dumps(tpl(image_registered)))
    out = ok(bin_dir, env, "session-template", "create", str(f))
    tid = out.split()[2]
    assert len(tid) == 32, out
    assert tid in ok(bin_dir, env, "session-template", "list")
    assert js(bin_dir, env, "session-template", "get", tid)["template"]["kind"] == "taskTemplate"
    f.write_text(json.dumps(tpl(image_registered, resources={"cpu": "2", "mem": "256m"})))
    ok(bin_dir, env, "session-template", "update", tid, str(f))
    sname = fresh("cli")
    ok(bin_dir, env, "session", "create", "--template", tid, "--name", sname, "--enqueue-only")
    info = okj(client.get(f"/session/{sname}"))
    assert info["image"] == image_registered and float(info["requestedSlots"]["cpu"]) == 2
    client.delete(f"/session/{sname}")
    ok(bin_dir, env, "session-template", "delete", tid)
    fails(bin_dir, env, "session-template", "get", tid, status=404)
    f.write_text("kind: taskTemplate\n")
    fails(bin_dir, env, "session-template", "create", str(f), status=400)
    assert run(bin_dir, env, "session-template", "frob").returncode == 2
    assert run(bin_dir, env, "session-template", "update", tid).returncode == 2
