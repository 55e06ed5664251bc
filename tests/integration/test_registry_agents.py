"""tessera-registry: agents (announcements, LOST), occupancy in Redis (the
rebuild after FLUSHALL), and the admin API for agents, resource groups and
images. Helpers and fixtures: test_registry_sessions.py."""
import time
import urllib.parse

import pytest

from conftest import wait_until
from test_registry_sessions import body, kernel_of, name, reg  # noqa: F401 - the fixture


def running_session(reg, agent, slots="cpu=1 mem=1g", resources=None):
    r = reg.create(body(name(), config={"scaling_group": "rgt",
                                        "resources": resources or {"cpu": 1, "mem": "1g"}}))
    assert r.status_code == 201, r.text
    sid = r.json()["sessionUuid"]
    kid = kernel_of(reg, sid)
    reg.bus(f"slots {slots}", f"scheduled {sid} rgt {kid}={agent}")
    reg.wait_status(sid, "PREPARING")
    reg.bus(f"kstarted {sid} {kid} {agent} 10.0.0.9")
    reg.wait_status(sid, "RUNNING")
    return sid, kid


def test_agents_admin_and_capacity_in_redis(reg):
    reg.agent("fa-cap", "rgt", slots="cpu=8 mem=16g", gpus=2)
    a = reg.call("GET", "/v1/admin/agents/fa-cap").json()
    assert a["status"] == "ALIVE" and a["resource_group"] == "rgt"
    assert a["slots"]["cpu"] == "8" and len(a["devices"]) == 2
    h = reg.redis_hash("agent:fa-cap")
    assert h["cap:cpu"] == "8000" and h["cap:cuda.device"] == "2" and h["cap:cuda.shares"] == "200"
    assert h["devcap:0"] == "100" and h["devcap:1"] == "100" and h["schedulable"] == "1"
    r = reg.call("GET", "/v1/admin/agents?resource_group=rgt&status=ALIVE&limit=100")
    assert "fa-cap" in [x["id"] for x in r.json()["items"]]
    assert reg.call("GET", "/v1/admin/agents/nope").status_code == 404
    # a heartbeat with new slots updates the capacity, occupancy kept
    reg.bus('heartbeat fa-cap rgt "cpu=6 mem=16g"')
    wait_until(lambda: reg.redis_hash("agent:fa-cap").get("cap:cpu") == "6000", timeout=10,
               message="capacity from the heartbeat")


def test_agent_stopped_not_graceful_fails_its_sessions(reg):
    reg.agent("fa-gone", "rgt")
    sid, kid = running_session(reg, "fa-gone")
    reg.bus("stopped fa-gone crashed 0")
    info = reg.wait_status(sid, "ERROR")
    assert info["statusInfo"] == "agent fa-gone lost"
    assert info["kernels"][0]["status"] == "ERROR"
    a = reg.call("GET", "/v1/admin/agents/fa-gone").json()
    assert a["status"] == "LOST"
    assert reg.redis_hash("agent:fa-gone")["schedulable"] == "0"
    # it comes back with a heartbeat
    reg.bus("heartbeat fa-gone rgt")
    wait_until(lambda: reg.call("GET", "/v1/admin/agents/fa-gone").json()["status"] == "ALIVE",
               timeout=10, message="agent ALIVE again")
    # graceful stop: TERMINATED, sessions untouched
    sid2, _ = running_session(reg, "fa-gone")
    reg.bus("stopped fa-gone shutdown 1")
    wait_until(lambda: reg.call("GET", "/v1/admin/agents/fa-gone").json()["status"] ==
               "TERMINATED", timeout=10, message="agent TERMINATED")
    assert reg.info(sid2)["status"] == "RUNNING"
    reg.call("DELETE", f"/v1/sessions/{sid2}?forced=true")


def test_flushall_rebuilds_occupancy(reg):
    reg.agent("fa-redis", "rgt", slots="cpu=8 mem=16g cuda.device=2 cuda.shares=2", gpus=2)
    reg.bus('slots "cpu=2 mem=1g cuda.shares=0.5"')
    r = reg.create(body(name(), config={"scaling_group": "rgt",
                                        "resources": {"cpu": 2, "mem": "1g",
                                                      "cuda.shares": "0.5"}}))
    sid = r.json()["sessionUuid"]
    kid = kernel_of(reg, sid)
    reg.bus('slots "cpu=2 mem=1g cuda.shares=0.5"', f"scheduled {sid} rgt {kid}=fa-redis=1:0.5")
    reg.wait_status(sid, "PREPARING")
    reg.redis("FLUSHALL")
    t0 = time.monotonic()

    def rebuilt():
        h = reg.redis_hash("agent:fa-redis")
        return h.get("used:cpu") == "2000" and h.get("dev:1") == "50" and h.get("cap:cpu") == "8000"
    wait_until(rebuilt, timeout=15, message="occupancy rebuilt after FLUSHALL")
    assert time.monotonic() - t0 < 10
    alloc = reg.redis_hash(f"alloc:{kid}")
    assert alloc["session"] == sid and alloc["agent"] == "fa-redis" and alloc["devs"] == "1=50"
    assert "cpu=2000" in alloc["slots"] and "cuda.shares=50" in alloc["slots"]
    assert reg.redis("GET", f"sess:{sid}").strip() == "1"
    assert reg.redis("EXISTS", "occupancy").strip() == "1"
    # the session ends: its kernel no longer holds slots (a rebuild drops it)
    reg.call("DELETE", f"/v1/sessions/{sid}?forced=true")
    reg.redis("DEL", "occupancy")
    wait_until(lambda: reg.redis("EXISTS", f"alloc:{kid}").strip() == "0" and
               reg.redis("EXISTS", "occupancy").strip() == "1", timeout=15,
               message="rebuilt without the ended session")


def test_agent_lost_after_heartbeat_timeout(reg):
    reg.agent("fa-silent", "rgt")
    sid, kid = running_session(reg, "fa-silent")
    # agent_lost_timeout defaults to 30 s (checked every second)
    info = reg.wait_status(sid, "ERROR", timeout=60)
    assert info["statusInfo"] == "agent fa-silent lost"
    a = reg.call("GET", "/v1/admin/agents/fa-silent").json()
    assert a["status"] == "LOST" and a["status_info"].startswith("no heartbeat for")
    hist = reg.history(sid)
    assert hist[-1] == ("ERROR", "agent fa-silent lost")


def test_resource_groups_admin(reg):
    r = reg.call("POST", "/v1/admin/resource-groups",
                 {"name": "rgt-admin", "scheduler": "drf", "agent_selector": "dispersed",
                  "allowed_session_types": ["batch"], "pending_timeout": 60})
    assert r.status_code == 201, r.text
    g = r.json()
    assert g["scheduler"] == "drf" and g["allowed_session_types"] == ["batch"]
    assert reg.call("POST", "/v1/admin/resource-groups", {"name": "rgt-admin"}).status_code == 409
    r = reg.call("PATCH", "/v1/admin/resource-groups/rgt-admin", {"is_active": False})
    assert r.status_code == 200 and r.json()["is_active"] is False
    r = reg.call("POST", "/v1/admin/resource-groups", {"name": "x", "scheduler": "random"})
    assert r.status_code == 400
    r = reg.call("GET", "/v1/admin/resource-groups?limit=100")
    names = [x["name"] for x in r.json()["items"]]
    assert "default" in names and "rgt-admin" in names


def test_images_admin(reg):
    demo = reg.env.get("TESSERA_DEMO_IMAGE")
    if not demo:
        pytest.skip("no demo image in this stack")
    r = reg.call("POST", "/v1/admin/images", {"reference": demo})
    assert r.status_code == 201, r.text
    im = r.json()
    assert im["digest"].startswith("sha256:") and im["source"] == "oci"
    assert {"name": "echo", "protocol": "http", "container_port": 8080, "host_port": 0} in \
        im["service_ports"]
    r = reg.call("GET", "/v1/admin/images/" + urllib.parse.quote(demo, safe=""))
    assert r.status_code == 200 and r.json()["reference"] == demo
    r = reg.call("POST", "/v1/admin/images/scan", {})
    assert r.status_code == 200, r.text
    assert demo in r.json()["registered"]
    r = reg.call("POST", "/v1/admin/images",
                 {"reference": "test.local/bad:1", "labels": {"ai.backend.service-ports": "x"}})
    assert r.status_code == 400 and "service-ports" in r.json()["msg"]
    r = reg.call("DELETE", "/v1/admin/images/" + urllib.parse.quote(demo, safe=""))
    assert r.status_code == 200
    # auto-registration on first use (registry.auto_register_images)
    r = reg.create({"image": demo, "name": name(), "enqueueOnly": True})
    assert r.status_code == 201, r.text
    assert reg.call("GET", "/v1/admin/images/" + urllib.parse.quote(demo, safe="")).status_code \
        == 200
    reg.call("DELETE", f"/v1/sessions/{r.json()['sessionUuid']}")
