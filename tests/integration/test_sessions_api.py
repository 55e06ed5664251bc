"""The public session API (docs/api.md "Sessions", api-compat.md) through the
signed gateway, which forwards it to tessera-registry: create (enqueueOnly,
waiting, reuse, name uniqueness), info in Backend.AI's camelCase shape, list
(mine vs all), destroy, history, ownership between users, validation errors
relayed as problems, the /kernel alias, execute and logs, and the registry's
admin resources routed by the gateway (/admin/agents, /admin/resource-groups,
/admin/images) while the rest of /admin stays with tessera-auth.

Clients sign with the tests' own signer (bai_signer.py). A plain user with a
keypair is made through the admin API for the ownership tests."""
import os
import time
import uuid

import pytest
import requests

import bai_signer
from conftest import parse_env_file, wait_until

TAG = uuid.uuid4().hex[:6]
PASSWORD = "sessions-Passw0rd"
INFO_KEYS = {"sessionId", "sessionUuid", "status", "statusInfo", "image", "type", "creationTime",
             "terminationTime", "occupiedSlots", "requestedSlots", "servicePorts", "domainName",
             "groupId", "userId", "age"}
LIVE = {"PENDING", "SCHEDULED", "PREPARING", "PULLING", "RUNNING"}
ENDED = {"TERMINATING", "TERMINATED", "CANCELLED"}
_n = [0]


def name(prefix="s"):
    _n[0] += 1
    return f"{prefix}-{TAG}-{_n[0]}"


def problem(r, *statuses):
    """r is a problem answer with one of statuses (never a 5xx for bad input)."""
    assert r.status_code in statuses, f"{r.status_code} {r.text}"
    assert r.headers["Content-Type"].startswith("application/problem+json"), r.headers
    p = r.json()
    assert p["type"].startswith("https://api.backend.ai/probs/") and p.get("title") and p.get("msg"), p
    return p


def okj(r, *statuses):
    assert r.status_code in (statuses or (200,)), f"{r.status_code} {r.text}"
    return r.json()


@pytest.fixture(scope="module")
def gw(stack):
    return stack["TESSERA_GATEWAY_URL"]


@pytest.fixture(scope="module")
def image(stack):
    img = stack.get("TESSERA_DEMO_IMAGE")
    if not img:
        pytest.skip("the stack has no demo image (TESSERA_DEMO_IMAGE)")
    return img


@pytest.fixture(scope="module")
def admin(stack, gw):
    env = dict(stack)
    if "TESSERA_ADMIN_ACCESS_KEY" not in env:
        creds = os.path.join(stack["TESSERA_STATE_DIR"], "auth", "admin-credentials")
        if os.path.exists(creds):
            env.update(parse_env_file(creds))
    if "TESSERA_ADMIN_ACCESS_KEY" not in env:
        pytest.skip("no superadmin keys in the stack's env")
    return bai_signer.Client(gw, env["TESSERA_ADMIN_ACCESS_KEY"], env["TESSERA_ADMIN_SECRET_KEY"])


@pytest.fixture(scope="module")
def image_registered(admin, image):
    """The demo image is known to the registry (registered here if needed)."""
    r = admin.post("/admin/images", {"reference": image})
    assert r.status_code in (200, 201), r.text
    return image


def _new_user(admin, gw, prefix, role="user"):
    # Unique per call: other modules import these fixtures, and a module-scoped
    # fixture is set up once per module that uses it.
    uname = f"{prefix}-{TAG}-{uuid.uuid4().hex[:6]}"
    u = okj(admin.post("/admin/users", {"email": f"{uname}@example.com", "username": uname,
                                        "password": PASSWORD, "role": role}), 200, 201)
    k = okj(admin.post("/admin/keypairs", {"user_id": u["id"]}), 200, 201)
    # a member of the default project, so it may create sessions there
    projects = okj(admin.get("/admin/projects", params={"limit": 1000}))["items"]
    default = [p for p in projects if p["name"] == "default" and p["domain_name"] == u["domain_name"]]
    if default:
        okj(admin.post(f"/admin/projects/{default[0]['id']}/members", {"user_ids": [u["id"]]}),
            200, 201)
    return bai_signer.Client(gw, k["access_key"], k["secret_key"]), u


@pytest.fixture(scope="module")
def user(admin, gw):
    return _new_user(admin, gw, "sess-user")[0]


@pytest.fixture(scope="module")
def other(admin, gw):
    return _new_user(admin, gw, "sess-other")[0]


def create(client, image, sname, prefix="/session", **extra):
    body = {"image": image, "name": sname, "enqueueOnly": True}
    body.update(extra)
    return client.post(prefix, body)


def destroy_quietly(client, sname):
    client.delete(f"/session/{sname}")


# ---- create, info, list ---------------------------------------------------------------------


def test_create_enqueue_only_answers_at_once(user, image_registered):
    sname = name()
    t0 = time.monotonic()
    r = create(user, image_registered, sname, config={"resources": {"cpu": "1", "mem": "256m"}})
    assert time.monotonic() - t0 < 5
    body = okj(r, 201)
    # as Backend.AI since API v5: sessionId is the UUID, the name is sessionName
    assert body["sessionName"] == sname
    uuid.UUID(body["sessionUuid"])
    assert body["sessionId"] == body["sessionUuid"]
    assert body["created"] is True
    assert body["status"] in LIVE
    assert isinstance(body["servicePorts"], list)
    assert r.headers.get("X-Request-ID")
    destroy_quietly(user, sname)


def test_info_has_backend_ai_camelcase_keys(user, image_registered):
    sname = name()
    created = okj(create(user, image_registered, sname), 201)
    info = okj(user.get(f"/session/{sname}"))
    assert INFO_KEYS <= set(info), INFO_KEYS - set(info)
    assert info["sessionUuid"] == created["sessionUuid"]
    assert info["image"] == image_registered
    assert info["type"] == "interactive"
    assert info["status"] in LIVE
    assert not [k for k in info if "_" in k], "keys are camelCase"
    # by id as well as by name
    assert okj(user.get(f"/session/{created['sessionUuid']}"))["sessionId"] == sname
    destroy_quietly(user, sname)


def test_list_mine_and_all(admin, user, image_registered):
    mine, theirs = name("mine"), name("theirs")
    okj(create(admin, image_registered, mine), 201)
    okj(create(user, image_registered, theirs), 201)
    try:
        def names(client, **params):
            r = client.get("/session", params=params or None)
            return {s["sessionName"] for s in okj(r)["items"]}

        admin_mine = names(admin)
        assert mine in admin_mine and theirs not in admin_mine
        admin_all = names(admin, all="true", limit=1000)
        assert {mine, theirs} <= admin_all
        user_mine = names(user)
        assert theirs in user_mine and mine not in user_mine
        # ?all never widens a plain user's view beyond its own sessions
        assert mine not in names(user, all="true")
        # filters reach the registry
        assert theirs in names(admin, all="true", status="PENDING,SCHEDULED,PREPARING,PULLING,RUNNING")
        assert theirs not in names(admin, all="true", status="TERMINATED")
        page = okj(admin.get("/session", params={"all": "true", "limit": 1}))
        assert len(page["items"]) <= 1 and page["total"] >= 2
    finally:
        destroy_quietly(admin, mine)
        destroy_quietly(user, theirs)


def test_list_pages_walk_every_session_once(user, other, image_registered):
    """Pages of GET /session (the page's ids from an index, the view for them
    only): walked with limit 2 they give each of the caller's sessions once,
    newest first, the same total on every page, kernels filled in; past the
    end, no items. Another user's sessions never appear in them."""
    names = [name("page") for _ in range(5)]
    theirs = name("pageother")
    for n in names:
        okj(create(user, image_registered, n), 201)
    okj(create(other, image_registered, theirs), 201)
    try:
        full = okj(user.get("/session", params={"limit": 1000}))
        seen, totals, offset = [], set(), 0
        while True:
            page = okj(user.get("/session", params={"limit": 2, "offset": offset}))
            totals.add(page["total"])
            if not page["items"]:
                break
            assert len(page["items"]) <= 2
            seen += page["items"]
            offset += 2
        assert totals <= {full["total"], 0} and full["total"] in totals, totals
        assert [s["sessionUuid"] for s in seen] == [s["sessionUuid"] for s in full["items"]]
        assert len({s["sessionUuid"] for s in seen}) == len(seen) == full["total"]
        created = [s["creationTime"] for s in seen]
        assert created == sorted(created, reverse=True), created
        mine = [s for s in seen if s["sessionName"] in names]
        assert [s["sessionName"] for s in mine] == names[::-1]
        assert all(s["kernels"] for s in mine), mine
        assert theirs not in {s["sessionName"] for s in seen}
    finally:
        for n in names:
            destroy_quietly(user, n)
        destroy_quietly(other, theirs)


def test_destroy(user, image_registered):
    sname = name()
    okj(create(user, image_registered, sname), 201)
    r = user.delete(f"/session/{sname}")
    assert r.status_code == 200, r.text
    wait_until(lambda: user.get(f"/session/{sname}").json()["status"] in
               {"CANCELLED", "TERMINATED"}, timeout=20, message="the session to end")
    # destroying an ended session: 404 problem
    problem(user.delete(f"/session/{sname}"), 404)
    # forced is for administrators
    other = name()
    okj(create(user, image_registered, other), 201)
    problem(user.delete(f"/session/{other}", params={"forced": "true"}), 403)
    destroy_quietly(user, other)


def test_name_unique_per_owner_and_reuse(user, other, image_registered):
    sname = name("dup")
    first = okj(create(user, image_registered, sname), 201)
    p = problem(create(user, image_registered, sname), 409)
    assert sname in p["msg"]
    again = create(user, image_registered, sname, reuseIfExists=True)
    body = okj(again, 200)
    assert body["created"] is False and body["sessionUuid"] == first["sessionUuid"]
    # another owner may use the same name
    theirs = okj(create(other, image_registered, sname), 201)
    assert theirs["sessionUuid"] != first["sessionUuid"]
    destroy_quietly(user, sname)
    destroy_quietly(other, sname)


def test_history(user, image_registered):
    sname = name()
    okj(create(user, image_registered, sname), 201)
    user.delete(f"/session/{sname}")
    h = okj(user.get(f"/session/{sname}/history"))
    items = h["items"]
    assert items[0]["status"] == "PENDING"
    assert all({"status", "reason", "at"} <= set(i) for i in items)


def test_waiting_create_answers_after_max_wait(user, image_registered):
    """A session that cannot start yet (starts_at in an hour): the create call
    waits maxWaitSeconds on the registry side and answers with the status reached."""
    sname = name("later")
    t0 = time.monotonic()
    r = user.post("/session", {"image": image_registered, "name": sname, "type": "batch", "startupCommand": "sleep 60",
                               "starts_at": "1h",
                               "maxWaitSeconds": 2}, timeout=30)
    took = time.monotonic() - t0
    body = okj(r, 201)
    assert body["status"] == "PENDING"
    assert 1.5 <= took < 10, took
    destroy_quietly(user, sname)


# ---- validation: relayed 4xx problems ------------------------------------------------------


@pytest.mark.parametrize("case", [
    "unknown-image", "unknown-resource-group", "slots-too-big", "bad-slot-string",
    "negative-slot", "image-not-a-string", "name-not-a-string", "bad-type", "bad-max-wait",
    "bad-enqueue-only", "bad-name", "resources-not-an-object",
])
def test_create_validation(user, image_registered, case):
    body = {"image": image_registered, "name": name("bad"), "enqueueOnly": True}
    if case == "unknown-image":
        body["image"] = "127.0.0.1:1/no/such-image:nope"
    elif case == "unknown-resource-group":
        body["config"] = {"scaling_group": f"no-such-group-{TAG}"}
    elif case == "slots-too-big":
        body["config"] = {"resources": {"cpu": "100000"}}
    elif case == "bad-slot-string":
        body["config"] = {"resources": {"cpu": "lots", "mem": "1q"}}
    elif case == "negative-slot":
        body["config"] = {"resources": {"cpu": -1}}
    elif case == "image-not-a-string":
        body["image"] = 5
    elif case == "name-not-a-string":
        body["name"] = ["x"]
    elif case == "bad-type":
        body["type"] = "party"
    elif case == "bad-max-wait":
        body.pop("enqueueOnly")
        body["maxWaitSeconds"] = "soon"
    elif case == "bad-enqueue-only":
        body["enqueueOnly"] = "maybe"
    elif case == "bad-name":
        body["name"] = "-no spaces/or slashes"
    elif case == "resources-not-an-object":
        body["config"] = {"resources": "cpu=1"}
    r = user.post("/session", body)
    problem(r, 400, 403, 412)
    # nothing was created
    if isinstance(body.get("name"), str):
        assert user.get(f"/session/{requests.utils.quote(body['name'], safe='')}").status_code == 404


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b"", b'"image"'])
def test_create_body_must_be_a_json_object(gw, user, raw):
    url = gw + "/session"
    h = bai_signer.signed_headers(user.access_key, user.secret_key, "POST", url)
    problem(requests.post(url, data=raw, headers=h, timeout=10), 400)


def test_unsigned_requests_are_refused(gw):
    for method, path in [("POST", "/session"), ("GET", "/session"), ("GET", "/session/x"),
                         ("GET", "/kernel/x/logs"), ("GET", "/admin/agents")]:
        r = requests.request(method, gw + path, json={}, timeout=10)
        problem(r, 401, 400)


# ---- ownership ------------------------------------------------------------------------------


def test_another_users_session_is_not_found(admin, user, other, image_registered):
    sname = name("private")
    okj(create(user, image_registered, sname), 201)
    try:
        for r in (other.get(f"/session/{sname}"), other.delete(f"/session/{sname}"),
                  other.patch(f"/session/{sname}"), other.get(f"/session/{sname}/history")):
            problem(r, 404)
        assert sname not in {s["sessionName"] for s in okj(other.get("/session", params={"all": "true"}))["items"]}
        # its uuid does not help either
        sid = okj(user.get(f"/session/{sname}"))["sessionUuid"]
        problem(other.get(f"/session/{sid}"), 404)
        # a superadmin sees it (by id, or by name with owner_access_key)
        assert okj(admin.get(f"/session/{sid}"))["sessionName"] == sname
        assert okj(admin.get(f"/session/{sname}",
                             params={"owner_access_key": user.access_key}))["sessionUuid"] == sid
        # a plain user cannot name another owner
        problem(other.get(f"/session/{sname}", params={"owner_access_key": user.access_key}), 403, 404)
    finally:
        destroy_quietly(user, sname)


def test_unknown_session_is_404(user):
    p = problem(user.get(f"/session/nothing-{TAG}"), 404)
    assert "session" in p["type"] or "not-found" in p["type"]


# ---- the /kernel alias and the other routes ---------------------------------------------------


def test_kernel_alias(user, image_registered):
    sname = name("legacy")
    body = okj(create(user, image_registered, sname, prefix="/kernel"), 201)
    assert okj(user.get(f"/kernel/{sname}"))["sessionUuid"] == body["sessionUuid"]
    assert sname in {s["sessionName"] for s in okj(user.get("/kernel"))["items"]}
    assert okj(user.get(f"/kernel/{sname}/history"))["items"]
    assert user.delete(f"/kernel/{sname}").status_code == 200
    # Backend.AI's POST /session/_/create too
    sname2 = name("legacy")
    okj(user.post("/session/_/create", {"image": image_registered, "name": sname2,
                                        "enqueueOnly": True}), 201)
    destroy_quietly(user, sname2)


def test_start_service_of_an_unknown_session_is_404(user):
    # the rest of start-service: test_apps.py
    problem(user.post(f"/session/anything-{TAG}/start-service", {"app": "jupyter"}), 404)


def test_task_logs_need_a_session_name(user):
    problem(user.get("/session/_/logs"), 400)


def test_restart_of_a_pending_session_is_refused(user, image_registered):
    sname = name("rs")
    okj(user.post("/session", {"image": image_registered, "name": sname, "type": "batch", "startupCommand": "sleep 60",
                               "starts_at": "1h",
                               "enqueueOnly": True}), 201)
    problem(user.patch(f"/session/{sname}"), 409, 400)
    destroy_quietly(user, sname)


# ---- the whole pipeline: RUNNING, execute, logs, destroy ----------------------------------------


@pytest.fixture(scope="module")
def running(user, image_registered):
    """A session created without enqueueOnly: the call waits for RUNNING."""
    sname = name("run")
    r = user.post("/session", {"image": image_registered, "name": sname, "maxWaitSeconds": 30,
                               "config": {"resources": {"cpu": "1", "mem": "256m"}}}, timeout=45)
    body = okj(r, 201)
    if body["status"] != "RUNNING":
        info = user.get(f"/session/{sname}").json()
        destroy_quietly(user, sname)
        pytest.fail(f"the session did not reach RUNNING in 30 s: {body['status']} "
                    f"({info.get('statusInfo')})")
    yield sname
    destroy_quietly(user, sname)


def test_create_waits_for_running(user, running):
    info = okj(user.get(f"/session/{running}"))
    assert info["status"] == "RUNNING"
    assert info["occupiedSlots"].get("cpu") in ("1", 1)


def test_restart_running_session(user, image_registered):
    sname = name("restart")
    body = okj(user.post("/session", {"image": image_registered, "name": sname,
                                      "maxWaitSeconds": 30}, timeout=45), 201)
    try:
        assert body["status"] == "RUNNING"
        before = okj(user.get(f"/session/{sname}"))["kernels"][0]["id"]
        assert okj(user.patch(f"/session/{sname}"))["status"] in ("RESTARTING", "RUNNING")
        wait_until(lambda: user.get(f"/session/{sname}").json()["status"] == "RUNNING",
                   timeout=15, message="RUNNING again after restart")
        assert okj(user.get(f"/session/{sname}"))["kernels"][0]["id"] is not None
        assert before
    finally:
        destroy_quietly(user, sname)


def test_execute_batch_and_query(user, running):
    r = okj(user.post(f"/session/{running}", {"mode": "batch", "runId": "r1", "code": "",
                                              "options": {"exec": "echo hi"}}, timeout=80))
    res = r["result"]
    assert res["runId"] == "r1" and res["status"] == "finished" and res["exitCode"] == 0
    assert ["stdout", "hi\n"] in res["console"]
    assert res["files"] == []
    r = okj(user.post(f"/session/{running}", {"mode": "batch", "options": {"exec": "exit 3"}},
                      timeout=80))
    assert r["result"]["exitCode"] == 3
    # output that is not UTF-8 (an overlong NUL, a surrogate): a '?' for each
    # such byte, the rest as it was
    r = okj(user.post(f"/session/{running}", {"mode": "batch", "options": {
        "exec": r"printf 'a\300\200b\355\240\200c\n'"}}, timeout=80))
    assert ["stdout", "a??b???c\n"] in r["result"]["console"], r["result"]["console"]


def test_execute_on_a_pending_session_is_refused(user, image_registered):
    sname = name("np")
    okj(user.post("/session", {"image": image_registered, "name": sname, "type": "batch", "startupCommand": "sleep 60",
                               "starts_at": "1h",
                               "enqueueOnly": True}), 201)
    problem(user.post(f"/session/{sname}", {"mode": "batch", "options": {"exec": "true"}}), 409, 400)
    destroy_quietly(user, sname)


def test_logs(user, running):
    logs = okj(user.get(f"/session/{running}/logs"))["result"]["logs"]
    assert isinstance(logs, str)
    # task logs: the same text, as text/plain
    t = user.get("/session/_/logs", params={"session_name": running})
    assert t.status_code == 200 and t.headers["Content-Type"].startswith("text/plain")
    assert t.text == user.get(f"/session/{running}/logs").json()["result"]["logs"][:len(t.text)]


def test_destroy_running_reaches_terminated(user, image_registered):
    sname = name("end")
    body = okj(user.post("/session", {"image": image_registered, "name": sname,
                                      "maxWaitSeconds": 30}, timeout=45), 201)
    if body["status"] != "RUNNING":
        destroy_quietly(user, sname)
        pytest.fail(f"not RUNNING after 30 s: {body['status']}")
    assert user.delete(f"/session/{sname}").status_code == 200
    wait_until(lambda: user.get(f"/session/{sname}").json()["status"] == "TERMINATED",
               timeout=30, message="TERMINATED after destroy")
    info = okj(user.get(f"/session/{sname}"))
    assert info["terminationTime"]
    statuses = [i["status"] for i in okj(user.get(f"/session/{sname}/history"))["items"]]
    assert statuses[0] == "PENDING" and "RUNNING" in statuses and statuses[-1] == "TERMINATED"


# ---- admin resources served by the registry ----------------------------------------------------


def test_admin_registry_resources(admin, user, image_registered):
    agents = okj(admin.get("/admin/agents"))
    assert {"items", "total"} <= set(agents)
    for a in agents["items"]:
        assert {"id", "status", "slots", "resource_group"} <= set(a)
    if agents["items"]:
        aid = agents["items"][0]["id"]
        assert okj(admin.get(f"/admin/agents/{aid}"))["id"] == aid
    groups = okj(admin.get("/admin/resource-groups"))
    assert "default" in {g["name"] for g in groups["items"]}
    images = okj(admin.get("/admin/images", params={"limit": 1000}))
    assert image_registered in {i["reference"] for i in images["items"]}
    ref = requests.utils.quote(image_registered, safe="")
    assert okj(admin.get(f"/admin/images/{ref}"))["reference"] == image_registered
    # users may not list agents (the registry says so; the gateway relays it)
    problem(user.get("/admin/agents"), 403)
    # but every user reads the images (to pick one for a session), never writes them
    assert image_registered in {i["reference"] for i in okj(user.get("/admin/images"))["items"]}
    assert okj(user.get(f"/admin/images/{ref}"))["reference"] == image_registered
    problem(user.post("/admin/images", {"reference": image_registered}), 403)
    problem(user.delete(f"/admin/images/{ref}"), 403)
    assert okj(admin.get(f"/admin/images/{ref}"))["reference"] == image_registered
    # the rest of /admin is still tessera-auth's
    assert "items" in okj(admin.get("/admin/resource-group-access"))
    assert "items" in okj(admin.get("/admin/users", params={"limit": 1}))


def test_admin_resource_group_round_trip(admin, user):
    rg = f"rg-{TAG}"
    g = okj(admin.post("/admin/resource-groups", {"name": rg, "scheduler": "drf",
                                                  "description": "made by a test"}), 200, 201)
    assert g["name"] == rg and g["scheduler"] == "drf"
    g = okj(admin.patch(f"/admin/resource-groups/{rg}", {"agent_selector": "dispersed"}))
    assert g["agent_selector"] == "dispersed"
    problem(admin.post("/admin/resource-groups", {"name": rg}), 409)
    problem(admin.post("/admin/resource-groups", {"name": f"x-{TAG}", "scheduler": "random"}), 400)
    problem(user.post("/admin/resource-groups", {"name": f"y-{TAG}"}), 403)


def test_registry_upstream_metric(gw):
    text = requests.get(gw + "/metrics", timeout=10).text
    assert 'tessera_gateway_upstream_failures_total{upstream="registry"}' in text
    assert 'tessera_gateway_upstream_failures_total{upstream="auth"}' in text
    assert text.count("# TYPE tessera_gateway_upstream_failures_total") == 1
