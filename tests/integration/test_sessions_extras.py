"""Backend.AI's smaller session and configuration routes (docs/api.md):
POST /session/{name}/rename, GET /session/{name}/status-history,
GET /scaling-groups/{name}/wsproxy-version, GET /config/resource-slots/details
and GET /config/vfolder-types. Shapes, scoping (another user's session is
never renamed nor read), and bad input (400 that changes nothing)."""
import uuid

import pytest
import requests

from test_sessions_api import _new_user, admin, gw, image, image_registered, okj, problem  # noqa: F401

TAG = uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def alice(admin, gw):
    return _new_user(admin, gw, "extra-alice")


@pytest.fixture(scope="module")
def bob(admin, gw):
    return _new_user(admin, gw, "extra-bob")


def pending(client, image, name):
    """A batch session that waits an hour to start: PENDING, no container."""
    return okj(client.post("/session", {"image": image, "name": name, "type": "batch",
                                        "startupCommand": "true", "starts_at": "1h",
                                        "enqueueOnly": True}), 201)


def test_rename(alice, bob, image_registered):
    a, _ = alice
    b, _ = bob
    s = pending(a, image_registered, f"ren-{TAG}")
    other = pending(a, image_registered, f"ren-other-{TAG}")
    try:
        r = a.post(f"/session/ren-{TAG}/rename", {"session_name": f"ren2-{TAG}"})
        assert r.status_code == 204 and not r.content, r.text
        assert okj(a.get(f"/session/ren2-{TAG}"))["sessionUuid"] == s["sessionUuid"]
        problem(a.get(f"/session/ren-{TAG}"), 404)
        # Backend.AI's other spellings of the new name
        assert a.post(f"/session/{s['sessionUuid']}/rename", {"name": f"ren3-{TAG}"}).status_code == 204
        assert a.post(f"/session/ren3-{TAG}/rename", None, params={"name": f"ren4-{TAG}"}).status_code == 204
        # taken by another live session of the owner
        problem(a.post(f"/session/ren4-{TAG}/rename", {"session_name": f"ren-other-{TAG}"}), 409)
        # bad names and bodies: 400, nothing changed
        for body in ({"session_name": "a b"}, {"session_name": ""}, {"session_name": "x" * 65},
                     {"session_name": 5}, {}):
            problem(a.post(f"/session/ren4-{TAG}/rename", body), 400)
        # another user: not found, whether by name or by id
        problem(b.post(f"/session/ren4-{TAG}/rename", {"session_name": "stolen"}), 404)
        problem(b.post(f"/session/{s['sessionUuid']}/rename", {"session_name": "stolen"}), 404)
        assert okj(a.get(f"/session/{s['sessionUuid']}"))["sessionName"] == f"ren4-{TAG}"
        # an ended session keeps its name
        okj(a.delete(f"/session/ren4-{TAG}"))
        problem(a.post(f"/session/{s['sessionUuid']}/rename", {"session_name": f"ren5-{TAG}"}), 404, 409)
    finally:
        a.delete(f"/session/{s['sessionUuid']}")
        a.delete(f"/session/{other['sessionUuid']}")


def test_status_history(alice, bob, image_registered):
    a, _ = alice
    b, _ = bob
    s = pending(a, image_registered, f"hist-{TAG}")
    try:
        h = okj(a.get(f"/session/hist-{TAG}/status-history"))
        assert set(h) == {"PENDING", "result"} and h["PENDING"].startswith("20"), h
        # the form Backend.AI's Python CLI reads: lower case under "result"
        assert h["result"] == {"pending": h["PENDING"]}, h
        okj(a.delete(f"/session/hist-{TAG}"))
        h = okj(a.get(f"/session/{s['sessionUuid']}/status-history"))
        assert {"PENDING", "CANCELLED"} <= set(h) and h["CANCELLED"] >= h["PENDING"], h
        assert h["result"]["cancelled"] == h["CANCELLED"], h
        problem(b.get(f"/session/{s['sessionUuid']}/status-history"), 404)
    finally:
        a.delete(f"/session/{s['sessionUuid']}")


def test_wsproxy_version(alice, gw):
    a, _ = alice
    assert okj(a.get("/scaling-groups/default/wsproxy-version")) == {"wsproxy_version": "v2"}
    assert okj(a.get("/scaling-groups/default/wsproxy-version", params={"group": "default"})) == \
        {"wsproxy_version": "v2"}
    problem(a.get("/scaling-groups/no-such-group/wsproxy-version"), 404)
    problem(requests.get(gw + "/scaling-groups/default/wsproxy-version", timeout=10), 401)


def test_config_metadata(gw):
    d = okj(requests.get(gw + "/config/resource-slots/details", timeout=10))
    slots = okj(requests.get(gw + "/config/resource-slots", timeout=10))
    assert set(d) == set(slots), (d, slots)
    for key, m in d.items():
        assert set(m) == {"slot_name", "description", "human_readable_name", "display_unit",
                          "number_format", "display_icon"}, m
        assert isinstance(m["number_format"]["binary"], bool)
    assert d["mem"]["number_format"]["binary"] is True and d["cuda.shares"]["number_format"]["round_length"] == 2
    assert okj(requests.get(gw + "/config/vfolder-types", timeout=10)) == ["user", "group"]


def test_dependency_graph(alice, bob, image_registered):
    """Backend.AI's GET /session/{name}/dependency-graph, the form its CLI's
    show-graph reads: the session alone (Tessera has no dependencies)."""
    a, _ = alice
    b, _ = bob
    s = pending(a, image_registered, f"graph-{TAG}")
    try:
        for key in (f"graph-{TAG}", s["sessionUuid"]):
            g = okj(a.get(f"/session/{key}/dependency-graph"))
            assert g["session_id"] == s["sessionUuid"] and g["session_name"] == f"graph-{TAG}"
            assert g["status"] == "KernelStatus.PENDING" and g["depends_on"] == []
            assert g["status_changed"][:4].isdigit() and "T" not in g["status_changed"]
        problem(b.get(f"/session/graph-{TAG}/dependency-graph"), 404)
        problem(b.get(f"/session/{s['sessionUuid']}/dependency-graph"), 404)
        problem(a.get(f"/session/nope-{TAG}/dependency-graph"), 404)
    finally:
        a.delete(f"/session/{s['sessionUuid']}")


def test_task_logs_by_task_id(alice, bob, image_registered):
    """GET /session/_/logs names the session by session_name, sessionName,
    task_id or taskId (Backend.AI's Python client sends its id as taskId)."""
    a, _ = alice
    b, _ = bob
    s = pending(a, image_registered, f"tlog-{TAG}")
    try:
        for key, value in (("taskId", s["sessionUuid"]), ("task_id", s["sessionUuid"]),
                           ("sessionName", f"tlog-{TAG}")):
            # a PENDING session has no logs yet: the registry's 409, not a 400
            r = a.get("/session/_/logs", params={key: value})
            assert r.status_code in (200, 409), (key, r.status_code, r.text)
        problem(b.get("/session/_/logs", params={"taskId": s["sessionUuid"]}), 404)
        problem(a.get("/session/_/logs"), 400)
    finally:
        a.delete(f"/session/{s['sessionUuid']}")
