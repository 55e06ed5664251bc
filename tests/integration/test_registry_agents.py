"""tessera-registry: agents (announcements, LOST), occupancy in Redis (the
rebuild after FLUSHALL), and the admin API for agents, resource groups and
images. Helpers and fixtures: test_registry_sessions.py."""
import subprocess
import time
import urllib.parse

import pytest

from conftest import wait_until
from test_registry_sessions import body, kernel_of, name, reg  # noqa: F401 - the fixture


def running_session(reg, agent, slots="cpu=1 mem=1g", resources=None, group="rgt"):
    r = reg.create(body(name(), config={"scaling_group": group,
                                        "resources": resources or {"cpu": 1, "mem": "1g"}}))
    assert r.status_code == 201, r.text
    sid = r.json()["sessionUuid"]
    kid = kernel_of(reg, sid)
    reg.bus(f"slots {slots}", f"scheduled {sid} {group} {kid}={agent}")
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


def test_agents_pages_walk_every_agent_once_with_its_kernels(reg):
    """GET /v1/admin/agents in pages (the page's rows first, their kernels
    counted for them only): limit 2 walks every agent of a group once, in id
    order, the same total on each page, kernels counted on the page."""
    reg.group("rgpage", description="agent pages")
    ids = ["fa-pg%d" % i for i in range(5)]
    for a in ids:
        reg.agent(a, "rgpage", slots="cpu=4 mem=8g")
    running_session(reg, "fa-pg3", group="rgpage")
    seen, totals, offset = [], set(), 0
    while True:
        page = reg.call("GET", "/v1/admin/agents?resource_group=rgpage&limit=2&offset=%d" % offset)
        assert page.status_code == 200, page.text
        j = page.json()
        if not j["items"]:
            break
        totals.add(j["total"])
        seen += j["items"]
        offset += 2
    assert [a["id"] for a in seen] == ids, seen
    assert totals == {5}, totals
    assert {a["id"]: a["kernels"] for a in seen} == {"fa-pg0": 0, "fa-pg1": 0, "fa-pg2": 0,
                                                    "fa-pg3": 1, "fa-pg4": 0}
    one = reg.call("GET", "/v1/admin/agents?resource_group=rgpage&status=ALIVE&limit=1").json()
    assert one["total"] == 5 and len(one["items"]) == 1


def heartbeat_counts(reg):
    text = reg.call("GET", "/metrics").text
    counts = {}
    for line in text.splitlines():
        if line.startswith("tessera_registry_heartbeats_total{"):
            path = line.split('path="', 1)[1].split('"', 1)[0]
            counts[path] = int(float(line.rsplit(" ", 1)[1]))
    return counts


def test_heartbeats_with_the_same_capacity_only_move_the_time(reg):
    reg.agent("fa-hb", "rgt", slots="cpu=4 mem=8g")
    before = reg.call("GET", "/v1/admin/agents/fa-hb").json()["last_heartbeat"]
    c0 = heartbeat_counts(reg)
    # The registry writes the Redis record on the full path only, and the
    # scheduler only when a capacity changes: a changed cap:cpu shows that
    # neither rewrote it for a repeated capacity.
    reg.redis("HSET", "agent:fa-hb", "cap:cpu", "1")
    time.sleep(0.05)
    reg.bus(*['heartbeat fa-hb rgt "cpu=4 mem=8g"'] * 3)
    wait_until(lambda: reg.call("GET", "/v1/admin/agents/fa-hb").json()["last_heartbeat"] != before,
               timeout=10, message="last_heartbeat moved")
    c1 = heartbeat_counts(reg)
    assert c1["touch"] >= c0["touch"] + 2, (c0, c1)
    assert reg.redis_hash("agent:fa-hb")["cap:cpu"] == "1", (c0, c1)  # not rewritten
    # a new capacity: the full path (row and Redis). The scheduler writes the
    # new capacity to Redis too, on its own, possibly before the registry has
    # stored the row: wait for the row, then for the registry's Redis write.
    reg.bus('heartbeat fa-hb rgt "cpu=6 mem=8g"')
    wait_until(lambda: reg.call("GET", "/v1/admin/agents/fa-hb").json()["slots"]["cpu"] == "6",
               timeout=10, message="the changed capacity stored")
    wait_until(lambda: heartbeat_counts(reg)["full"] >= c1["full"] + 1, timeout=10,
               message="the changed capacity took the full path")
    assert reg.redis_hash("agent:fa-hb").get("cap:cpu") == "6000"
    # and repeated, it is a touch again
    c2 = heartbeat_counts(reg)
    reg.bus('heartbeat fa-hb rgt "cpu=6 mem=8g"')
    wait_until(lambda: heartbeat_counts(reg)["touch"] > c2["touch"], timeout=10,
               message="the repeated capacity touched")


def test_heartbeat_with_a_bad_agent_id_goes_to_the_dlq_alone(reg):
    reg.agent("fa-hb2", "rgt")
    before = reg.call("GET", "/v1/admin/agents/fa-hb2").json()["last_heartbeat"]
    bad = "bad id " + name()
    # the bad one between good ones, published together (one batch or several)
    reg.bus('heartbeat fa-hb2 rgt "cpu=4 mem=8g"', f'heartbeat "{bad}" rgt',
            'heartbeat fa-hb2 rgt "cpu=4 mem=8g"')

    def dlq():
        c = subprocess.run(["kcat", "-b", reg.env["KAFKA_BOOTSTRAP"], "-C", "-t", "tessera.dlq.v1",
                            "-o", "beginning", "-e", "-q", "-f", "%k\t%h\n"],
                           capture_output=True, text=True, timeout=30)
        # the scheduler's consumer dead-letters it too, under its own group
        return [line for line in c.stdout.splitlines()
                if line.startswith(bad) and "dlq.group=tessera-registry.agents," in line]
    line = wait_until(dlq, 30, message="the registry's DLQ record of the bad heartbeat")[0]
    assert "plain ids" in line, line
    wait_until(lambda: reg.call("GET", "/v1/admin/agents/fa-hb2").json()["last_heartbeat"] != before,
               timeout=10, message="the good heartbeats applied")
    assert reg.call("GET", "/v1/admin/agents/fa-hb2").json()["status"] == "ALIVE"


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
    # delete: a group in use (an agent serves it) is kept, an unused one goes
    reg.call("POST", "/v1/admin/resource-groups", {"name": "rgt-served"})
    reg.agent("fa-served", "rgt-served")
    r = reg.call("DELETE", "/v1/admin/resource-groups/rgt-served")
    assert r.status_code == 409 and "1 agent(s)" in r.json()["msg"], r.text
    assert reg.call("DELETE", "/v1/admin/resource-groups/default").status_code == 409
    r = reg.call("DELETE", "/v1/admin/resource-groups/rgt-admin")
    assert r.status_code == 200 and r.json() == {"deleted": True}, r.text
    assert reg.call("GET", "/v1/admin/resource-groups/rgt-admin").status_code == 404
    assert reg.call("DELETE", "/v1/admin/resource-groups/rgt-admin").status_code == 404


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
